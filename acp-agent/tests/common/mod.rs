//! Shared test fixtures: a test agent that exercises every method, and a raw acp-rpc client
//! over an in-memory duplex pipe that records what it receives.
#![allow(dead_code)]

pub mod editor;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentConnection, AgentContext, Error, PromptContext};
use acp_rpc::{Config, Connection, Handler, NotificationContext, Params, RawValue, RequestContext};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

/// Builds any protocol type from JSON.
pub fn v<T: DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

/// Text of an agent message chunk, if the update is one.
pub fn chunk_text(update: &Value) -> Option<String> {
    (update["update"]["sessionUpdate"] == "agent_message_chunk").then(|| {
        update["update"]["content"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    })
}

/// An agent implementing every method with a recognisable answer.
pub struct FullAgent;

#[acp_agent::async_trait]
impl Agent for FullAgent {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(
            json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}),
        ))
    }
    async fn authenticate(
        &self,
        _p: AuthenticateRequest,
        _cx: &AgentContext,
    ) -> Result<AuthenticateResponse, Error> {
        Ok(v(json!({"_meta": {"by": "authenticate"}})))
    }
    async fn logout(&self, _p: LogoutRequest, _cx: &AgentContext) -> Result<LogoutResponse, Error> {
        Ok(v(json!({"_meta": {"by": "logout"}})))
    }
    async fn new_session(
        &self,
        p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let id = format!("s-{}", p.cwd.trim_start_matches('/'));
        // Sent (and awaited) before the response exists: must still be written after it.
        cx.client()
            .send_update(id.as_str(), SessionUpdate::agent_message_text("welcome"))
            .await?;
        let client = cx.client().clone();
        let spawned = id.clone();
        tokio::spawn(async move {
            let _ = client
                .send_update(
                    spawned.as_str(),
                    SessionUpdate::agent_message_text("spawned"),
                )
                .await;
        });
        Ok(v(json!({"sessionId": id})))
    }
    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        cx.client()
            .send_update(
                p.session_id.clone(),
                SessionUpdate::user_message_text("history"),
            )
            .await?;
        Ok(v(json!({})))
    }
    async fn list_sessions(
        &self,
        _p: ListSessionsRequest,
        _cx: &AgentContext,
    ) -> Result<ListSessionsResponse, Error> {
        Ok(v(
            json!({"sessions": [{"sessionId": "s-old", "cwd": "/old"}]}),
        ))
    }
    async fn resume_session(
        &self,
        _p: ResumeSessionRequest,
        _cx: &AgentContext,
    ) -> Result<ResumeSessionResponse, Error> {
        Ok(v(json!({})))
    }
    async fn close_session(
        &self,
        _p: CloseSessionRequest,
        _cx: &AgentContext,
    ) -> Result<CloseSessionResponse, Error> {
        Ok(v(json!({"_meta": {"by": "close"}})))
    }
    async fn delete_session(
        &self,
        _p: DeleteSessionRequest,
        _cx: &AgentContext,
    ) -> Result<DeleteSessionResponse, Error> {
        Ok(v(json!({"_meta": {"by": "delete"}})))
    }
    async fn set_session_mode(
        &self,
        _p: SetSessionModeRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        Ok(v(json!({"_meta": {"by": "set_mode"}})))
    }
    async fn set_session_config_option(
        &self,
        _p: SetSessionConfigOptionRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        Ok(v(json!({"configOptions": []})))
    }
    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let text = match p.prompt.first() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        let s = cx.session();
        match text.as_str() {
            "stream" => {
                s.thought_chunk("thinking").await?;
                s.plan(vec![v(
                    json!({"content": "step", "priority": "high", "status": "pending"}),
                )])
                .await?;
                let tool = s.start_tool_call(ToolCall::new("t1", "Read file")).await?;
                tool.status(ToolCallStatus::InProgress).await?;
                tool.locations(vec![v(json!({"path": "/a.txt", "line": 3}))])
                    .await?;
                tool.complete(vec![v(
                    json!({"type": "content", "content": {"type": "text", "text": "done"}}),
                )])
                .await?;
                s.available_commands(vec![v(json!({"name": "web", "description": "search"}))])
                    .await?;
                s.current_mode("code").await?;
                // Spawned updates still in flight when the prompt returns.
                for i in 0..20 {
                    let s = s.clone();
                    tokio::spawn(async move { s.message_chunk(format!("late {i}")).await });
                }
                tokio::task::yield_now().await;
                for i in 0..20 {
                    s.message_chunk(format!("chunk {i}")).await?;
                }
                Ok(PromptResponse::new(StopReason::EndTurn))
            }
            "permission then wait" => {
                let tool = ToolCallUpdate::new("t-perm");
                let options = vec![v(
                    json!({"optionId": "allow", "name": "Allow", "kind": "allow_once"}),
                )];
                let outcome = s.request_permission(tool, options).await?;
                let label = match outcome {
                    RequestPermissionOutcome::Cancelled => "cancelled".to_owned(),
                    other => format!("{other:?}"),
                };
                s.message_chunk(format!("permission: {label}")).await?;
                if cx.is_cancelled() {
                    return Ok(PromptResponse::new(StopReason::Cancelled));
                }
                Ok(PromptResponse::new(StopReason::EndTurn))
            }
            "read" => {
                let r = cx
                    .client()
                    .read_text_file(v(json!({"sessionId": s.id(), "path": "/x.txt"})))
                    .await;
                let text = match r {
                    Ok(r) => format!("ok: {}", r.content),
                    Err(e) => format!(
                        "err: {} {}",
                        e.code.0,
                        e.data.unwrap_or_default()["capability"]
                    ),
                };
                s.message_chunk(text).await?;
                Ok(PromptResponse::new(StopReason::EndTurn))
            }
            "client calls" => {
                let c = cx.client();
                let sid = s.id().clone();
                let mut report = Vec::new();
                let w = c
                    .write_text_file(v(json!({"sessionId": sid, "path": "/y", "content": "c"})))
                    .await;
                report.push(format!("write {}", w.is_ok()));
                let t = c
                    .create_terminal(v(json!({"sessionId": sid, "command": "ls"})))
                    .await?;
                let tid = t.terminal_id.clone();
                let o = c
                    .terminal_output(v(json!({"sessionId": sid, "terminalId": tid})))
                    .await?;
                report.push(format!("output {}", o.output));
                let e = c
                    .wait_for_terminal_exit(v(json!({"sessionId": sid, "terminalId": tid})))
                    .await?;
                report.push(format!("exit {:?}", e.exit_code));
                c.kill_terminal(v(json!({"sessionId": sid, "terminalId": tid})))
                    .await?;
                c.release_terminal(v(json!({"sessionId": sid, "terminalId": tid})))
                    .await?;
                let el = c
                    .create_elicitation(v(json!({"sessionId": sid, "mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}})))
                    .await;
                report.push(format!(
                    "elicitation {}",
                    el.map(|_| "ok".to_owned())
                        .unwrap_or_else(|e| e.code.0.to_string())
                ));
                let x = c.ext_method("_test/echo", json!({"n": 1})).await?;
                report.push(format!("ext {x}"));
                s.message_chunk(report.join("; ")).await?;
                Ok(PromptResponse::new(StopReason::EndTurn))
            }
            "wait" => tokio::select! {
                _ = cx.cancelled() => Ok(PromptResponse::new(StopReason::Cancelled)),
                _ = tokio::time::sleep(Duration::from_millis(300)) => Ok(PromptResponse::new(StopReason::EndTurn)),
            },
            _ => Ok(PromptResponse::new(StopReason::EndTurn)),
        }
    }
    async fn ext_method(
        &self,
        method: &str,
        params: Value,
        _cx: &AgentContext,
    ) -> Result<Value, Error> {
        match method {
            "_test/echo" => Ok(json!({"method": method, "params": params})),
            _ => Err(Error::method_not_found(method)),
        }
    }
    async fn ext_notification(&self, method: &str, params: Value) {
        EXT_SEEN.lock().unwrap().push(format!("{method} {params}"));
    }
}

/// Extension notifications the full agent received.
pub static EXT_SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// What the test client records and how it answers.
#[derive(Clone, Default)]
pub struct Recorder {
    /// Every `session/update` params, in arrival order.
    pub updates: Arc<Mutex<Vec<Value>>>,
    /// Methods of the requests the agent sent.
    pub calls: Arc<Mutex<Vec<String>>>,
    /// Signalled when a permission request arrives.
    pub permission_tx: Option<mpsc::UnboundedSender<()>>,
}

#[acp_rpc::async_trait]
impl Handler for Recorder {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.calls.lock().unwrap().push(method.to_owned());
        let p: Value = params.parse()?;
        let answer = match method {
            "session/request_permission" => {
                if let Some(tx) = &self.permission_tx {
                    let _ = tx.send(());
                }
                // Never answered: only a cancellation (`$/cancel_request`) ends it.
                struct Withdrawn(Arc<Mutex<Vec<String>>>);
                impl Drop for Withdrawn {
                    fn drop(&mut self) {
                        self.0
                            .lock()
                            .unwrap()
                            .push("permission withdrawn".to_owned());
                    }
                }
                let _withdrawn = Withdrawn(self.calls.clone());
                std::future::pending::<()>().await;
                unreachable!()
            }
            "fs/read_text_file" => json!({"content": "hello"}),
            "fs/write_text_file" => json!({}),
            "terminal/create" => json!({"terminalId": "term-1"}),
            "terminal/output" => json!({"output": "files", "truncated": false}),
            "terminal/wait_for_exit" => json!({"exitCode": 0}),
            "terminal/kill" | "terminal/release" => json!({}),
            "elicitation/create" => json!({"action": "cancel"}),
            "_test/echo" => json!({"echo": p}),
            _ => return Err(Error::method_not_found(method)),
        };
        acp_rpc::to_raw(&answer)
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        if method == "session/update" {
            self.updates.lock().unwrap().push(params.parse()?);
        }
        Ok(())
    }
}

/// An agent served over a duplex pipe, and a raw client connection to it.
pub struct Pair {
    pub agent: AgentConnection,
    pub client: Connection,
    pub rec: Recorder,
}

impl Pair {
    pub fn new<A: Agent>(agent: A, rec: Recorder) -> Pair {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let agent = acp_agent::Builder::new(agent).io(ar, aw);
        let client = Connection::new(br, bw, rec.clone(), Config::default());
        Pair { agent, client, rec }
    }

    pub async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        tokio::time::timeout(
            Duration::from_secs(10),
            self.client.peer().request(method, &params),
        )
        .await
        .expect("no answer within 10 s")
    }

    pub async fn init(&self, caps: Value) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps}),
        )
        .await
        .expect("initialize succeeds")
    }

    pub fn updates(&self) -> Vec<Value> {
        self.rec.updates.lock().unwrap().clone()
    }
}

/// Every capability a client can advertise.
pub fn all_caps() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true, "elicitation": {"form": {}}})
}

/// A raw client: JSON lines in and out of a served [`FullAgent`].
pub struct Wire {
    pub lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    pub write: WriteHalf<DuplexStream>,
    pub _agent: acp_agent::AgentConnection,
}

impl Wire {
    pub fn new() -> Wire {
        // A small pipe so the agent's writes really queue up behind the reader.
        let (a, b) = tokio::io::duplex(256);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let agent = acp_agent::Builder::new(FullAgent).io(ar, aw);
        Wire {
            lines: BufReader::new(br).lines(),
            write: bw,
            _agent: agent,
        }
    }

    pub async fn send(&mut self, msg: Value) {
        let mut line = serde_json::to_vec(&msg).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s")
            .unwrap()
            .expect("not EOF");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the response with `id`, returning everything read before it.
    pub async fn until_response(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let msg = self.next().await;
            if msg["id"] == id && msg.get("method").is_none() {
                return (before, msg);
            }
            before.push(msg);
        }
    }

    /// Writes several messages in one write (so they are read back to back).
    pub async fn send_all(&mut self, msgs: &[Value]) {
        let mut buf = Vec::new();
        for m in msgs {
            buf.extend(serde_json::to_vec(m).unwrap());
            buf.push(b'\n');
        }
        self.write.write_all(&buf).await.unwrap();
    }

    /// `initialize` and `session/new` with cwd `/w` (session `s-w`).
    pub async fn start(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
        self.until_response(1).await;
        self.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}})).await;
        self.until_response(2).await;
    }
}
