//! A v1 agent in front of a 0.0.9 editor: the translation for the agent's role, on the
//! skeleton of [`crate::translate`]. [`Conversation`] is what its two ends share: the
//! implicit session and the tool calls the editor has been shown.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use acp_rpc::{Error, RequestContext};
use acp_types::legacy::v0_0_9 as z;
use acp_types::legacy::v0_0_9::convert;
use acp_types::v1;
use async_trait::async_trait;
use tokio::sync::OnceCell;

use super::block_of;
use super::native::{Agent, ClientHandle, Context};
use crate::translate::{LegacyEnd, Streamed, V1End, V1Handshake, update_kind, v1_routes};
use crate::{AdapterOptions, Dialect, lock, not_forwarded};

/// What the two ends of a v1 agent in front of a 0.0.9 editor share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Conversation {
    Conversation {
        handshake: V1Handshake::reading(true),
        session: OnceCell::new(),
        tool_calls: Mutex::default(),
        prompting: Mutex::default(),
        streamed: Streamed::new(&options.config),
        options,
    }
}

/// What the editor has been shown of a v1 tool call: the id the editor chose for it, and
/// the call as the agent has described it so far (0.0.9's `updateToolCall` always carries
/// a status, and its content replaces what was shown, so every update is sent whole; a
/// later permission request falls back on it).
#[derive(Clone)]
struct ShownToolCall {
    id: z::ToolCallId,
    call: v1::ToolCall,
}

/// The state both ends of the translation share.
pub(crate) struct Conversation {
    handshake: V1Handshake,
    /// The implicit session of the dialect's one conversation, once created.
    session: OnceCell<v1::SessionId>,
    /// v1 tool call id -> what the editor shows.
    tool_calls: Mutex<HashMap<v1::ToolCallId, ShownToolCall>>,
    /// The implicit session, while a `sendUserMessage` runs in it.
    prompting: Mutex<Option<v1::SessionId>>,
    /// The `streamAssistantMessageChunk`s sent to the editor, not yet answered.
    streamed: Streamed<z::StreamAssistantMessageChunkResponse>,
    options: AdapterOptions,
}

/// The id of an auth method a 0.0.9 `authenticate` can run: one the agent runs itself (the
/// dialect's editor has no terminal to offer).
fn agent_run_auth_method(methods: &[v1::AuthMethod]) -> Option<v1::AuthMethodId> {
    methods.iter().find_map(|m| match m {
        v1::AuthMethod::Agent(agent) => Some(agent.id.clone()),
        _ => None,
    })
}

/// The 0.0.9 agent the editor sees; every call becomes v1 calls to the agent on the pipe.
type ZeroNineAgent = LegacyEnd<Conversation, ClientHandle>;

impl ZeroNineAgent {
    /// The implicit session of the dialect's one conversation, created on first use.
    async fn session(&self) -> Result<&v1::SessionId, Error> {
        self.handshake.done(&self.v1).await?;
        self.session
            .get_or_try_init(|| async {
                let created = self.v1.typed_request(&self.options.new_session()).await?;
                Ok::<_, Error>(created.session_id)
            })
            .await
    }
}

#[async_trait]
impl Agent for ZeroNineAgent {
    async fn initialize(
        &self,
        params: z::InitializeParams,
        _cx: &Context,
    ) -> Result<z::InitializeResponse, Error> {
        if params.protocol_version.0 != z::PROTOCOL_VERSION {
            tracing::debug!(
                asked = %params.protocol_version,
                "initialize asked for another version; answering 0.0.9, the editor decides"
            );
        }
        let init = self.handshake.done(&self.v1).await?;
        Ok(z::InitializeResponse::new(
            z::ProtocolVersion::current(),
            init.auth_methods.is_empty(),
        ))
    }

    async fn authenticate(&self, _cx: &Context) -> Result<(), Error> {
        let init = self.handshake.done(&self.v1).await?;
        if init.auth_methods.is_empty() {
            return Ok(());
        }
        let Some(method_id) = agent_run_auth_method(&init.auth_methods) else {
            return Err(Error::auth_required(
                "the agent offers only auth methods a 0.0.9 editor cannot run (terminal login)",
            ));
        };
        self.v1
            .typed_request(&v1::AuthenticateRequest::new(method_id))
            .await
            .map(|_| ())
    }

    async fn send_user_message(
        &self,
        params: z::SendUserMessageParams,
        _cx: &Context,
    ) -> Result<(), Error> {
        let session = self.session().await?.clone();
        let cwd = self.options.session_cwd();
        let prompt = params.chunks.iter().map(|c| block_of(c, Path::new(&cwd)));
        *lock(&self.prompting) = Some(session.clone());
        let result = self
            .v1
            .typed_request(&v1::PromptRequest::new(session, prompt))
            .await;
        // The turn is over once the editor has taken every chunk of it (the v1 answer comes
        // after the turn's notifications, so they are all sent by now).
        self.streamed.answered().await;
        *lock(&self.prompting) = None;
        result.map(|_| ())
    }

    async fn cancel_send_message(&self, _cx: &Context) -> Result<(), Error> {
        let running = lock(&self.prompting).clone();
        match running {
            Some(session_id) => {
                self.v1
                    .notify(
                        v1::names::SESSION_CANCEL,
                        &v1::CancelNotification::new(session_id),
                    )
                    .await
            }
            None => {
                tracing::debug!("cancelSendMessage with no turn running: nothing to cancel");
                Ok(())
            }
        }
    }
}

/// The v1 client the agent sees on the pipe; its calls go to the 0.0.9 editor.
type V1Client = V1End<Conversation, ClientHandle>;

v1_routes! {
    V1Client;
    requests {
        v1::names::SESSION_REQUEST_PERMISSION => request_permission,
        v1::names::FS_READ_TEXT_FILE => read_text_file,
        v1::names::FS_WRITE_TEXT_FILE => write_text_file,
    }
    refuse |method| not_forwarded(Dialect::Legacy009, method, "a 0.0.9 editor has no such method");
    notifications { v1::names::SESSION_UPDATE => update }
    drop |method| tracing::debug!(method, "notification from the v1 agent dropped: no 0.0.9 equivalent");
}

impl V1Client {
    fn shown(&self, id: &v1::ToolCallId) -> Option<ShownToolCall> {
        lock(&self.tool_calls).get(id).cloned()
    }

    fn remember(&self, shown: ShownToolCall) {
        lock(&self.tool_calls).insert(shown.call.tool_call_id.clone(), shown);
    }

    async fn update(&self, n: v1::SessionNotification) -> Result<(), Error> {
        use v1::SessionUpdate as U;
        let editor = self.legacy()?;
        match n.update {
            U::AgentMessageChunk(chunk) => match chunk.content {
                v1::ContentBlock::Text(text) => {
                    let chunk = z::TextAssistantMessageChunk::new(text.text);
                    let chunk = z::AssistantMessageChunk::Text(chunk);
                    let params = z::StreamAssistantMessageChunkParams::new(chunk);
                    self.streamed.send(editor.peer(), &params).await
                }
                _ => {
                    tracing::warn!(
                        "0.0.9 editors show text only: a non-text agent_message_chunk was dropped"
                    );
                    Ok(())
                }
            },
            U::AgentThoughtChunk(chunk) => match chunk.content {
                v1::ContentBlock::Text(text) => {
                    let chunk = z::ThoughtAssistantMessageChunk::new(text.text);
                    let chunk = z::AssistantMessageChunk::Thought(chunk);
                    let params = z::StreamAssistantMessageChunkParams::new(chunk);
                    self.streamed.send(editor.peer(), &params).await
                }
                _ => {
                    tracing::warn!(
                        "0.0.9 editors show text only: a non-text agent_thought_chunk was dropped"
                    );
                    Ok(())
                }
            },
            // Boxed: rare beside the chunks, and their futures would make every chunk's large.
            U::ToolCall(call) => Box::pin(self.push(*call)).await,
            U::ToolCallUpdate(update) => Box::pin(self.update_tool_call(*update)).await,
            U::UserMessageChunk(_) => {
                tracing::debug!(
                    "user_message_chunk dropped: a 0.0.9 editor shows its own messages"
                );
                Ok(())
            }
            U::Plan(_) => {
                tracing::warn!(
                    "plan dropped: the 0.0.9 dialect has no plans (0.0.10 added updatePlan)"
                );
                Ok(())
            }
            other => {
                let kind = update_kind(&other);
                tracing::warn!(%kind, "the 0.0.9 dialect has no way to show this session/update; dropped");
                Ok(())
            }
        }
    }

    /// `tool_call` -> `pushToolCall` (plus `updateToolCall` when it is already over, since
    /// a pushed call shows as running).
    async fn push(&self, call: v1::ToolCall) -> Result<(), Error> {
        let locations = call.locations.iter().map(convert::location_from_v1);
        let icon = convert::icon_for_kind(&call.kind);
        let mut push = z::PushToolCallParams::new(call.title.clone(), icon).locations(locations);
        push.content = convert::content_from_v1(&call.content);
        let pushed = self.legacy()?.push_tool_call(push).await?;
        let shown = ShownToolCall { id: pushed.id, call };
        self.remember(shown.clone());
        if convert::status_from_v1(&shown.call.status) != z::ToolCallStatus::Running {
            self.send_update(shown).await?;
        }
        Ok(())
    }

    /// `tool_call_update` -> `updateToolCall`, completed with what the editor already shows.
    async fn update_tool_call(&self, update: v1::ToolCallUpdate) -> Result<(), Error> {
        let Some(mut shown) = self.shown(&update.tool_call_id) else {
            tracing::warn!(id = %update.tool_call_id.0, "tool_call_update for a tool call the editor was never shown; dropped");
            return Ok(());
        };
        shown.call.apply_update(&update);
        self.send_update(shown).await
    }

    /// `updateToolCall` with everything the editor shows of `shown`.
    async fn send_update(&self, shown: ShownToolCall) -> Result<(), Error> {
        let status = convert::status_from_v1(&shown.call.status);
        let mut update = z::UpdateToolCallParams::new(shown.id.clone(), status);
        update.content = convert::content_from_v1(&shown.call.content);
        self.legacy()?.update_tool_call(update).await?;
        self.remember(shown);
        Ok(())
    }

    /// `session/request_permission` -> `requestToolCallConfirmation`, with what the request
    /// leaves out taken from the announced call; the editor's answer names the tool call
    /// from then on, and its outcome selects one of the agent's options.
    async fn request_permission(
        &self,
        cx: &RequestContext,
        p: v1::RequestPermissionRequest,
    ) -> Result<v1::RequestPermissionResponse, Error> {
        // The tool call this asks about may have been announced just before: let its
        // pushToolCall go first.
        cx.notifications_handled().await;
        let asked = p.tool_call;
        let shown = self.shown(&asked.tool_call_id).map(|s| s.call);
        let mut call =
            shown.unwrap_or_else(|| v1::ToolCall::new(asked.tool_call_id.clone(), "Tool call"));
        call.apply_update(&asked);
        // Confirmed or not, the call shows as running from here (0.0.9 has no pending).
        call.status = v1::ToolCallStatus::InProgress;
        let confirmation = convert::confirmation_for(&call.kind, &call.title, call.raw_input.as_ref());
        let icon = convert::icon_for_kind(&call.kind);
        let locations = call.locations.iter().map(convert::location_from_v1);
        let mut ask = z::RequestToolCallConfirmationParams::new(call.title.clone(), icon, confirmation)
            .locations(locations);
        ask.content = convert::content_from_v1(&call.content);
        let answer = self.legacy()?.request_tool_call_confirmation(ask).await?;
        self.remember(ShownToolCall { id: answer.id, call });
        Ok(v1::RequestPermissionResponse::new(
            convert::selection_for_outcome(&answer.outcome, &p.options),
        ))
    }

    async fn read_text_file(
        &self,
        _cx: &RequestContext,
        p: v1::ReadTextFileRequest,
    ) -> Result<v1::ReadTextFileResponse, Error> {
        let mut read = z::ReadTextFileParams::new(p.path);
        (read.line, read.limit) = (p.line, p.limit);
        let answer = self.legacy()?.read_text_file(read).await?;
        Ok(v1::ReadTextFileResponse::new(answer.content))
    }

    async fn write_text_file(
        &self,
        _cx: &RequestContext,
        p: v1::WriteTextFileRequest,
    ) -> Result<v1::WriteTextFileResponse, Error> {
        let write = z::WriteTextFileParams::new(p.path, p.content);
        self.legacy()?.write_text_file(write).await?;
        Ok(v1::WriteTextFileResponse::default())
    }
}
