//! A 0.0.9 agent behind a v1 client: the translation for the client's role, on the
//! skeleton of [`crate::translate`]. [`Conversation`] is what its two ends share: the
//! implicit session, the running turn and the tool call ids the translation handed out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use acp_rpc::{Error, RequestContext};
use acp_types::legacy::v0_0_9 as z;
use acp_types::legacy::v0_0_9::convert;
use acp_types::v1;
use async_trait::async_trait;
use serde_json::json;
use tokio::sync::OnceCell;

use super::chunks_of;
use super::native::{AgentHandle, Client};
use crate::client_files::ClientFiles;
use crate::translate::{LegacyEnd, OnDrop, V1End, show, v1_routes};
use crate::{AdapterOptions, Dialect, lock, refused};

/// The id of the one session a 0.0.9 agent offers (the dialect has a single, implicit
/// conversation).
pub const SESSION_ID: &str = "legacy-0.0.9";

/// The id of the auth method the adapter lists when the agent says it is not
/// authenticated; `authenticate` with it runs the agent's own login flow.
pub const AUTH_METHOD_ID: &str = "agent-login";

/// What the two ends of a 0.0.9 agent behind a v1 client share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Conversation {
    let handshake = options
        .handshake
        .clone()
        .and_then(|answer| serde_json::from_value(answer).ok());
    Conversation {
        files: ClientFiles::new(&options, no_files),
        initialized: OnceCell::new_with(handshake),
        session: OnceLock::new(),
        turn: Mutex::new(None),
        next_tool_call: AtomicU64::new(0),
    }
}

/// The running turn of the implicit session.
#[derive(Default)]
struct Turn {
    /// The client sent `session/cancel` during it: the turn ends `cancelled`.
    cancelled: bool,
}

/// The state both ends of the translation share.
pub(crate) struct Conversation {
    /// Where the agent's file calls go.
    files: ClientFiles,
    /// The agent's 0.0.9 `initialize` answer.
    initialized: OnceCell<z::InitializeResponse>,
    /// The implicit session, once the client created it.
    session: OnceLock<v1::SessionId>,
    /// The turn running in it, if any.
    turn: Mutex<Option<Turn>>,
    /// The next tool call id to hand out (the editor allocates them in 0.0.9).
    next_tool_call: AtomicU64,
}

/// `-32601` for a file call neither the client nor a local file system serves.
fn no_files(method: &str) -> Error {
    let why = "the v1 client does not offer this file method and no file system was configured (AdapterOptions::with_fs)";
    refused(Dialect::Legacy009, method, why)
}

impl Conversation {
    fn session(&self, method: &str) -> Result<v1::SessionId, Error> {
        self.session.get().cloned().ok_or_else(|| {
            Error::invalid_request(format!(
                "{method} before session/new: the v1 client has no session to show it in"
            ))
            .with_data(json!({ "method": method, "dialect": "legacy-0.0.9" }))
        })
    }

    /// A fresh tool call id: the 0.0.9 number, and the v1 string standing for it.
    fn allocate_tool_call(&self) -> (z::ToolCallId, v1::ToolCallId) {
        let n = self.next_tool_call.fetch_add(1, Ordering::Relaxed);
        (z::ToolCallId(n), v1_tool_call_id(&z::ToolCallId(n)))
    }
}

/// The v1 tool call id that stands for a 0.0.9 one.
fn v1_tool_call_id(id: &z::ToolCallId) -> v1::ToolCallId {
    v1::ToolCallId(format!("tool-{}", id.0))
}

/// The v1 agent the user's connection talks to on the pipe; its calls go to the 0.0.9
/// agent.
type V1Agent = V1End<Conversation, AgentHandle>;

v1_routes! {
    V1Agent;
    requests {
        v1::names::INITIALIZE => initialize,
        v1::names::AUTHENTICATE => authenticate,
        v1::names::SESSION_NEW => new_session,
        v1::names::SESSION_PROMPT => prompt,
    }
    refuse |method| refused(Dialect::Legacy009, method, "a 0.0.9 agent has no such method");
    notifications { v1::names::SESSION_CANCEL => cancel }
    drop |method| tracing::debug!(method, "notification dropped: a 0.0.9 agent has no equivalent");
}

impl V1Agent {
    async fn initialize(
        &self,
        _cx: &RequestContext,
        p: v1::InitializeRequest,
    ) -> Result<v1::InitializeResponse, Error> {
        self.files.advertise(&p.client_capabilities);
        let agent = self.legacy()?;
        let answer = self
            .initialized
            .get_or_try_init(|| agent.initialize())
            .await?;
        let auth_methods = if answer.is_authenticated {
            Vec::new()
        } else {
            vec![v1::AuthMethod::Agent(
                v1::AuthMethodAgent::new(AUTH_METHOD_ID, "Log in")
                    .description("The agent runs its own login flow."),
            )]
        };
        let version =
            v1::ProtocolVersion::negotiate(p.protocol_version, &[v1::ProtocolVersion::LATEST]);
        Ok(v1::InitializeResponse::new(version).auth_methods(auth_methods))
    }

    async fn authenticate(
        &self,
        _cx: &RequestContext,
        p: v1::AuthenticateRequest,
    ) -> Result<v1::AuthenticateResponse, Error> {
        if p.method_id.0 != AUTH_METHOD_ID {
            return Err(Error::invalid_params(format!(
                "unknown auth method {:?}: a 0.0.9 agent offers only {AUTH_METHOD_ID:?}",
                p.method_id.0
            ))
            .with_data(json!({ "field": "methodId" })));
        }
        self.legacy()?.authenticate().await?;
        Ok(v1::AuthenticateResponse::default())
    }

    async fn new_session(
        &self,
        _cx: &RequestContext,
        _p: v1::NewSessionRequest,
    ) -> Result<v1::NewSessionResponse, Error> {
        let id = v1::SessionId(SESSION_ID.to_string());
        if self.session.set(id.clone()).is_err() {
            return Err(Error::invalid_request(
                "a 0.0.9 agent has one conversation, and its session exists already: start the agent again for a new one",
            )
            .with_data(json!({ "sessionId": id, "dialect": "legacy-0.0.9" })));
        }
        Ok(v1::NewSessionResponse::new(id))
    }

    fn known(&self, id: &v1::SessionId) -> Result<(), Error> {
        if self.session.get() == Some(id) {
            Ok(())
        } else {
            Err(
                Error::resource_not_found(format!("session not found: {}", id.0))
                    .with_data(json!({ "sessionId": id })),
            )
        }
    }

    async fn prompt(
        &self,
        _cx: &RequestContext,
        p: v1::PromptRequest,
    ) -> Result<v1::PromptResponse, Error> {
        self.known(&p.session_id)?;
        let chunks = chunks_of(&p.prompt)?;
        {
            let mut turn = lock(&self.turn);
            if turn.is_some() {
                return Err(Error::invalid_request(
                    "a turn is already running: a 0.0.9 agent takes one message at a time",
                )
                .with_data(json!({ "sessionId": p.session_id })));
            }
            *turn = Some(Turn::default());
        }
        let _end = OnDrop(|| {
            lock(&self.turn).take();
        });
        let agent = self.legacy()?;
        let result = agent
            .send_user_message(z::SendUserMessageParams::new(chunks))
            .await;
        // Chunks and tool calls the agent sent before its answer reach the client first.
        agent.peer().received_requests_handled().await;
        let cancelled = lock(&self.turn).as_ref().is_some_and(|t| t.cancelled);
        let stop_reason = match result {
            _ if cancelled => v1::StopReason::Cancelled,
            Ok(()) => v1::StopReason::EndTurn,
            Err(e) => return Err(e),
        };
        Ok(v1::PromptResponse::new(stop_reason))
    }

    async fn cancel(&self, p: v1::CancelNotification) -> Result<(), Error> {
        if self.session.get() != Some(&p.session_id) {
            tracing::debug!(session = %p.session_id.0, "session/cancel for an unknown session");
            return Ok(());
        }
        match lock(&self.turn).as_mut() {
            Some(turn) => turn.cancelled = true,
            None => {
                tracing::debug!("session/cancel with no turn running: nothing to cancel");
                return Ok(());
            }
        }
        if let Err(e) = self.legacy()?.cancel_send_message().await {
            tracing::warn!(error = %e, "the agent refused cancelSendMessage");
        }
        Ok(())
    }
}

/// The 0.0.9 editor the real agent talks to; its calls go to the user's v1 client.
type ZeroNineEditor = LegacyEnd<Conversation, AgentHandle>;

impl ZeroNineEditor {
    async fn update(&self, method: &str, update: v1::SessionUpdate) -> Result<(), Error> {
        show(&self.v1, self.session(method)?, update).await
    }

    /// The v1 tool call a 0.0.9 one stands for, as first shown.
    fn tool_call(
        id: v1::ToolCallId,
        call: &z::PushToolCallParams,
        status: v1::ToolCallStatus,
    ) -> v1::ToolCall {
        let content = call.content.as_ref().map(convert::content_to_v1);
        v1::ToolCall::new(id, call.label.clone())
            .kind(convert::kind_for_icon(&call.icon))
            .status(status)
            .content(content.unwrap_or_default())
            .locations(call.locations.iter().map(convert::location_to_v1))
    }
}

#[async_trait]
impl Client for ZeroNineEditor {
    async fn stream_assistant_message_chunk(
        &self,
        p: z::StreamAssistantMessageChunkParams,
    ) -> Result<(), Error> {
        let update = match p.chunk {
            z::AssistantMessageChunk::Text(t) => v1::SessionUpdate::agent_message_text(t.text),
            z::AssistantMessageChunk::Thought(t) => {
                v1::SessionUpdate::agent_thought_text(t.thought)
            }
        };
        self.update(z::names::STREAM_ASSISTANT_MESSAGE_CHUNK, update)
            .await
    }

    async fn push_tool_call(
        &self,
        p: z::PushToolCallParams,
    ) -> Result<z::PushToolCallResponse, Error> {
        let (id, v1_id) = self.allocate_tool_call();
        let call = Self::tool_call(v1_id, &p, v1::ToolCallStatus::InProgress);
        self.update(z::names::PUSH_TOOL_CALL, call.into()).await?;
        Ok(z::PushToolCallResponse::new(id))
    }

    async fn update_tool_call(&self, p: z::UpdateToolCallParams) -> Result<(), Error> {
        if p.tool_call_id.0 >= self.next_tool_call.load(Ordering::Relaxed) {
            return Err(Error::invalid_params(format!(
                "unknown tool call id {}: ids come from pushToolCall or requestToolCallConfirmation",
                p.tool_call_id.0
            ))
            .with_data(json!({ "field": "toolCallId" })));
        }
        // 0.0.9 content replaces what is shown; `null` clears it.
        let content = p.content.as_ref().map(convert::content_to_v1);
        let update = v1::ToolCallUpdate::new(v1_tool_call_id(&p.tool_call_id))
            .status(convert::status_to_v1(&p.status))
            .content(content.unwrap_or_default());
        self.update(z::names::UPDATE_TOOL_CALL, update.into()).await
    }

    async fn request_tool_call_confirmation(
        &self,
        p: z::RequestToolCallConfirmationParams,
    ) -> Result<z::RequestToolCallConfirmationResponse, Error> {
        let session = self.session(z::names::REQUEST_TOOL_CALL_CONFIRMATION)?;
        let (id, v1_id) = self.allocate_tool_call();
        let mut pushed = z::PushToolCallParams::new(p.label, p.icon).locations(p.locations);
        pushed.content = p.content;
        let mut call = Self::tool_call(v1_id, &pushed, v1::ToolCallStatus::Pending);
        call.raw_input = serde_json::to_value(&p.confirmation).ok();
        self.update(
            z::names::REQUEST_TOOL_CALL_CONFIRMATION,
            call.clone().into(),
        )
        .await?;
        let answer: v1::RequestPermissionResponse = self
            .v1
            .typed_request(&v1::RequestPermissionRequest::new(
                session,
                call,
                convert::permission_options(&p.confirmation),
            ))
            .await?;
        let outcome = convert::outcome_of_selection(&answer.outcome);
        Ok(z::RequestToolCallConfirmationResponse::new(id, outcome))
    }

    async fn read_text_file(
        &self,
        p: z::ReadTextFileParams,
    ) -> Result<z::ReadTextFileResponse, Error> {
        let method = z::names::READ_TEXT_FILE;
        let mut request = v1::ReadTextFileRequest::new(self.session(method)?, p.path);
        (request.line, request.limit) = (p.line, p.limit);
        let files = &self.files;
        let read = files.read_text_file(&self.v1, method, request).await?;
        Ok(z::ReadTextFileResponse::new(read.content))
    }

    async fn write_text_file(&self, p: z::WriteTextFileParams) -> Result<(), Error> {
        let method = z::names::WRITE_TEXT_FILE;
        let session = self.session(method)?;
        let request = v1::WriteTextFileRequest::new(session, p.path, p.content);
        let files = &self.files;
        files.write_text_file(&self.v1, method, request).await
    }
}
