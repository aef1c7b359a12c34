//! The agent's connection: [`serve`], [`serve_stdio`], [`AgentConnection`], and the
//! dispatcher that routes every v1 agent method to the [`Agent`] with the handshake gate
//! and session bookkeeping.

use std::sync::{Arc, OnceLock};

use acp_rpc::{
    Arrival, CloseReason, Config, Connection, Handler, NotificationContext, Params, RawValue,
    RequestContext, ResponseWritten, to_raw,
};
use acp_types::v1::*;
use acp_types::{NotificationMethod, RequestMethod};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::Error;
use crate::agent::Agent;
use crate::client::ClientHandle;
use crate::context::{AgentContext, PromptContext};
use crate::session::SessionHandle;
use crate::state::{Awaiting, Inner, probe_session};
use crate::store::SessionStore;
use crate::store::record::{Recorder, new_session_meta};
use crate::store::serve as served;

/// A running agent connection.
#[derive(Clone, Debug)]
pub struct AgentConnection {
    conn: Connection,
    client: ClientHandle,
}

impl AgentConnection {
    /// The typed handle to the client.
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    /// Resolves when the connection has ended, with the reason. With a session store, the
    /// connection has let go of it by then (what running turns collected is written first),
    /// even while handles to the connection live on.
    pub async fn closed(&self) -> CloseReason {
        let reason = self.conn.closed().await;
        if let Some(recorder) = &self.client.inner.recorder {
            recorder.release().await;
        }
        reason
    }

    /// Ends the connection.
    pub fn close(&self) {
        self.conn.close();
    }

    pub(crate) fn peer(&self) -> &acp_rpc::Peer {
        self.conn.peer()
    }
}

/// Serves `agent` over a reader/writer pair with the default [`Config`].
pub fn serve<A, R, W>(agent: A, reader: R, writer: W) -> AgentConnection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(agent, reader, writer, Config::default())
}

/// Serves `agent` over stdin/stdout (the usual way an editor runs an agent). When they are
/// pipes or sockets they are driven by tokio's reactor in non-blocking mode, not through the
/// blocking thread pool (see [`acp_rpc::stdio`]), so do not let subprocesses inherit them.
pub fn serve_stdio<A: Agent>(agent: A) -> AgentConnection {
    serve(agent, acp_rpc::stdio::stdin(), acp_rpc::stdio::stdout())
}

/// Serves `agent` with a custom [`Config`] (limits, timeouts, wire tap...). Must be called
/// within a Tokio runtime.
pub fn serve_with<A, R, W>(agent: A, reader: R, writer: W, config: Config) -> AgentConnection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_inner(agent, reader, writer, config, None)
}

/// Serves `agent` with its sessions kept in `store` (see [`crate::store`]): the connection
/// records every session, serves `session/load` (history replayed before the answer),
/// `session/resume`, `session/list`, `session/close` and `session/delete` wherever the agent
/// leaves them at their default, and advertises them in `initialize`. Open the store first
/// ([`crate::store::JsonlStore::open`]) so that an unusable directory is an error at start.
pub fn serve_with_store<A, S, R, W>(
    agent: A,
    store: S,
    reader: R,
    writer: W,
    config: Config,
) -> AgentConnection
where
    A: Agent,
    S: SessionStore,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_inner(agent, reader, writer, config, Some(Arc::new(store)))
}

pub(crate) fn serve_inner<A, R, W>(
    agent: A,
    reader: R,
    writer: W,
    config: Config,
    store: Option<Arc<dyn SessionStore>>,
) -> AgentConnection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let awaiting = Arc::new(Awaiting::default());
    let slot: Arc<OnceLock<Arc<Inner>>> = Arc::default();
    let dispatch = Dispatch {
        agent: Arc::new(agent),
        inner: slot.clone(),
        awaiting: awaiting.clone(),
    };
    let conn = Connection::new(reader, writer, dispatch, config);
    let inner = Arc::new(Inner {
        peer: conn.peer().clone(),
        caps: Default::default(),
        sessions: Default::default(),
        awaiting,
        recorder: store.map(|s| Arc::new(Recorder::new(s))),
        #[cfg(feature = "unstable_auth_status")]
        auth_status_advertised: Default::default(),
        #[cfg(feature = "unstable_mcp_over_acp")]
        mcp_acp_advertised: Default::default(),
    });
    let _ = slot.set(inner.clone());
    if let Some(recorder) = inner.recorder.clone() {
        // The store is let go of when the connection ends, not when the last handle to
        // its state does (see `Recorder::release`).
        let peer = conn.peer().clone();
        tokio::spawn(async move {
            peer.closed().await;
            recorder.release().await;
        });
    }
    AgentConnection {
        conn,
        client: ClientHandle { inner },
    }
}

struct Dispatch<A> {
    agent: Arc<A>,
    inner: Arc<OnceLock<Arc<Inner>>>,
    /// Prompts and cancels numbered in arrival order (the arrival hook feeds it; it exists
    /// before the connection reads its first line).
    awaiting: Arc<Awaiting>,
}

/// Reads typed params, honouring the method's null-as-default rule; `-32602` names the field.
fn parse<P: RequestMethod>(params: &Params) -> Result<P, Error> {
    let text = params.raw().map_or("null", RawValue::get);
    if P::PARAMS_NULL_AS_DEFAULT && text.trim() == "null" {
        acp_rpc::deserialize_params("{}")
    } else {
        params.parse()
    }
}

/// Ends the creation window of a `session/new` (or `session/fork`) even if the request is
/// withdrawn mid-way; set to `None` once the handler returned and the window is ended.
struct Creating(Option<Arc<Inner>>);

impl Drop for Creating {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            flush_stray(&inner, inner.end_create(None));
        }
    }
}

/// Ends the creation window of a `session/new` (or `session/fork`) whose handler returned:
/// a new session's updates are held until the response (`written`) is on the wire, then
/// released in order; updates no new session claimed go out now.
fn end_creating(inner: &Arc<Inner>, created: Option<SessionId>, written: ResponseWritten) {
    flush_stray(inner, inner.end_create(created.clone()));
    if let Some(id) = created {
        let inner = inner.clone();
        tokio::spawn(async move {
            // Written, or the connection is gone: either way nothing need wait any more.
            let _ = written.await;
            inner.release(id).await;
        });
    }
}

/// Sends updates no new session claimed (they name sessions the agent never created here).
fn flush_stray(inner: &Arc<Inner>, stray: Vec<SessionNotification>) {
    if stray.is_empty() {
        return;
    }
    let inner = inner.clone();
    tokio::spawn(async move {
        for n in stray {
            let _ = inner.send_update(n).await;
        }
    });
}

/// An `initialize` whose `protocolVersion` is not a v1 version number (a legacy
/// `"0.0.9"`, a string `"1"`) still gets the spec's answer, the latest version we speak: it
/// is read as version 0, which no agent supports. Any other fault is the original error.
fn unsupported_version(params: &Params, error: Error) -> Result<InitializeRequest, Error> {
    let mut value: serde_json::Value = params.parse().map_err(|_| error.clone())?;
    match value.get_mut("protocolVersion") {
        Some(v) if !v.is_u64() => {
            tracing::debug!(requested = %v, "initialize with a protocolVersion v1 cannot read; answering with the latest");
            *v = serde_json::Value::from(0);
        }
        _ => return Err(error),
    }
    // The peer's own params (version patched), decoded like any request: not a literal.
    serde_json::from_value(value).map_err(|_| error)
}

fn unknown_session(id: &SessionId) -> Error {
    // Error `data` is free-form JSON (no schema type): the session it is about.
    Error::resource_not_found(format!("session not found: {}", id.0))
        .with_data(serde_json::json!({ "sessionId": id }))
}

impl<A: Agent> Dispatch<A> {
    /// The shared state (set right after the connection starts; a message that races
    /// ahead of that waits a moment).
    async fn inner(&self) -> &Arc<Inner> {
        loop {
            if let Some(inner) = self.inner.get() {
                return inner;
            }
            tokio::task::yield_now().await;
        }
    }

    fn known(&self, inner: &Inner, id: &SessionId) -> Result<(), Error> {
        if inner.is_known(id) {
            Ok(())
        } else {
            Err(unknown_session(id))
        }
    }

    async fn request(
        &self,
        rcx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let inner = self.inner().await.clone();
        let cx = AgentContext {
            client: ClientHandle {
                inner: inner.clone(),
            },
            request_id: rcx.id().clone(),
        };
        // A prompt the wire tap numbered (for `session/cancel`) gives its number back if it
        // fails before it starts.
        struct Announced<'a>(&'a Inner, Option<SessionId>);
        impl Drop for Announced<'_> {
            fn drop(&mut self) {
                if let Some(id) = self.1.take() {
                    self.0.awaiting.take_prompt(&id);
                }
            }
        }
        let mut announced = Announced(
            &inner,
            (method == names::SESSION_PROMPT)
                .then(|| params.raw().and_then(|r| probe_session(r.get())))
                .flatten(),
        );
        let agent = &*self.agent;
        if method == names::INITIALIZE {
            let p: InitializeRequest =
                parse(&params).or_else(|e| unsupported_version(&params, e))?;
            let requested = p.protocol_version.clone();
            let caps = p.client_capabilities.clone();
            let mut response = agent.initialize(p, &cx).await?;
            if inner.recorder.is_some() {
                served::advertise(&mut response);
            }
            response.protocol_version =
                ProtocolVersion::negotiate(requested, &[ProtocolVersion::LATEST]);
            #[cfg(feature = "unstable_auth_status")]
            inner.auth_status_advertised.store(
                response.agent_capabilities.auth.status.is_some(),
                std::sync::atomic::Ordering::Release,
            );
            #[cfg(feature = "unstable_mcp_over_acp")]
            inner.mcp_acp_advertised.store(
                response.agent_capabilities.mcp_capabilities.acp,
                std::sync::atomic::Ordering::Release,
            );
            inner.set_capabilities(caps);
            return to_raw(&response);
        }
        if inner.capabilities().is_none() {
            return Err(Error::invalid_request(format!(
                "{method} received before a successful initialize: send initialize first"
            ))
            // Error `data` is free-form JSON (no schema type): the method refused.
            .with_data(serde_json::json!({ "method": method })));
        }
        match method {
            names::AUTHENTICATE => to_raw(&agent.authenticate(parse(&params)?, &cx).await?),
            names::LOGOUT => to_raw(&agent.logout(parse(&params)?, &cx).await?),
            names::SESSION_NEW => {
                let p: NewSessionRequest = parse(&params)?;
                let place = (p.cwd.clone(), p.additional_directories.clone());
                let written = rcx.response_written();
                inner.begin_create();
                let mut creating = Creating(Some(inner.clone()));
                let mut result = agent.new_session(p, &cx).await;
                if let (Ok(response), Some(recorder)) = (&result, &inner.recorder) {
                    let (cwd, dirs) = place;
                    let id = response.session_id.clone();
                    let meta = new_session_meta(id, cwd, dirs, response);
                    if let Err(e) = recorder.created(meta).await {
                        result = Err(Error::internal_error(format!(
                            "the session could not be stored: {e}"
                        )));
                    }
                }
                creating.0 = None;
                let created = result.as_ref().ok().map(|r| r.session_id.clone());
                end_creating(&inner, created, written);
                to_raw(&result?)
            }
            names::SESSION_LOAD => {
                let p: LoadSessionRequest = parse(&params)?;
                let id = p.session_id.clone();
                // Tracked first so history replay (updates before the answer) goes through.
                let was_known = inner.is_known(&id);
                inner.track(id.clone());
                let result = match &inner.recorder {
                    Some(recorder) => served::load(agent, p, &cx, &inner, recorder).await,
                    None => agent.load_session(p, &cx).await,
                };
                if result.is_err() && !was_known {
                    inner.forget(&id);
                }
                to_raw(&result?)
            }
            names::SESSION_LIST => {
                let p = parse(&params)?;
                match &inner.recorder {
                    Some(recorder) => to_raw(&served::list(agent, p, &cx, recorder).await?),
                    None => to_raw(&agent.list_sessions(p, &cx).await?),
                }
            }
            names::SESSION_RESUME => {
                let p: ResumeSessionRequest = parse(&params)?;
                let id = p.session_id.clone();
                let result = match &inner.recorder {
                    Some(recorder) => served::resume(agent, p, &cx, recorder).await?,
                    None => agent.resume_session(p, &cx).await?,
                };
                inner.track(id);
                to_raw(&result)
            }
            names::SESSION_CLOSE => {
                let p: CloseSessionRequest = parse(&params)?;
                self.known(&inner, &p.session_id)?;
                let id = p.session_id.clone();
                let result = match &inner.recorder {
                    Some(recorder) => served::close(agent, p, &cx, recorder).await?,
                    None => agent.close_session(p, &cx).await?,
                };
                inner.forget(&id);
                to_raw(&result)
            }
            names::SESSION_DELETE => {
                let p: DeleteSessionRequest = parse(&params)?;
                let id = p.session_id.clone();
                let result = match &inner.recorder {
                    Some(recorder) => served::delete(agent, p, &cx, recorder).await?,
                    None => agent.delete_session(p, &cx).await?,
                };
                inner.forget(&id);
                to_raw(&result)
            }
            names::SESSION_SET_MODE => {
                let p: SetSessionModeRequest = parse(&params)?;
                self.known(&inner, &p.session_id)?;
                let (id, mode) = (p.session_id.clone(), p.mode_id.clone());
                let response = agent.set_session_mode(p, &cx).await?;
                if let Some(recorder) = &inner.recorder {
                    served::mode_set(recorder, &id, mode).await;
                }
                to_raw(&response)
            }
            names::SESSION_SET_CONFIG_OPTION => {
                let p: SetSessionConfigOptionRequest = parse(&params)?;
                self.known(&inner, &p.session_id)?;
                let id = p.session_id.clone();
                let response = agent.set_session_config_option(p, &cx).await?;
                if let Some(recorder) = &inner.recorder {
                    served::config_set(recorder, &id, response.config_options.clone()).await;
                }
                to_raw(&response)
            }
            names::SESSION_PROMPT => {
                let p: PromptRequest = parse(&params)?;
                let id = p.session_id.clone();
                announced.1 = None;
                let started = inner.start_prompt(&id);
                let Some((token, sending)) = started else {
                    return Err(unknown_session(&id));
                };
                // Ends the prompt even if the request is withdrawn and this future dropped.
                // (The turn's recording is written even then.)
                struct Running<'a>(&'a Inner, SessionId, Option<Arc<Recorder>>);
                impl Drop for Running<'_> {
                    fn drop(&mut self) {
                        self.0.end_prompt(&self.1);
                        if let Some(recorder) = self.2.take() {
                            let id = self.1.clone();
                            tokio::spawn(async move { recorder.end_prompt(&id, None).await });
                        }
                    }
                }
                let mut running = Running(&inner, id.clone(), inner.recorder.clone());
                if let Some(recorder) = &running.2 {
                    recorder.begin_prompt(&id, p.prompt.clone());
                }
                let pcx = PromptContext {
                    session: SessionHandle::new(cx.client.clone(), id.clone()),
                    cx,
                    token,
                };
                let result = agent.prompt(p, &pcx).await;
                // Every update of this prompt is written before its response.
                sending.wait_idle().await;
                if let Some(recorder) = running.2.take() {
                    let stop = result.as_ref().ok().map(|r| &r.stop_reason);
                    recorder.end_prompt(&id, stop).await;
                }
                to_raw(&result?)
            }
            #[cfg(feature = "unstable_session_set_title")]
            m if m == SetSessionTitleRequest::METHOD => {
                to_raw(&agent.set_session_title(parse(&params)?, &cx).await?)
            }
            #[cfg(feature = "unstable_session_model")]
            m if m == SetSessionModelRequest::METHOD => {
                let p: SetSessionModelRequest = parse(&params)?;
                self.known(&inner, &p.session_id)?;
                to_raw(&agent.set_session_model(p, &cx).await?)
            }
            #[cfg(feature = "unstable_session_fork")]
            m if m == ForkSessionRequest::METHOD => {
                // Like `session/new`: updates for the new session wait for the answer.
                let p: ForkSessionRequest = parse(&params)?;
                // With a store, the request is kept to record the new session (it starts
                // from a copy of the source's stored history).
                let request = inner.recorder.is_some().then(|| p.clone());
                let written = rcx.response_written();
                inner.begin_create();
                let mut creating = Creating(Some(inner.clone()));
                let mut result = agent.fork_session(p, &cx).await;
                if let (Ok(response), Some(recorder), Some(request)) =
                    (&result, &inner.recorder, &request)
                {
                    let meta = crate::store::record::forked_session_meta(request, response);
                    if let Err(e) = recorder.forked(meta, &request.session_id).await {
                        result = Err(Error::internal_error(format!(
                            "the forked session could not be stored: {e}"
                        )));
                    }
                }
                creating.0 = None;
                let created = result.as_ref().ok().map(|r| r.session_id.clone());
                end_creating(&inner, created, written);
                to_raw(&result?)
            }
            #[cfg(feature = "unstable_session_status")]
            m if m == SessionStatusRequest::METHOD => {
                to_raw(&agent.session_status(parse(&params)?, &cx).await?)
            }
            #[cfg(feature = "unstable_session_archive")]
            m if m == ArchiveSessionRequest::METHOD => {
                let p: ArchiveSessionRequest = parse(&params)?;
                let id = p.session_id.clone();
                let result = agent.archive_session(p, &cx).await?;
                // An archived session is closed: its prompts are cancelled, its id forgotten.
                inner.forget(&id);
                to_raw(&result)
            }
            #[cfg(feature = "unstable_session_archive")]
            m if m == UnarchiveSessionRequest::METHOD => {
                to_raw(&agent.unarchive_session(parse(&params)?, &cx).await?)
            }
            #[cfg(feature = "unstable_llm_providers")]
            m if m == ListProvidersRequest::METHOD => {
                to_raw(&agent.list_providers(parse(&params)?, &cx).await?)
            }
            #[cfg(feature = "unstable_llm_providers")]
            m if m == SetProviderRequest::METHOD => {
                to_raw(&agent.set_provider(parse(&params)?, &cx).await?)
            }
            #[cfg(feature = "unstable_llm_providers")]
            m if m == DisableProviderRequest::METHOD => {
                to_raw(&agent.disable_provider(parse(&params)?, &cx).await?)
            }
            #[cfg(feature = "unstable_auth_status")]
            m if m == AuthStatusRequest::METHOD => {
                to_raw(&agent.auth_status(parse(&params)?, &cx).await?)
            }
            #[cfg(feature = "unstable_mcp_over_acp")]
            m if m == MessageMcpRequest::METHOD => {
                to_raw(&agent.mcp_message(parse(&params)?, &cx).await?)
            }
            m if m.starts_with('_') => {
                let value: serde_json::Value = params.parse()?;
                to_raw(&agent.ext_method(m, value, &cx).await?)
            }
            _ => Err(Error::method_not_found(method)),
        }
    }
}

#[acp_rpc::async_trait]
impl<A: Agent> Handler for Dispatch<A> {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.request(cx, method, params).await
    }

    fn arrived(&self, arrival: Arrival<'_>) {
        self.awaiting.announce(arrival);
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let inner = self.inner().await;
        #[cfg(feature = "unstable_mcp_over_acp")]
        if method == MessageMcpNotification::METHOD {
            let p: MessageMcpNotification = params.parse()?;
            self.agent.mcp_message_notification(p).await;
            return Ok(());
        }
        if method == CancelNotification::METHOD {
            let p: CancelNotification = params.parse()?;
            if !inner.cancel(&p.session_id).await {
                tracing::debug!(session = %p.session_id.0, "session/cancel with no running prompt");
            }
            self.agent.cancel(p).await;
            Ok(())
        } else if method.starts_with('_') {
            let value: serde_json::Value = params.parse()?;
            self.agent.ext_notification(method, value).await;
            Ok(())
        } else {
            Err(Error::method_not_found(method))
        }
    }
}
