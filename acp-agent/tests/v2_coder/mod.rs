//! The v1 application both v2 translation tests serve (`v2_serve_v1.rs` in process,
//! `v2_serve_v1_process.rs` in a child process), and the v2 editor that drives it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use acp_dialects::v2 as d2;
use acp_dialects::{LocalFiles, PathStat};
use acp_types::v2 as w2;
use serde_json::{Value, json};
use std::time::Duration;

use tokio::sync::mpsc;

/// Files kept in memory: what the translation serves the v1 agent's `fs/*` calls from.
#[derive(Debug, Default, Clone)]
pub struct MemFs(pub Arc<Mutex<HashMap<String, String>>>);

#[async_trait::async_trait]
impl LocalFiles for MemFs {
    async fn read_text_file(&self, r: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        let files = self.0.lock().unwrap();
        let text = files.get(&r.path).cloned().unwrap_or_default();
        Ok(ReadTextFileResponse::new(text))
    }
    async fn write_text_file(
        &self,
        r: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.0.lock().unwrap().insert(r.path, r.content);
        Ok(WriteTextFileResponse::default())
    }
    async fn read_bytes(&self, _: &str, _: Option<u64>, _: Option<u64>) -> Result<Vec<u8>, Error> {
        Ok(Vec::new())
    }
    async fn stat(&self, _: &str) -> Result<PathStat, Error> {
        Ok(PathStat {
            exists: false,
            is_directory: false,
        })
    }
    async fn glob(&self, _: &str) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }
    fn default_cwd(&self) -> Option<std::path::PathBuf> {
        None
    }
}

/// The v1 application: modes `ask` and `code`; "edit" asks, writes a file, runs `echo`;
/// "wait" runs until cancelled.
pub struct Coder {
    pub mode: Mutex<String>,
}

#[async_trait::async_trait]
impl Agent for Coder {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        assert_eq!(p.client_info.unwrap().name, "v2 editor");
        assert!(
            p.client_capabilities.terminal,
            "local terminals are advertised"
        );
        assert!(
            p.client_capabilities.fs.write_text_file,
            "local files are advertised"
        );
        Ok(serde_json::from_value(json!({
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "promptCapabilities": {"image": true}},
            "agentInfo": {"name": "coder", "version": "1.0.0"},
            "authMethods": [{"id": "key", "name": "API key"}]
        }))
        .unwrap())
    }

    async fn authenticate(
        &self,
        p: AuthenticateRequest,
        _: &AgentContext,
    ) -> Result<AuthenticateResponse, Error> {
        assert_eq!(p.method_id.0, "key");
        Ok(AuthenticateResponse::default())
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let modes = SessionModeState::new(
            "ask",
            vec![
                SessionMode::new("ask", "Ask"),
                SessionMode::new("code", "Code"),
            ],
        );
        Ok(NewSessionResponse::new("s1").modes(modes))
    }

    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        let session = cx.session(&p.session_id).expect("the load is tracked");
        session.user_chunk("earlier question").await?;
        session.message_chunk("earlier answer").await?;
        Ok(LoadSessionResponse::new())
    }

    async fn set_session_mode(
        &self,
        p: SetSessionModeRequest,
        _: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        *self.mode.lock().unwrap() = p.mode_id.0.clone();
        Ok(SetSessionModeResponse::default())
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let session = cx.session();
        let text = match &p.prompt[0] {
            ContentBlock::Text(t) => t.text.clone(),
            _ => String::new(),
        };
        if text == "wait" {
            session.message_chunk("waiting").await?;
            cx.cancelled().await;
            return Ok(PromptResponse::new(StopReason::Cancelled));
        }
        session.message_chunk("Editing ").await?;
        session.message_chunk("now").await?;
        let call = ToolCall::new("edit-1", "Edit /w/a.txt").kind(ToolKind::Edit);
        let call = session.start_tool_call(call).await?;
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let outcome = session.request_permission(call.blank(), options).await?;
        assert!(
            matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id.0 == "allow"),
            "{outcome:?}"
        );
        let client = session.client();
        client
            .write_text_file(WriteTextFileRequest::new(
                session.id().clone(),
                "/w/a.txt",
                "new\n",
            ))
            .await?;
        let diff = Diff::new("/w/a.txt", "new\n").old_text("old\n");
        call.complete(vec![ToolCallContent::from(diff)]).await?;
        let term = client
            .create_terminal(
                CreateTerminalRequest::new(session.id().clone(), "echo")
                    .args(vec!["hi".to_string()]),
            )
            .await?;
        let exit = client
            .wait_for_terminal_exit(WaitForTerminalExitRequest::new(
                session.id().clone(),
                term.terminal_id.clone(),
            ))
            .await?;
        assert_eq!(exit.exit_code, Some(0));
        let output = client
            .terminal_output(TerminalOutputRequest::new(
                session.id().clone(),
                term.terminal_id.clone(),
            ))
            .await?;
        session
            .message_chunk(format!("ran: {}", output.output.trim()))
            .await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// The v2 editor: records every update, allows every permission (recording the request).
pub struct Editor {
    pub updates: mpsc::UnboundedSender<Value>,
}

#[async_trait::async_trait]
impl d2::Client for Editor {
    async fn session_request_permission(
        &self,
        p: w2::RequestPermissionRequest,
    ) -> Result<w2::RequestPermissionResponse, Error> {
        let _ = self
            .updates
            .send(json!({"permission": serde_json::to_value(&p).unwrap()}));
        Ok(
            serde_json::from_value(
                json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
            )
            .unwrap(),
        )
    }

    async fn session_update(&self, n: w2::UpdateSessionNotification) -> Result<(), Error> {
        let _ = self.updates.send(serde_json::to_value(&n.update).unwrap());
        Ok(())
    }
}

/// The updates up to and including the session's next `state_update` idle.
pub async fn until_idle(updates: &mut mpsc::UnboundedReceiver<Value>) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), updates.recv()).await;
        let update = next.expect("the turn ends").expect("the editor lives");
        let idle = update["sessionUpdate"] == "state_update" && update["state"] == "idle";
        seen.push(update);
        if idle {
            return seen;
        }
    }
}

pub async fn init_and_session(agent: &d2::AgentHandle) -> w2::NewSessionResponse {
    let init: w2::InitializeRequest = serde_json::from_value(
        json!({"protocolVersion": 2, "info": {"name": "v2 editor", "version": "1"}}),
    )
    .unwrap();
    let answer = serde_json::to_value(agent.initialize(init).await.unwrap()).unwrap();
    assert_eq!(answer["protocolVersion"], 2);
    assert_eq!(answer["info"]["name"], "coder");
    assert_eq!(
        answer["capabilities"]["session"]["prompt"]["image"],
        json!({})
    );
    assert_eq!(
        answer["authMethods"],
        json!([{"type": "agent", "methodId": "key", "name": "API key"}])
    );
    agent
        .session_new(w2::NewSessionRequest::new("/w"))
        .await
        .unwrap()
}

/// Initializes, opens a session, logs in, switches the mode and runs the "edit" turn,
/// checking every update the v2 client sees.
pub async fn edit_turn(agent: &d2::AgentHandle, updates: &mut mpsc::UnboundedReceiver<Value>) {
    let session = init_and_session(agent).await;
    assert_eq!(session.session_id.0, "s1");
    let options = serde_json::to_value(&session.config_options).unwrap();
    assert_eq!(options[0]["category"], "mode");
    assert_eq!(options[0]["currentValue"], "ask");

    let login: w2::LoginAuthRequest = serde_json::from_value(json!({"methodId": "key"})).unwrap();
    agent.auth_login(login).await.unwrap();

    let set: w2::SetSessionConfigOptionRequest = serde_json::from_value(
        json!({"sessionId": "s1", "configId": "mode", "type": "id", "value": "code"}),
    )
    .unwrap();
    let set = serde_json::to_value(agent.session_set_config_option(set).await.unwrap()).unwrap();
    assert_eq!(set["configOptions"][0]["currentValue"], "code");

    let prompt: w2::PromptRequest = serde_json::from_value(
        json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "edit"}]}),
    )
    .unwrap();
    let answer = agent.session_prompt(prompt).await.unwrap();
    let seen = until_idle(updates).await;
    let kinds: Vec<&str> = seen
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("permission"))
        .collect();
    assert_eq!(kinds[..2], ["state_update", "user_message"], "{kinds:?}");
    assert_eq!(seen[1]["messageId"], json!(answer.message_id.0));
    assert_eq!(seen.last().unwrap()["stopReason"], "end_turn");

    // The two chunks are one agent message.
    let chunks: Vec<&Value> = seen
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .collect();
    assert_eq!(chunks[0]["messageId"], chunks[1]["messageId"]);
    assert_ne!(
        chunks[0]["messageId"], chunks[2]["messageId"],
        "a tool call in between starts a new message"
    );
    assert_eq!(chunks[2]["content"]["text"], "ran: hi");

    let permission = seen.iter().find(|u| u.get("permission").is_some()).unwrap();
    assert_eq!(permission["permission"]["title"], "Edit /w/a.txt");
    assert_eq!(permission["permission"]["subject"]["type"], "tool_call");
    assert_eq!(
        permission["permission"]["subject"]["toolCall"]["toolCallId"],
        "edit-1"
    );

    let edit = seen
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap();
    assert_eq!(
        edit["content"][0]["changes"],
        json!([{"operation": "modify", "path": "/w/a.txt"}])
    );
    assert!(
        edit["content"][0]["patch"]["text"]
            .as_str()
            .unwrap()
            .contains("-old\n+new\n")
    );

    let terminal = seen
        .iter()
        .find(|u| u["sessionUpdate"] == "terminal_update")
        .unwrap();
    assert_eq!(terminal["command"], "echo hi");
    let output = seen
        .iter()
        .find(|u| u["sessionUpdate"] == "terminal_output_chunk")
        .unwrap();
    assert_eq!(output["data"], "aGkK", "base64 of \"hi\\n\"");
    let exited = seen
        .iter()
        .find(|u| u["sessionUpdate"] == "terminal_update" && u["exitStatus"].is_object());
    assert_eq!(exited.unwrap()["exitStatus"]["exitCode"], 0);
}
