//! [`AgentHandle`]: typed calls to every v1 agent method, each with its timeout
//! ([`RequestTimeouts`]), and prompt turns as streams ([`crate::stream`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use acp_rpc::{CallOptions, Error, Peer};
#[cfg(feature = "unstable_session_archive")]
use acp_types::v1::{
    ArchiveSessionRequest, ArchiveSessionResponse, UnarchiveSessionRequest,
    UnarchiveSessionResponse,
};
#[cfg(feature = "unstable_auth_status")]
use acp_types::v1::{AuthStatusRequest, AuthStatusResponse};
use acp_types::v1::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, LogoutRequest, LogoutResponse, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
#[cfg(feature = "unstable_llm_providers")]
use acp_types::v1::{
    DisableProviderRequest, DisableProviderResponse, ListProvidersRequest, ListProvidersResponse,
    SetProviderRequest, SetProviderResponse,
};
#[cfg(feature = "unstable_session_fork")]
use acp_types::v1::{ForkSessionRequest, ForkSessionResponse};
#[cfg(feature = "unstable_mcp_over_acp")]
use acp_types::v1::{MessageMcpNotification, MessageMcpRequest, MessageMcpResponse};
#[cfg(feature = "unstable_session_status")]
use acp_types::v1::{SessionStatusRequest, SessionStatusResponse};
#[cfg(feature = "unstable_session_model")]
use acp_types::v1::{SetSessionModelRequest, SetSessionModelResponse};
#[cfg(feature = "unstable_session_set_title")]
use acp_types::v1::{SetSessionTitleRequest, SetSessionTitleResponse};
use acp_types::{NotificationMethod, RequestMethod};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::stream::{
    LoadedSession, PROMPT_STREAM_BUFFER, PromptStream, Routed, SessionEvent, SessionUpdates,
    Subscribers,
};

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
    /// they reach [`Client::session_update`](crate::Client::session_update)). See [`AgentHandle::load_session_history`] to
    /// get them with the answer.
    pub async fn load_session(
        &self,
        params: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, Error> {
        self.request(&params).await
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
        let task = tokio::spawn(async move {
            let result = handle.load_session(params).await;
            let _ = tx.send(Routed::Loaded(result)).await;
        });
        SessionUpdates {
            rx,
            task,
            subscribers: self.subscribers.clone(),
            key,
            ended: false,
        }
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

    /// `session/set_title` (unstable, feature `unstable_session_set_title`; agents advertise
    /// it with `sessionCapabilities.title`). Returns the title as the agent stored it.
    #[cfg(feature = "unstable_session_set_title")]
    pub async fn set_session_title(
        &self,
        params: SetSessionTitleRequest,
    ) -> Result<SetSessionTitleResponse, Error> {
        self.request(&params).await
    }

    /// `session/set_model` (unstable, feature `unstable_session_model`): switch to one of the
    /// models the agent listed in `models` of `session/new` or `session/load`.
    #[cfg(feature = "unstable_session_model")]
    pub async fn set_session_model(
        &self,
        params: SetSessionModelRequest,
    ) -> Result<SetSessionModelResponse, Error> {
        self.request(&params).await
    }

    /// `session/fork` (unstable, feature `unstable_session_fork`; agents advertise it with
    /// `sessionCapabilities.fork`): a new session starting from an existing one's history.
    /// Its updates reach [`Client::session_update`](crate::Client::session_update) like any session's.
    #[cfg(feature = "unstable_session_fork")]
    pub async fn fork_session(
        &self,
        params: ForkSessionRequest,
    ) -> Result<ForkSessionResponse, Error> {
        self.request(&params).await
    }

    /// `session/status` (unstable, feature `unstable_session_status`; advertised with
    /// `sessionCapabilities.status`): whether the agent holds the session in memory. A
    /// snapshot, with no side effect: an `open` session still needs `session/load` or
    /// `session/resume` on this connection before a prompt.
    #[cfg(feature = "unstable_session_status")]
    pub async fn session_status(
        &self,
        params: SessionStatusRequest,
    ) -> Result<SessionStatusResponse, Error> {
        self.request(&params).await
    }

    /// `session/archive` (unstable, feature `unstable_session_archive`; advertised with
    /// `sessionCapabilities.archive`): hide a session from default `session/list` results
    /// (an active one is closed).
    #[cfg(feature = "unstable_session_archive")]
    pub async fn archive_session(
        &self,
        params: ArchiveSessionRequest,
    ) -> Result<ArchiveSessionResponse, Error> {
        self.request(&params).await
    }

    /// `session/unarchive` (unstable, feature `unstable_session_archive`): list a session by
    /// default again (it is not loaded).
    #[cfg(feature = "unstable_session_archive")]
    pub async fn unarchive_session(
        &self,
        params: UnarchiveSessionRequest,
    ) -> Result<UnarchiveSessionResponse, Error> {
        self.request(&params).await
    }

    /// `auth/status` (unstable, feature `unstable_auth_status`; advertised with
    /// `auth.status`): whether the user must sign in before starting sessions, and the
    /// accounts the agent has configured. Changes arrive through
    /// [`Client::auth_status_update`](crate::Client::auth_status_update).
    #[cfg(feature = "unstable_auth_status")]
    pub async fn auth_status(&self) -> Result<AuthStatusResponse, Error> {
        self.request(&AuthStatusRequest::new()).await
    }

    /// `providers/list` (unstable, feature `unstable_llm_providers`; agents advertise the
    /// provider methods with `providers`): the model providers the client may configure.
    #[cfg(feature = "unstable_llm_providers")]
    pub async fn list_providers(&self) -> Result<ListProvidersResponse, Error> {
        self.request(&ListProvidersRequest::new()).await
    }

    /// `providers/set` (unstable, feature `unstable_llm_providers`): point one provider at
    /// the client's endpoint (replaces its whole configuration).
    #[cfg(feature = "unstable_llm_providers")]
    pub async fn set_provider(
        &self,
        params: SetProviderRequest,
    ) -> Result<SetProviderResponse, Error> {
        self.request(&params).await
    }

    /// `providers/disable` (unstable, feature `unstable_llm_providers`): disable a provider
    /// that is not `required`.
    #[cfg(feature = "unstable_llm_providers")]
    pub async fn disable_provider(
        &self,
        params: DisableProviderRequest,
    ) -> Result<DisableProviderResponse, Error> {
        self.request(&params).await
    }

    /// `mcp/message` (request; unstable, feature `unstable_mcp_over_acp`): one inner MCP
    /// request to a server the agent declared with an `acp` entry of `mcpServers` (the
    /// unusual direction: usually the agent calls the client's servers, reaching
    /// [`Client::mcp_message`](crate::Client::mcp_message)). The result is the MCP server's own answer, a result or an
    /// MCP error; an `Err` is an ACP failure (unknown server, malformed message).
    #[cfg(feature = "unstable_mcp_over_acp")]
    pub async fn mcp_message(
        &self,
        params: MessageMcpRequest,
    ) -> Result<MessageMcpResponse, Error> {
        self.request(&params).await
    }

    /// `mcp/message` (notification; unstable, feature `unstable_mcp_over_acp`): an inner MCP
    /// notification about an inner request the agent sent to one of this client's servers
    /// (progress, subscription updates).
    #[cfg(feature = "unstable_mcp_over_acp")]
    pub async fn mcp_message_notification(
        &self,
        notification: MessageMcpNotification,
    ) -> Result<(), Error> {
        self.notify(&notification).await
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

    /// `session/prompt`: the plain request. Updates reach [`Client::session_update`](crate::Client::session_update); see
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
