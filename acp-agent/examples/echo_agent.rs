//! A demo agent that needs no network or model, served over stdio.
//!
//! For each prompt it streams a thought, publishes a plan, asks permission and reads
//! `hello.txt` from the session's directory through the client (if the client offers
//! `fs.readTextFile`), runs `echo` in a client terminal (if the client offers `terminal`),
//! then echoes the prompt back word by word. It honours `session/cancel` at every step and
//! supports two modes (`ask`, `code`).
//!
//! It speaks every dialect this build has (v1, 0.0.9, threads), found from the client's first
//! message; `--dialects v1,legacy-0.0.9` pins the accepted ones. `--store DIR` keeps the
//! sessions of v1 clients in DIR (`acp_agent::store::JsonlStore`), so `session/load`,
//! `session/list` and `session/resume` work across restarts. Run it under an ACP client,
//! e.g. `cargo run -p acp-client --example demo` (which spawns it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use acp_agent::negotiate::{NegotiateOptions, serve_stdio};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Dialect, Error, PromptContext, SessionHandle};
use serde::de::DeserializeOwned;
use serde_json::json;

fn v<T: DeserializeOwned>(j: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(j).map_err(|e| Error::internal_error(e.to_string()))
}

#[derive(Default)]
struct EchoAgent {
    /// Session id -> working directory.
    sessions: Mutex<HashMap<String, String>>,
    /// Put in session ids so that they stay unique across restarts (with `--store`).
    id_prefix: String,
}

enum Step {
    Done,
    Cancelled,
}

impl EchoAgent {
    async fn read_file(&self, cx: &PromptContext, s: &SessionHandle) -> Result<Step, Error> {
        let readable = cx
            .client_capabilities()
            .is_some_and(|c| c.fs.read_text_file);
        if !readable {
            s.message_chunk("(the client offers no file reading; skipping the file tool)\n")
                .await?;
            return Ok(Step::Done);
        }
        let cwd = self
            .sessions
            .lock()
            .unwrap()
            .get(&s.id().0)
            .cloned()
            .unwrap_or_default();
        let path = format!("{}/hello.txt", cwd.trim_end_matches('/'));
        let mut call = ToolCall::new("read-1", format!("Read {path}"));
        call.kind = v(json!("read"))?;
        call.locations = vec![v(json!({"path": path}))?];
        let tool = s.start_tool_call(call).await?;
        let options = vec![
            v(json!({"optionId": "allow", "name": "Allow", "kind": "allow_once"}))?,
            v(json!({"optionId": "reject", "name": "Reject", "kind": "reject_once"}))?,
        ];
        let outcome = match s.request_permission(tool.blank(), options).await {
            Ok(outcome) => outcome,
            // A client that cannot ask its user (a threads editor, through the adapter):
            // nothing is allowed that was not granted.
            Err(e) if e.code == acp_agent::ErrorCode::METHOD_NOT_FOUND => {
                tool.fail(vec![text_content(&format!(
                    "the client cannot ask for permission ({})",
                    e.message
                ))?])
                .await?;
                return Ok(Step::Done);
            }
            Err(e) => return Err(e),
        };
        match outcome {
            RequestPermissionOutcome::Cancelled => return Ok(Step::Cancelled),
            RequestPermissionOutcome::Selected(sel) if sel.option_id.0 == "allow" => {}
            _ => {
                tool.fail(vec![text_content("permission denied")?]).await?;
                return Ok(Step::Done);
            }
        }
        tool.status(ToolCallStatus::InProgress).await?;
        let read = cx
            .client()
            .read_text_file(v(json!({"sessionId": s.id(), "path": path}))?)
            .await;
        match read {
            Ok(r) => tool.complete(vec![text_content(&r.content)?]).await?,
            Err(e) => tool.fail(vec![text_content(&e.message)?]).await?,
        }
        Ok(Step::Done)
    }

    async fn run_terminal(&self, cx: &PromptContext, s: &SessionHandle) -> Result<Step, Error> {
        if !cx.client_capabilities().is_some_and(|c| c.terminal) {
            return Ok(Step::Done);
        }
        let client = cx.client();
        let created = client
            .create_terminal(v(json!({"sessionId": s.id(), "command": "echo", "args": ["hello from a terminal"], "outputByteLimit": 4096}))?)
            .await?;
        let tid = created.terminal_id;
        let mut call = ToolCall::new("term-1", "Run echo");
        call.kind = v(json!("execute"))?;
        call.content = vec![v(json!({"type": "terminal", "terminalId": tid}))?];
        let tool = s.start_tool_call(call).await?;
        let ids = json!({"sessionId": s.id(), "terminalId": tid});
        let exit = tokio::select! {
            r = client.wait_for_terminal_exit(v(ids.clone())?) => Some(r?),
            _ = cx.cancelled() => None,
        };
        let Some(exit) = exit else {
            let _ = client.kill_terminal(v(ids.clone())?).await;
            let _ = client.release_terminal(v(ids)?).await;
            return Ok(Step::Cancelled);
        };
        let output = client.terminal_output(v(ids.clone())?).await?;
        client.release_terminal(v(ids)?).await?;
        let summary = format!("exit {:?}: {}", exit.exit_code, output.output.trim_end());
        tool.complete(vec![text_content(&summary)?]).await?;
        Ok(Step::Done)
    }
}

fn text_content(text: &str) -> Result<ToolCallContent, Error> {
    v(json!({"type": "content", "content": {"type": "text", "text": text}}))
}

#[acp_agent::async_trait]
impl Agent for EchoAgent {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        v(json!({
            "protocolVersion": 1,
            "agentCapabilities": {"promptCapabilities": {}},
            "agentInfo": {"name": "echo-agent", "version": env!("CARGO_PKG_VERSION")}
        }))
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let id = {
            let mut sessions = self.sessions.lock().unwrap();
            let id = format!("echo-{}{}", self.id_prefix, sessions.len() + 1);
            sessions.insert(id.clone(), p.cwd);
            id
        };
        // Held by the SDK until the response below has been written.
        cx.client()
            .send_update(
                id.as_str(),
                SessionUpdate::AvailableCommandsUpdate(v(json!({"availableCommands": [
                    {"name": "echo", "description": "Echo the prompt back"}
                ]}))?),
            )
            .await?;
        v(json!({
            "sessionId": id,
            "modes": {"currentModeId": "ask", "availableModes": [
                {"id": "ask", "name": "Ask", "description": "Ask before reading files"},
                {"id": "code", "name": "Code"}
            ]}
        }))
    }

    async fn set_session_mode(
        &self,
        p: SetSessionModeRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        if !["ask", "code"].contains(&p.mode_id.0.as_str()) {
            return Err(Error::invalid_params(format!(
                "unknown mode {}",
                p.mode_id.0
            )));
        }
        if let Some(s) = cx.session(&p.session_id) {
            s.current_mode(p.mode_id).await?;
        }
        v(json!({}))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        let text: Vec<String> = p
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect();
        let text = text.join(" ");
        s.thought_chunk("The user said something; I will echo it.")
            .await?;
        s.plan(vec![
            v(json!({"content": "Read hello.txt", "priority": "medium", "status": "pending"}))?,
            v(json!({"content": "Run a terminal command", "priority": "low", "status": "pending"}))?,
            v(json!({"content": "Echo the prompt", "priority": "high", "status": "pending"}))?,
        ])
        .await?;
        let cancelled = Ok(PromptResponse::new(StopReason::Cancelled));
        if let Step::Cancelled = self.read_file(cx, s).await? {
            return cancelled;
        }
        if let Step::Cancelled = self.run_terminal(cx, s).await? {
            return cancelled;
        }
        for word in text.split_whitespace() {
            tokio::select! {
                _ = cx.cancelled() => return cancelled,
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            s.message_chunk(format!("{word} ")).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut options = NegotiateOptions::default();
    if let Ok(cwd) = std::env::current_dir() {
        options = options.with_legacy_cwd(cwd);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--dialects") {
        let list = args.get(i + 1).map(String::as_str).unwrap_or("");
        let dialects: Result<Vec<Dialect>, _> = list.split(',').map(str::parse).collect();
        match dialects {
            Ok(dialects) => options = options.with_dialects(dialects),
            Err(e) => {
                eprintln!("echo_agent: --dialects: {e}");
                std::process::exit(2);
            }
        }
    }
    let mut agent = EchoAgent::default();
    if let Some(i) = args.iter().position(|a| a == "--store") {
        let dir = args.get(i + 1).map(String::as_str).unwrap_or("");
        match acp_agent::store::JsonlStore::open(dir) {
            Ok(store) => options = options.with_store(store),
            Err(e) => {
                eprintln!("echo_agent: --store {dir:?}: {e}");
                std::process::exit(1);
            }
        }
        agent.id_prefix = format!("{}-", acp_agent::store::now_rfc3339());
    }
    let conn = match serve_stdio(agent, options).await {
        Ok(conn) => conn,
        Err(e) => {
            eprintln!("echo_agent: {e}");
            std::process::exit(1);
        }
    };
    eprintln!("echo_agent: the client speaks {}", conn.dialect());
    let reason = conn.closed().await;
    eprintln!("echo_agent: connection closed ({reason})");
}
