//! The connection to an agent: [`ClientConnection`], the typed [`AgentHandle`] (every v1
//! agent method) and [`PromptStream`], a prompt turn as a stream of its updates.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use acp_rpc::{CloseReason, Config, Connection, Error, Peer};
use acp_types::v1::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, LogoutRequest, LogoutResponse, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse, SessionId,
    SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use acp_types::{NotificationMethod, RequestMethod};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::client::{Client, Dispatcher};

/// A running client-side connection to an agent.
///
/// Dropping it does not close the connection; use [`ClientConnection::close`].
#[derive(Clone, Debug)]
pub struct ClientConnection {
    conn: Connection,
    agent: AgentHandle,
}

impl ClientConnection {
    /// Starts serving `client` over `reader`/`writer` (the agent's stdout and stdin). Must
    /// be called inside a Tokio runtime.
    pub fn new<C, R, W>(client: C, reader: R, writer: W, config: Config) -> Self
    where
        C: Client,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::with_client(Arc::new(client), reader, writer, config)
    }

    /// Like [`ClientConnection::new`] with a client shared with other code.
    pub fn with_client<C, R, W>(client: Arc<C>, reader: R, writer: W, config: Config) -> Self
    where
        C: Client,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let subscribers = Subscribers::default();
        let dispatcher = Dispatcher {
            client,
            subscribers: subscribers.clone(),
        };
        let conn = Connection::new(reader, writer, dispatcher, config);
        let agent = AgentHandle {
            peer: conn.peer().clone(),
            subscribers,
        };
        ClientConnection { conn, agent }
    }

    /// Starts serving `client` with the default [`Config`].
    pub fn connect<C, R, W>(client: C, reader: R, writer: W) -> Self
    where
        C: Client,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::new(client, reader, writer, Config::default())
    }

    /// The typed handle to the agent (cheap to clone).
    pub fn agent(&self) -> &AgentHandle {
        &self.agent
    }

    /// The underlying JSON-RPC peer.
    pub fn peer(&self) -> &Peer {
        self.conn.peer()
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        self.conn.closed().await
    }

    /// Ends the connection: pending calls fail, queued output is flushed, the agent sees EOF.
    pub fn close(&self) {
        self.conn.close();
    }
}

/// A typed, cloneable handle to the agent: one method per v1 agent method.
#[derive(Clone)]
pub struct AgentHandle {
    peer: Peer,
    subscribers: Subscribers,
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
        self.peer.typed_request(params).await
    }

    /// Sends any v1 notification.
    pub async fn notify<P: NotificationMethod>(&self, params: &P) -> Result<(), Error> {
        self.peer.notify(P::METHOD, params).await
    }

    /// `initialize`.
    pub async fn initialize(&self, params: InitializeRequest) -> Result<InitializeResponse, Error> {
        self.request(&params).await
    }

    /// `authenticate`.
    pub async fn authenticate(
        &self,
        params: AuthenticateRequest,
    ) -> Result<AuthenticateResponse, Error> {
        self.request(&params).await
    }

    /// `logout`.
    pub async fn logout(&self, params: LogoutRequest) -> Result<LogoutResponse, Error> {
        self.request(&params).await
    }

    /// `session/new`.
    pub async fn new_session(
        &self,
        params: NewSessionRequest,
    ) -> Result<NewSessionResponse, Error> {
        self.request(&params).await
    }

    /// `session/load` (the agent replays history as `session/update`s before answering;
    /// they reach [`Client::session_update`]). See [`AgentHandle::load_session_history`] to
    /// get them with the answer.
    pub async fn load_session(
        &self,
        params: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, Error> {
        self.request(&params).await
    }

    /// `session/load` with the replayed history: every `session/update` of the session that
    /// arrived before the answer, in order (also passed to [`Client::session_update`]).
    ///
    /// The session's route is installed before the request is written, so no replayed update
    /// can slip past it, and acp-rpc's ordering guarantee (a response is delivered after the
    /// handlers of the notifications read before it) makes the history complete when the
    /// answer arrives. The history is held in memory.
    pub async fn load_session_history(
        &self,
        params: LoadSessionRequest,
    ) -> Result<LoadedSession, Error> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let key = self.subscribers.subscribe(params.session_id.clone(), tx);
        let route = Route(&self.subscribers, key);
        let response = self.load_session(params).await;
        drop(route);
        let mut history = Vec::new();
        while let Ok(event) = rx.try_recv() {
            if let PromptEvent::Update(update) = event {
                history.push(update);
            }
        }
        Ok(LoadedSession {
            response: response?,
            history,
        })
    }

    /// `session/list`.
    pub async fn list_sessions(
        &self,
        params: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        self.request(&params).await
    }

    /// `session/resume`.
    pub async fn resume_session(
        &self,
        params: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, Error> {
        self.request(&params).await
    }

    /// `session/close`.
    pub async fn close_session(
        &self,
        params: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        self.request(&params).await
    }

    /// `session/delete`.
    pub async fn delete_session(
        &self,
        params: DeleteSessionRequest,
    ) -> Result<DeleteSessionResponse, Error> {
        self.request(&params).await
    }

    /// `session/set_mode`.
    pub async fn set_mode(
        &self,
        params: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        self.request(&params).await
    }

    /// `session/set_config_option`.
    pub async fn set_config_option(
        &self,
        params: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        self.request(&params).await
    }

    /// `session/prompt`: the plain request. Updates reach [`Client::session_update`]; see
    /// [`AgentHandle::prompt_stream`] to receive them with the result.
    pub async fn prompt(&self, params: PromptRequest) -> Result<PromptResponse, Error> {
        self.request(&params).await
    }

    /// `session/cancel` (a notification): asks the agent to end the session's turn; the
    /// pending prompt then answers with `stopReason: "cancelled"`.
    pub async fn cancel(&self, params: CancelNotification) -> Result<(), Error> {
        self.notify(&params).await
    }

    /// An extension request (`method` should start with `_`), raw params and result.
    pub async fn ext_method(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.peer.request(method, &params).await
    }

    /// An extension notification (`method` should start with `_`).
    pub async fn ext_notification(&self, method: &str, params: Value) -> Result<(), Error> {
        self.peer.notify(method, &params).await
    }

    /// `session/prompt` as a stream: every `session/update` of that session that arrives
    /// while the turn runs, in order, then [`PromptEvent::Done`] with the result.
    ///
    /// Completeness relies on acp-rpc's **ordering guarantee**: the response to a request is
    /// delivered only after the handlers of all notifications that arrived before it have
    /// completed, so every update the agent wrote before its prompt response is in the stream
    /// before `Done`. Updates are also passed to [`Client::session_update`] as usual. The
    /// stream buffers without bound (a bounded buffer would stall the connection's
    /// notification worker); consume it. Dropping the stream abandons the request (acp-rpc
    /// sends `$/cancel_request`); use [`AgentHandle::cancel`] for a polite stop.
    pub fn prompt_stream(&self, params: PromptRequest) -> PromptStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let key = self
            .subscribers
            .subscribe(params.session_id.clone(), tx.clone());
        let handle = self.clone();
        let task = tokio::spawn(async move {
            let result = handle.prompt(params).await;
            let _ = tx.send(PromptEvent::Done(result));
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

/// A session loaded with [`AgentHandle::load_session_history`].
#[derive(Debug)]
pub struct LoadedSession {
    /// The agent's answer (modes, config options).
    pub response: LoadSessionResponse,
    /// The replayed conversation, in the order the agent sent it.
    pub history: Vec<SessionUpdate>,
}

/// A session's update route, removed when dropped (also if the request is abandoned).
struct Route<'a>(&'a Subscribers, (SessionId, u64));

impl Drop for Route<'_> {
    fn drop(&mut self) {
        self.0.unsubscribe(&self.1);
    }
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

/// A prompt turn in progress; see [`AgentHandle::prompt_stream`].
#[derive(Debug)]
pub struct PromptStream {
    rx: mpsc::UnboundedReceiver<PromptEvent>,
    task: tokio::task::JoinHandle<()>,
    subscribers: Subscribers,
    key: (SessionId, u64),
    done: bool,
}

impl PromptStream {
    /// The next event: updates in arrival order, then `Done`, then `None`.
    pub async fn next(&mut self) -> Option<PromptEvent> {
        if self.done {
            return None;
        }
        let event = self.rx.recv().await;
        match &event {
            Some(PromptEvent::Done(_)) | None => {
                self.done = true;
                self.subscribers.unsubscribe(&self.key);
            }
            Some(PromptEvent::Update(_)) => {}
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

type SubscriberMap = HashMap<SessionId, Vec<(u64, mpsc::UnboundedSender<PromptEvent>)>>;

/// Prompt streams waiting for updates, by session.
#[derive(Clone, Default, Debug)]
pub(crate) struct Subscribers {
    inner: Arc<Mutex<SubscriberMap>>,
    next: Arc<AtomicU64>,
}

impl Subscribers {
    fn lock(&self) -> std::sync::MutexGuard<'_, SubscriberMap> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn subscribe(
        &self,
        session: SessionId,
        tx: mpsc::UnboundedSender<PromptEvent>,
    ) -> (SessionId, u64) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock()
            .entry(session.clone())
            .or_default()
            .push((id, tx));
        (session, id)
    }

    fn unsubscribe(&self, key: &(SessionId, u64)) {
        let mut map = self.lock();
        if let Some(list) = map.get_mut(&key.0) {
            list.retain(|(id, _)| *id != key.1);
            if list.is_empty() {
                map.remove(&key.0);
            }
        }
    }

    /// Hands a copy of the update to every stream of its session.
    pub(crate) fn deliver(&self, n: &SessionNotification) {
        let map = self.lock();
        if let Some(list) = map.get(&n.session_id) {
            for (_, tx) in list {
                let _ = tx.send(PromptEvent::Update(n.update.clone()));
            }
        }
    }
}
