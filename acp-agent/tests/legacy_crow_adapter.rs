//! A v1 agent served to a crow editor through `Builder::dialect`, checked byte for byte
//! against a scripted editor writing the crow dialect's own example messages: the
//! snake_case handshake, `@type` updates, a permission asked and answered, the replay before
//! `session/load` is answered, `cancel` as a request, both spellings of a session id, and
//! the bad-input table in crow framing.

mod common;

use acp_agent::Dialect;
use acp_agent::legacy::AdapterOptions;
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use common::editor::Editor;
use serde_json::{Value, json};

fn connect(agent: impl Agent) -> Editor {
    Editor::connect(|r, w| {
        acp_agent::Builder::new(agent)
            .dialect(Dialect::Crow)
            .legacy(AdapterOptions::default().with_cwd("/fallback"))
            .io(r, w);
    })
}

/// The crow agent of the dialect's own examples, written as a v1 agent.
struct Crow;

#[acp_agent::async_trait]
impl Agent for Crow {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        assert_eq!(p.protocol_version, ProtocolVersion::V1);
        assert_eq!(p.client_info.unwrap().name, "crow-ide");
        // A crow editor serves no file or terminal calls.
        assert!(!p.client_capabilities.fs.read_text_file);
        assert!(!p.client_capabilities.terminal);
        Ok(serde_json::from_value(json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "embeddedContext": true}
            },
            "agentInfo": {"name": "crow-acp-server", "title": "Crow ACP Server", "version": "0.1.0"}
        }))
        .unwrap())
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        assert_eq!(p.cwd, "/path/to/workspace");
        Ok(NewSessionResponse::new("uuid-string"))
    }

    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        assert_eq!(p.cwd, "/path/to/workspace");
        let session = cx.session(&p.session_id).expect("the load is tracked");
        session.user_chunk("Hello, how are you?").await?;
        session.message_chunk("I'm doing well, thank you!").await?;
        Ok(LoadSessionResponse::new())
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let session = cx.session();
        if matches!(&p.prompt[0], ContentBlock::Text(t) if t.text == "wait") {
            // Asks, and is cancelled while the editor has not answered.
            let outcome = session
                .request_permission(
                    ToolCallUpdate::new("t2").title("rm"),
                    vec![PermissionOption::new(
                        "approve",
                        "Approve",
                        PermissionOptionKind::AllowOnce,
                    )],
                )
                .await?;
            assert_eq!(outcome, RequestPermissionOutcome::Cancelled);
            return Ok(PromptResponse::new(StopReason::Cancelled));
        }
        session.thought_chunk("Let me think about this...").await?;
        session.message_chunk("I'm doing well, thank you!").await?;
        let terminal = session
            .start_tool_call(
                ToolCall::new("uuid", "terminal")
                    .kind(ToolKind::Execute)
                    .status(ToolCallStatus::InProgress),
            )
            .await?;
        session
            .plan(vec![
                PlanEntry::new(
                    "Analyze the request",
                    PlanEntryPriority::High,
                    PlanEntryStatus::Completed,
                ),
                PlanEntry::new(
                    "Execute tool: terminal",
                    PlanEntryPriority::Medium,
                    PlanEntryStatus::InProgress,
                ),
            ])
            .await?;
        let mut call = ToolCallUpdate::new("uuid").title("terminal");
        call.raw_input = Some(json!("ls -la"));
        let outcome = session
            .request_permission(
                call,
                vec![
                    PermissionOption::new("approve", "Approve", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                ],
            )
            .await?;
        assert_eq!(outcome, RequestPermissionOutcome::selected("approve"));
        terminal.status(ToolCallStatus::Completed).await?;
        // Calls a crow editor cannot serve are refused, not lost.
        let denied = cx
            .client()
            .peer()
            .request::<_, Value>(
                "fs/read_text_file",
                &json!({"sessionId": "uuid-string", "path": "/a"}),
            )
            .await
            .unwrap_err();
        assert_eq!(denied.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn a_crow_editor_drives_a_v1_agent_byte_for_byte() {
    let mut e = connect(Crow);
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1,"client_capabilities":{},"client_info":{"name":"crow-ide","version":"0.1.0"}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":1,"result":{"protocol_version":1,"agent_capabilities":{"prompt_capabilities":{"text":true,"image":true,"resource":true},"mcp_capabilities":{"http":false,"sse":false},"load_session":true},"agent_info":{"name":"crow-acp-server","title":"Crow ACP Server","version":"0.1.0"}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/path/to/workspace","mcpServers":[]}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"uuid-string"}}"#)
        .await;
    e.send(r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"session_id":"uuid-string","prompt":[{"type":"text","text":"Hello, how are you?"}]}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"agent_thought_text","text":"Let me think about this..."}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"agent_message_text","text":"I'm doing well, thank you!"}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"tool_call_start","tool_call_id":"uuid","title":"terminal","kind":"execute","status":"in_progress"}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"plan_update","entries":[{"content":"Analyze the request","priority":"high","status":"completed"},{"content":"Execute tool: terminal","priority":"medium","status":"in_progress"}]}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"permission_request","tool_call_id":"uuid","title":"terminal","arguments":"ls -la","permission_options":[{"id":"approve","title":"Approve","is_primary":true},{"id":"reject","title":"Reject","is_primary":false}]}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","method":"permission_response","params":{"session_id":"uuid-string","tool_call_id":"uuid","option_id":"approve"}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"tool_call_update","tool_call_id":"uuid","status":"completed"}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":3,"result":{"stop_reason":"end_turn"}}"#)
        .await;

    // The history is replayed before the load is answered.
    e.send(r#"{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"session_id":"existing-uuid","cwd":"/path/to/workspace"}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"existing-uuid","update":{"@type":"user_message_text","text":"Hello, how are you?"}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"existing-uuid","update":{"@type":"agent_message_text","text":"I'm doing well, thank you!"}}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#).await;

    e.send(r#"{"jsonrpc":"2.0","id":5,"method":"cancel","params":{"session_id":"uuid"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#).await;
}

#[tokio::test]
async fn a_cancel_dismisses_a_waiting_permission_and_either_session_id_spelling_is_read() {
    let mut e = connect(Crow);
    // As in v1, nothing runs before the handshake.
    e.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocol_version":1,"client_info":{"name":"crow-ide","version":"0.1.0"}}}"#).await;
    let _ = e.line().await;
    e.send(r#"{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/path/to/workspace","mcpServers":[]}}"#).await;
    let _ = e.line().await;
    // The seed's other spelling of the session id, in a prompt.
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"uuid-string","prompt":[{"type":"text","text":"wait"}]}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"uuid-string","update":{"@type":"permission_request","tool_call_id":"t2","title":"rm","permission_options":[{"id":"approve","title":"Approve","is_primary":true}]}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":2,"method":"cancel","params":{"sessionId":"uuid-string"}}"#)
        .await;
    let mut answers: Vec<Value> = vec![
        serde_json::from_str(&e.line().await).unwrap(),
        serde_json::from_str(&e.line().await).unwrap(),
    ];
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(
        answers,
        vec![
            json!({"jsonrpc": "2.0", "id": 1, "result": {"stop_reason": "cancelled"}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
        ]
    );
    // A late answer to the dismissed request goes nowhere, and the editor goes on.
    e.send(r#"{"jsonrpc":"2.0","method":"permission_response","params":{"session_id":"uuid-string","tool_call_id":"t2","option_id":"approve"}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":3,"method":"cancel","params":{"session_id":"uuid-string"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#).await;
}

/// The bad-input table in crow framing: each line gets exactly one answer with the right
/// code, and the connection keeps serving after every one.
#[tokio::test]
async fn bad_input_gets_one_clear_answer_each_and_the_editor_goes_on() {
    let cases: &[(&str, &str, Option<i64>)] = &[
        ("not JSON", "hello", Some(-32700)),
        ("truncated JSON", r#"{"jsonrpc":"2.0","#, Some(-32700)),
        ("a number", "42", Some(-32600)),
        (
            "no jsonrpc member",
            r#"{"id":9,"method":"cancel","params":{"session_id":"s"}}"#,
            Some(-32600),
        ),
        (
            "unknown method",
            r#"{"jsonrpc":"2.0","id":9,"method":"session/list","params":{}}"#,
            Some(-32601),
        ),
        (
            "camelCase handshake",
            r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1}}"#,
            Some(-32602),
        ),
        (
            "no session id at all",
            r#"{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"prompt":[]}}"#,
            Some(-32602),
        ),
        (
            "session id a number",
            r#"{"jsonrpc":"2.0","id":9,"method":"cancel","params":{"session_id":5}}"#,
            Some(-32602),
        ),
        (
            "prompt not a list",
            r#"{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"session_id":"s","prompt":"hi"}}"#,
            Some(-32602),
        ),
        (
            "params an array",
            r#"{"jsonrpc":"2.0","id":9,"method":"session/new","params":[]}"#,
            Some(-32602),
        ),
        (
            "a permission_response to nothing",
            r#"{"jsonrpc":"2.0","method":"permission_response","params":{"session_id":"s","tool_call_id":"x"}}"#,
            None,
        ),
        (
            "a malformed permission_response",
            r#"{"jsonrpc":"2.0","method":"permission_response","params":{"tool_call_id":1}}"#,
            None,
        ),
        (
            "a response to nothing",
            r#"{"jsonrpc":"2.0","id":77,"result":{}}"#,
            None,
        ),
    ];
    let mut e = connect(Crow);
    for (name, line, code) in cases {
        e.send(line).await;
        if let Some(code) = code {
            let answer: Value = serde_json::from_str(&e.line().await).unwrap();
            assert_eq!(answer["error"]["code"], *code, "{name}: {answer}");
            assert!(
                !answer["error"]["message"].as_str().unwrap_or("").is_empty(),
                "{name}"
            );
        }
        e.send(r#"{"jsonrpc":"2.0","id":100,"method":"cancel","params":{"session_id":"none"}}"#)
            .await;
        let next: Value = serde_json::from_str(&e.line().await).unwrap();
        assert_eq!(next["id"], 100, "{name}: the connection goes on");
        assert_eq!(next["result"], json!({}), "{name}");
    }
}
