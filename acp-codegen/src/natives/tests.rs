use super::call::snake_case;
use super::*;

fn schema(methods: &str) -> Result<Schema, Error> {
    crate::model::parse(&format!(
        r##"{{"x-dialect": "t", "title": "t", "x-methods": [{methods}], "$defs": {{
            "Null": {{"type": "null"}},
            "Obj": {{"type": "object", "properties": {{"a": {{"type": "string"}}}}}}
        }}}}"##
    ))
}

fn method(wire: &str, result: &str, extra: &str) -> String {
    format!(
        r##"{{"method": "{wire}", "side": "agent", "kind": "request",
            "params": {{"$ref": "#/$defs/Obj"}}, "result": {{"$ref": "#/$defs/{result}"}}{extra}}}"##
    )
}

#[test]
fn wire_names_become_snake_case_methods() {
    assert_eq!(
        snake_case("sendUserMessage").to_string(),
        "send_user_message"
    );
    assert_eq!(snake_case("session/new").to_string(), "session_new");
    assert_eq!(snake_case("stat").to_string(), "stat");
}

#[test]
fn defaults_follow_x_default() {
    let s = schema(
        &[
            method("a", "Obj", ""),
            method("b", "Null", r#", "x-default": "accept""#),
            method("c", "Obj", r#", "x-default": "dialect", "x-handle": false"#),
        ]
        .join(","),
    )
    .unwrap();
    let code = generate(&s, "t").unwrap().to_string();
    assert!(code.contains("not_found :: < Obj , _ >"), "{code}");
    assert!(
        code.contains("super :: defaults :: c (params , cx)"),
        "{code}"
    );
    // `c` has no handle method; `a` and `b` do.
    assert!(code.contains("pub async fn a (& self"));
    assert!(code.contains("pub async fn b (& self"));
    assert!(!code.contains("pub async fn c (& self"));
}

#[test]
fn the_editors_notifications_are_read_straight_from_the_line() {
    let notification = |wire: &str, side: &str, params: &str| {
        format!(
            r##"{{"method": "{wire}", "side": "{side}", "kind": "notification",
                "params": {{"$ref": "#/$defs/{params}"}}}}"##
        )
    };
    let s = schema(
        &[
            notification("n/update", "client", "Obj"),
            notification("n/ping", "client", "Null"),
            notification("n/cancel", "agent", "Obj"),
        ]
        .join(","),
    )
    .unwrap();
    let code = generate(&s, "t").unwrap().to_string();
    // Exactly one `start_notification`: the editor's, with an arm for the notification
    // that has params; the agent's side and a null payload keep the ordinary path.
    assert_eq!(code.matches("fn start_notification").count(), 1, "{code}");
    assert!(
        code.contains(
            r#""n/update" => { let params : Obj = :: serde_json :: from_str (params) . ok () ?"#
        ),
        "{code}"
    );
    assert!(code.contains(". n_update (params) . await"), "{code}");
    let start = code.find("fn start_notification").unwrap();
    let rest = &code[start..];
    let end = rest.find("async fn handle_request").unwrap();
    assert!(!rest[..end].contains("n/ping"), "{code}");
    assert!(!rest[..end].contains("n/cancel"), "{code}");
}

#[test]
fn accepting_by_default_needs_a_null_result() {
    let s = schema(&method("a", "Obj", r#", "x-default": "accept""#)).unwrap();
    let err = generate(&s, "t").unwrap_err().to_string();
    assert!(
        err.contains("x-methods[a]") && err.contains("null result"),
        "{err}"
    );
    let bad = schema(&method("a", "Obj", r#", "x-default": "maybe""#)).unwrap_err();
    assert!(bad.to_string().contains("x-default"), "{bad}");
}
