//! The agent's dispatcher: the handshake gate, then every incoming message routed to the
//! [`Agent`] by the generated `route_request`/`route_notification`, and the hooks those call
//! for the methods around which the connection keeps bookkeeping (sessions known and
//! created, the store, prompts and their cancellation).

use std::sync::{Arc, OnceLock};

use acp_rpc::{
    Arrival, Handler, NotificationContext, Params, RawValue, RequestContext, ResponseWritten,
};
use acp_types::v1::*;

use crate::Error;
use crate::agent::Agent;
use crate::context::{AgentContext, PromptContext};
use crate::handle::ClientHandle;
use crate::record::{Recorder, new_session_meta};
use crate::session::SessionHandle;
use crate::state::{Awaiting, Inner, session_id_of};

#[rustfmt::skip]
mod generated;
mod stored;

/// Routes the client's messages to the [`Agent`].
pub(crate) struct Dispatch<A> {
    pub(crate) agent: Arc<A>,
    pub(crate) inner: Arc<OnceLock<Arc<Inner>>>,
    /// Prompts and cancels numbered in arrival order (the arrival hook feeds it; it exists
    /// before the connection reads its first line).
    pub(crate) awaiting: Arc<Awaiting>,
}

/// One request being served: its context, and what the hooks need of the connection.
pub(crate) struct Incoming {
    pub(crate) cx: AgentContext,
    inner: Arc<Inner>,
    rcx: RequestContext,
    /// A `session/prompt` numbered on arrival (for `session/cancel`) gives its number back
    /// if it fails before it starts.
    announced: Option<SessionId>,
}

impl Incoming {
    /// `-32002` unless this connection knows session `id`.
    pub(crate) fn known(&self, id: &SessionId) -> Result<(), Error> {
        if self.inner.is_known(id) {
            Ok(())
        } else {
            Err(unknown_session(id))
        }
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        if let Some(id) = self.announced.take() {
            self.inner.awaiting.take_prompt(&id);
        }
    }
}

fn unknown_session(id: &SessionId) -> Error {
    // Error `data` is free-form JSON (no schema type): the session it is about.
    Error::resource_not_found(format!("session not found: {}", id.0))
        .with_data(serde_json::json!({ "sessionId": id }))
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

    /// Runs a `session/new` or `session/fork` handler inside a creation window: updates for
    /// the new session wait until the answer is written; `record` stores the new session.
    async fn creating<R, F, S>(
        &self,
        call: &Incoming,
        id_of: fn(&R) -> &SessionId,
        handler: F,
        record: S,
    ) -> Result<R, Error>
    where
        F: Future<Output = Result<R, Error>>,
        S: AsyncFnOnce(&Arc<Recorder>, &R) -> Result<(), Error>,
    {
        let inner = &call.inner;
        let written = call.rcx.response_written();
        inner.begin_create();
        let mut creating = Creating(Some(inner.clone()));
        let mut result = handler.await;
        if let (Ok(response), Some(recorder)) = (&result, &inner.recorder)
            && let Err(e) = record(recorder, response).await
        {
            result = Err(e);
        }
        creating.0 = None;
        let created = result.as_ref().ok().map(|r| id_of(r).clone());
        end_creating(inner, created, written);
        result
    }

    pub(crate) async fn initialize_hook(
        &self,
        call: &mut Incoming,
        params: Params,
    ) -> Result<InitializeResponse, Error> {
        let p: InitializeRequest = params
            .parse_request()
            .or_else(|e| unsupported_version(&params, e))?;
        let requested = p.protocol_version.clone();
        let caps = p.client_capabilities.clone();
        let inner = call.inner.clone();
        let mut response = self.agent.initialize(p, &call.cx).await?;
        if inner.recorder.is_some() {
            stored::advertise(&mut response);
        }
        response.protocol_version =
            ProtocolVersion::negotiate(requested, &[ProtocolVersion::LATEST]);
        inner.set_capabilities(caps, response.agent_capabilities.clone());
        Ok(response)
    }

    pub(crate) async fn new_session_hook(
        &self,
        call: &mut Incoming,
        p: NewSessionRequest,
    ) -> Result<NewSessionResponse, Error> {
        let (cwd, dirs) = (p.cwd.clone(), p.additional_directories.clone());
        let handler = self.agent.new_session(p, &call.cx);
        let record = async |recorder: &Arc<Recorder>, response: &NewSessionResponse| {
            let meta = new_session_meta(response.session_id.clone(), cwd, dirs, response);
            recorder.created(meta).await.map_err(|e| {
                Error::internal_error(format!("the session could not be stored: {}", e.for_peer()))
            })
        };
        self.creating(call, |r| &r.session_id, handler, record)
            .await
    }

    pub(crate) async fn load_session_hook(
        &self,
        call: &mut Incoming,
        p: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, Error> {
        let inner = call.inner.clone();
        let id = p.session_id.clone();
        // Tracked first so history replay (updates before the answer) goes through.
        let was_known = inner.is_known(&id);
        inner.track(id.clone());
        let result = match &inner.recorder {
            Some(recorder) => stored::load(&*self.agent, p, &call.cx, &inner.peer, recorder).await,
            None => self.agent.load_session(p, &call.cx).await,
        };
        if result.is_err() && !was_known {
            inner.forget(&id);
        }
        result
    }

    pub(crate) async fn list_sessions_hook(
        &self,
        call: &mut Incoming,
        p: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        match &call.inner.recorder {
            Some(recorder) => stored::list(&*self.agent, p, &call.cx, recorder).await,
            None => self.agent.list_sessions(p, &call.cx).await,
        }
    }

    pub(crate) async fn resume_session_hook(
        &self,
        call: &mut Incoming,
        p: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, Error> {
        let id = p.session_id.clone();
        let result = match &call.inner.recorder {
            Some(recorder) => stored::resume(&*self.agent, p, &call.cx, recorder).await?,
            None => self.agent.resume_session(p, &call.cx).await?,
        };
        call.inner.track(id);
        Ok(result)
    }

    pub(crate) async fn close_session_hook(
        &self,
        call: &mut Incoming,
        p: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        let id = p.session_id.clone();
        let result = match &call.inner.recorder {
            Some(recorder) => stored::close(&*self.agent, p, &call.cx, recorder).await?,
            None => self.agent.close_session(p, &call.cx).await?,
        };
        call.inner.forget(&id);
        Ok(result)
    }

    pub(crate) async fn delete_session_hook(
        &self,
        call: &mut Incoming,
        p: DeleteSessionRequest,
    ) -> Result<DeleteSessionResponse, Error> {
        let id = p.session_id.clone();
        let result = match &call.inner.recorder {
            Some(recorder) => stored::delete(&*self.agent, p, &call.cx, recorder).await?,
            None => self.agent.delete_session(p, &call.cx).await?,
        };
        call.inner.forget(&id);
        Ok(result)
    }

    pub(crate) async fn set_session_mode_hook(
        &self,
        call: &mut Incoming,
        p: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let (id, mode) = (p.session_id.clone(), p.mode_id.clone());
        let response = self.agent.set_session_mode(p, &call.cx).await?;
        if let Some(recorder) = &call.inner.recorder {
            stored::mode_set(recorder, &id, mode).await;
        }
        Ok(response)
    }

    pub(crate) async fn set_session_config_option_hook(
        &self,
        call: &mut Incoming,
        p: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let id = p.session_id.clone();
        let response = self.agent.set_session_config_option(p, &call.cx).await?;
        if let Some(recorder) = &call.inner.recorder {
            stored::config_set(recorder, &id, response.config_options.clone()).await;
        }
        Ok(response)
    }

    pub(crate) async fn prompt_hook(
        &self,
        call: &mut Incoming,
        p: PromptRequest,
    ) -> Result<PromptResponse, Error> {
        let inner = call.inner.clone();
        let id = p.session_id.clone();
        call.announced = None;
        let Some((token, sending)) = inner.start_prompt(&id) else {
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
        if let Some(recorder) = running.2.clone() {
            // A store shared by processes claims the session for this turn first; another
            // process writing it refuses the prompt (and nothing of it is recorded).
            if let Err(e) = recorder.claim(&id).await {
                running.2 = None;
                return Err(e.into());
            }
            recorder.begin_prompt(&id, p.prompt.clone());
        }
        let pcx = PromptContext {
            session: SessionHandle::new(call.cx.client.clone(), id.clone()),
            cx: call.cx.clone(),
            token,
        };
        let result = self.agent.prompt(p, &pcx).await;
        // Every update of this prompt is written before its response.
        sending.wait_idle().await;
        if let Some(recorder) = running.2.take() {
            let stop = result.as_ref().ok().map(|r| &r.stop_reason);
            recorder.end_prompt(&id, stop).await;
        }
        result
    }

    /// `session/cancel`: the prompt's token is signalled (and its pending permission
    /// questions answered `cancelled`) before the agent hears of it.
    pub(crate) async fn cancel_hook(&self, p: CancelNotification) -> Result<(), Error> {
        if !self.inner().await.cancel(&p.session_id).await {
            tracing::debug!(session = %p.session_id.0, "session/cancel with no running prompt");
        }
        self.agent.cancel(p).await;
        Ok(())
    }

    #[cfg(feature = "unstable_session_fork")]
    pub(crate) async fn fork_session_hook(
        &self,
        call: &mut Incoming,
        p: ForkSessionRequest,
    ) -> Result<ForkSessionResponse, Error> {
        // With a store, the request is kept to record the new session (it starts from a
        // copy of the source's stored history).
        let request = p.clone();
        // Another identity's session is forked no more than one that does not exist.
        if let Some(recorder) = &call.inner.recorder
            && recorder.is_foreign(&request.session_id).await?
        {
            return Err(unknown_session(&request.session_id));
        }
        let handler = self.agent.fork_session(p, &call.cx);
        let record = async |recorder: &Arc<Recorder>, response: &ForkSessionResponse| {
            let meta = crate::record::forked_session_meta(&request, response);
            recorder
                .forked(meta, &request.session_id)
                .await
                .map_err(|e| {
                    Error::internal_error(format!(
                        "the forked session could not be stored: {}",
                        e.for_peer()
                    ))
                })
        };
        self.creating(call, |r| &r.session_id, handler, record)
            .await
    }

    #[cfg(feature = "unstable_session_archive")]
    pub(crate) async fn archive_session_hook(
        &self,
        call: &mut Incoming,
        p: ArchiveSessionRequest,
    ) -> Result<ArchiveSessionResponse, Error> {
        let id = p.session_id.clone();
        let result = self.agent.archive_session(p, &call.cx).await?;
        // An archived session is closed: its prompts are cancelled, its id forgotten.
        call.inner.forget(&id);
        Ok(result)
    }
}

#[acp_rpc::async_trait]
impl<A: Agent> Handler for Dispatch<A> {
    async fn handle_request(
        &self,
        rcx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let inner = self.inner().await.clone();
        let announced = (method == names::SESSION_PROMPT)
            .then(|| params.raw().and_then(|r| session_id_of(r.get())))
            .flatten();
        let cx = AgentContext {
            client: ClientHandle {
                inner: inner.clone(),
            },
            request_id: rcx.id().clone(),
        };
        let mut call = Incoming {
            cx,
            inner,
            rcx,
            announced,
        };
        if method != names::INITIALIZE && call.inner.capabilities().is_none() {
            return Err(Error::invalid_request(format!(
                "{method} received before a successful initialize: send initialize first"
            ))
            // Error `data` is free-form JSON (no schema type): the method refused.
            .with_data(serde_json::json!({ "method": method })));
        }
        self.route_request(&mut call, method, params).await
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
        self.route_notification(method, params).await
    }
}
