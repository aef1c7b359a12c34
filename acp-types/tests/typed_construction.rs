//! Typed construction from outside the crate, as a user writes it: `new` with the required
//! fields, builder methods for the rest, union constructors and conversions. Every value is
//! checked against the JSON it must put on the wire, so a generator change that alters a
//! constructor's meaning fails here. Being an integration test, this file also proves that
//! none of it needs a struct literal (the generated structs are `#[non_exhaustive]`).

use acp_types::v1::*;
use serde_json::{Value, json};

fn wire(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("serializes")
}

#[test]
fn initialize_response_with_capabilities_and_info() {
    let response = InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true)),
        )
        .agent_info(Implementation::new("echo", "0.1.0").title("Echo agent"));
    // With `unstable_mcp_over_acp` the MCP capabilities also say `acp`, always, as the
    // official crate's do under the same feature.
    let mcp = if cfg!(feature = "unstable_mcp_over_acp") {
        json!({"http": false, "sse": false, "acp": false})
    } else {
        json!({"http": false, "sse": false})
    };
    assert_eq!(
        wire(&response),
        json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "mcpCapabilities": mcp,
                "sessionCapabilities": {},
                "auth": {}
            },
            "authMethods": [],
            "agentInfo": {"name": "echo", "title": "Echo agent", "version": "0.1.0"}
        })
    );
}

#[test]
fn tool_call_with_kind_location_and_content() {
    let call = ToolCall::new("t1", "Read foo")
        .kind(ToolKind::Read)
        .status(ToolCallStatus::InProgress)
        .locations([ToolCallLocation::new("/a").line(3)])
        .content([ToolCallContent::from(ContentBlock::text("hello"))]);
    let update = SessionNotification::new("s1", call);
    assert_eq!(
        wire(&update),
        json!({
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "tool_call",
                "toolCallId": "t1",
                "title": "Read foo",
                "kind": "read",
                "status": "in_progress",
                "content": [{"type": "content", "content": {"type": "text", "text": "hello"}}],
                "locations": [{"path": "/a", "line": 3}]
            }
        })
    );
}

#[test]
fn permission_request_and_its_outcome() {
    let request = RequestPermissionRequest::new(
        "s1",
        ToolCallUpdate::new("t1").status(ToolCallStatus::Pending),
        [
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("deny", "Deny", PermissionOptionKind::RejectOnce),
        ],
    );
    let json = wire(&request);
    assert_eq!(json["options"][0]["optionId"], "allow");
    assert_eq!(json["options"][1]["kind"], "reject_once");
    assert_eq!(json["toolCall"]["toolCallId"], "t1");

    let response = RequestPermissionResponse::new(RequestPermissionOutcome::selected("allow"));
    assert_eq!(
        wire(&response),
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
    );
    assert_eq!(
        wire(RequestPermissionResponse::new(
            RequestPermissionOutcome::Cancelled
        )),
        json!({"outcome": {"outcome": "cancelled"}})
    );
}

#[test]
fn session_updates_from_their_short_constructors() {
    assert_eq!(
        wire(SessionUpdate::agent_message_text("hi")),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
    );
    assert_eq!(
        wire(SessionUpdate::tool_call("t2", "Edit")),
        json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Edit"})
    );
    let plan = Plan::new([PlanEntry::new(
        "write tests",
        PlanEntryPriority::High,
        PlanEntryStatus::Pending,
    )]);
    assert_eq!(
        wire(SessionUpdate::from(plan))["entries"][0]["content"],
        "write tests"
    );
}

#[test]
fn new_session_response_with_modes() {
    let response = NewSessionResponse::new("s1").modes(SessionModeState::new(
        "ask",
        [
            SessionMode::new("ask", "Ask"),
            SessionMode::new("code", "Code").description("Edits files"),
        ],
    ));
    let json = wire(&response);
    assert_eq!(json["modes"]["currentModeId"], "ask");
    assert_eq!(
        json["modes"]["availableModes"][1]["description"],
        "Edits files"
    );
}

#[test]
fn client_requests_with_lists_of_strings_and_numbers() {
    let request = CreateTerminalRequest::new("s1", "ls")
        .args(["-l", "-a"])
        .env([EnvVariable::new("LANG", "C")])
        .output_byte_limit(1024);
    assert_eq!(
        wire(&request),
        json!({
            "sessionId": "s1",
            "command": "ls",
            "args": ["-l", "-a"],
            "env": [{"name": "LANG", "value": "C"}],
            "outputByteLimit": 1024
        })
    );
    let read = ReadTextFileRequest::new("s1", "/w/a.txt").line(2).limit(10);
    assert_eq!(
        wire(&read),
        json!({"sessionId": "s1", "path": "/w/a.txt", "line": 2, "limit": 10})
    );
}

#[test]
fn prompt_from_strings_and_blocks_with_meta() {
    let mut meta = acp_types::Meta::new();
    meta.insert("trace".into(), json!("abc"));
    let prompt = PromptRequest::new("s1", ["hello".into(), ContentBlock::text("world")]).meta(meta);
    assert_eq!(
        wire(&prompt),
        json!({
            "sessionId": "s1",
            "prompt": [{"type": "text", "text": "hello"}, {"type": "text", "text": "world"}],
            "_meta": {"trace": "abc"}
        })
    );
}

#[test]
fn all_optional_types_have_default_equal_to_new() {
    assert_eq!(ClientCapabilities::default(), ClientCapabilities::new());
    assert_eq!(AgentCapabilities::default(), AgentCapabilities::new());
    assert_eq!(
        wire(ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true))),
        json!({
            "fs": {"readTextFile": true, "writeTextFile": false},
            "terminal": false,
            "auth": {"terminal": false}
        })
    );
}

#[test]
fn errors_build_with_code_message_and_data() {
    let error = Error::new(ErrorCode::INVALID_PARAMS, "bad path").data(json!({"path": "x"}));
    assert_eq!(
        wire(&error),
        json!({"code": -32602, "message": "bad path", "data": {"path": "x"}})
    );
}

/// `systemPrompt` is stable v1 since the official schema crate 1.17.0: typed with no feature.
#[test]
fn system_prompt_is_stable_v1() {
    let request = NewSessionRequest::new("/w", []).system_prompt(SystemPrompt::new(
        SystemPromptMode::Append,
        [ContentBlock::text("Answer in French.")],
    ));
    assert_eq!(
        wire(&request)["systemPrompt"],
        json!({"mode": "append", "content": [{"type": "text", "text": "Answer in French."}]})
    );
    let read: NewSessionRequest = serde_json::from_value(wire(&request)).unwrap();
    assert!(read.extra.is_empty() && read.system_prompt.is_some());
    let caps = SessionCapabilities::new().system_prompt(SessionSystemPromptCapabilities::new());
    assert_eq!(wire(caps), json!({"systemPrompt": {}}));
}
