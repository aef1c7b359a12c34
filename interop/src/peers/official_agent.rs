//! The official Rust SDK's agent in the matrix (`agent-client-protocol` 5.2.0):
//! `acp-interop rust-agent [--report <file>]`.
//!
//! Built the way that SDK's docs say: a `Agent.v1()` builder with typed handlers; a prompt
//! handler that needs answers from the client spawns its work (`ConnectionTo::spawn`) so the
//! dispatch loop keeps running, and answers through its `Responder`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, ContentBlock, ContentChunk,
    CreateTerminalRequest, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PermissionOption, PromptCapabilities, PromptRequest, PromptResponse, ReadTextFileRequest,
    ReleaseTerminalRequest, RequestPermissionOutcome, RequestPermissionRequest, SessionModeState,
    SessionNotification, SessionUpdate, StopReason, Terminal, TerminalOutputRequest, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, WaitForTerminalExitRequest, WriteTextFileRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, RequestCancellation, Stdio, UntypedMessage};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::report::Reporter;
use crate::script::script;

/// Decodes a value of the shared script (`peers/script.json`): the same JSON every SDK's peer
/// sends, so it is read as data, not built here.
fn from_script<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(Error::into_internal_error)
}

fn code(e: &Error) -> i32 {
    e.code.into()
}

#[derive(Default)]
struct State {
    caps: Mutex<ClientCapabilities>,
    cwd: Mutex<HashMap<String, String>>,
    sessions: Mutex<usize>,
    /// Session id -> the running cancel turn's wake-up.
    cancels: Mutex<HashMap<String, Arc<Notify>>>,
}

use acp_rpc::sync::lock;

struct Turn {
    cx: ConnectionTo<Client>,
    state: Arc<State>,
    report: Reporter,
    session: String,
}

impl Turn {
    fn send(&self, update: SessionUpdate) -> Result<(), Error> {
        self.cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
    }

    fn message(&self, text: &str) -> Result<(), Error> {
        self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            text.into(),
        )))
    }

    fn start(&self, call: &ToolCall) -> Result<(), Error> {
        self.send(SessionUpdate::ToolCall(call.clone()))
    }

    fn update(&self, id: &'static str, fields: ToolCallUpdateFields) -> Result<(), Error> {
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id, fields,
        )))
    }

    /// Asks the client about `call` with the script's options; true when it chose an `allow_*`.
    async fn ask(&self, call: &ToolCall) -> Result<bool, Error> {
        let options = script()
            .permission_options
            .iter()
            .map(|o| from_script(o.clone()))
            .collect::<Result<Vec<PermissionOption>, _>>()?;
        let request =
            RequestPermissionRequest::new(self.session.clone(), call.clone().into(), options);
        let outcome = self.cx.send_request(request).block_task().await?.outcome;
        self.report.event(
            json!({"event": "permission", "toolCallId": call.tool_call_id, "outcome": outcome}),
        );
        Ok(
            matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id.0.starts_with("allow")),
        )
    }

    async fn bad_call(&self, name: &str, method: &str, params: Value) -> Result<(), Error> {
        let result = self
            .cx
            .send_request(UntypedMessage::new(method, params)?)
            .block_task()
            .await;
        let code = result.err().map(|e| code(&e));
        self.report
            .event(json!({"event": "error", "bad_call": name, "code": code}));
        Ok(())
    }

    async fn work(&self) -> Result<PromptResponse, Error> {
        let sc = script();
        let caps = lock(&self.state.caps).clone();
        let session_caps = caps.session.clone().unwrap_or_default();
        for update in &sc.updates {
            let kind = update["sessionUpdate"].as_str().unwrap_or_default();
            let missing = match kind {
                "notice" if session_caps.notices.is_none() => Some("session.notices"),
                k if k.starts_with("compaction_") && session_caps.compaction.is_none() => {
                    Some("session.compaction")
                }
                _ => None,
            };
            if let Some(capability) = missing {
                self.report.event(json!({"event": "skipped", "update": kind, "why": format!("client did not advertise {capability}")}));
                continue;
            }
            self.send(from_script(update.clone())?)?;
        }
        let cwd = lock(&self.state.cwd)
            .get(&self.session)
            .cloned()
            .unwrap_or_default();
        let read_path = format!("{cwd}/{}", sc.workspace.read_file);
        let write_path = format!("{cwd}/{}", sc.workspace.write_file);
        let edit = ToolCall::new("edit-1", "Copy hello.txt")
            .kind(ToolKind::Edit)
            .status(ToolCallStatus::Pending)
            .locations(vec![ToolCallLocation::new(&read_path)]);
        self.start(&edit)?;
        if self.ask(&edit).await? {
            self.update(
                "edit-1",
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            )?;
            let mut content = String::new();
            if caps.fs.read_text_file {
                let request = ReadTextFileRequest::new(self.session.clone(), &read_path);
                content = self.cx.send_request(request).block_task().await?.content;
                self.report
                    .event(json!({"event": "fs_read", "path": read_path, "content": content}));
            }
            if caps.fs.write_text_file {
                let request = WriteTextFileRequest::new(
                    self.session.clone(),
                    &write_path,
                    format!("{}{content}", sc.workspace.write_prefix),
                );
                self.cx.send_request(request).block_task().await?;
                self.report
                    .event(json!({"event": "fs_write", "path": write_path}));
            }
            self.update(
                "edit-1",
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .content(vec![content.into()]),
            )?;
        }
        let delete = ToolCall::new("delete-1", "Delete the workspace")
            .kind(ToolKind::Delete)
            .status(ToolCallStatus::Pending);
        self.start(&delete)?;
        let (status, note) = if self.ask(&delete).await? {
            (ToolCallStatus::Completed, "deleted")
        } else {
            (ToolCallStatus::Failed, "not allowed")
        };
        self.update(
            "delete-1",
            ToolCallUpdateFields::new()
                .status(status)
                .content(vec![note.into()]),
        )?;

        if caps.terminal {
            let request = CreateTerminalRequest::new(self.session.clone(), &sc.terminal.command)
                .args(sc.terminal.args.clone())
                .output_byte_limit(4096);
            let terminal = self
                .cx
                .send_request(request)
                .block_task()
                .await?
                .terminal_id;
            self.start(
                &ToolCall::new("term-1", "Run echo")
                    .kind(ToolKind::Execute)
                    .status(ToolCallStatus::InProgress)
                    .content(vec![ToolCallContent::Terminal(Terminal::new(
                        terminal.clone(),
                    ))]),
            )?;
            let session = self.session.clone();
            let exit = self
                .cx
                .send_request(WaitForTerminalExitRequest::new(
                    session.clone(),
                    terminal.clone(),
                ))
                .block_task()
                .await?
                .exit_status;
            let output = self
                .cx
                .send_request(TerminalOutputRequest::new(
                    session.clone(),
                    terminal.clone(),
                ))
                .block_task()
                .await?;
            self.cx
                .send_request(ReleaseTerminalRequest::new(session, terminal))
                .block_task()
                .await?;
            self.report.event(
                json!({"event": "terminal", "output": output.output, "exitCode": exit.exit_code}),
            );
            self.update(
                "term-1",
                ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
            )?;
        }

        self.bad_call("unknown_method", &sc.unknown_method, json!({}))
            .await?;
        self.bad_call(
            "invalid_params",
            "fs/read_text_file",
            json!({"sessionId": self.session}),
        )
        .await?;
        self.message("done")?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    async fn cancel_turn(&self) -> Result<PromptResponse, Error> {
        let wake = Arc::new(Notify::new());
        lock(&self.state.cancels).insert(self.session.clone(), wake.clone());
        self.message("starting a long task")?;
        let long = ToolCall::new("long-1", "A long task")
            .kind(ToolKind::Execute)
            .status(ToolCallStatus::Pending);
        self.start(&long)?;
        self.ask(&long).await?;
        let via = tokio::select! {
            _ = wake.notified() => "session/cancel",
            _ = tokio::time::sleep(Duration::from_millis(script().cancel_wait_ms)) => "timeout",
        };
        lock(&self.state.cancels).remove(&self.session);
        self.report.event(json!({"event": "cancelled", "via": via}));
        self.update(
            "long-1",
            ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
        )?;
        Ok(PromptResponse::new(if via == "timeout" {
            StopReason::EndTurn
        } else {
            StopReason::Cancelled
        }))
    }

    async fn hold_turn(&self, cancellation: RequestCancellation) -> Result<PromptResponse, Error> {
        self.message(&script().holding_message)?;
        tokio::select! {
            _ = cancellation.cancelled() => {
                self.report.event(json!({"event": "request_cancelled"}));
                Err(Error::request_cancelled())
            }
            _ = tokio::time::sleep(Duration::from_millis(script().cancel_wait_ms)) => {
                self.report.event(json!({"event": "hold_timeout"}));
                Ok(PromptResponse::new(StopReason::EndTurn))
            }
        }
    }
}

/// Serves the official SDK's interop agent on stdio until the client goes away.
pub async fn run(report: Reporter) -> Result<(), Error> {
    let state = Arc::new(State::default());
    let (s_init, s_new, s_load, s_prompt, s_cancel) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let (r_init, r_load, r_prompt, r_cancel) = (
        report.clone(),
        report.clone(),
        report.clone(),
        report.clone(),
    );
    let result = Agent
        .v1()
        .name("rust-interop-agent")
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: ConnectionTo<Client>| {
                r_init.event(json!({"event": "initialize", "protocolVersion": request.protocol_version, "clientCapabilities": request.client_capabilities}));
                *lock(&s_init.caps) = request.client_capabilities.clone();
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(
                            AgentCapabilities::new().load_session(true).prompt_capabilities(
                                PromptCapabilities::new().image(true).embedded_context(true),
                            ),
                        )
                        .agent_info(Implementation::new("rust-interop-agent", "5.2.0")),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        _cx: ConnectionTo<Client>| {
                let id = {
                    let mut n = lock(&s_new.sessions);
                    *n += 1;
                    format!("rust-session-{n}")
                };
                lock(&s_new.cwd).insert(id.clone(), request.cwd.to_string_lossy().into_owned());
                let modes: SessionModeState = from_script(script().modes.clone())?;
                responder.respond(NewSessionResponse::new(id).modes(modes))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let session = request.session_id.0.to_string();
                lock(&s_load.cwd).insert(session.clone(), request.cwd.to_string_lossy().into_owned());
                for update in &script().history {
                    cx.send_notification(SessionNotification::new(session.clone(), from_script(update.clone())?))?;
                }
                r_load.event(json!({"event": "loaded", "sessionId": session}));
                responder.respond(LoadSessionResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let blocks: Vec<Value> = request
                    .prompt
                    .iter()
                    .map(|b| serde_json::to_value(b).map(|b| b["type"].clone()).unwrap_or_default())
                    .collect();
                let words: Vec<&str> = request
                    .prompt
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let words = words.join(" ");
                r_prompt.event(json!({"event": "prompt", "blocks": blocks, "text": words}));
                let turn = Turn {
                    cx: cx.clone(),
                    state: s_prompt.clone(),
                    report: r_prompt.clone(),
                    session: request.session_id.0.to_string(),
                };
                let cancellation = responder.cancellation();
                // Requests to the client need the dispatch loop: run the turn beside it.
                cx.spawn(async move {
                    let sc = script();
                    let result = if words.contains(&sc.prompts.cancel) {
                        turn.cancel_turn().await
                    } else if words.contains(&sc.prompts.hold) {
                        turn.hold_turn(cancellation).await
                    } else {
                        turn.work().await
                    };
                    responder.respond_with_result(result)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx: ConnectionTo<Client>| {
                let session = n.session_id.0.to_string();
                r_cancel.event(json!({"event": "session_cancel", "sessionId": session}));
                if let Some(wake) = lock(&s_cancel.cancels).get(&session) {
                    wake.notify_one();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await;
    report.event(json!({"event": "closed", "sdk": "rust", "error": result.as_ref().err().map(|e| e.to_string())}));
    result
}
