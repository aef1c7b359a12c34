//! Our agent in the matrix, built on acp-agent: `acp-interop ours-agent [--report <file>]`.
//!
//! It follows the script like every peer agent. It sends every update of the script through
//! the crate as is: what a client cannot know must be held back by acp-agent itself, which
//! this peer reports as a skipped update.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext, SessionHandle};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::report::Reporter;
use crate::script::script;

/// Decodes a value of the shared script (`peers/script.json`): the same JSON every SDK's peer
/// sends, so it is read as data, not built here.
fn from_script<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|e| Error::internal_error(e.to_string()))
}

/// Our v1 agent (also the v1 side of [`super::ours_v2`]'s both-versions agent).
pub(crate) struct OursAgent {
    report: Reporter,
    /// Session id -> working directory.
    sessions: Mutex<HashMap<String, String>>,
}

/// Reports a turn-3 prompt dropped before it finished (the client's `$/cancel_request`).
struct DroppedReport {
    report: Reporter,
    armed: bool,
}

impl Drop for DroppedReport {
    fn drop(&mut self) {
        if self.armed {
            self.report.event(json!({"event": "request_cancelled"}));
        }
    }
}

impl OursAgent {
    fn cwd(&self, id: &SessionId) -> String {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.get(&id.0).cloned().unwrap_or_default()
    }

    async fn ask(&self, s: &SessionHandle, call: &ToolCall) -> Result<Value, Error> {
        let options = script()
            .permission_options
            .iter()
            .map(|o| from_script(o.clone()))
            .collect::<Result<Vec<PermissionOption>, _>>()?;
        let outcome = s.request_permission(call.clone().into(), options).await?;
        let outcome = serde_json::to_value(&outcome).unwrap_or_default();
        self.report.event(
            json!({"event": "permission", "toolCallId": call.tool_call_id, "outcome": outcome}),
        );
        Ok(outcome)
    }

    async fn bad_call(&self, cx: &AgentContext, name: &str, method: &str, params: Value) {
        let code = match cx
            .client()
            .peer()
            .request::<_, Value>(method, &params)
            .await
        {
            Ok(_) => Value::Null,
            Err(e) => json!(e.code.0),
        };
        self.report
            .event(json!({"event": "error", "bad_call": name, "code": code}));
    }

    async fn work(&self, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        let sc = script();
        for update in &sc.updates {
            if let Err(e) = s.send(from_script(update.clone())?).await {
                self.report.event(json!({"event": "skipped", "update": update["sessionUpdate"], "why": e.message}));
            }
        }
        let caps = cx
            .client_capabilities()
            .map(|c| (*c).clone())
            .unwrap_or_default();
        let cwd = self.cwd(s.id());
        let read_path = format!("{cwd}/{}", sc.workspace.read_file);
        let write_path = format!("{cwd}/{}", sc.workspace.write_file);
        let edit = ToolCall::new("edit-1", "Copy hello.txt")
            .kind(ToolKind::Edit)
            .locations([ToolCallLocation::new(read_path.as_str())]);
        let tool = s.start_tool_call(edit.clone()).await?;
        let allowed = self.ask(s, &edit).await?;
        if allowed["outcome"] == "selected"
            && allowed["optionId"]
                .as_str()
                .is_some_and(|o| o.starts_with("allow"))
        {
            tool.status(ToolCallStatus::InProgress).await?;
            let mut content = String::new();
            if caps.fs.read_text_file {
                let read = cx
                    .client()
                    .read_text_file(ReadTextFileRequest::new(s.id().clone(), read_path.as_str()))
                    .await?;
                content = read.content;
                self.report
                    .event(json!({"event": "fs_read", "path": read_path, "content": content}));
            }
            if caps.fs.write_text_file {
                let body = format!("{}{content}", sc.workspace.write_prefix);
                cx.client()
                    .write_text_file(WriteTextFileRequest::new(
                        s.id().clone(),
                        write_path.as_str(),
                        body,
                    ))
                    .await?;
                self.report
                    .event(json!({"event": "fs_write", "path": write_path}));
            }
            tool.complete(vec![ToolCallContent::content(content)])
                .await?;
        }
        let delete = ToolCall::new("delete-1", "Delete the workspace").kind(ToolKind::Delete);
        let tool = s.start_tool_call(delete.clone()).await?;
        let rejected = self.ask(s, &delete).await?;
        let allowed = rejected["outcome"] == "selected"
            && rejected["optionId"]
                .as_str()
                .is_some_and(|o| o.starts_with("allow"));
        if allowed {
            tool.complete(vec![ToolCallContent::content("deleted")])
                .await?;
        } else {
            tool.fail(vec![ToolCallContent::content("not allowed")])
                .await?;
        }

        if caps.terminal {
            let client = cx.client();
            let created = client
                .create_terminal(
                    CreateTerminalRequest::new(s.id().clone(), sc.terminal.command.as_str())
                        .args(sc.terminal.args.iter().map(String::as_str))
                        .output_byte_limit(4096),
                )
                .await?;
            let (session, terminal) = (s.id().clone(), created.terminal_id);
            let tool = s
                .start_tool_call(
                    ToolCall::new("term-1", "Run echo")
                        .kind(ToolKind::Execute)
                        .status(ToolCallStatus::InProgress)
                        .content([ToolCallContent::terminal(terminal.clone())]),
                )
                .await?;
            let exit = client
                .wait_for_terminal_exit(WaitForTerminalExitRequest::new(
                    session.clone(),
                    terminal.clone(),
                ))
                .await?;
            let output = client
                .terminal_output(TerminalOutputRequest::new(
                    session.clone(),
                    terminal.clone(),
                ))
                .await?;
            client
                .release_terminal(ReleaseTerminalRequest::new(session, terminal))
                .await?;
            self.report.event(
                json!({"event": "terminal", "output": output.output, "exitCode": exit.exit_code}),
            );
            tool.status(ToolCallStatus::Completed).await?;
        }

        self.bad_call(cx, "unknown_method", &sc.unknown_method, json!({}))
            .await;
        self.bad_call(
            cx,
            "invalid_params",
            "fs/read_text_file",
            json!({"sessionId": s.id()}),
        )
        .await;
        s.message_chunk("done").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    async fn cancel_turn(&self, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        s.message_chunk("starting a long task").await?;
        let long = ToolCall::new("long-1", "A long task").kind(ToolKind::Execute);
        let tool = s.start_tool_call(long.clone()).await?;
        // acp-agent resolves a pending permission request as cancelled on session/cancel.
        self.ask(s, &long).await?;
        let via = tokio::select! {
            _ = cx.cancelled() => "session/cancel",
            _ = tokio::time::sleep(Duration::from_millis(script().cancel_wait_ms)) => "timeout",
        };
        self.report.event(json!({"event": "cancelled", "via": via}));
        tool.status(ToolCallStatus::Failed).await?;
        Ok(PromptResponse::new(if via == "timeout" {
            StopReason::EndTurn
        } else {
            StopReason::Cancelled
        }))
    }

    async fn hold_turn(&self, cx: &PromptContext) -> Result<PromptResponse, Error> {
        // `$/cancel_request` drops this future (acp-rpc answers -32800): the guard reports it.
        let mut dropped = DroppedReport {
            report: self.report.clone(),
            armed: true,
        };
        cx.session()
            .message_chunk(&script().holding_message)
            .await?;
        tokio::select! {
            _ = cx.cancelled() => {}
            _ = tokio::time::sleep(Duration::from_millis(script().cancel_wait_ms)) => {}
        }
        dropped.armed = false;
        self.report.event(json!({"event": "hold_timeout"}));
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[acp_agent::async_trait]
impl Agent for OursAgent {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        self.report.event(json!({"event": "initialize", "protocolVersion": p.protocol_version, "clientCapabilities": p.client_capabilities}));
        Ok(InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(
                        PromptCapabilities::new().image(true).embedded_context(true),
                    ),
            )
            .agent_info(Implementation::new(
                "ours-interop-agent",
                env!("CARGO_PKG_VERSION"),
            )))
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let id = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            let id = format!("ours-session-{}", sessions.len() + 1);
            sessions.insert(id.clone(), p.cwd);
            id
        };
        let modes: SessionModeState = from_script(script().modes.clone())?;
        Ok(NewSessionResponse::new(id).modes(modes))
    }

    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(p.session_id.0.clone(), p.cwd.clone());
        let session = cx
            .session(&p.session_id)
            .ok_or_else(|| Error::internal_error("a loading session is known"))?;
        for update in &script().history {
            session.send(from_script(update.clone())?).await?;
        }
        self.report
            .event(json!({"event": "loaded", "sessionId": p.session_id}));
        Ok(LoadSessionResponse::new())
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let blocks: Vec<Value> = p
            .prompt
            .iter()
            .map(|b| {
                serde_json::to_value(b)
                    .map(|b| b["type"].clone())
                    .unwrap_or_default()
            })
            .collect();
        let words: Vec<&str> = p
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        let words = words.join(" ");
        self.report
            .event(json!({"event": "prompt", "blocks": blocks, "text": words}));
        let sc = script();
        if words.contains(&sc.prompts.cancel) {
            self.cancel_turn(cx).await
        } else if words.contains(&sc.prompts.hold) {
            self.hold_turn(cx).await
        } else {
            self.work(cx).await
        }
    }

    async fn cancel(&self, p: CancelNotification) {
        self.report
            .event(json!({"event": "session_cancel", "sessionId": p.session_id}));
    }
}

/// Serves our interop agent in process on a transport (behind acp-remote's server); its `closed`
/// event goes to the report when the connection ends.
pub fn serve_over(
    report: Reporter,
    transport: impl acp_rpc::transport::Transport,
) -> acp_agent::AgentConnection {
    let agent = OursAgent {
        report: report.clone(),
        sessions: Mutex::default(),
    };
    let conn = acp_agent::Builder::new(agent).over(transport);
    let watch = conn.clone();
    tokio::spawn(async move {
        let reason = watch.closed().await;
        report.event(json!({"event": "closed", "sdk": "ours", "reason": reason.to_string()}));
    });
    conn
}

impl OursAgent {
    /// An agent writing its events to `report`.
    pub(crate) fn new(report: Reporter) -> Self {
        OursAgent {
            report,
            sessions: Mutex::default(),
        }
    }
}

/// Serves our interop agent on stdio until the client goes away.
pub async fn run(report: Reporter) {
    let agent = OursAgent::new(report.clone());
    let conn = acp_agent::Builder::new(agent).stdio();
    let reason = conn.closed().await;
    report.event(json!({"event": "closed", "sdk": "ours", "reason": reason.to_string()}));
}
