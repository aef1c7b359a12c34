//! The adapter that serves one v1 [`crate::Agent`] to a 0.0.9 editor: [`serve_v1`].
//!
//! The v1 agent runs on an in-memory pipe; [`V1Side`] is its client there, [`ZeroNineSide`]
//! the 0.0.9 agent the editor talks to. [`Conversation`] is what both share: the implicit
//! session and the tool calls the editor has been shown.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use acp_rpc::{
    Config, Handler, NotificationContext, Params, Peer, RawValue, RequestContext, to_raw,
};
use acp_types::legacy::v0_0_9 as z;
use acp_types::legacy::v0_0_9::convert;
use acp_types::v1;
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::OnceCell;

use super::native::{Agent, ClientHandle, Connection, Context, serve_with};
use crate::Error;
use crate::legacy::AdapterOptions;
use crate::legacy::support::{pipe, tie};
use crate::state::lock;

/// Serves a v1 `agent` to a 0.0.9 editor over a reader/writer pair; see the module docs for
/// the mapping.
pub fn serve_v1<A, R, W>(agent: A, reader: R, writer: W, options: AdapterOptions) -> Connection
where
    A: crate::Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_v1_with(agent, reader, writer, Config::default(), options)
}

/// [`serve_v1`] with a custom [`Config`] for the 0.0.9 wire (its dialect is always the 0.0.9
/// framing).
pub fn serve_v1_with<A, R, W>(
    agent: A,
    reader: R,
    writer: W,
    config: Config,
    options: AdapterOptions,
) -> Connection
where
    A: crate::Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let ((agent_read, agent_write), (bridge_read, bridge_write)) = pipe();
    let inner_agent = crate::connection::serve_inner(
        agent,
        agent_read,
        agent_write,
        Config::default(),
        options.store.clone().map(|s| s.0),
    );
    let conversation = Arc::new(Conversation::default());
    let editor: Arc<OnceLock<ClientHandle>> = Arc::default();
    let v1_side = acp_rpc::Connection::new(
        bridge_read,
        bridge_write,
        V1Side {
            conversation: conversation.clone(),
            editor: editor.clone(),
        },
        Config::default(),
    );
    let outer = serve_with(
        ZeroNineSide {
            agent: v1_side.peer().clone(),
            initialized: OnceCell::new(),
            session: OnceCell::new(),
            conversation,
            options,
        },
        reader,
        writer,
        config,
    );
    let _ = editor.set(outer.client().clone());
    tie(outer.client().peer(), v1_side.peer());
    tie(v1_side.peer(), inner_agent.client().peer());
    outer
}

/// What the editor has been shown of a v1 tool call, so updates can be completed (0.0.9's
/// `updateToolCall` always carries a status, and its content replaces what was shown).
#[derive(Clone)]
struct ShownToolCall {
    /// The id the editor chose for it.
    id: z::ToolCallId,
    title: String,
    kind: v1::ToolKind,
    status: z::ToolCallStatus,
    content: Option<z::ToolCallContent>,
    locations: Vec<z::ToolCallLocation>,
    /// The v1 raw input, for the confirmation of a later permission request.
    raw_input: Option<serde_json::Value>,
}

/// The state both sides of the adapter share.
#[derive(Default)]
struct Conversation {
    /// v1 tool call id -> what the editor shows.
    tool_calls: Mutex<HashMap<v1::ToolCallId, ShownToolCall>>,
    /// The implicit session, while a `sendUserMessage` runs in it.
    prompting: Mutex<Option<v1::SessionId>>,
}

/// `-32601` for a v1 client call the 0.0.9 editor cannot serve, saying why.
fn not_forwarded(method: &str, why: &str) -> Error {
    Error::new(
        acp_rpc::ErrorCode::METHOD_NOT_FOUND,
        format!("{method} cannot be forwarded: {why}"),
    )
    .with_data(serde_json::json!({ "method": method, "dialect": "legacy-0.0.9" }))
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
struct ZeroNineSide {
    agent: Peer,
    initialized: OnceCell<v1::InitializeResponse>,
    session: OnceCell<v1::SessionId>,
    conversation: Arc<Conversation>,
    options: AdapterOptions,
}

impl ZeroNineSide {
    /// The v1 handshake, done once, on the editor's `initialize` or before its first call.
    async fn agent(&self) -> Result<&v1::InitializeResponse, Error> {
        self.initialized
            .get_or_try_init(|| async {
                let mut caps = v1::ClientCapabilities::default();
                caps.fs.read_text_file = true;
                caps.fs.write_text_file = true;
                self.agent
                    .typed_request(&v1::InitializeRequest {
                        protocol_version: v1::ProtocolVersion::LATEST,
                        client_capabilities: caps,
                        client_info: None,
                        meta: None,
                    })
                    .await
            })
            .await
    }

    /// The implicit session of the dialect's one conversation, created on first use.
    async fn session(&self) -> Result<&v1::SessionId, Error> {
        self.agent().await?;
        self.session
            .get_or_try_init(|| async {
                let created = self
                    .agent
                    .typed_request(&v1::NewSessionRequest {
                        cwd: self.options.cwd.to_string_lossy().into_owned(),
                        additional_directories: Vec::new(),
                        mcp_servers: Vec::new(),
                        meta: None,
                    })
                    .await?;
                Ok::<_, Error>(created.session_id)
            })
            .await
    }

    /// A user message chunk as a v1 content block: text as text, a mentioned path as a
    /// resource link to the file (relative paths resolved against the session's cwd).
    fn block_of(&self, chunk: &z::UserMessageChunk) -> v1::ContentBlock {
        match chunk {
            z::UserMessageChunk::Text(text) => v1::ContentBlock::text(text.text.clone()),
            z::UserMessageChunk::Path(mention) => {
                let path = Path::new(&mention.path);
                let absolute = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    self.options.cwd.join(path)
                };
                v1::ContentBlock::ResourceLink(Box::new(v1::ResourceLink {
                    annotations: None,
                    description: None,
                    mime_type: None,
                    name: mention.path.clone(),
                    size: None,
                    title: None,
                    uri: format!("file://{}", absolute.to_string_lossy()),
                    meta: None,
                }))
            }
        }
    }
}

#[async_trait]
impl Agent for ZeroNineSide {
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
        let init = self.agent().await?;
        Ok(z::InitializeResponse {
            protocol_version: z::ProtocolVersion::current(),
            is_authenticated: init.auth_methods.is_empty(),
        })
    }

    async fn authenticate(&self, _cx: &Context) -> Result<(), Error> {
        let init = self.agent().await?;
        if init.auth_methods.is_empty() {
            return Ok(());
        }
        let Some(method_id) = agent_run_auth_method(&init.auth_methods) else {
            return Err(Error::auth_required(
                "the agent offers only auth methods a 0.0.9 editor cannot run (terminal login)",
            ));
        };
        self.agent
            .typed_request(&v1::AuthenticateRequest {
                method_id,
                meta: None,
            })
            .await
            .map(|_| ())
    }

    async fn send_user_message(
        &self,
        params: z::SendUserMessageParams,
        _cx: &Context,
    ) -> Result<(), Error> {
        let session = self.session().await?.clone();
        let prompt = params.chunks.iter().map(|c| self.block_of(c)).collect();
        *lock(&self.conversation.prompting) = Some(session.clone());
        let result = self
            .agent
            .typed_request(&v1::PromptRequest {
                session_id: session,
                prompt,
                meta: None,
            })
            .await;
        *lock(&self.conversation.prompting) = None;
        result.map(|_| ())
    }

    async fn cancel_send_message(&self, _cx: &Context) -> Result<(), Error> {
        let running = lock(&self.conversation.prompting).clone();
        match running {
            Some(session_id) => {
                self.agent
                    .notify(
                        v1::names::SESSION_CANCEL,
                        &v1::CancelNotification {
                            session_id,
                            meta: None,
                        },
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
struct V1Side {
    conversation: Arc<Conversation>,
    editor: Arc<OnceLock<ClientHandle>>,
}

impl V1Side {
    fn editor(&self) -> Result<&ClientHandle, Error> {
        self.editor
            .get()
            .ok_or_else(|| Error::internal_error("the 0.0.9 connection is not ready"))
    }

    fn shown(&self, id: &v1::ToolCallId) -> Option<ShownToolCall> {
        lock(&self.conversation.tool_calls).get(id).cloned()
    }

    fn remember(&self, id: v1::ToolCallId, shown: ShownToolCall) {
        lock(&self.conversation.tool_calls).insert(id, shown);
    }

    async fn update(&self, n: v1::SessionNotification) -> Result<(), Error> {
        use v1::SessionUpdate as U;
        let editor = self.editor()?;
        match n.update {
            U::AgentMessageChunk(chunk) => match chunk.content {
                v1::ContentBlock::Text(text) => editor.stream_text(text.text).await,
                _ => {
                    tracing::warn!(
                        "0.0.9 editors show text only: a non-text agent_message_chunk was dropped"
                    );
                    Ok(())
                }
            },
            U::AgentThoughtChunk(chunk) => match chunk.content {
                v1::ContentBlock::Text(text) => editor.stream_thought(text.text).await,
                _ => {
                    tracing::warn!(
                        "0.0.9 editors show text only: a non-text agent_thought_chunk was dropped"
                    );
                    Ok(())
                }
            },
            U::ToolCall(call) => self.push(*call).await,
            U::ToolCallUpdate(update) => self.update_tool_call(*update).await,
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
                let kind = serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v.get("sessionUpdate").cloned())
                    .unwrap_or_default();
                tracing::warn!(%kind, "the 0.0.9 dialect has no way to show this session/update; dropped");
                Ok(())
            }
        }
    }

    /// `tool_call` -> `pushToolCall` (plus `updateToolCall` when it is already over, since
    /// a pushed call shows as running).
    async fn push(&self, call: v1::ToolCall) -> Result<(), Error> {
        let content = convert::content_from_v1(&call.content);
        let locations: Vec<_> = call
            .locations
            .iter()
            .map(convert::location_from_v1)
            .collect();
        let pushed = self
            .editor()?
            .push_tool_call(z::PushToolCallParams {
                label: call.title.clone(),
                icon: convert::icon_for_kind(&call.kind),
                content: content.clone(),
                locations: locations.clone(),
            })
            .await?;
        let status = convert::status_from_v1(&call.status);
        let shown = ShownToolCall {
            id: pushed.id,
            title: call.title,
            kind: call.kind,
            status: z::ToolCallStatus::Running,
            content,
            locations,
            raw_input: call.raw_input,
        };
        self.remember(call.tool_call_id.clone(), shown.clone());
        if status != z::ToolCallStatus::Running {
            self.send_update(call.tool_call_id, shown, Some(status), None)
                .await?;
        }
        Ok(())
    }

    /// `tool_call_update` -> `updateToolCall`, completed with what the editor already shows.
    async fn update_tool_call(&self, update: v1::ToolCallUpdate) -> Result<(), Error> {
        let Some(shown) = self.shown(&update.tool_call_id) else {
            tracing::warn!(id = %update.tool_call_id.0, "tool_call_update for a tool call the editor was never shown; dropped");
            return Ok(());
        };
        let status = update.status.as_ref().map(convert::status_from_v1);
        let content = update.content.as_deref().map(convert::content_from_v1);
        self.send_update(update.tool_call_id, shown, status, content)
            .await
    }

    async fn send_update(
        &self,
        id: v1::ToolCallId,
        mut shown: ShownToolCall,
        status: Option<z::ToolCallStatus>,
        content: Option<Option<z::ToolCallContent>>,
    ) -> Result<(), Error> {
        if let Some(status) = status {
            shown.status = status;
        }
        if let Some(content) = content {
            shown.content = content;
        }
        self.editor()?
            .update_tool_call(z::UpdateToolCallParams {
                tool_call_id: shown.id.clone(),
                status: shown.status.clone(),
                content: shown.content.clone(),
            })
            .await?;
        self.remember(id, shown);
        Ok(())
    }

    /// `session/request_permission` -> `requestToolCallConfirmation`; the editor's answer
    /// names the tool call from then on, and its outcome selects one of the agent's options.
    async fn request_permission(
        &self,
        p: v1::RequestPermissionRequest,
    ) -> Result<Box<RawValue>, Error> {
        let shown = self.shown(&p.tool_call.tool_call_id);
        let call = &p.tool_call;
        let title = call
            .title
            .clone()
            .or_else(|| shown.as_ref().map(|s| s.title.clone()))
            .unwrap_or_else(|| "Tool call".to_string());
        let kind = call
            .kind
            .clone()
            .or_else(|| shown.as_ref().map(|s| s.kind.clone()))
            .unwrap_or(v1::ToolKind::Other);
        let content = match &call.content {
            Some(content) => convert::content_from_v1(content),
            None => shown.as_ref().and_then(|s| s.content.clone()),
        };
        let locations = match &call.locations {
            Some(locations) => locations.iter().map(convert::location_from_v1).collect(),
            None => shown
                .as_ref()
                .map(|s| s.locations.clone())
                .unwrap_or_default(),
        };
        let raw_input = call
            .raw_input
            .clone()
            .or_else(|| shown.and_then(|s| s.raw_input));
        let answer = self
            .editor()?
            .request_tool_call_confirmation(z::RequestToolCallConfirmationParams {
                label: title.clone(),
                icon: convert::icon_for_kind(&kind),
                content: content.clone(),
                locations: locations.clone(),
                confirmation: convert::confirmation_for(&kind, &title, raw_input.as_ref()),
            })
            .await?;
        self.remember(
            call.tool_call_id.clone(),
            ShownToolCall {
                id: answer.id,
                title,
                kind,
                status: z::ToolCallStatus::Running,
                content,
                locations,
                raw_input,
            },
        );
        to_raw(&v1::RequestPermissionResponse {
            outcome: convert::selection_for_outcome(&answer.outcome, &p.options),
            meta: None,
        })
    }

    async fn read_text_file(&self, p: v1::ReadTextFileRequest) -> Result<Box<RawValue>, Error> {
        let answer = self
            .editor()?
            .read_text_file(z::ReadTextFileParams {
                path: p.path,
                line: p.line,
                limit: p.limit,
            })
            .await?;
        to_raw(&v1::ReadTextFileResponse {
            content: answer.content,
            meta: None,
        })
    }

    async fn write_text_file(&self, p: v1::WriteTextFileRequest) -> Result<Box<RawValue>, Error> {
        self.editor()?
            .write_text_file(z::WriteTextFileParams {
                path: p.path,
                content: p.content,
            })
            .await?;
        to_raw(&v1::WriteTextFileResponse::default())
    }
}

#[async_trait]
impl Handler for V1Side {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            v1::names::SESSION_REQUEST_PERMISSION => {
                // The tool call this asks about may have been announced just before: let
                // its pushToolCall go first.
                cx.notifications_handled().await;
                self.request_permission(params.parse_request()?).await
            }
            v1::names::FS_READ_TEXT_FILE => self.read_text_file(params.parse_request()?).await,
            v1::names::FS_WRITE_TEXT_FILE => self.write_text_file(params.parse_request()?).await,
            _ => Err(not_forwarded(method, "a 0.0.9 editor has no such method")),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        if method == v1::names::SESSION_UPDATE {
            self.update(params.parse()?).await
        } else {
            tracing::debug!(
                method,
                "notification from the v1 agent dropped: no 0.0.9 equivalent"
            );
            Ok(())
        }
    }
}
