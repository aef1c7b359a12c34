//! [`AgentHandle`]: the client's handle to the agent. Its typed calls, one per v1 agent
//! method, are generated (`handle/generated.rs`); here are what they rely on (each
//! request's timeout, [`RequestTimeouts`]) and what the schema cannot say: prompt turns and
//! session loads as streams ([`crate::stream`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use acp_rpc::{CallOptions, Error, Peer};
use acp_types::v1::{
    LoadSessionRequest, NewSessionRequest, NewSessionResponse, PromptRequest, SessionId,
};
use acp_types::{NotificationMethod, RequestMethod};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::stream::{
    LoadedSession, PROMPT_STREAM_BUFFER, PromptStream, Routed, SessionEvent, SessionUpdates,
    Subscribers,
};

#[rustfmt::skip]
mod generated;

/// How long each request to the agent may wait for its answer.
///
/// A silent agent must not keep the application waiting forever, so every request has a
/// timeout by default ([`RequestTimeouts::DEFAULT`]), except those whose answer waits on a
/// person or on work of unbounded length: `session/prompt` (it has cancellation instead),
/// `authenticate` (a login in a browser) and `session/request_permission` (the user's
/// choice). Per-method entries override the default; `None` turns a method's timeout off.
/// A timed-out request fails with `-32001`-style [`acp_rpc::ErrorCode::REQUEST_TIMED_OUT`]
/// and the agent is sent `$/cancel_request` for it.
#[derive(Clone, Debug)]
pub struct RequestTimeouts {
    default: Option<Duration>,
    methods: HashMap<String, Option<Duration>>,
}

impl RequestTimeouts {
    /// The default timeout of a request to the agent.
    pub const DEFAULT: Duration = Duration::from_secs(60);

    /// Methods that wait on a person (or run as long as the work takes): no timeout by
    /// default.
    pub const UNTIMED: &'static [&'static str] = &[
        acp_types::v1::names::SESSION_PROMPT,
        acp_types::v1::names::AUTHENTICATE,
        acp_types::v1::names::SESSION_REQUEST_PERMISSION,
    ];

    /// `default` for every method except [`RequestTimeouts::UNTIMED`] (none for those).
    pub fn new(default: Option<Duration>) -> Self {
        let methods = Self::UNTIMED
            .iter()
            .map(|m| ((*m).to_owned(), None))
            .collect();
        RequestTimeouts { default, methods }
    }

    /// No timeout for any request (the behaviour before timeouts existed).
    pub fn none() -> Self {
        RequestTimeouts {
            default: None,
            methods: HashMap::new(),
        }
    }

    /// Sets the timeout of `method` (`None`: no timeout).
    #[must_use]
    pub fn method(mut self, method: impl Into<String>, timeout: Option<Duration>) -> Self {
        self.methods.insert(method.into(), timeout);
        self
    }

    /// The timeout that applies to `method`.
    pub fn for_method(&self, method: &str) -> Option<Duration> {
        match self.methods.get(method) {
            Some(timeout) => *timeout,
            None => self.default,
        }
    }

    fn options(&self, method: &str) -> CallOptions {
        match self.for_method(method) {
            Some(after) => CallOptions::default().timeout(after),
            None => CallOptions::default(),
        }
    }
}

impl Default for RequestTimeouts {
    /// [`RequestTimeouts::DEFAULT`] for every method except [`RequestTimeouts::UNTIMED`].
    fn default() -> Self {
        Self::new(Some(Self::DEFAULT))
    }
}

/// A typed, cloneable handle to the agent: one method per v1 agent method.
#[derive(Clone)]
pub struct AgentHandle {
    pub(crate) peer: Peer,
    pub(crate) subscribers: Subscribers,
    pub(crate) timeouts: Arc<RequestTimeouts>,
}

impl std::fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHandle")
            .field("peer", &self.peer)
            .finish()
    }
}

impl AgentHandle {
    /// Sends any v1 request and decodes its typed result (a result that does not decode is a
    /// `-32603` error naming the method).
    pub async fn request<P: RequestMethod>(&self, params: &P) -> Result<P::Response, Error>
    where
        P::Response: Send + 'static,
    {
        let options = self.timeouts.options(P::METHOD);
        self.peer.typed_request_with(params, options).await
    }

    /// This handle with other request timeouts (see [`RequestTimeouts`]).
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: RequestTimeouts) -> Self {
        self.timeouts = Arc::new(timeouts);
        self
    }

    /// The request timeouts this handle applies.
    pub fn timeouts(&self) -> &RequestTimeouts {
        &self.timeouts
    }

    /// Sends any v1 notification.
    pub async fn notify<P: NotificationMethod>(&self, params: &P) -> Result<(), Error> {
        self.peer.notify(P::METHOD, params).await
    }

    /// `session/load` as the start of the session's update stream: the replayed history
    /// ([`SessionEvent::Update`]s, in the order the agent sent them), then
    /// [`SessionEvent::Loaded`] with the agent's answer, then the session's live updates
    /// (those of later turns) for as long as the stream is kept.
    ///
    /// The session's route is installed before the request is written, so no replayed
    /// update can slip past it (the official Rust SDK's issue #323), and acp-rpc's ordering
    /// guarantee (a response is delivered after the handlers of the notifications read before
    /// it) puts every replayed update before `Loaded`. One route carries replay and live
    /// updates, so their relative order is the agent's; only an update the agent writes
    /// right after its answer may be seen just before `Loaded` instead of after it.
    ///
    /// Memory is bounded like a [`PromptStream`]'s ([`PROMPT_STREAM_BUFFER`] updates, then
    /// back-pressure): keep reading it while the session is in use, or drop it. Updates
    /// also reach [`Client::session_update`](crate::Client::session_update) as usual.
    pub fn load_session_stream(&self, params: LoadSessionRequest) -> SessionUpdates {
        let (tx, rx) = mpsc::channel(PROMPT_STREAM_BUFFER);
        let key = self
            .subscribers
            .subscribe(params.session_id.clone(), tx.clone());
        let handle = self.clone();
        let sender = tx.clone();
        let task = tokio::spawn(async move {
            let result = handle.load_session(params).await;
            let _ = sender.send(Routed::Loaded(result)).await;
        });
        SessionUpdates {
            rx,
            tx,
            tasks: vec![task],
            subscribers: self.subscribers.clone(),
            key,
            ended: false,
        }
    }

    /// The live updates of a session (one made with `session/new`, or one whose history is
    /// not wanted), from now on, for as long as the stream is kept: the updates of its turns
    /// and those the agent sends between turns (a new command list, a mode change), in the
    /// agent's order. Start turns on it with [`AgentHandle::prompt_on`]: each turn's result
    /// comes as [`SessionEvent::Prompted`] after its updates.
    ///
    /// This is the stream for a client that owns its view of the session in one loop (the
    /// `acp chat` of acp-cli): one route, no update seen twice, none missed between turns.
    /// Memory is bounded like a [`PromptStream`]'s ([`PROMPT_STREAM_BUFFER`] updates, then
    /// back-pressure): keep reading it, and do not await another request to the agent in
    /// the loop that reads it (spawn it). Updates also reach
    /// [`Client::session_update`](crate::Client::session_update) as usual.
    pub fn session_updates(&self, session_id: impl Into<SessionId>) -> SessionUpdates {
        let (tx, rx) = mpsc::channel(PROMPT_STREAM_BUFFER);
        let key = self.subscribers.subscribe(session_id.into(), tx.clone());
        SessionUpdates {
            rx,
            tx,
            tasks: Vec::new(),
            subscribers: self.subscribers.clone(),
            key,
            ended: false,
        }
    }

    /// `session/new`, with the new session's updates as a stream from its first one on: the
    /// route is installed before the request is written (for every session, narrowed to the
    /// new one when its id arrives, in one step), so the updates an agent sends right after
    /// its answer (a command list, a title) are on the stream, not missed. Then as
    /// [`AgentHandle::session_updates`].
    ///
    /// While the answer is awaited the route holds at most [`PROMPT_STREAM_BUFFER`] updates
    /// (of every session) and drops what comes past that, rather than make the connection
    /// wait on a stream nobody reads yet.
    pub async fn new_session_stream(
        &self,
        params: NewSessionRequest,
    ) -> Result<(NewSessionResponse, SessionUpdates), Error> {
        let (tx, rx) = mpsc::channel(PROMPT_STREAM_BUFFER);
        // Removed again if the request fails or this future is dropped before the answer.
        let any = AnyRoute {
            subscribers: &self.subscribers,
            id: self.subscribers.subscribe_any(tx.clone()),
        };
        let created = self.new_session(params).await?;
        let key = self
            .subscribers
            .narrow(any.id, created.session_id.clone())
            .ok_or_else(|| Error::internal_error("the session's route was removed"))?;
        let updates = SessionUpdates {
            rx,
            tx,
            tasks: Vec::new(),
            subscribers: self.subscribers.clone(),
            key,
            ended: false,
        };
        Ok((created, updates))
    }

    /// `session/prompt` as a turn of `updates`' session: returns at once, the turn's
    /// updates come on `updates` as they arrive and its result after them, as
    /// [`SessionEvent::Prompted`] (acp-rpc's ordering guarantee, as for
    /// [`AgentHandle::prompt_stream`]). Dropping `updates` abandons the turn (acp-rpc sends
    /// `$/cancel_request`); use [`AgentHandle::cancel`] for a polite stop.
    pub fn prompt_on(&self, updates: &mut SessionUpdates, params: PromptRequest) {
        let handle = self.clone();
        let tx = updates.tx.clone();
        updates.tasks.push(tokio::spawn(async move {
            let result = handle.prompt(params).await;
            let _ = tx.send(Routed::Prompted(result)).await;
        }));
    }

    /// `session/load` with the replayed history collected: every `session/update` of the
    /// session that arrived before the answer, in order (also passed to
    /// [`Client::session_update`](crate::Client::session_update)). A convenience over [`AgentHandle::load_session_stream`]
    /// for a history that fits in memory.
    pub async fn load_session_history(
        &self,
        params: LoadSessionRequest,
    ) -> Result<LoadedSession, Error> {
        let mut stream = self.load_session_stream(params);
        let mut history = Vec::new();
        while let Some(event) = stream.next().await {
            match event {
                SessionEvent::Update(update) => history.push(update),
                // No turn is started on this stream.
                SessionEvent::Prompted(_) => {}
                SessionEvent::Loaded(response) => {
                    return Ok(LoadedSession {
                        response: response?,
                        history,
                    });
                }
            }
        }
        Err(Error::internal_error(
            "session/load ended without an answer",
        ))
    }

    /// An extension request (`method` should start with `_`), raw params and result.
    pub async fn ext_method(&self, method: &str, params: Value) -> Result<Value, Error> {
        let options = self.timeouts.options(method);
        self.peer.request_with(method, &params, options).await
    }

    /// An extension notification (`method` should start with `_`).
    pub async fn ext_notification(&self, method: &str, params: Value) -> Result<(), Error> {
        self.peer.notify(method, &params).await
    }

    /// `session/prompt` as a stream: every `session/update` of that session that arrives
    /// while the turn runs, in order, then [`PromptEvent::Done`](crate::PromptEvent::Done) with the result.
    ///
    /// Completeness relies on acp-rpc's **ordering guarantee**: the response to a request is
    /// delivered only after the handlers of all notifications that arrived before it have
    /// completed, so every update the agent wrote before its prompt response is in the stream
    /// before `Done`. Updates are also passed to [`Client::session_update`](crate::Client::session_update) as usual.
    ///
    /// The stream buffers at most [`PROMPT_STREAM_BUFFER`] updates. When it is full the
    /// connection waits for the stream to be read (back-pressure: its notification worker
    /// and then its reader pause, and the agent's writes block on the full pipe), so memory
    /// stays bounded however fast the agent streams. Keep calling [`PromptStream::next`]
    /// while the turn runs (or drop the stream): awaiting another request to the same agent
    /// without reading a full stream would wait forever. Dropping the stream abandons the
    /// request (acp-rpc sends `$/cancel_request`); use [`AgentHandle::cancel`] for a polite
    /// stop.
    pub fn prompt_stream(&self, params: PromptRequest) -> PromptStream {
        let (tx, rx) = mpsc::channel(PROMPT_STREAM_BUFFER);
        let key = self
            .subscribers
            .subscribe(params.session_id.clone(), tx.clone());
        let handle = self.clone();
        let task = tokio::spawn(async move {
            let result = handle.prompt(params).await;
            let _ = tx.send(Routed::Prompted(result)).await;
        });
        PromptStream {
            rx,
            task,
            subscribers: self.subscribers.clone(),
            key,
            done: false,
        }
    }
}

/// A route of [`Subscribers::subscribe_any`], removed on drop (a no-op once it was narrowed
/// to its session).
struct AnyRoute<'a> {
    subscribers: &'a Subscribers,
    id: u64,
}

impl Drop for AnyRoute<'_> {
    fn drop(&mut self) {
        self.subscribers.unsubscribe_any(self.id);
    }
}
