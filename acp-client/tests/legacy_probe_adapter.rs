//! A v1 client driving probe agents through `Builder::dialect`: against a scripted agent
//! writing the probe dialect's own example messages, byte for byte (every request the
//! client sends, every notification and request the agent sends); through both adapters to
//! our own v1 agent; and the native probe client against the native probe agent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::Client;
use acp_client::Dialect;
use acp_client::legacy::AdapterOptions;
use acp_client::legacy::probe as probe_native;
use acp_rpc::Error;
use acp_types::legacy::probe as p;
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

fn init() -> InitializeRequest {
    v(
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}}),
    )
}

/// A v1 client that records updates and serves file reads and writes.
#[derive(Default, Clone)]
struct Recorder {
    updates: Arc<Mutex<Vec<SessionUpdate>>>,
    writes: Arc<Mutex<Vec<(String, String, String)>>>,
}

impl Recorder {
    fn take(&self) -> Vec<SessionUpdate> {
        std::mem::take(&mut self.updates.lock().unwrap())
    }
}

#[acp_client::async_trait]
impl Client for Recorder {
    async fn read_text_file(&self, r: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        assert_eq!(r.session_id.0, "abc123");
        Ok(ReadTextFileResponse::new(format!("contents of {}", r.path)))
    }
    async fn write_text_file(
        &self,
        w: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.writes
            .lock()
            .unwrap()
            .push((w.session_id.0, w.path, w.content));
        Ok(WriteTextFileResponse::new())
    }
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        assert_eq!(n.session_id.0, "abc123");
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

    async fn line(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("the client writes within 5 s")
            .unwrap()
            .expect("the client keeps the connection open");
        serde_json::from_str(&line).expect("the client writes JSON")
    }

    /// The next line is the message `expected` (same members, same values, any key order).
    async fn expect(&mut self, expected: &str) {
        let got = self.line().await;
        let want: Value = serde_json::from_str(expected).expect("the transcript is JSON");
        assert_eq!(got, want, "\nwanted: {expected}");
    }
}

fn scripted(client: Recorder) -> (acp_client::ClientConnection, ScriptedAgent) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    let conn = acp_client::Builder::new(client)
        .dialect(Dialect::Probe)
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

const SEED_INITIALIZE_ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1","serverInfo":{"name":"probe-acp","version":"1.0.0"},"capabilities":{"tools":[{"name":"search","kind":"search"},{"name":"query","kind":"query"},{"name":"extract","kind":"extract"}],"sessionManagement":true,"streaming":true,"permissions":false}}}"#;

#[tokio::test]
async fn a_v1_client_drives_a_probe_agent_byte_for_byte() {
    let recorder = Recorder::default();
    let (conn, mut a) = scripted(recorder.clone());
    let agent = conn.agent().clone();

    let handshake = tokio::spawn({
        let agent = agent.clone();
        async move { agent.initialize(init()).await }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}"#)
        .await;
    a.send(SEED_INITIALIZE_ANSWER).await;
    let answer = handshake.await.unwrap().unwrap();
    assert_eq!(answer.protocol_version, ProtocolVersion::V1);
    assert!(answer.agent_capabilities.load_session);
    let info = answer.agent_info.unwrap();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("probe-acp", "1.0.0")
    );
    let tools = &answer.meta.as_ref().unwrap()["probe.tools"];
    assert_eq!(tools[2], json!({"name": "extract", "kind": "extract"}));

    let created = tokio::spawn({
        let agent = agent.clone();
        async move {
            agent
                .new_session(v(json!({"cwd": "/ignored", "mcpServers": []})))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":2,"method":"newSession","params":{}}"#)
        .await;
    a.send(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc123","mode":"NORMAL","createdAt":"2025-01-15T10:30:00Z"}}"#).await;
    let created = created.await.unwrap().unwrap();
    let session = created.session_id.clone();
    assert_eq!(session.0, "abc123");
    assert_eq!(created.modes.unwrap().current_mode_id.0, "NORMAL");

    // The history is replayed before the load is answered.
    let loaded = tokio::spawn({
        let agent = agent.clone();
        let session = session.clone();
        async move {
            agent
                .load_session(LoadSessionRequest::new(
                    Vec::<McpServer>::new(),
                    "/x",
                    session,
                ))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":3,"method":"loadSession","params":{"sessionId":"abc123"}}"#)
        .await;
    a.send(r#"{"jsonrpc":"2.0","id":3,"result":{"sessionId":"abc123","mode":"NORMAL","history":[{"role":"user","content":"Previous message"},{"role":"assistant","content":"Previous response"}]}}"#).await;
    loaded.await.unwrap().unwrap();
    assert_eq!(
        recorder.take(),
        vec![
            SessionUpdate::user_message_chunk(ContentBlock::text("Previous message")),
            SessionUpdate::agent_message_chunk(ContentBlock::text("Previous response")),
        ]
    );

    let mode = tokio::spawn({
        let agent = agent.clone();
        let session = session.clone();
        async move {
            agent
                .set_session_mode(SetSessionModeRequest::new(session, "PLANNING"))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":4,"method":"setSessionMode","params":{"sessionId":"abc123","mode":"PLANNING"}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"sessionUpdated","params":{"sessionId":"abc123","mode":"PLANNING","updatedAt":"2025-01-15T10:32:00Z"}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#).await;
    mode.await.unwrap().unwrap();
    assert_eq!(
        recorder.take(),
        vec![SessionUpdate::current_mode_update("PLANNING")]
    );

    let prompted = tokio::spawn({
        let agent = agent.clone();
        let session = session.clone();
        async move {
            agent
                .prompt(PromptRequest::new(
                    session,
                    [ContentBlock::text(
                        "How does authentication work in this codebase?",
                    )],
                ))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":5,"method":"prompt","params":{"sessionId":"abc123","message":"How does authentication work in this codebase?"}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"toolCallProgress","params":{"sessionId":"abc123","toolCall":{"id":"tool-1","name":"search","kind":"search","status":"in_progress","startTime":1705315860000}}}"#).await;
    // The agent's file calls: no session named, so the one being prompted.
    a.send(r#"{"jsonrpc":"2.0","id":1,"method":"readTextFile","params":{"path":"src/auth.ts"}}"#)
        .await;
    a.expect(r#"{"jsonrpc":"2.0","id":1,"result":{"content":"contents of src/auth.ts"}}"#)
        .await;
    a.send(r#"{"jsonrpc":"2.0","id":2,"method":"writeTextFile","params":{"path":"src/new-file.ts","content":"export const value = 42;"}}"#).await;
    a.expect(r#"{"jsonrpc":"2.0","id":2,"result":{"success":true}}"#)
        .await;
    a.send(r#"{"jsonrpc":"2.0","method":"toolCallProgress","params":{"sessionId":"abc123","toolCall":{"id":"tool-1","name":"search","kind":"search","status":"completed","startTime":1705315860000}}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","method":"messageChunk","params":{"sessionId":"abc123","chunk":"The authentication system","index":0}}"#).await;
    // Streamed already: the answer's content is not shown twice.
    a.send(r#"{"jsonrpc":"2.0","id":5,"result":{"sessionId":"abc123","content":[{"type":"text","text":"The authentication system uses JWT tokens..."}],"timestamp":"2025-01-15T10:31:00Z"}}"#).await;
    let done = prompted.await.unwrap().unwrap();
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    assert_eq!(
        recorder.take(),
        vec![
            SessionUpdate::ToolCall(Box::new(
                ToolCall::new("tool-1", "search")
                    .name("search")
                    .kind(ToolKind::Search)
                    .status(ToolCallStatus::InProgress)
            )),
            SessionUpdate::ToolCallUpdate(Box::new(
                ToolCallUpdate::new("tool-1")
                    .status(ToolCallStatus::Completed)
                    .kind(ToolKind::Search)
            )),
            SessionUpdate::agent_message_chunk(ContentBlock::text("The authentication system")),
        ]
    );
    assert_eq!(
        recorder.writes.lock().unwrap().clone(),
        vec![(
            "abc123".to_string(),
            "src/new-file.ts".to_string(),
            "export const value = 42;".to_string()
        )]
    );

    // An agent that does not stream: the answer's content is the reply.
    let prompted = tokio::spawn({
        let agent = agent.clone();
        let session = session.clone();
        async move {
            agent
                .prompt(PromptRequest::new(session, [ContentBlock::text("again")]))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":6,"method":"prompt","params":{"sessionId":"abc123","message":"again"}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":6,"result":{"sessionId":"abc123","content":[{"type":"text","text":"Same answer."}],"timestamp":"2025-01-15T10:33:00Z"}}"#).await;
    assert_eq!(
        prompted.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    assert_eq!(
        recorder.take(),
        vec![SessionUpdate::agent_message_chunk(ContentBlock::text(
            "Same answer."
        ))]
    );

    // session/cancel becomes the dialect's cancel request; the turn ends cancelled.
    let prompted = tokio::spawn({
        let agent = agent.clone();
        let session = session.clone();
        async move {
            agent
                .prompt(PromptRequest::new(session, [ContentBlock::text("long")]))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":7,"method":"prompt","params":{"sessionId":"abc123","message":"long"}}"#).await;
    agent
        .cancel(CancelNotification::new(session.clone()))
        .await
        .unwrap();
    a.expect(r#"{"jsonrpc":"2.0","id":8,"method":"cancel","params":{"sessionId":"abc123"}}"#)
        .await;
    a.send(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":7,"result":{"sessionId":"abc123","content":[],"timestamp":"2025-01-15T10:34:00Z"}}"#).await;
    assert_eq!(
        prompted.await.unwrap().unwrap().stop_reason,
        StopReason::Cancelled
    );

    // What the dialect cannot carry is refused before anything is sent.
    let image = ContentBlock::from(ImageContent::new("AAAA", "image/png"));
    let refused = agent
        .prompt(PromptRequest::new(session.clone(), [image]))
        .await
        .unwrap_err();
    assert_eq!(refused.code, acp_rpc::ErrorCode::INVALID_PARAMS);
    let refused = agent
        .list_sessions(ListSessionsRequest::new())
        .await
        .unwrap_err();
    assert_eq!(refused.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
    // The agent's error codes pass through.
    let missing = tokio::spawn({
        let agent = agent.clone();
        async move {
            agent
                .prompt(PromptRequest::new("nope", [ContentBlock::text("hi")]))
                .await
        }
    });
    a.expect(r#"{"jsonrpc":"2.0","id":9,"method":"prompt","params":{"sessionId":"nope","message":"hi"}}"#).await;
    a.send(r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32002,"message":"Session not found"}}"#)
        .await;
    assert_eq!(missing.await.unwrap().unwrap_err().code.0, -32002);
}

#[tokio::test]
async fn a_probe_agent_of_another_version_is_refused_with_its_code() {
    let (conn, mut a) = scripted(Recorder::default());
    let agent = conn.agent().clone();
    let handshake = tokio::spawn(async move { agent.initialize(init()).await });
    let _probe = a.line().await;
    a.send(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2","serverInfo":{"name":"x","version":"0"},"capabilities":{}}}"#).await;
    let refused = handshake.await.unwrap().unwrap_err();
    assert_eq!(refused.code.0, -32001, "{refused}");
}

/// A file call from a probe agent the client did not allow is denied with the dialect's
/// permission code.
#[tokio::test]
async fn file_calls_the_client_did_not_allow_are_denied_with_32003() {
    let (conn, mut a) = scripted(Recorder::default());
    let agent = conn.agent().clone();
    let handshake =
        tokio::spawn(async move { agent.initialize(v(json!({"protocolVersion": 1}))).await });
    let _probe = a.line().await;
    a.send(SEED_INITIALIZE_ANSWER).await;
    handshake.await.unwrap().unwrap();
    a.send(r#"{"jsonrpc":"2.0","id":1,"method":"writeTextFile","params":{"path":"a","content":"b","sessionId":"abc123"}}"#).await;
    let denied = a.line().await;
    assert_eq!(denied["error"]["code"], -32003, "{denied}");
}

/// A v1 agent behind the probe wire, both translations in a row: what the v1 client sees
/// is what the v1 agent said, as far as probe carries it.
struct Echo;

#[acp_agent::async_trait]
impl acp_agent::Agent for Echo {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({
            "protocolVersion": 1,
            "agentInfo": {"name": "echo", "version": "9"},
            "_meta": {"probe.tools": [{"name": "delegate", "kind": "execute", "description": "Delegate tasks", "inputSchema": {"required": ["task"]}}]}
        })))
    }
    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("abc123"))
    }
    async fn prompt(
        &self,
        p: PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<PromptResponse, Error> {
        let ContentBlock::Text(text) = &p.prompt[0] else {
            unreachable!()
        };
        cx.session()
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
        .dialect(acp_agent::Dialect::Probe)
        .legacy(acp_agent::legacy::AdapterOptions::default())
        .io(ar, aw)
        .unwrap();
    let recorder = Recorder::default();
    let (cr, cw) = tokio::io::split(client_end);
    let conn = acp_client::Builder::new(recorder.clone())
        .dialect(Dialect::Probe)
        .legacy(AdapterOptions::default())
        .io(cr, cw)
        .unwrap();
    let answer = conn.agent().initialize(init()).await.unwrap();
    assert_eq!(answer.agent_info.unwrap().name, "echo");
    assert_eq!(
        answer.meta.unwrap()["probe.tools"],
        json!([{"name": "delegate", "kind": "execute", "description": "Delegate tasks", "inputSchema": {"required": ["task"]}}])
    );
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
}

/// A native probe agent: one session, a streamed reply.
struct NativeAgent;

#[acp_client::async_trait]
impl probe_native::Agent for NativeAgent {
    async fn initialize(
        &self,
        _p: p::InitializeParams,
        _cx: &probe_native::Context,
    ) -> Result<p::InitializeResponse, Error> {
        Ok(p::InitializeResponse::new(
            p::ProtocolVersion::current(),
            p::ServerInfo::new("native", "1"),
            p::Capabilities::new().streaming(true),
        ))
    }
    async fn prompt(
        &self,
        params: p::PromptParams,
        cx: &probe_native::Context,
    ) -> Result<p::PromptResponse, Error> {
        cx.client()
            .message_chunk(p::MessageChunkParams::new(
                params.session_id.clone(),
                params.message.clone(),
                0,
            ))
            .await?;
        Ok(p::PromptResponse::new(
            params.session_id,
            [p::ContentBlock::text(params.message)],
            "2025-01-15T10:31:00Z",
        ))
    }
}

#[derive(Default, Clone)]
struct NativeEditor(Arc<Mutex<Vec<String>>>);

#[acp_client::async_trait]
impl probe_native::Client for NativeEditor {
    async fn message_chunk(&self, m: p::MessageChunkParams) -> Result<(), Error> {
        self.0.lock().unwrap().push(m.chunk);
        Ok(())
    }
}

#[tokio::test]
async fn the_native_probe_sides_talk_to_each_other() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let _agent = probe_native::serve(NativeAgent, ar, aw);
    let editor = NativeEditor::default();
    let (br, bw) = tokio::io::split(b);
    let conn = probe_native::connect(editor.clone(), br, bw);
    let init = conn
        .agent()
        .initialize(p::InitializeParams::new(p::ProtocolVersion::current()))
        .await
        .unwrap();
    assert_eq!(init.server_info.name, "native");
    let reply = conn
        .agent()
        .prompt(p::PromptParams::new("s1", "hello"))
        .await
        .unwrap();
    assert_eq!(reply.content, vec![p::ContentBlock::text("hello")]);
    // The chunk notification was handled before the answer arrived.
    assert_eq!(editor.0.lock().unwrap().clone(), vec!["hello".to_string()]);
    // A method the native agent does not implement is -32601.
    let missing = conn
        .agent()
        .new_session(p::NewSessionParams::new())
        .await
        .unwrap_err();
    assert_eq!(missing.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
}
