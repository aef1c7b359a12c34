//! The official Rust SDK's agent in the matrix (`agent-client-protocol` 5.0.0):
//! `acp-interop rust-agent [--report <file>]`.
//!
//! Built the way that SDK's docs say: a `Agent.v1()` builder with typed handlers; a prompt
//! handler that needs answers from the client spawns its work (`ConnectionTo::spawn`) so the
//! dispatch loop keeps running, and answers through its `Responder`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, ReadTextFileRequest, RequestPermissionRequest, SessionNotification,
    SessionUpdate, StopReason, TerminalOutputRequest, WriteTextFileRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, RequestCancellation, Stdio, UntypedMessage};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::report::Reporter;
use crate::script::script;

fn v<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Turn {
    cx: ConnectionTo<Client>,
    state: Arc<State>,
    report: Reporter,
    session: String,
}

impl Turn {
    fn send(&self, update: Value) -> Result<(), Error> {
        let update: SessionUpdate = v(update)?;
        self.cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
    }

    async fn ask(&self, call: &Value) -> Result<Value, Error> {
        let request: RequestPermissionRequest = v(json!({
            "sessionId": self.session,
            "toolCall": call,
            "options": script().permission_options,
        }))?;
        let response = self.cx.send_request(request).block_task().await?;
        let outcome = serde_json::to_value(&response.outcome).unwrap_or_default();
        self.report.event(
            json!({"event": "permission", "toolCallId": call["toolCallId"], "outcome": outcome}),
        );
        Ok(outcome)
    }

    async fn probe(&self, name: &str, method: &str, params: Value) -> Result<(), Error> {
        let result = self
            .cx
            .send_request(UntypedMessage::new(method, params)?)
            .block_task()
            .await;
        let code = result.err().map(|e| code(&e));
        self.report
            .event(json!({"event": "error", "probe": name, "code": code}));
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
            self.send(update.clone())?;
        }
        let cwd = lock(&self.state.cwd)
            .get(&self.session)
            .cloned()
            .unwrap_or_default();
        let read_path = format!("{cwd}/{}", sc.workspace.read_file);
        let write_path = format!("{cwd}/{}", sc.workspace.write_file);
        let edit = json!({"toolCallId": "edit-1", "title": "Copy hello.txt", "kind": "edit", "status": "pending", "locations": [{"path": read_path}]});
        self.send(with_kind(&edit, "tool_call"))?;
        let allowed = self.ask(&edit).await?;
        if is_allow(&allowed) {
            self.send(json!({"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "in_progress"}))?;
            let mut content = String::new();
            if caps.fs.read_text_file {
                let request: ReadTextFileRequest =
                    v(json!({"sessionId": self.session, "path": read_path}))?;
                content = self.cx.send_request(request).block_task().await?.content;
                self.report
                    .event(json!({"event": "fs_read", "path": read_path, "content": content}));
            }
            if caps.fs.write_text_file {
                let request: WriteTextFileRequest = v(
                    json!({"sessionId": self.session, "path": write_path, "content": format!("{}{content}", sc.workspace.write_prefix)}),
                )?;
                self.cx.send_request(request).block_task().await?;
                self.report
                    .event(json!({"event": "fs_write", "path": write_path}));
            }
            self.send(json!({"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed", "content": [text(&content)]}))?;
        }
        let delete = json!({"toolCallId": "delete-1", "title": "Delete the workspace", "kind": "delete", "status": "pending"});
        self.send(with_kind(&delete, "tool_call"))?;
        let rejected = self.ask(&delete).await?;
        let (status, note) = if is_allow(&rejected) {
            ("completed", "deleted")
        } else {
            ("failed", "not allowed")
        };
        self.send(json!({"sessionUpdate": "tool_call_update", "toolCallId": "delete-1", "status": status, "content": [text(note)]}))?;

        if caps.terminal {
            let created = self
                .cx
                .send_request(UntypedMessage::new(
                    "terminal/create",
                    json!({"sessionId": self.session, "command": sc.terminal.command, "args": sc.terminal.args, "outputByteLimit": 4096}),
                )?)
                .block_task()
                .await?;
            let tid = created["terminalId"].clone();
            self.send(json!({"sessionUpdate": "tool_call", "toolCallId": "term-1", "title": "Run echo", "kind": "execute", "status": "in_progress", "content": [{"type": "terminal", "terminalId": tid}]}))?;
            let ids = json!({"sessionId": self.session, "terminalId": tid});
            let exit = self
                .cx
                .send_request(UntypedMessage::new("terminal/wait_for_exit", ids.clone())?)
                .block_task()
                .await?;
            let request: TerminalOutputRequest = v(ids.clone())?;
            let output = self.cx.send_request(request).block_task().await?;
            self.cx
                .send_request(UntypedMessage::new("terminal/release", ids)?)
                .block_task()
                .await?;
            self.report.event(
                json!({"event": "terminal", "output": output.output, "exitCode": exit["exitCode"]}),
            );
            self.send(json!({"sessionUpdate": "tool_call_update", "toolCallId": "term-1", "status": "completed"}))?;
        }

        self.probe("unknown_method", &sc.unknown_method, json!({}))
            .await?;
        self.probe(
            "invalid_params",
            "fs/read_text_file",
            json!({"sessionId": self.session}),
        )
        .await?;
        self.send(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}))?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    async fn cancel_turn(&self) -> Result<PromptResponse, Error> {
        let wake = Arc::new(Notify::new());
        lock(&self.state.cancels).insert(self.session.clone(), wake.clone());
        self.send(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "starting a long task"}}))?;
        let long = json!({"toolCallId": "long-1", "title": "A long task", "kind": "execute", "status": "pending"});
        self.send(with_kind(&long, "tool_call"))?;
        self.ask(&long).await?;
        let via = tokio::select! {
            _ = wake.notified() => "session/cancel",
            _ = tokio::time::sleep(Duration::from_millis(script().cancel_wait_ms)) => "timeout",
        };
        lock(&self.state.cancels).remove(&self.session);
        self.report.event(json!({"event": "cancelled", "via": via}));
        self.send(json!({"sessionUpdate": "tool_call_update", "toolCallId": "long-1", "status": "failed"}))?;
        Ok(PromptResponse::new(if via == "timeout" {
            StopReason::EndTurn
        } else {
            StopReason::Cancelled
        }))
    }

    async fn hold_turn(&self, cancellation: RequestCancellation) -> Result<PromptResponse, Error> {
        self.send(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": script().holding_message}}))?;
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

fn text(t: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": t}})
}

fn with_kind(call: &Value, kind: &str) -> Value {
    let mut update = call.clone();
    update["sessionUpdate"] = json!(kind);
    update
}

fn is_allow(outcome: &Value) -> bool {
    outcome["outcome"] == "selected"
        && outcome["optionId"]
            .as_str()
            .is_some_and(|o| o.starts_with("allow"))
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
                responder.respond(v(json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": true, "promptCapabilities": {"image": true, "embeddedContext": true}},
                    "agentInfo": {"name": "rust-interop-agent", "version": "5.0.0"}
                }))?)
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
                responder.respond(v(json!({"sessionId": id, "modes": script().modes}))?)
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
                    let update: SessionUpdate = v(update.clone())?;
                    cx.send_notification(SessionNotification::new(session.clone(), update))?;
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
                let words: Vec<String> = request
                    .prompt
                    .iter()
                    .filter_map(|b| serde_json::to_value(b).ok())
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str().map(str::to_owned))
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
