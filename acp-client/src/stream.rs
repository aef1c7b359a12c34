//! A prompt turn as a stream of its updates ([`PromptStream`]), a session's updates as a
//! stream ([`SessionUpdates`]), and the routing of incoming `session/update`s to them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acp_rpc::Error;
use acp_types::v1::{
    LoadSessionResponse, PromptResponse, SessionId, SessionNotification, SessionUpdate,
};
use tokio::sync::mpsc;

/// How many updates a [`PromptStream`] holds before the connection waits for it to be read.
pub const PROMPT_STREAM_BUFFER: usize = 256;

/// A session loaded with [`AgentHandle::load_session_history`](crate::AgentHandle::load_session_history).
#[derive(Debug)]
pub struct LoadedSession {
    /// The agent's answer (modes, config options).
    pub response: LoadSessionResponse,
    /// The replayed conversation, in the order the agent sent it.
    pub history: Vec<SessionUpdate>,
}

/// One item of a [`SessionUpdates`] stream.
// Updates are the common item, so boxing the large variant would only add allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum SessionEvent {
    /// A `session/update` of the session: replayed before [`SessionEvent::Loaded`], live
    /// after it.
    Update(SessionUpdate),
    /// The agent answered `session/load` (or failed it: the stream then ends).
    Loaded(Result<LoadSessionResponse, Error>),
    /// A turn started with [`AgentHandle::prompt_on`](crate::AgentHandle::prompt_on) is
    /// over: its result (the stop reason) or its error, after every update of the turn.
    Prompted(Result<PromptResponse, Error>),
}

/// A session's updates, as one stream for the whole life of the session: a loaded session's
/// replay first ([`AgentHandle::load_session_stream`](crate::AgentHandle::load_session_stream)),
/// or a session's live updates from now on ([`AgentHandle::session_updates`](crate::AgentHandle::session_updates)),
/// and the ends of the turns started on it ([`AgentHandle::prompt_on`](crate::AgentHandle::prompt_on)).
/// Dropping it removes the session's route (and abandons a load or a turn still running).
#[derive(Debug)]
pub struct SessionUpdates {
    pub(crate) rx: mpsc::Receiver<Routed>,
    /// The route's sender, for the results of the requests started on this stream.
    pub(crate) tx: mpsc::Sender<Routed>,
    /// The load and the turns started on this stream (aborted on drop).
    pub(crate) tasks: Vec<tokio::task::JoinHandle<()>>,
    pub(crate) subscribers: Subscribers,
    pub(crate) key: (SessionId, u64),
    pub(crate) ended: bool,
}

impl SessionUpdates {
    /// The next event: replayed updates, `Loaded`, then live updates, each turn's
    /// `Prompted` after its updates; `None` once the load failed.
    ///
    /// The stream holds its own route open, so it does not end with the connection: a
    /// closed connection shows as the error of the next request (a turn's `Prompted`).
    pub async fn next(&mut self) -> Option<SessionEvent> {
        if self.ended {
            return None;
        }
        // Finished requests leave the list, so a long session does not pile up handles.
        self.tasks.retain(|task| !task.is_finished());
        let routed = loop {
            match self.rx.recv().await {
                Some(Routed::Any(session, update)) => {
                    if session == self.key.0 {
                        break Some(Routed::Update(update));
                    }
                }
                other => break other,
            }
        };
        match routed {
            Some(Routed::Update(update)) => Some(SessionEvent::Update(update)),
            Some(Routed::Loaded(result)) => {
                if result.is_err() {
                    self.ended = true;
                    self.subscribers.unsubscribe(&self.key);
                }
                Some(SessionEvent::Loaded(result))
            }
            Some(Routed::Prompted(result)) => Some(SessionEvent::Prompted(result)),
            Some(Routed::Any(..)) | None => {
                self.ended = true;
                None
            }
        }
    }

    /// The session this stream carries.
    pub fn session_id(&self) -> &SessionId {
        &self.key.0
    }
}

impl Drop for SessionUpdates {
    fn drop(&mut self) {
        self.subscribers.unsubscribe(&self.key);
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What a session's route carries: its updates, and the answer of the request that opened
/// the route.
// Updates are the common item, so boxing the large variant would only add allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Routed {
    Update(SessionUpdate),
    /// An update of any session, caught while a new session's id is not known yet (see
    /// [`Subscribers::subscribe_any`]); the stream keeps those of its own session.
    Any(SessionId, SessionUpdate),
    Prompted(Result<PromptResponse, Error>),
    Loaded(Result<LoadSessionResponse, Error>),
}

/// One item of a [`PromptStream`].
// Updates are the common item, so boxing the large variant would only add allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum PromptEvent {
    /// A `session/update` of the prompted session.
    Update(SessionUpdate),
    /// The turn is over: the prompt's result (the stop reason) or its error. Always last.
    Done(Result<PromptResponse, Error>),
}

/// A prompt turn in progress; see [`AgentHandle::prompt_stream`](crate::AgentHandle::prompt_stream).
#[derive(Debug)]
pub struct PromptStream {
    pub(crate) rx: mpsc::Receiver<Routed>,
    pub(crate) task: tokio::task::JoinHandle<()>,
    pub(crate) subscribers: Subscribers,
    pub(crate) key: (SessionId, u64),
    pub(crate) done: bool,
}

impl PromptStream {
    /// The next event: updates in arrival order, then `Done`, then `None`.
    pub async fn next(&mut self) -> Option<PromptEvent> {
        if self.done {
            return None;
        }
        let event = match self.rx.recv().await {
            Some(Routed::Update(update)) => Some(PromptEvent::Update(update)),
            Some(Routed::Prompted(result)) => Some(PromptEvent::Done(result)),
            Some(Routed::Loaded(_)) | Some(Routed::Any(..)) | None => None,
        };
        if !matches!(event, Some(PromptEvent::Update(_))) {
            self.done = true;
            self.subscribers.unsubscribe(&self.key);
        }
        event
    }

    /// Drains the stream: every update, then the result.
    pub async fn collect(mut self) -> (Vec<SessionUpdate>, Result<PromptResponse, Error>) {
        let mut updates = Vec::new();
        while let Some(event) = self.next().await {
            match event {
                PromptEvent::Update(u) => updates.push(u),
                PromptEvent::Done(result) => return (updates, result),
            }
        }
        (
            updates,
            Err(Error::internal_error(
                "prompt stream ended without a result",
            )),
        )
    }
}

impl Drop for PromptStream {
    fn drop(&mut self) {
        self.subscribers.unsubscribe(&self.key);
        if !self.done {
            self.task.abort();
        }
    }
}

/// The streams by session, and those that take every session's updates for a while
/// ([`Subscribers::subscribe_any`]).
#[derive(Debug, Default)]
struct SubscriberMap {
    sessions: HashMap<SessionId, Vec<(u64, mpsc::Sender<Routed>)>>,
    any: Vec<(u64, mpsc::Sender<Routed>)>,
}

/// Prompt streams waiting for updates, by session.
#[derive(Clone, Default, Debug)]
pub(crate) struct Subscribers {
    inner: Arc<Mutex<SubscriberMap>>,
    next: Arc<AtomicU64>,
    /// How many streams the map holds, changed under its lock: with none (a client that
    /// takes its updates in `Client::session_update` alone), an update costs one load
    /// instead of a lock of the map.
    streams: Arc<AtomicUsize>,
}

impl Subscribers {
    fn lock(&self) -> std::sync::MutexGuard<'_, SubscriberMap> {
        acp_rpc::sync::lock(&self.inner)
    }

    pub(crate) fn subscribe(
        &self,
        session: SessionId,
        tx: mpsc::Sender<Routed>,
    ) -> (SessionId, u64) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut map = self.lock();
        map.sessions
            .entry(session.clone())
            .or_default()
            .push((id, tx));
        self.streams.fetch_add(1, Ordering::SeqCst);
        (session, id)
    }

    /// A route that takes the updates of every session (as [`Routed::Any`]) until
    /// [`Subscribers::narrow`] makes it one session's: for a session whose id the agent has
    /// not told yet (`session/new`), so that no update sent right after its answer slips by.
    pub(crate) fn subscribe_any(&self, tx: mpsc::Sender<Routed>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().any.push((id, tx));
        self.streams.fetch_add(1, Ordering::SeqCst);
        id
    }

    /// Makes the route `id` of [`Subscribers::subscribe_any`] the route of `session` (in one
    /// step under the lock: every update goes to it exactly once, in order); `None` when it
    /// was removed meanwhile.
    pub(crate) fn narrow(&self, id: u64, session: SessionId) -> Option<(SessionId, u64)> {
        let mut map = self.lock();
        let at = map.any.iter().position(|(i, _)| *i == id)?;
        let (_, tx) = map.any.remove(at);
        map.sessions
            .entry(session.clone())
            .or_default()
            .push((id, tx));
        Some((session, id))
    }

    /// Removes a route of [`Subscribers::subscribe_any`] (a `session/new` that failed).
    pub(crate) fn unsubscribe_any(&self, id: u64) {
        let mut map = self.lock();
        let before = map.any.len();
        map.any.retain(|(i, _)| *i != id);
        self.streams
            .fetch_sub(before - map.any.len(), Ordering::SeqCst);
    }

    fn unsubscribe(&self, key: &(SessionId, u64)) {
        let mut map = self.lock();
        if let Some(list) = map.sessions.get_mut(&key.0) {
            let before = list.len();
            list.retain(|(id, _)| *id != key.1);
            self.streams
                .fetch_sub(before - list.len(), Ordering::SeqCst);
            if list.is_empty() {
                map.sessions.remove(&key.0);
            }
        }
    }

    /// Hands a copy of the update to every stream of its session, waiting while a stream
    /// is full (a dropped stream fails the send at once).
    pub(crate) async fn deliver(&self, n: &SessionNotification) {
        // A stream subscribes before its prompt is sent, so before any update of it is read.
        if self.streams.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (streams, any): (Vec<mpsc::Sender<Routed>>, Vec<mpsc::Sender<Routed>>) = {
            let map = self.lock();
            let streams = match map.sessions.get(&n.session_id) {
                Some(list) => list.iter().map(|(_, tx)| tx.clone()).collect(),
                None => Vec::new(),
            };
            (streams, map.any.iter().map(|(_, tx)| tx.clone()).collect())
        };
        // A route waiting for its session's id never makes the connection wait: it is read
        // only once the answer came, which could not come while the connection waited for
        // it. Past its buffer, it misses updates (of which only its own session's count).
        for tx in any {
            let _ = tx.try_send(Routed::Any(n.session_id.clone(), n.update.clone()));
        }
        for tx in streams {
            match tx.try_send(Routed::Update(n.update.clone())) {
                // Boxed: the wait holds the update and the channel's wait, a large future
                // that the common case (room in the stream) need not carry.
                Err(mpsc::error::TrySendError::Full(update)) => {
                    let _ = Box::pin(tx.send(update)).await;
                }
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(session: &str, text: &str) -> SessionNotification {
        SessionNotification::new(session, SessionUpdate::agent_message_text(text))
    }

    fn texts(rx: &mut mpsc::Receiver<Routed>) -> Vec<String> {
        let mut got = Vec::new();
        while let Ok(Routed::Update(SessionUpdate::AgentMessageChunk(chunk))) = rx.try_recv() {
            if let acp_types::v1::ContentBlock::Text(t) = chunk.content {
                got.push(t.text);
            }
        }
        got
    }

    #[tokio::test]
    async fn updates_reach_the_streams_subscribed_at_the_time_and_no_others() {
        let subscribers = Subscribers::default();
        let (a_tx, mut a) = mpsc::channel(8);
        let (b_tx, mut b) = mpsc::channel(8);
        let a_key = subscribers.subscribe("s1".into(), a_tx);
        let b_key = subscribers.subscribe("s1".into(), b_tx);
        subscribers.deliver(&update("s1", "one")).await;
        subscribers.deliver(&update("s2", "elsewhere")).await;
        assert_eq!(texts(&mut a), ["one"]);
        assert_eq!(texts(&mut b), ["one"]);

        // Unsubscribing twice counts once.
        subscribers.unsubscribe(&a_key);
        subscribers.unsubscribe(&a_key);
        subscribers.deliver(&update("s1", "two")).await;
        assert_eq!(texts(&mut a), Vec::<String>::new());
        assert_eq!(texts(&mut b), ["two"]);

        subscribers.unsubscribe(&b_key);
        assert_eq!(subscribers.streams.load(Ordering::SeqCst), 0);
        subscribers.deliver(&update("s1", "nobody")).await;
        assert_eq!(texts(&mut b), Vec::<String>::new());

        // With none left, a new stream still gets what comes after it subscribed.
        let (c_tx, mut c) = mpsc::channel(8);
        let _c_key = subscribers.subscribe("s1".into(), c_tx);
        subscribers.deliver(&update("s1", "three")).await;
        assert_eq!(texts(&mut c), ["three"]);
    }
}
