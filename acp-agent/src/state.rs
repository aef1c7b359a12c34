//! Connection state shared by the dispatcher and every handle: the client's capabilities,
//! the known sessions with their cancellation tokens, and the two ordering guarantees.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acp_rpc::{Arrival, Peer};
use acp_types::NotificationMethod;
use acp_types::v1::{AgentCapabilities, ClientCapabilities, SessionId, SessionNotification, names};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::sync::lock;

/// One known session.
///
/// An agent may keep thousands of idle sessions, so the synchronisation objects are
/// allocated on first use, not with the session: `None` stands for one that nobody holds
/// yet (a fresh token, a zero counter, a notifier without waiters).
pub(crate) struct Session {
    /// Cancelled by `session/cancel` while a prompt runs; replaced when a prompt starts
    /// (with none running) and when the last one ends.
    cancel: Option<CancellationToken>,
    /// `Some` while the `session/new` response has not been written: updates wait here
    /// (with a send-counter guard, so a prompt's response also waits for them). Boxed:
    /// a session holds updates only for a moment, and every idle session pays for this
    /// field's size in the map.
    #[allow(clippy::box_collection)] // deliberate: 8 bytes per idle session instead of 24
    pub(crate) held: Option<Box<Vec<Held>>>,
    /// Update sends in progress (the prompt response waits for them).
    sending: Option<Arc<InFlight>>,
    /// The read sequence number of the running prompt, if one runs.
    pub(crate) running: Option<u64>,
    /// Woken when a prompt starts.
    started: Option<Arc<Notify>>,
}

/// How long a `session/cancel` waits for a prompt read before it to start.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// An update waiting for its session's `session/new` response to be written.
pub(crate) type Held = (SessionNotification, Option<InFlightGuard>);

impl Session {
    fn new(held: Option<Vec<Held>>) -> Self {
        Session {
            cancel: None,
            held: held.map(Box::new),
            sending: None,
            running: None,
            started: None,
        }
    }

    /// The current cancellation token.
    fn cancel_token(&mut self) -> CancellationToken {
        self.cancel
            .get_or_insert_with(CancellationToken::new)
            .clone()
    }

    /// The send counter.
    fn sending(&mut self) -> &Arc<InFlight> {
        self.sending.get_or_insert_with(Arc::default)
    }

    /// The notifier woken when a prompt starts.
    fn started(&mut self) -> Arc<Notify> {
        self.started.get_or_insert_with(Arc::default).clone()
    }
}

/// A counter of in-progress sends with a way to wait for zero.
#[derive(Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    idle: Notify,
    /// Callers in `wait_idle`. A send that brings the count to zero wakes them only when
    /// there are some: each update is a send, and a wake takes the notifier's lock.
    waiters: AtomicUsize,
}

impl InFlight {
    pub(crate) fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.clone())
    }

    pub(crate) async fn wait_idle(&self) {
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        // Counted before the count is checked, and the last send reads this after bringing
        // the count to zero (all sequentially consistent): either the check sees zero or the
        // send sees this waiter, whose `notified` (created before the check) it then wakes.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiters);
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

pub(crate) struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1
            && self.0.waiters.load(Ordering::SeqCst) > 0
        {
            self.0.idle.notify_waiters();
        }
    }
}

#[derive(Default)]
pub(crate) struct Sessions {
    pub(crate) known: HashMap<SessionId, Session>,
    /// `session/new` handlers running now.
    pub(crate) creating: usize,
    /// Updates for not-yet-known sessions sent while a `session/new` was running.
    pub(crate) unclaimed: HashMap<SessionId, Vec<SessionNotification>>,
}

/// Prompts and cancels numbered in the order they were read, fed by acp-rpc's arrival hook.
#[derive(Default)]
pub(crate) struct Awaiting {
    /// Read sequence numbers of `session/prompt` requests read but not yet started.
    pub(crate) announced: Mutex<HashMap<SessionId, VecDeque<u64>>>,
    /// Read sequence numbers of `session/cancel` notifications not yet handled.
    pub(crate) cancels: Mutex<HashMap<SessionId, VecDeque<u64>>>,
}

/// Just the session id of some params.
#[derive(serde::Deserialize)]
struct SessionIdOnly {
    #[serde(rename = "sessionId")]
    session_id: Option<SessionId>,
}

/// The `sessionId` of raw params, if there is one.
pub(crate) fn session_id_of(params: &str) -> Option<SessionId> {
    serde_json::from_str::<SessionIdOnly>(params)
        .ok()?
        .session_id
}

fn pop(map: &Mutex<HashMap<SessionId, VecDeque<u64>>>, id: &SessionId) -> Option<u64> {
    let mut map = lock(map);
    let queue = map.get_mut(id)?;
    let front = queue.pop_front();
    if queue.is_empty() {
        map.remove(id);
    }
    front
}

impl Awaiting {
    /// Numbers incoming `session/prompt` requests and `session/cancel` notifications in
    /// read order: acp-rpc's arrival hook ([`acp_rpc::Handler::arrived`]) calls it on the
    /// reader, before the message is dispatched.
    pub(crate) fn announce(&self, arrival: Arrival<'_>) {
        let map = match (arrival.method, arrival.id.is_some()) {
            (names::SESSION_PROMPT, true) => &self.announced,
            (names::SESSION_CANCEL, false) => &self.cancels,
            _ => return,
        };
        let Some(sid) = arrival.params.and_then(session_id_of) else {
            return;
        };
        // Numbered from 1: 0 means "no number" to `take_prompt`.
        lock(map).entry(sid).or_default().push_back(arrival.seq + 1);
    }

    /// A read `session/prompt` reached the dispatcher: its read number (0 if unknown).
    pub(crate) fn take_prompt(&self, id: &SessionId) -> u64 {
        pop(&self.announced, id).unwrap_or(0)
    }

    /// A `session/cancel` is handled: its read number (`u64::MAX` if unknown).
    fn take_cancel(&self, id: &SessionId) -> u64 {
        pop(&self.cancels, id).unwrap_or(u64::MAX)
    }
}

/// Everything the handles share.
pub(crate) struct Inner {
    pub(crate) peer: Peer,
    /// What the client advertised in its latest successful `initialize` (`None` before).
    pub(crate) caps: std::sync::RwLock<Option<Arc<ClientCapabilities>>>,
    pub(crate) sessions: Mutex<Sessions>,
    pub(crate) awaiting: Arc<Awaiting>,
    /// Records every session in a store, when the agent is served with one.
    pub(crate) recorder: Option<Arc<crate::record::Recorder>>,
    /// What the agent itself advertised in its latest `initialize` answer (some methods
    /// the agent may send only when it offered them, such as `auth/status_update`).
    pub(crate) offered: std::sync::RwLock<Option<Arc<AgentCapabilities>>>,
    /// Whom the connection serves ([`crate::AgentContext::identity`]): the name of a remote
    /// caller's credential; `None` for a local client or the unnamed identity.
    pub(crate) identity: Option<Arc<str>>,
}

impl Inner {
    pub(crate) fn capabilities(&self) -> Option<Arc<ClientCapabilities>> {
        self.caps.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What the agent advertised in its latest `initialize` answer (`None` before).
    pub(crate) fn offered(&self) -> Option<Arc<AgentCapabilities>> {
        self.offered
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records both sides' capabilities of a successful `initialize`; a repeated
    /// `initialize` replaces those of the one before.
    pub(crate) fn set_capabilities(&self, caps: ClientCapabilities, offered: AgentCapabilities) {
        *self.offered.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(offered));
        *self.caps.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(caps));
    }

    pub(crate) fn is_known(&self, id: &SessionId) -> bool {
        lock(&self.sessions).known.contains_key(id)
    }

    /// Registers a session from `load`/`resume` (no holding).
    pub(crate) fn track(&self, id: SessionId) {
        lock(&self.sessions)
            .known
            .entry(id)
            .or_insert_with(|| Session::new(None));
    }

    pub(crate) fn forget(&self, id: &SessionId) {
        if let Some(token) = lock(&self.sessions).known.remove(id).and_then(|s| s.cancel) {
            token.cancel();
        }
    }

    /// A `session/new` handler starts.
    pub(crate) fn begin_create(&self) {
        lock(&self.sessions).creating += 1;
    }

    /// A `session/new` handler ended; on success the session is tracked with its updates
    /// held until the response has been written (the caller then calls
    /// [`Inner::release`]). Returns updates that no session claimed, to be sent now.
    pub(crate) fn end_create(&self, created: Option<SessionId>) -> Vec<SessionNotification> {
        let mut s = lock(&self.sessions);
        s.creating = s.creating.saturating_sub(1);
        if let Some(id) = created {
            let held = s.unclaimed.remove(&id).unwrap_or_default();
            let held = held.into_iter().map(|n| (n, None)).collect();
            s.known.insert(id, Session::new(Some(held)));
        }
        if s.creating == 0 {
            s.unclaimed.drain().flat_map(|(_, v)| v).collect()
        } else {
            Vec::new()
        }
    }

    /// Sends held updates of a session whose `session/new` response was written, then lets
    /// its updates through directly.
    pub(crate) async fn release(&self, id: SessionId) {
        loop {
            let batch = {
                let mut s = lock(&self.sessions);
                let Some(session) = s.known.get_mut(&id) else {
                    return;
                };
                match session.held.as_mut() {
                    Some(held) if !held.is_empty() => std::mem::take(&mut **held),
                    _ => {
                        session.held = None;
                        return;
                    }
                }
            };
            for (n, guard) in batch {
                let _ = self.peer.notify(SessionNotification::METHOD, &n).await;
                drop(guard);
            }
        }
    }

    /// Sends (or holds) one `session/update`. An `async` block rather than an `async fn`,
    /// which would keep a second copy of `n` in its future.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn's future holds its arguments twice"
    )]
    pub(crate) fn send_update(
        &self,
        n: SessionNotification,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        async move {
            if let Some(recorder) = &self.recorder
                && let Some(work) = recorder.note(&n, || lock(&self.sessions).creating > 0)
            {
                // Boxed: the store's write is a large future, and every streamed update's future
                // (and each copy of it on the way up) would carry it.
                Box::pin(recorder.follow_up(&n.session_id, work)).await;
            }
            let guard = {
                let mut s = lock(&self.sessions);
                let creating = s.creating > 0;
                match s.known.get_mut(&n.session_id) {
                    Some(session) => {
                        let guard = session.sending().enter();
                        match session.held.as_mut() {
                            Some(held) => {
                                held.push((n, Some(guard)));
                                return Ok(());
                            }
                            None => Some(guard),
                        }
                    }
                    None if creating => {
                        s.unclaimed.entry(n.session_id.clone()).or_default().push(n);
                        return Ok(());
                    }
                    None => None,
                }
            };
            // As a value: a client in this process (a dialect translation on a memory pair)
            // takes it without JSON; on any other transport it is written as ever.
            // Written as text, a plain text chunk is written by hand, as serde would.
            let fast: fn(&SessionNotification, &mut Vec<u8>) -> bool =
                SessionNotification::write_text_chunk;
            let result = self
                .peer
                .notify_value_with(SessionNotification::METHOD, n, Some(fast))
                .await;
            drop(guard);
            result
        }
    }

    /// The session's current cancellation token.
    pub(crate) fn cancel_token(&self, id: &SessionId) -> Option<CancellationToken> {
        lock(&self.sessions)
            .known
            .get_mut(id)
            .map(Session::cancel_token)
    }

    /// A prompt starts: takes its read number, returns its fresh token and the session's
    /// send counter, and wakes a waiting `session/cancel`.
    pub(crate) fn start_prompt(
        &self,
        id: &SessionId,
    ) -> Option<(CancellationToken, Arc<InFlight>)> {
        let mut s = lock(&self.sessions);
        let seq = self.awaiting.take_prompt(id);
        let session = s.known.get_mut(id)?;
        if session.running.is_none() {
            session.cancel = None;
        }
        session.running = Some(seq);
        if let Some(started) = &session.started {
            started.notify_waiters();
        }
        Some((session.cancel_token(), session.sending().clone()))
    }

    /// A prompt ended (or was dropped): the next one gets a fresh token.
    pub(crate) fn end_prompt(&self, id: &SessionId) {
        if let Some(session) = lock(&self.sessions).known.get_mut(id) {
            session.running = None;
            session.cancel = None;
        }
    }

    /// Cancels the session's running prompt if it was read before the cancel numbered
    /// `cancel_seq`; `Some(Err(notify))` if such a prompt was read but has not started.
    fn cancel_running(&self, id: &SessionId, cancel_seq: u64) -> Option<Result<(), Arc<Notify>>> {
        let mut s = lock(&self.sessions);
        let session = s.known.get_mut(id)?;
        if session.running.is_some_and(|seq| seq < cancel_seq) {
            session.cancel_token().cancel();
            return Some(Ok(()));
        }
        let waiting = lock(&self.awaiting.announced)
            .get(id)
            .and_then(|q| q.front().copied())
            .is_some_and(|seq| seq < cancel_seq);
        waiting.then(|| Err(session.started()))
    }

    /// `session/cancel`: signals the token of the session's prompt read before it. That
    /// prompt may not have started yet (requests run on their own tasks): wait for it
    /// (bounded). A cancel with no prompt read before it is dropped, so it cannot hit a
    /// later prompt. Returns whether a prompt was cancelled.
    pub(crate) async fn cancel(&self, id: &SessionId) -> bool {
        let cancel_seq = self.awaiting.take_cancel(id);
        let deadline = tokio::time::Instant::now() + CANCEL_GRACE;
        loop {
            let started = match self.cancel_running(id, cancel_seq) {
                None => return false,
                Some(Ok(())) => return true,
                Some(Err(started)) => started,
            };
            let notified = started.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.cancel_running(id, cancel_seq) {
                None => return false,
                Some(Ok(())) => return true,
                Some(Err(_)) => {}
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thousands of idle sessions cost only their map entries: the token, the send counter
    /// and the notifier are made when first needed, and the token handed out is the one a
    /// later `session/cancel` cancels.
    #[test]
    fn an_idle_session_allocates_nothing_until_used() {
        // Six words: every field is a pointer or a small option (the map pays this per entry).
        assert!(std::mem::size_of::<Session>() <= 48);
        let mut session = Session::new(None);
        assert!(session.cancel.is_none() && session.sending.is_none());
        assert!(session.started.is_none());
        let token = session.cancel_token();
        assert!(!token.is_cancelled());
        session.cancel_token().cancel();
        assert!(token.is_cancelled());
        let counter = session.sending().clone();
        assert!(Arc::ptr_eq(&counter, session.sending()));
    }
}
