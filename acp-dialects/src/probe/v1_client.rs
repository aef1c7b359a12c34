//! A probe agent behind a v1 client: the translation for the client's role, on the
//! skeleton of [`crate::translate`]. [`Shared`] is what its two ends share: the client's
//! capabilities, the running turns and the tool calls already shown.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use acp_rpc::{Error, ErrorCode, RequestContext};
use acp_types::legacy::probe as p;
use acp_types::legacy::probe::convert;
use acp_types::v1;
use async_trait::async_trait;
use serde_json::json;
use tokio::sync::OnceCell;

use super::native::{AgentHandle, Client};
use super::{message_of, meta_of, text_of, unsupported_version};
use crate::client_files::ClientFiles;
use crate::translate::{LegacyEnd, OnDrop, V1End, show, v1_routes};
use crate::{AdapterOptions, lock, refused};

/// What the two ends of a probe agent behind a v1 client share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Shared {
    let handshake = options
        .handshake
        .clone()
        .and_then(|answer| serde_json::from_value(answer).ok());
    Shared {
        initialized: OnceCell::new_with(handshake),
        files: ClientFiles::new(&options, denied),
        state: Mutex::default(),
    }
}

/// What changes as the conversation goes.
#[derive(Default)]
struct State {
    /// Sessions with a prompt running: whether a chunk was streamed, whether it was
    /// cancelled.
    turns: HashMap<v1::SessionId, Turn>,
    /// Tool calls already shown to the client (`tool_call` sent), by session and id.
    shown: HashSet<(v1::SessionId, String)>,
    /// The session prompted last: the one file calls without a session are about.
    last: Option<v1::SessionId>,
}

#[derive(Default)]
struct Turn {
    streamed: bool,
    cancelled: bool,
}

/// The state both ends of the translation share.
pub(crate) struct Shared {
    /// The agent's probe `initialize` answer.
    initialized: OnceCell<p::InitializeResponse>,
    /// Where the agent's file calls go.
    files: ClientFiles,
    state: Mutex<State>,
}

/// The v1 modes of a probe session in `mode`: probe's two modes.
fn modes_of(mode: &p::SessionMode) -> v1::SessionModeState {
    v1::SessionModeState::new(
        convert::mode_to_v1(mode),
        [
            v1::SessionMode::new("NORMAL", "Normal").description("Answers and acts: the default."),
            v1::SessionMode::new("PLANNING", "Planning")
                .description("Analyses and plans without acting."),
        ],
    )
}

/// The v1 agent the user's connection talks to on the pipe; its calls go to the probe
/// agent.
type V1Agent = V1End<Shared, AgentHandle>;

v1_routes! {
    V1Agent;
    requests {
        v1::names::INITIALIZE => initialize,
        v1::names::SESSION_NEW => new_session,
        v1::names::SESSION_LOAD => load_session,
        v1::names::SESSION_SET_MODE => set_mode,
        v1::names::SESSION_PROMPT => prompt,
    }
    refuse |method| refused(crate::Dialect::Probe, method, "a probe agent has no such method");
    notifications { v1::names::SESSION_CANCEL => cancel }
    drop |method| tracing::debug!(method, "notification from the v1 client dropped: no probe equivalent");
}

impl V1Agent {
    async fn initialize(
        &self,
        _cx: &RequestContext,
        r: v1::InitializeRequest,
    ) -> Result<v1::InitializeResponse, Error> {
        self.files.advertise(&r.client_capabilities);
        let agent = self.legacy()?;
        let answer = self
            .initialized
            .get_or_try_init(|| {
                agent.initialize(p::InitializeParams::new(p::ProtocolVersion::current()))
            })
            .await?;
        if answer.protocol_version.0 != p::PROTOCOL_VERSION {
            return Err(unsupported_version(&answer.protocol_version.0));
        }
        let capabilities =
            v1::AgentCapabilities::new().load_session(answer.capabilities.session_management);
        let info = v1::Implementation::new(
            answer.server_info.name.clone(),
            answer.server_info.version.clone(),
        );
        let version =
            v1::ProtocolVersion::negotiate(r.protocol_version, &[v1::ProtocolVersion::LATEST]);
        let mut response = v1::InitializeResponse::new(version)
            .agent_capabilities(capabilities)
            .agent_info(info);
        response.meta = meta_of(&answer.capabilities.tools);
        Ok(response)
    }

    async fn new_session(
        &self,
        _cx: &RequestContext,
        _r: v1::NewSessionRequest,
    ) -> Result<v1::NewSessionResponse, Error> {
        let created = self
            .legacy()?
            .new_session(p::NewSessionParams::new())
            .await?;
        let id = v1::SessionId::from(created.session_id.as_str());
        Ok(v1::NewSessionResponse::new(id).modes(modes_of(&created.mode)))
    }

    async fn load_session(
        &self,
        cx: &RequestContext,
        r: v1::LoadSessionRequest,
    ) -> Result<v1::LoadSessionResponse, Error> {
        let loaded = self
            .legacy()?
            .load_session(p::LoadSessionParams::new(r.session_id.as_str()))
            .await?;
        for message in &loaded.history {
            let text = v1::ContentBlock::text(message.content.clone());
            let update = match message.role {
                p::Role::User => v1::SessionUpdate::user_message_chunk(text),
                p::Role::Assistant => v1::SessionUpdate::agent_message_chunk(text),
                p::Role::Unknown(ref role) => {
                    tracing::warn!(role, "a history message of an unknown role was dropped");
                    continue;
                }
            };
            show(cx.peer(), r.session_id.clone(), update).await?;
        }
        Ok(v1::LoadSessionResponse::new().modes(modes_of(&loaded.mode)))
    }

    async fn set_mode(
        &self,
        _cx: &RequestContext,
        r: v1::SetSessionModeRequest,
    ) -> Result<v1::SetSessionModeResponse, Error> {
        let mode = convert::mode_from_v1(&r.mode_id);
        self.legacy()?
            .set_session_mode(p::SetSessionModeParams::new(
                r.session_id.as_str(),
                mode,
            ))
            .await?;
        Ok(v1::SetSessionModeResponse::new())
    }

    async fn prompt(
        &self,
        cx: &RequestContext,
        r: v1::PromptRequest,
    ) -> Result<v1::PromptResponse, Error> {
        let message = message_of(&r.prompt)?;
        {
            let mut state = lock(&self.state);
            if state.turns.contains_key(&r.session_id) {
                return Err(
                    Error::invalid_request("a prompt is already running in this session")
                        .with_data(json!({ "sessionId": r.session_id, "dialect": "probe" })),
                );
            }
            state.turns.insert(r.session_id.clone(), Turn::default());
            state.last = Some(r.session_id.clone());
        }
        let running = OnDrop(|| {
            lock(&self.state).turns.remove(&r.session_id);
        });
        let answer = self
            .legacy()?
            .prompt(p::PromptParams::new(
                r.session_id.as_str(),
                message,
            ))
            .await;
        let turn = lock(&self.state).turns.remove(&r.session_id);
        drop(running);
        let turn = turn.unwrap_or_default();
        let answer = match answer {
            Ok(answer) => answer,
            Err(_) if turn.cancelled => {
                return Ok(v1::PromptResponse::new(v1::StopReason::Cancelled));
            }
            Err(e) => return Err(e),
        };
        let text = text_of(&answer.content);
        if !turn.streamed && !text.is_empty() {
            let update = v1::SessionUpdate::agent_message_chunk(v1::ContentBlock::text(text));
            show(cx.peer(), r.session_id.clone(), update).await?;
        }
        let stop = if turn.cancelled {
            v1::StopReason::Cancelled
        } else {
            v1::StopReason::EndTurn
        };
        Ok(v1::PromptResponse::new(stop))
    }

    async fn cancel(&self, c: v1::CancelNotification) -> Result<(), Error> {
        match lock(&self.state).turns.get_mut(&c.session_id) {
            Some(turn) => turn.cancelled = true,
            None => {
                tracing::debug!(session = %c.session_id.0, "session/cancel with no prompt running")
            }
        }
        let agent = self.legacy()?.clone();
        let cancel = p::CancelParams::new(c.session_id.as_str());
        // The answer is only logged: a notification handler does not wait for it.
        tokio::spawn(async move {
            if let Err(e) = agent.cancel(cancel).await {
                tracing::warn!(error = %e, "the probe agent refused cancel");
            }
        });
        Ok(())
    }
}

/// The probe editor the real agent sees; its calls go to the user's v1 client.
type ProbeEditor = LegacyEnd<Shared, AgentHandle>;

impl ProbeEditor {
    async fn update(&self, session: &p::SessionId, update: v1::SessionUpdate) -> Result<(), Error> {
        show(&self.v1, session.as_str(), update).await
    }

    /// The session a file call is about: the one named, else the one prompted last.
    fn session(&self, named: Option<&p::SessionId>, method: &str) -> Result<v1::SessionId, Error> {
        named
            .map(|id| v1::SessionId::from(id.as_str()))
            .or_else(|| lock(&self.state).last.clone())
            .ok_or_else(|| {
                Error::invalid_request(format!(
                    "{method} before any session: the v1 client has no session to show it in"
                ))
            })
    }
}

/// `-32003`: the client serves no such file call and no local files are configured.
fn denied(method: &str) -> Error {
    Error::new(
        ErrorCode(p::ErrorCode::PERMISSION_DENIED.0),
        format!("{method}: the editor did not allow this file operation"),
    )
    .with_data(json!({ "method": method, "dialect": "probe" }))
}

#[async_trait]
impl Client for ProbeEditor {
    async fn read_text_file(
        &self,
        r: p::ReadTextFileParams,
    ) -> Result<p::ReadTextFileResponse, Error> {
        let method = p::names::READ_TEXT_FILE;
        let session = self.session(r.session_id.as_ref(), method)?;
        let request = v1::ReadTextFileRequest::new(session, r.path);
        let answer = self.files.read_text_file(&self.v1, method, request).await?;
        Ok(p::ReadTextFileResponse::new(answer.content))
    }

    async fn write_text_file(
        &self,
        w: p::WriteTextFileParams,
    ) -> Result<p::WriteTextFileResponse, Error> {
        let method = p::names::WRITE_TEXT_FILE;
        let session = self.session(w.session_id.as_ref(), method)?;
        let request = v1::WriteTextFileRequest::new(session, w.path, w.content);
        self.files
            .write_text_file(&self.v1, method, request)
            .await?;
        Ok(p::WriteTextFileResponse::new().success(true))
    }

    async fn tool_call_progress(&self, t: p::ToolCallProgressParams) -> Result<(), Error> {
        let call = t.tool_call;
        let status = convert::status_to_v1(&call.status);
        let kind = call.kind.as_deref().map(convert::kind_to_v1);
        let first = lock(&self.state)
            .shown
            .insert((t.session_id.as_str().into(), call.id.clone()));
        let update = if first {
            let mut shown = v1::ToolCall::new(call.id.clone(), call.name.clone())
                .name(call.name)
                .status(status);
            if let Some(kind) = kind {
                shown = shown.kind(kind);
            }
            if let Some(arguments) = call.arguments {
                shown = shown.raw_input(arguments);
            }
            shown.into()
        } else {
            let mut update = v1::ToolCallUpdate::new(call.id).status(status);
            if let Some(kind) = kind {
                update = update.kind(kind);
            }
            update.into()
        };
        self.update(&t.session_id, update).await
    }

    async fn message_chunk(&self, m: p::MessageChunkParams) -> Result<(), Error> {
        if let Some(turn) = lock(&self.state).turns.get_mut(&v1::SessionId::from(m.session_id.as_str())) {
            turn.streamed = true;
        }
        let text = v1::ContentBlock::text(m.chunk);
        self.update(&m.session_id, v1::SessionUpdate::agent_message_chunk(text))
            .await
    }

    async fn session_updated(&self, s: p::SessionUpdatedParams) -> Result<(), Error> {
        match s.mode {
            Some(mode) => {
                let update = v1::SessionUpdate::current_mode_update(convert::mode_to_v1(&mode));
                self.update(&s.session_id, update).await
            }
            None => {
                tracing::debug!(session = %s.session_id.0, "sessionUpdated without a mode: nothing to show");
                Ok(())
            }
        }
    }
}
