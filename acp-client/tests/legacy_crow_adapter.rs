//! A v1 client driving crow agents through `Builder::dialect`: against a scripted agent
//! writing the crow dialect's own example messages, byte for byte (every request the
//! client sends, every update the agent sends, a permission asked and answered, the
//! replay before `session/load` is answered, the seed's mixed session id spellings);
//! through both adapters to our own v1 agent; and the native crow sides together.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::Client;
use acp_client::Dialect;
use acp_client::legacy::AdapterOptions;
use acp_client::legacy::crow as crow_native;
use acp_rpc::Error;
use acp_types::legacy::crow as c;
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

/// A v1 client that records updates and approves (or rejects) permissions.
#[derive(Default, Clone)]
struct Recorder {
    updates: Arc<Mutex<Vec<SessionUpdate>>>,
    asked: Arc<Mutex<Vec<RequestPermissionRequest>>>,
}

impl Recorder {
    fn take(&self) -> Vec<SessionUpdate> {
        std::mem::take(&mut self.updates.lock().unwrap())
    }
}

#[acp_client::async_trait]
impl Client for Recorder {
    async fn request_permission(
        &self,
        r: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let choice = r.options[0].option_id.clone();
        self.asked.lock().unwrap().push(r);
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::selected(choice),
        ))
    }
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        self.updates.lock().unwrap().push(n.update);
        Ok(())
    }
}

/// The agent's end of the wire, scripted line by line.
struct ScriptedAgent {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
}

impl ScriptedAgent {
    async fn send(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    async fn expect(&mut self, expected: &str) {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("the client writes within 5 s")
            .unwrap()
            .expect("the client keeps the connection open");
        let got: Value = serde_json::from_str(&line).expect("the client writes JSON");
        let want: Value = serde_json::from_str(expected).expect("the transcript is JSON");
        assert_eq!(got, want, "\n   got: {line}\nwanted: {expected}");
    }
}

fn scripted(client: Recorder) -> (acp_client::ClientConnection, ScriptedAgent) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    let conn = acp_client::Builder::new(client)
        .dialect(Dialect::Crow)
        .legacy(AdapterOptions::default())
        .io(r, w)
        .unwrap();
    let (r, w) = tokio::io::split(theirs);
    (
        conn,
        ScriptedAgent {
            lines: BufReader::new(r).lines(),
            out: w,
        },
    )
}

#[tokio::test]
async fn a_v1_client_drives_a_crow_agent_byte_for_byte() {
    let recorder = Recorder::default();
    let (conn, mut a) = scripted(recorder.clone());
    let agent = conn.agent().clone();

    let handshake = tokio::spawn({
        let agent = agent.clone();
        async move {
            agent
                .initialize(v(json!({"protocolVersion": 1, "clientInfo": {"name": "crow-ide", "version": "0.1.0"}})))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1,"client_capabilities":{},"client_info":{"name":"crow-ide","version":"0.1.0"}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":1,"result":{"protocol_version":1,"agent_capabilities":{"prompt_capabilities":{"text":true,"image":true,"resource":true},"mcp_capabilities":{"http":false,"sse":false},"load_session":true},"agent_info":{"name":"crow-acp-server","title":"Crow ACP Server","version":"0.1.0"}}}"#).await;
    let answer = handshake.await.unwrap().unwrap();
    assert_eq!(answer.protocol_version, ProtocolVersion::V1);
    assert!(answer.agent_capabilities.load_session);
    assert!(answer.agent_capabilities.prompt_capabilities.image);
    assert!(
        answer
            .agent_capabilities
            .prompt_capabilities
            .embedded_context
    );
    let info = answer.agent_info.unwrap();
    assert_eq!(info.title.as_deref(), Some("Crow ACP Server"));

    let created = tokio::spawn({
        let agent = agent.clone();
        async move {
            agent
                .new_session(v(json!({"cwd": "/path/to/workspace", "mcpServers": []})))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/path/to/workspace","mcpServers":[]}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"uuid-string"}}"#)
        .await;
    let session = created.await.unwrap().unwrap().session_id;
    assert_eq!(session.0, "uuid-string");

    let prompted = tokio::spawn({
        let agent = agent.clone();
        let session = session.clone();
        async move {
            agent
                .prompt(PromptRequest::new(
                    session,
                    [ContentBlock::text("Hello, how are you?")],
                ))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"session_id":"uuid-string","prompt":[{"type":"text","text":"Hello, how are you?"}]}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"agent_thought_text","text":"Let me think about this..."}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"agent_message_text","text":"I'm doing well, thank you!"}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"tool_call_start","tool_call_id":"uuid","title":"terminal","kind":"execute","status":"in_progress"}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"plan_update","entries":[{"content":"Analyze the request","priority":"high","status":"completed"},{"content":"Execute tool: terminal","priority":"medium","status":"in_progress"}]}}}"#).await;
    // The seed's other spelling of the session id, in an update.
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"uuid-string","update":{"@type":"permission_request","tool_call_id":"uuid","title":"terminal","arguments":"ls -la","permission_options":[{"id":"approve","title":"Approve","is_primary":true},{"id":"reject","title":"Reject"}]}}}"#).await;
    a.expect(r#"{"jsonrpc":"2.0","method":"permission_response","params":{"session_id":"uuid-string","tool_call_id":"uuid","option_id":"approve"}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"tool_call_update","tool_call_id":"uuid","status":"completed"}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":3,"result":{"stop_reason":"end_turn"}}"#)
        .await;
    assert_eq!(
        prompted.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    assert_eq!(
        recorder.take(),
        vec![
            SessionUpdate::agent_thought_chunk(ContentBlock::text("Let me think about this...")),
            SessionUpdate::agent_message_chunk(ContentBlock::text("I'm doing well, thank you!")),
            SessionUpdate::ToolCall(Box::new(
                ToolCall::new("uuid", "terminal")
                    .kind(ToolKind::Execute)
                    .status(ToolCallStatus::InProgress)
            )),
            SessionUpdate::plan([
                PlanEntry::new(
                    "Analyze the request",
                    PlanEntryPriority::High,
                    PlanEntryStatus::Completed
                ),
                PlanEntry::new(
                    "Execute tool: terminal",
                    PlanEntryPriority::Medium,
                    PlanEntryStatus::InProgress
                ),
            ]),
            SessionUpdate::ToolCallUpdate(Box::new(
                ToolCallUpdate::new("uuid").status(ToolCallStatus::Completed)
            )),
        ]
    );
    let asked = recorder.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool_call.raw_input, Some(json!("ls -la")));
    let kinds: Vec<_> = asked[0].options.iter().map(|o| o.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::RejectOnce
        ]
    );

    // The history is replayed before the load is answered.
    let loaded = tokio::spawn({
        let agent = agent.clone();
        async move {
            agent
                .load_session(LoadSessionRequest::new(
                    Vec::<McpServer>::new(),
                    "/path/to/workspace",
                    "existing-uuid",
                ))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"session_id":"existing-uuid","cwd":"/path/to/workspace"}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"existing-uuid","update":{"@type":"user_message_text","text":"Hello, how are you?"}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"existing-uuid","update":{"@type":"agent_message_text","text":"I'm doing well, thank you!"}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":4,"result":null}"#).await;
    loaded.await.unwrap().unwrap();
    assert_eq!(
        recorder.take(),
        vec![
            SessionUpdate::user_message_chunk(ContentBlock::text("Hello, how are you?")),
            SessionUpdate::agent_message_chunk(ContentBlock::text("I'm doing well, thank you!")),
        ]
    );

    // session/cancel becomes crow's cancel request.
    agent.cancel(CancelNotification::new("uuid")).await.unwrap();
    a.expect(r#"{"jsonrpc":"2.0","id":5,"method":"cancel","params":{"session_id":"uuid"}}"#)
        .await;
    a.send(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#).await;

    // Crow's own stop reasons: cancelled as it is, error as an error.
    for (id, reason) in [(6, "cancelled"), (7, "error")] {
        let prompted = tokio::spawn({
            let agent = agent.clone();
            let session = session.clone();
            async move {
                agent
                    .prompt(PromptRequest::new(session, [ContentBlock::text("again")]))
                    .await
            }
        });
        a.expect(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"session_id":"uuid-string","prompt":[{{"type":"text","text":"again"}}]}}}}"#)).await;
        a.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stop_reason":"{reason}"}}}}"#
        ))
        .await;
        let answer = prompted.await.unwrap();
        match reason {
            "cancelled" => assert_eq!(answer.unwrap().stop_reason, StopReason::Cancelled),
            _ => assert!(answer.unwrap_err().message.contains("\"error\"")),
        }
    }
    // What the dialect cannot carry is refused before anything is sent.
    let image = ContentBlock::from(ImageContent::new("AAAA", "image/png"));
    let refused = agent
        .prompt(PromptRequest::new(session.clone(), [image]))
        .await
        .unwrap_err();
    assert_eq!(refused.code, acp_rpc::ErrorCode::INVALID_PARAMS);
    let refused = agent
        .set_session_mode(SetSessionModeRequest::new(session, "code"))
        .await
        .unwrap_err();
    assert_eq!(refused.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
}

/// Our own v1 agent behind the crow wire: both translations in a row.
struct Echo;

#[acp_agent::async_trait]
impl acp_agent::Agent for Echo {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(
            json!({"protocolVersion": 1, "agentInfo": {"name": "echo", "version": "9"}}),
        ))
    }
    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("s1"))
    }
    async fn prompt(
        &self,
        p: PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<PromptResponse, Error> {
        let ContentBlock::Text(text) = &p.prompt[0] else {
            unreachable!()
        };
        let session = cx.session();
        let outcome = session
            .request_permission(
                ToolCallUpdate::new("t1").title("echo"),
                vec![PermissionOption::new(
                    "yes",
                    "Yes",
                    PermissionOptionKind::AllowOnce,
                )],
            )
            .await?;
        assert_eq!(outcome, RequestPermissionOutcome::selected("yes"));
        session
            .message_chunk(format!("echo: {}", text.text))
            .await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn through_both_translations_a_v1_client_talks_to_a_v1_agent() {
    let (client_end, agent_end) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(agent_end);
    acp_agent::Builder::new(Echo)
        .dialect(acp_agent::Dialect::Crow)
        .legacy(acp_agent::legacy::AdapterOptions::default())
        .io(ar, aw)
        .unwrap();
    let recorder = Recorder::default();
    let (cr, cw) = tokio::io::split(client_end);
    let conn = acp_client::Builder::new(recorder.clone())
        .dialect(Dialect::Crow)
        .legacy(AdapterOptions::default())
        .io(cr, cw)
        .unwrap();
    let answer = conn
        .agent()
        .initialize(v(json!({"protocolVersion": 1})))
        .await
        .unwrap();
    assert_eq!(answer.agent_info.unwrap().name, "echo");
    let session = conn
        .agent()
        .new_session(v(json!({"cwd": "/x", "mcpServers": []})))
        .await
        .unwrap()
        .session_id;
    let done = conn
        .agent()
        .prompt(PromptRequest::new(session, [ContentBlock::text("hi")]))
        .await
        .unwrap();
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    assert_eq!(
        recorder.take(),
        vec![SessionUpdate::agent_message_chunk(ContentBlock::text(
            "echo: hi"
        ))]
    );
    assert_eq!(recorder.asked.lock().unwrap().len(), 1);
}

/// A native crow agent and editor.
struct NativeAgent;

#[acp_client::async_trait]
impl crow_native::Agent for NativeAgent {
    async fn session_prompt(
        &self,
        p: c::PromptParams,
        cx: &crow_native::Context,
    ) -> Result<c::PromptResponse, Error> {
        let c::ContentBlock::Text(text) = &p.prompt[0] else {
            unreachable!()
        };
        let update = c::SessionUpdate::agent_message_text(text.text.clone());
        cx.client()
            .session_update(c::SessionUpdateParams::new(p.session_id, update))
            .await?;
        Ok(c::PromptResponse::new(c::StopReason::EndTurn))
    }
}

#[derive(Default, Clone)]
struct NativeEditor(Arc<Mutex<Vec<c::SessionUpdate>>>);

#[acp_client::async_trait]
impl crow_native::Client for NativeEditor {
    async fn session_update(&self, u: c::SessionUpdateParams) -> Result<(), Error> {
        self.0.lock().unwrap().push(u.update);
        Ok(())
    }
}

#[tokio::test]
async fn the_native_crow_sides_talk_to_each_other() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let _agent = crow_native::serve(NativeAgent, ar, aw);
    let editor = NativeEditor::default();
    let (br, bw) = tokio::io::split(b);
    let conn = crow_native::connect(editor.clone(), br, bw);
    let reply = conn
        .agent()
        .session_prompt(c::PromptParams::new("s1", [c::ContentBlock::text("hello")]))
        .await
        .unwrap();
    assert_eq!(reply.stop_reason, c::StopReason::EndTurn);
    assert_eq!(
        editor.0.lock().unwrap().clone(),
        vec![c::SessionUpdate::agent_message_text("hello")]
    );
    let missing = conn
        .agent()
        .initialize(c::InitializeParams::new(c::ProtocolVersion(1)))
        .await
        .unwrap_err();
    assert_eq!(missing.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
}
