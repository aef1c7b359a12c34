//! The generated v1 method table holds exactly the 25 stable methods, each with the side that
//! serves it and its kind, and the typed bindings agree with the table.

use acp_types::v1::{self, METHODS, names};
use acp_types::{MethodKind, NotificationMethod, RequestMethod, Side};

const EXPECTED: &[(&str, Side, MethodKind)] = &[
    ("initialize", Side::Agent, MethodKind::Request),
    ("authenticate", Side::Agent, MethodKind::Request),
    ("logout", Side::Agent, MethodKind::Request),
    ("session/new", Side::Agent, MethodKind::Request),
    ("session/load", Side::Agent, MethodKind::Request),
    ("session/list", Side::Agent, MethodKind::Request),
    ("session/resume", Side::Agent, MethodKind::Request),
    ("session/close", Side::Agent, MethodKind::Request),
    ("session/delete", Side::Agent, MethodKind::Request),
    ("session/set_mode", Side::Agent, MethodKind::Request),
    (
        "session/set_config_option",
        Side::Agent,
        MethodKind::Request,
    ),
    ("session/prompt", Side::Agent, MethodKind::Request),
    ("session/cancel", Side::Agent, MethodKind::Notification),
    (
        "session/request_permission",
        Side::Client,
        MethodKind::Request,
    ),
    ("fs/read_text_file", Side::Client, MethodKind::Request),
    ("fs/write_text_file", Side::Client, MethodKind::Request),
    ("terminal/create", Side::Client, MethodKind::Request),
    ("terminal/output", Side::Client, MethodKind::Request),
    ("terminal/release", Side::Client, MethodKind::Request),
    ("terminal/wait_for_exit", Side::Client, MethodKind::Request),
    ("terminal/kill", Side::Client, MethodKind::Request),
    ("elicitation/create", Side::Client, MethodKind::Request),
    ("session/update", Side::Client, MethodKind::Notification),
    (
        "elicitation/complete",
        Side::Client,
        MethodKind::Notification,
    ),
    ("$/cancel_request", Side::Protocol, MethodKind::Notification),
];

#[test]
fn method_table_lists_exactly_the_25_stable_methods_with_side_and_kind() {
    let mut actual: Vec<_> = METHODS
        .iter()
        .map(|m| (m.name, m.served_by, m.kind))
        .collect();
    let mut expected = EXPECTED.to_vec();
    actual.sort_by_key(|m| m.0);
    expected.sort_by_key(|m| m.0);
    assert_eq!(actual, expected);
}

#[test]
fn requests_have_a_result_type_and_notifications_do_not() {
    for m in METHODS {
        assert_eq!(
            m.result_type.is_some(),
            m.kind == MethodKind::Request,
            "{}",
            m.name
        );
        assert!(!m.description.is_empty(), "{} has no description", m.name);
    }
}

#[test]
fn typed_bindings_agree_with_the_table() {
    fn request<R: RequestMethod>() -> (&'static str, Side) {
        (R::METHOD, R::SERVED_BY)
    }
    fn notification<N: NotificationMethod>() -> (&'static str, Side) {
        (N::METHOD, N::SERVED_BY)
    }
    let bound = [
        request::<v1::InitializeRequest>(),
        request::<v1::PromptRequest>(),
        request::<v1::ReadTextFileRequest>(),
        request::<v1::CreateElicitationRequest>(),
        notification::<v1::CancelNotification>(),
        notification::<v1::SessionNotification>(),
        notification::<v1::CancelRequestNotification>(),
    ];
    for (method, side) in bound {
        let row = METHODS.iter().find(|m| m.name == method).expect(method);
        assert_eq!(row.served_by, side, "{method}");
    }
    assert_eq!(names::SESSION_PROMPT, "session/prompt");
    assert_eq!(names::CANCEL_REQUEST, "$/cancel_request");
}

#[test]
fn message_enums_route_by_method_and_reject_unknown_ones() {
    let prompt = v1::ClientRequest::decode(
        "session/prompt",
        r#"{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}"#,
    )
    .unwrap();
    assert!(matches!(prompt, v1::ClientRequest::SessionPrompt(_)));
    assert_eq!(prompt.method(), "session/prompt");
    let unknown = v1::ClientRequest::decode("session/teleport", "{}").unwrap_err();
    assert!(matches!(unknown, acp_types::DecodeError::UnknownMethod(m) if m == "session/teleport"));
    let ext = v1::ClientRequest::decode("_acme/ping", r#"{"n":1}"#).unwrap();
    assert_eq!(
        ext,
        v1::ClientRequest::Extension {
            method: "_acme/ping".into(),
            params: serde_json::json!({"n":1})
        }
    );
    let bad = v1::ClientRequest::decode("session/new", r#"{"mcpServers":[]}"#).unwrap_err();
    assert!(bad.to_string().contains("cwd"), "{bad}");
}

#[test]
fn request_and_notification_enums_serialize_as_method_and_params() {
    let cancel = v1::ClientNotification::SessionCancel(v1::CancelNotification::new("s1"));
    let json = serde_json::to_value(&cancel).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"method": "session/cancel", "params": {"sessionId": "s1"}})
    );
    let back: v1::ClientNotification = serde_json::from_value(json).unwrap();
    assert_eq!(back, cancel);

    let update: v1::AgentNotification = serde_json::from_value(serde_json::json!({
        "method": "session/update",
        "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}
    }))
    .unwrap();
    assert!(matches!(update, v1::AgentNotification::SessionUpdate(_)));
    let err = serde_json::from_value::<v1::AgentNotification>(
        serde_json::json!({"method": "nope", "params": {}}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown method `nope`"), "{err}");
}

#[test]
fn null_results_of_empty_payloads_read_as_the_default() {
    let r = v1::AgentResponse::decode("session/load", serde_json::Value::Null).unwrap();
    assert_eq!(
        r,
        v1::AgentResponse::SessionLoad(v1::LoadSessionResponse::default())
    );
    assert!(v1::AgentResponse::decode("session/prompt", serde_json::Value::Null).is_err());
    assert_eq!(
        <v1::LoadSessionRequest as RequestMethod>::decode_response("null").unwrap(),
        v1::LoadSessionResponse::default()
    );
}
