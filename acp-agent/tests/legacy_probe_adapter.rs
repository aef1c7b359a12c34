//! A v1 agent served to a probe editor through `Builder::dialect`, checked byte for byte
//! against a scripted editor writing the probe dialect's own example messages: every
//! request the editor sends, every notification and request it receives, its error codes,
//! the history of a stored session, and the bad-input table in probe framing.

mod common;

use std::sync::Arc;

use acp_agent::Dialect;
use acp_agent::legacy::AdapterOptions;
use acp_agent::store::{MemoryStore, SessionMeta, SessionStore, StoredEvent};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use common::editor::Editor;
use serde_json::{Value, json};

fn connect(agent: impl Agent) -> Editor {
    Editor::connect(|r, w| {
        acp_agent::Builder::new(agent)
            .dialect(Dialect::Probe)
            .legacy(AdapterOptions::default().with_cwd("/home/user/project"))
            .io(r, w);
    })
}

/// The probe agent of the dialect's own examples, written as a v1 agent: it advertises
/// three tools, searches with a tool call, reads and writes a file through the editor,
/// and answers in two chunks.
struct Prober;

#[acp_agent::async_trait]
impl Agent for Prober {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        // A probe editor serves both file calls.
        assert!(p.client_capabilities.fs.read_text_file);
        assert!(p.client_capabilities.fs.write_text_file);
        assert!(!p.client_capabilities.terminal);
        Ok(serde_json::from_value(json!({
            "protocolVersion": 1,
            "agentInfo": {"name": "probe-acp", "version": "1.0.0"},
            "_meta": {"probe.tools": [
                {"name": "search", "kind": "search"},
                {"name": "query", "kind": "query"},
                {"name": "extract", "kind": "extract"}
            ]}
        }))
        .unwrap())
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        assert_eq!(p.cwd, "/home/user/project");
        Ok(NewSessionResponse::new("abc123"))
    }

    async fn set_session_mode(
        &self,
        p: SetSessionModeRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        assert_eq!(p.mode_id.0, "PLANNING");
        // The agent announces the change too: the editor is told once.
        if let Some(session) = cx.session(&p.session_id) {
            session.current_mode(p.mode_id).await?;
        }
        Ok(SetSessionModeResponse::new())
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let text = match &p.prompt[0] {
            ContentBlock::Text(t) => t.text.clone(),
            _ => unreachable!("the adapter sends text"),
        };
        if text == "wait" {
            cx.cancelled().await;
            return Ok(PromptResponse::new(StopReason::Cancelled));
        }
        if text == "fail" {
            return Err(Error::internal_error("the model is unavailable"));
        }
        let session = cx.session();
        let search = session
            .start_tool_call(
                ToolCall::new("tool-1", "search")
                    .kind(ToolKind::Search)
                    .status(ToolCallStatus::InProgress),
            )
            .await?;
        session
            .thought_chunk("dropped: probe has no thoughts")
            .await?;
        let read = cx
            .client()
            .read_text_file(ReadTextFileRequest::new(p.session_id.clone(), "src/auth.ts").line(2))
            .await?;
        assert_eq!(read.content, "verify(token);\n");
        search.status(ToolCallStatus::Completed).await?;
        // Calls a probe editor cannot serve are refused, not lost.
        let denied = cx
            .client()
            .peer()
            .request::<_, Value>("session/request_permission", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(denied.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
        assert!(denied.message.contains("no permission prompt"), "{denied}");
        cx.client()
            .write_text_file(WriteTextFileRequest::new(
                p.session_id.clone(),
                "src/new-file.ts",
                "export const value = 42;",
            ))
            .await?;
        session.message_chunk("The authentication system").await?;
        session.message_chunk(" uses JWT tokens...").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn a_probe_editor_drives_a_v1_agent_byte_for_byte() {
    let mut e = connect(Prober);
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1","serverInfo":{"name":"probe-acp","version":"1.0.0"},"capabilities":{"tools":[{"name":"search","kind":"search"},{"name":"query","kind":"query"},{"name":"extract","kind":"extract"}],"sessionManagement":true,"streaming":true,"permissions":false}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":2,"method":"newSession","params":{}}"#)
        .await;
    let created = e
        .expect_json(
            json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "abc123", "mode": "NORMAL", "createdAt": null}}),
            &["/result/createdAt"],
        )
        .await;
    let stamp = created["result"]["createdAt"].as_str().unwrap();
    assert!(stamp.len() == 20 && stamp.ends_with('Z'), "{stamp}");

    e.send(r#"{"jsonrpc":"2.0","id":4,"method":"setSessionMode","params":{"sessionId":"abc123","mode":"PLANNING"}}"#).await;
    e.expect_json(
        json!({"jsonrpc": "2.0", "method": "sessionUpdated", "params": {"sessionId": "abc123", "mode": "PLANNING", "updatedAt": null}}),
        &["/params/updatedAt"],
    )
    .await;
    e.expect(r#"{"jsonrpc":"2.0","id":4,"result":{"sessionId":"abc123","mode":"PLANNING"}}"#)
        .await;

    e.send(r#"{"jsonrpc":"2.0","id":5,"method":"prompt","params":{"sessionId":"abc123","message":"How does authentication work in this codebase?"}}"#).await;
    let started = e
        .expect_json(
            json!({"jsonrpc": "2.0", "method": "toolCallProgress", "params": {"sessionId": "abc123", "toolCall": {"id": "tool-1", "name": "search", "kind": "search", "status": "in_progress", "startTime": null}}}),
            &["/params/toolCall/startTime"],
        )
        .await;
    let start = started["params"]["toolCall"]["startTime"].as_u64().unwrap();
    // The agent's own requests count from 1; `line` 2 is cut from the whole file here.
    e.expect(r#"{"jsonrpc":"2.0","id":1,"method":"readTextFile","params":{"path":"src/auth.ts","sessionId":"abc123"}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":1,"result":{"content":"import jwt;\nverify(token);\n"}}"#)
        .await;
    let ended = e
        .expect_json(
            json!({"jsonrpc": "2.0", "method": "toolCallProgress", "params": {"sessionId": "abc123", "toolCall": {"id": "tool-1", "name": "search", "kind": "search", "status": "completed", "startTime": start, "endTime": null}}}),
            &["/params/toolCall/endTime"],
        )
        .await;
    assert!(ended["params"]["toolCall"]["endTime"].as_u64().unwrap() >= start);
    e.expect(r#"{"jsonrpc":"2.0","id":2,"method":"writeTextFile","params":{"path":"src/new-file.ts","content":"export const value = 42;","sessionId":"abc123"}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"messageChunk","params":{"sessionId":"abc123","chunk":"The authentication system","index":0}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"messageChunk","params":{"sessionId":"abc123","chunk":" uses JWT tokens...","index":1}}"#).await;
    let answered = e
        .expect_json(
            json!({"jsonrpc": "2.0", "id": 5, "result": {"sessionId": "abc123", "content": [{"type": "text", "text": "The authentication system uses JWT tokens..."}], "timestamp": null}}),
            &["/result/timestamp"],
        )
        .await;
    assert!(
        answered["result"]["timestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );

    // Nothing runs: the cancel is taken note of.
    e.send(r#"{"jsonrpc":"2.0","id":6,"method":"cancel","params":{"sessionId":"abc123"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":6,"result":{"sessionId":"abc123","cancelled":false}}"#)
        .await;

    // The session's history is what was said in it.
    e.send(r#"{"jsonrpc":"2.0","id":7,"method":"loadSession","params":{"sessionId":"abc123"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":7,"result":{"sessionId":"abc123","mode":"PLANNING","history":[{"role":"user","content":"How does authentication work in this codebase?"},{"role":"assistant","content":"The authentication system uses JWT tokens..."}]}}"#).await;
}

#[tokio::test]
async fn a_cancel_stops_the_running_prompt_and_errors_use_the_dialect_codes() {
    let mut e = connect(Prober);
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"unsupported protocol version \"2\": this peer speaks probe \"1\"","data":{"supported":["1"],"requested":"2"}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"sessionId":"nope","message":"hi"}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"session not found: nope","data":{"sessionId":"nope"}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":3,"method":"newSession","params":{}}"#)
        .await;
    let _created = e.line().await;
    e.send(r#"{"jsonrpc":"2.0","id":4,"method":"prompt","params":{"sessionId":"abc123","message":"wait"}}"#).await;
    // Give the prompt time to reach the agent before it is cancelled.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    e.send(r#"{"jsonrpc":"2.0","id":5,"method":"cancel","params":{"sessionId":"abc123"}}"#)
        .await;
    let mut answers = [e.line().await, e.line().await];
    answers.sort();
    let answers: Vec<Value> = answers
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap().clone();
    assert_eq!(
        by_id(5),
        json!({"jsonrpc": "2.0", "id": 5, "result": {"sessionId": "abc123", "cancelled": true}})
    );
    assert_eq!(by_id(4)["result"]["content"], json!([]));
    e.send(r#"{"jsonrpc":"2.0","id":6,"method":"prompt","params":{"sessionId":"abc123","message":"fail"}}"#).await;
    e.expect(
        r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32603,"message":"the model is unavailable"}}"#,
    )
    .await;
    e.send(r#"{"jsonrpc":"2.0","id":7,"method":"loadSession","params":{"sessionId":"gone"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"session not found: gone","data":{"sessionId":"gone"}}}"#).await;
}

#[tokio::test]
async fn load_session_serves_the_history_from_the_agent_s_store() {
    let store = Arc::new(MemoryStore::new());
    let id = SessionId("abc123".into());
    store
        .create(SessionMeta::new(id.clone(), "/home/user/project"))
        .await
        .unwrap();
    store
        .append(
            &id,
            vec![
                StoredEvent::Prompt(vec![ContentBlock::text("Previous message")]),
                StoredEvent::Update(SessionUpdate::agent_message_text("Previous response")),
            ],
        )
        .await
        .unwrap();
    let options = AdapterOptions::default().with_cwd("/home/user/project");
    let mut e = Editor::connect(|r, w| {
        acp_agent::Builder::new(Prober)
            .dialect(Dialect::Probe)
            .legacy(options)
            .store(store)
            .io(r, w);
    });
    e.send(r#"{"jsonrpc":"2.0","id":3,"method":"loadSession","params":{"sessionId":"abc123"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":3,"result":{"sessionId":"abc123","mode":"NORMAL","history":[{"role":"user","content":"Previous message"},{"role":"assistant","content":"Previous response"}]}}"#).await;
    // A reloaded session takes prompts.
    e.send(r#"{"jsonrpc":"2.0","id":4,"method":"cancel","params":{"sessionId":"abc123"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":4,"result":{"sessionId":"abc123","cancelled":false}}"#)
        .await;
}

/// The bad-input table in probe framing: each line gets exactly one answer with the right
/// code, and the connection keeps serving after every one.
#[tokio::test]
async fn bad_input_gets_one_clear_answer_each_and_the_editor_goes_on() {
    let cases: &[(&str, &[u8], Option<i64>)] = &[
        ("not JSON", b"hello", Some(-32700)),
        ("truncated JSON", br#"{"jsonrpc":"2.0","#, Some(-32700)),
        ("a number", b"42", Some(-32600)),
        ("no jsonrpc member", br#"{"id":9,"method":"newSession","params":{}}"#, Some(-32600)),
        ("unknown method", br#"{"jsonrpc":"2.0","id":9,"method":"session/new","params":{}}"#, Some(-32601)),
        ("integer version", br#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1}}"#, Some(-32602)),
        ("no params", br#"{"jsonrpc":"2.0","id":9,"method":"prompt"}"#, Some(-32602)),
        ("message not a string", br#"{"jsonrpc":"2.0","id":9,"method":"prompt","params":{"sessionId":"abc123","message":[1]}}"#, Some(-32602)),
        ("session id a number", br#"{"jsonrpc":"2.0","id":9,"method":"loadSession","params":{"sessionId":5}}"#, Some(-32602)),
        ("params an array", br#"{"jsonrpc":"2.0","id":9,"method":"cancel","params":[]}"#, Some(-32602)),
        ("unknown session", br#"{"jsonrpc":"2.0","id":9,"method":"setSessionMode","params":{"sessionId":"x","mode":"PLANNING"}}"#, Some(-32002)),
        ("a notification the agent does not know", br#"{"jsonrpc":"2.0","method":"messageChunk","params":{}}"#, None),
        ("a response to nothing", br#"{"jsonrpc":"2.0","id":77,"result":{}}"#, None),
    ];
    let mut e = connect(Prober);
    for (name, line, code) in cases {
        e.send(std::str::from_utf8(line).unwrap()).await;
        if let Some(code) = code {
            let answer: Value = serde_json::from_str(&e.line().await).unwrap();
            assert_eq!(answer["error"]["code"], *code, "{name}: {answer}");
            assert!(
                !answer["error"]["message"].as_str().unwrap_or("").is_empty(),
                "{name}"
            );
        }
        e.send(r#"{"jsonrpc":"2.0","id":100,"method":"cancel","params":{"sessionId":"none"}}"#)
            .await;
        let next: Value = serde_json::from_str(&e.line().await).unwrap();
        assert_eq!(next["id"], 100, "{name}: the connection goes on");
        assert_eq!(next["error"]["code"], -32002, "{name}");
    }
}
