//! A small v2 agent built on `acp_agent::v2` that does what the v2 checks look at (a
//! prompt's work reported as `running` then `idle`, the user message echoed, a tool call
//! upsert with a permission request about it, content chunks, `session/cancel`), with one
//! fault switched on. Faults acp-agent commits for no agent (it answers an idempotent retry
//! itself) are made by a line filter between the kit and the agent.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_agent::Error;
use acp_agent::v2::types::*;
use acp_agent::v2::{Agent, Context};
use acp_check::Target;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// What the agent gets wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Its work never ends with `idle`.
    NoIdle,
    /// Its work ends with `idle` but was never `running`.
    NoRunning,
    /// Its `idle` names a stop reason outside the set (and not a custom one).
    UnknownStopReason,
    /// It streams tool call content for a call it never announced.
    ChunkForUnknownToolCall,
    /// It clears the user message it echoed (`content: null`, a patch).
    ClearsUserMessage,
    /// It refuses a prompt holding a content block type it does not know.
    RefusesCustomBlock,
    /// The filter strips `idempotencyKey` from prompts: a retry is a second turn.
    IgnoresIdempotencyKey,
    /// It ignores `session/cancel` and a `cancelled` permission answer: the work ends with
    /// `end_turn`.
    IgnoresCancel,
    /// Its `session/list` names no session.
    ListsNothing,
    /// It answers `session/resume` with method not found, despite `capabilities.session`.
    NoResume,
    /// It answers `session/close` but keeps serving the session.
    PromptAfterClose,
    /// It accepts `tool_call/cancel` of a tool call it never had.
    CancelsUnknownToolCall,
    /// It advertises MCP over HTTP but refuses such a server as invalid params.
    RefusesMcpHttp,
}

/// The prompt that holds the work open until the kit cancels it.
pub const CANCEL_PROMPT: &str = "v2 specimen: cancel me";

struct Specimen {
    fault: Fault,
    next: AtomicU64,
    cancelled: Mutex<HashSet<String>>,
    /// The open sessions, with their `cwd`.
    sessions: Mutex<BTreeMap<String, AbsolutePath>>,
}

impl Specimen {
    fn open(&self, session: &SessionId) -> Result<(), Error> {
        if self.sessions.lock().unwrap().contains_key(&session.0) {
            return Ok(());
        }
        Err(Error::resource_not_found(format!(
            "no open session {}",
            session.0
        )))
    }
}

fn idle(reason: IdleStopReason) -> SessionUpdate {
    SessionUpdate::StateUpdate(Box::new(SessionStateUpdate::new(StateUpdate::Idle(
        IdleStateUpdate::new().stop_reason(reason),
    ))))
}

#[acp_agent::async_trait]
impl Agent for Specimen {
    async fn initialize(
        &self,
        _params: InitializeRequest,
        _cx: &Context,
    ) -> Result<InitializeResponse, Error> {
        let capabilities: AgentCapabilities =
            serde_json::from_value(serde_json::json!({"session": {"mcp": {"http": {}}}})).unwrap();
        Ok(
            InitializeResponse::new(2, Implementation::new("v2 specimen", "1.0.0"))
                .capabilities(capabilities),
        )
    }

    async fn session_new(
        &self,
        params: NewSessionRequest,
        _cx: &Context,
    ) -> Result<NewSessionResponse, Error> {
        let http = params
            .mcp_servers
            .iter()
            .any(|s| matches!(s, McpServer::Http(_)));
        if http && self.fault == Fault::RefusesMcpHttp {
            return Err(Error::invalid_params("no MCP server over HTTP, please"));
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("v2-session-{n}");
        self.sessions.lock().unwrap().insert(id.clone(), params.cwd);
        Ok(NewSessionResponse::new(id))
    }

    async fn tool_call_cancel(
        &self,
        params: CancelToolCallRequest,
        _cx: &Context,
    ) -> Result<CancelToolCallResponse, Error> {
        self.open(&params.session_id)?;
        if self.fault == Fault::CancelsUnknownToolCall {
            return Ok(CancelToolCallResponse::default());
        }
        // Its tool calls finish before anyone could cancel them: none is cancellable.
        Err(Error::invalid_params(format!(
            "tool call `{}` is unknown or not cancellable",
            params.tool_call_id.0
        )))
    }

    async fn session_list(
        &self,
        _params: ListSessionsRequest,
        _cx: &Context,
    ) -> Result<ListSessionsResponse, Error> {
        if self.fault == Fault::ListsNothing {
            return Ok(ListSessionsResponse::new(Vec::new()));
        }
        let sessions = self.sessions.lock().unwrap();
        let listed = sessions
            .iter()
            .map(|(id, cwd)| SessionInfo::new(id.clone(), cwd.clone()));
        Ok(ListSessionsResponse::new(listed.collect::<Vec<_>>()))
    }

    async fn session_resume(
        &self,
        params: ResumeSessionRequest,
        _cx: &Context,
    ) -> Result<ResumeSessionResponse, Error> {
        if self.fault == Fault::NoResume {
            return Err(Error::method_not_found("session/resume"));
        }
        self.open(&params.session_id)?;
        Ok(ResumeSessionResponse::default())
    }

    async fn session_close(
        &self,
        params: CloseSessionRequest,
        _cx: &Context,
    ) -> Result<CloseSessionResponse, Error> {
        self.open(&params.session_id)?;
        if self.fault != Fault::PromptAfterClose {
            self.sessions.lock().unwrap().remove(&params.session_id.0);
        }
        Ok(CloseSessionResponse::default())
    }

    async fn session_prompt(
        &self,
        params: PromptRequest,
        cx: &Context,
    ) -> Result<PromptResponse, Error> {
        let fault = self.fault;
        if fault == Fault::RefusesCustomBlock
            && params
                .prompt
                .iter()
                .any(|b| matches!(b, ContentBlock::Unknown(_)))
        {
            return Err(Error::invalid_params("unknown content block type"));
        }
        self.open(&params.session_id)?;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let session = params.session_id.clone();
        self.cancelled.lock().unwrap().remove(&session.0);
        let (user, reply, tool) = (format!("u{n}"), format!("a{n}"), format!("t{n}"));
        let send = |update| {
            cx.client()
                .session_update(UpdateSessionNotification::new(session.clone(), update))
        };
        if fault != Fault::NoRunning {
            send(SessionUpdate::StateUpdate(Box::new(
                SessionStateUpdate::new(StateUpdate::Running(RunningStateUpdate::new())),
            )))
            .await?;
        }
        send(SessionUpdate::UserMessage(Box::new(
            UserMessage::new(user.clone()).content(params.prompt),
        )))
        .await?;
        if fault == Fault::ClearsUserMessage {
            let cleared: SessionUpdate = serde_json::from_value(serde_json::json!({
                "sessionUpdate": "user_message", "messageId": user, "content": null
            }))
            .unwrap();
            send(cleared).await?;
        }
        let chunk_for = if fault == Fault::ChunkForUnknownToolCall {
            "never-announced".to_owned()
        } else {
            tool.clone()
        };
        send(SessionUpdate::ToolCallUpdate(Box::new(
            ToolCallUpdate::new(tool.clone())
                .title("Think".to_owned())
                .status(ToolCallStatus::Pending),
        )))
        .await?;
        let ask = RequestPermissionRequest::new(
            session.clone(),
            "Go on?",
            [PermissionOption::new(
                "allow",
                "Allow",
                PermissionOptionKind::AllowOnce,
            )],
        )
        .subject(RequestPermissionSubject::ToolCall(
            ToolCallPermissionSubject::new(ToolCallUpdate::new(tool.clone())),
        ));
        let answer = cx.client().session_request_permission(ask).await?;
        let cancelled = self.cancelled.lock().unwrap().contains(&session.0)
            || matches!(answer.outcome, RequestPermissionOutcome::Cancelled(_));
        if cancelled && fault != Fault::IgnoresCancel {
            send(SessionUpdate::ToolCallUpdate(Box::new(
                ToolCallUpdate::new(tool).status(ToolCallStatus::Cancelled),
            )))
            .await?;
            send(idle(IdleStopReason::Cancelled)).await?;
            return Ok(PromptResponse::new(user));
        }
        let chunk: SessionUpdate = serde_json::from_value(serde_json::json!({
            "sessionUpdate": "tool_call_content_chunk", "toolCallId": chunk_for,
            "content": {"type": "content", "content": {"type": "text", "text": "thought"}}
        }))
        .unwrap();
        send(chunk).await?;
        send(SessionUpdate::ToolCallUpdate(Box::new(
            ToolCallUpdate::new(tool).status(ToolCallStatus::Completed),
        )))
        .await?;
        send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            reply,
            ContentBlock::text("done"),
        )))
        .await?;
        match fault {
            Fault::NoIdle => {}
            Fault::UnknownStopReason => {
                let odd: SessionUpdate = serde_json::from_value(serde_json::json!({
                    "sessionUpdate": "state_update", "state": "idle", "stopReason": "finished"
                }))
                .unwrap();
                send(odd).await?;
            }
            _ => send(idle(IdleStopReason::EndTurn)).await?,
        }
        Ok(PromptResponse::new(user))
    }

    async fn session_cancel(&self, params: CancelSessionNotification) -> Result<(), Error> {
        self.cancelled.lock().unwrap().insert(params.session_id.0);
        Ok(())
    }
}

/// The kit's lines to the agent, with `idempotencyKey` stripped for
/// [`Fault::IgnoresIdempotencyKey`].
async fn filter_in(fault: Fault, from: tokio::io::DuplexStream, mut to: tokio::io::DuplexStream) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(mut message) if fault == Fault::IgnoresIdempotencyKey => {
                if let Some(params) = message.get_mut("params").and_then(|p| p.as_object_mut()) {
                    params.remove("idempotencyKey");
                }
                message.to_string()
            }
            _ => line,
        };
        if to.write_all(format!("{line}\n").as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The specimen with `fault` switched on, as the kit's target.
pub fn target(fault: Fault) -> Target {
    Target::in_process(move |kit_in, kit_out| {
        let (filtered_in, agent_in) = tokio::io::duplex(1 << 20);
        tokio::spawn(filter_in(fault, kit_in, filtered_in));
        let specimen = Specimen {
            fault,
            next: AtomicU64::new(1),
            cancelled: Mutex::default(),
            sessions: Mutex::default(),
        };
        drop(acp_agent::v2::serve(specimen, agent_in, kit_out));
    })
}
