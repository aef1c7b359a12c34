//! End to end over `tokio::io::duplex`: our `acp-agent` and our `acp-client` talk to each
//! other, and every v1 method goes through in its direction: the twelve agent requests, the
//! `session/cancel` notification and extensions from the client, and every client request,
//! `session/update` and extensions from the agent (sent while a prompt runs).

use std::sync::{Arc, Mutex};

use acp_agent::{Agent, AgentContext, PromptContext};
use acp_client::{Client, async_trait};
use acp_rpc::Error;
use acp_types::v1::*;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn j<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("test payload matches the schema")
}

type Log = Arc<Mutex<Vec<String>>>;

fn record(log: &Log, entry: impl Into<String>) {
    log.lock().unwrap().push(entry.into());
}

/// An agent that answers every method and, during a prompt, calls every client method.
struct FullAgent {
    log: Log,
}

#[async_trait]
impl Agent for FullAgent {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        record(&self.log, "initialize");
        Ok(j(
            json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}),
        ))
    }
    async fn authenticate(
        &self,
        p: AuthenticateRequest,
        _: &AgentContext,
    ) -> Result<AuthenticateResponse, Error> {
        record(&self.log, format!("authenticate {}", p.method_id.0));
        Ok(j(json!({})))
    }
    async fn logout(&self, _: LogoutRequest, _: &AgentContext) -> Result<LogoutResponse, Error> {
        record(&self.log, "logout");
        Ok(j(json!({})))
    }
    async fn new_session(
        &self,
        p: NewSessionRequest,
        _: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        record(&self.log, format!("session/new {}", p.cwd));
        Ok(j(json!({"sessionId": "s1"})))
    }
    async fn load_session(
        &self,
        p: LoadSessionRequest,
        _: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        record(&self.log, format!("session/load {}", p.session_id.0));
        Ok(j(json!({})))
    }
    async fn list_sessions(
        &self,
        _: ListSessionsRequest,
        _: &AgentContext,
    ) -> Result<ListSessionsResponse, Error> {
        record(&self.log, "session/list");
        Ok(j(
            json!({"sessions": [{"sessionId": "s1", "cwd": "/work"}]}),
        ))
    }
    async fn resume_session(
        &self,
        p: ResumeSessionRequest,
        _: &AgentContext,
    ) -> Result<ResumeSessionResponse, Error> {
        record(&self.log, format!("session/resume {}", p.session_id.0));
        Ok(j(json!({})))
    }
    async fn close_session(
        &self,
        p: CloseSessionRequest,
        _: &AgentContext,
    ) -> Result<CloseSessionResponse, Error> {
        record(&self.log, format!("session/close {}", p.session_id.0));
        Ok(j(json!({})))
    }
    async fn delete_session(
        &self,
        p: DeleteSessionRequest,
        _: &AgentContext,
    ) -> Result<DeleteSessionResponse, Error> {
        record(&self.log, format!("session/delete {}", p.session_id.0));
        Ok(j(json!({})))
    }
    async fn set_session_mode(
        &self,
        p: SetSessionModeRequest,
        _: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        record(&self.log, format!("session/set_mode {}", p.mode_id.0));
        Ok(j(json!({})))
    }
    async fn set_session_config_option(
        &self,
        p: SetSessionConfigOptionRequest,
        _: &AgentContext,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        record(
            &self.log,
            format!("session/set_config_option {}", p.config_id.0),
        );
        Ok(j(json!({"configOptions": []})))
    }
    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        record(&self.log, "session/prompt");
        let client = cx.client();
        let s = json!(p.session_id.0);
        cx.session().message_chunk("working").await?;
        let perm = client
            .request_permission(j(json!({"sessionId": s, "toolCall": {"toolCallId": "t"},
                "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]})))
            .await?;
        record(
            &self.log,
            format!(
                "permission {}",
                serde_json::to_value(&perm.outcome).unwrap()["optionId"]
            ),
        );
        let file = client
            .read_text_file(j(json!({"sessionId": s, "path": "/work/a.txt"})))
            .await?;
        record(&self.log, format!("read {}", file.content));
        client
            .write_text_file(j(
                json!({"sessionId": s, "path": "/work/a.txt", "content": "new"}),
            ))
            .await?;
        let t = client
            .create_terminal(j(json!({"sessionId": s, "command": "ls"})))
            .await?;
        let t = json!(t.terminal_id.0);
        let out = client
            .terminal_output(j(json!({"sessionId": s, "terminalId": t})))
            .await?;
        record(&self.log, format!("output {}", out.output));
        let exit = client
            .wait_for_terminal_exit(j(json!({"sessionId": s, "terminalId": t})))
            .await?;
        record(&self.log, format!("exit {:?}", exit.exit_code));
        client
            .kill_terminal(j(json!({"sessionId": s, "terminalId": t})))
            .await?;
        client
            .release_terminal(j(json!({"sessionId": s, "terminalId": t})))
            .await?;
        let e = client
            .create_elicitation(j(
                json!({"sessionId": s, "message": "Name?", "mode": "form",
                "requestedSchema": {"type": "object", "properties": {}}}),
            ))
            .await?;
        record(
            &self.log,
            format!(
                "elicitation {}",
                serde_json::to_value(&e).unwrap()["action"]
            ),
        );
        let pong = client.ext_method("_acme/ping", json!({"n": 1})).await?;
        record(&self.log, format!("ext reply {pong}"));
        client.ext_notification("_acme/note", json!({})).await?;
        cx.session().message_chunk("done").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
    async fn cancel(&self, p: CancelNotification) {
        record(&self.log, format!("session/cancel {}", p.session_id.0));
    }
    async fn ext_method(
        &self,
        method: &str,
        params: Value,
        _: &AgentContext,
    ) -> Result<Value, Error> {
        record(&self.log, format!("agent ext {method}"));
        Ok(json!({"echo": params}))
    }
    async fn ext_notification(&self, method: &str, _: Value) {
        record(&self.log, format!("agent ext notification {method}"));
    }
}

/// A client that answers every client method.
struct FullClient {
    log: Log,
}

#[async_trait]
impl Client for FullClient {
    async fn request_permission(
        &self,
        _: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        record(&self.log, "session/request_permission");
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::selected("ok"),
        ))
    }
    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        record(&self.log, format!("fs/read_text_file {}", p.path));
        Ok(j(json!({"content": "hello"})))
    }
    async fn write_text_file(
        &self,
        p: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        record(&self.log, format!("fs/write_text_file {}", p.content));
        Ok(j(json!({})))
    }
    async fn create_terminal(
        &self,
        p: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        record(&self.log, format!("terminal/create {}", p.command));
        Ok(j(json!({"terminalId": "t1"})))
    }
    async fn terminal_output(
        &self,
        _: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        record(&self.log, "terminal/output");
        Ok(j(json!({"output": "a.txt\n", "truncated": false})))
    }
    async fn wait_for_terminal_exit(
        &self,
        _: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        record(&self.log, "terminal/wait_for_exit");
        Ok(j(json!({"exitCode": 0})))
    }
    async fn kill_terminal(&self, _: KillTerminalRequest) -> Result<KillTerminalResponse, Error> {
        record(&self.log, "terminal/kill");
        Ok(j(json!({})))
    }
    async fn release_terminal(
        &self,
        _: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        record(&self.log, "terminal/release");
        Ok(j(json!({})))
    }
    async fn create_elicitation(
        &self,
        _: CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse, Error> {
        record(&self.log, "elicitation/create");
        Ok(j(json!({"action": "decline"})))
    }
    async fn ext_method(&self, method: &str, _: Value) -> Result<Value, Error> {
        record(&self.log, format!("client ext {method}"));
        Ok(json!("pong"))
    }
    async fn ext_notification(&self, method: &str, _: Value) -> Result<(), Error> {
        record(&self.log, format!("client ext notification {method}"));
        Ok(())
    }
}

#[tokio::test]
async fn every_v1_method_goes_through_between_our_agent_and_our_client() {
    let agent_log = Log::default();
    let client_log = Log::default();
    let (client_io, agent_io) = tokio::io::duplex(64 * 1024);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let _agent = acp_agent::Builder::new(FullAgent {
        log: agent_log.clone(),
    })
    .io(agent_read, agent_write);
    let conn = acp_client::Builder::new(FullClient {
        log: client_log.clone(),
    })
    .io(client_read, client_write);
    let agent = conn.agent();

    let init = agent
        .initialize(j(json!({"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true,
            "elicitation": {"form": {}}}})))
        .await
        .unwrap();
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    assert!(init.agent_capabilities.load_session);
    agent
        .authenticate(j(json!({"methodId": "key"})))
        .await
        .unwrap();
    let session = agent
        .new_session(j(json!({"cwd": "/work", "mcpServers": []})))
        .await
        .unwrap();
    assert_eq!(session.session_id.0, "s1");
    agent
        .load_session(j(
            json!({"sessionId": "s1", "cwd": "/work", "mcpServers": []}),
        ))
        .await
        .unwrap();
    let list = agent.list_sessions(j(json!({}))).await.unwrap();
    assert_eq!(list.sessions.len(), 1);
    agent
        .resume_session(j(json!({"sessionId": "s1", "cwd": "/work"})))
        .await
        .unwrap();
    agent
        .set_session_mode(j(json!({"sessionId": "s1", "modeId": "code"})))
        .await
        .unwrap();
    agent
        .set_session_config_option(j(
            json!({"sessionId": "s1", "configId": "model", "value": "fast"}),
        ))
        .await
        .unwrap();

    let turn = agent.prompt_stream(j(
        json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}),
    ));
    let (updates, result) = turn.collect().await;
    assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
    let texts: Vec<String> = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(ContentChunk {
                content: ContentBlock::Text(t),
                ..
            }) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        ["working", "done"],
        "both chunks arrive before the prompt's result"
    );

    let plain = agent
        .prompt(j(
            json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "again"}]}),
        ))
        .await
        .unwrap();
    assert_eq!(plain.stop_reason, StopReason::EndTurn);
    agent.cancel(j(json!({"sessionId": "s1"}))).await.unwrap();
    let echo = agent
        .ext_method("_acme/echo", json!({"x": 1}))
        .await
        .unwrap();
    assert_eq!(echo, json!({"echo": {"x": 1}}));
    agent
        .ext_notification("_acme/hello", json!({}))
        .await
        .unwrap();
    agent
        .close_session(j(json!({"sessionId": "s1"})))
        .await
        .unwrap();
    agent
        .delete_session(j(json!({"sessionId": "s1"})))
        .await
        .unwrap();
    agent.logout(j(json!({}))).await.unwrap();

    // Notifications are handled in order but asynchronously: wait for the last ones.
    for _ in 0..100 {
        let a = agent_log
            .lock()
            .unwrap()
            .iter()
            .any(|e| e == "agent ext notification _acme/hello");
        let c = client_log
            .lock()
            .unwrap()
            .iter()
            .any(|e| e == "client ext notification _acme/note");
        if a && c {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let agent_log = agent_log.lock().unwrap().clone();
    for expected in [
        "initialize",
        "authenticate key",
        "session/new /work",
        "session/load s1",
        "session/list",
        "session/resume s1",
        "session/set_mode code",
        "session/set_config_option model",
        "session/prompt",
        "permission \"ok\"",
        "read hello",
        "output a.txt\n",
        "exit Some(0)",
        "elicitation \"decline\"",
        "ext reply \"pong\"",
        "session/cancel s1",
        "agent ext _acme/echo",
        "agent ext notification _acme/hello",
        "session/close s1",
        "session/delete s1",
        "logout",
    ] {
        assert!(
            agent_log.iter().any(|e| e == expected),
            "agent never saw {expected:?}: {agent_log:#?}"
        );
    }
    let client_log = client_log.lock().unwrap().clone();
    for expected in [
        "session/request_permission",
        "fs/read_text_file /work/a.txt",
        "fs/write_text_file new",
        "terminal/create ls",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
        "elicitation/create",
        "client ext _acme/ping",
        "client ext notification _acme/note",
    ] {
        assert!(
            client_log.iter().any(|e| e == expected),
            "client never saw {expected:?}: {client_log:#?}"
        );
    }
}
