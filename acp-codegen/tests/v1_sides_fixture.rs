//! Adding a v1 method is a schema edit: one more `x-methods` entry (here in the unstable
//! overlay, behind a feature) yields, with nothing else changed, a trait method with its
//! default, a dispatch arm and a handle method on each side it concerns, with the
//! capability gate the entry names. CONTRIBUTING.md ("Adding a protocol method") walks
//! through the same steps.

use acp_codegen::{GeneratedFile, generate_v1_sides};
use serde_json::{Value, json};

/// The real v1 overlay with `entries` appended to its `x-methods` and `defs` to its `$defs`.
fn overlay_with(entries: Vec<Value>, defs: Value) -> String {
    let mut overlay: Value = serde_json::from_str(acp_schema::V1_UNSTABLE).unwrap();
    overlay["x-methods"].as_array_mut().unwrap().extend(entries);
    for (name, def) in defs.as_object().unwrap() {
        overlay["$defs"][name] = def.clone();
    }
    serde_json::to_string(&overlay).unwrap()
}

fn object(feature: &str) -> Value {
    json!({
        "type": "object",
        "x-unstable": feature,
        "properties": {"sessionId": {"$ref": "#/$defs/SessionId"}},
        "required": ["sessionId"]
    })
}

fn extra_methods() -> (Vec<Value>, Value) {
    let entries = vec![
        json!({
            "method": "session/ping", "side": "agent", "kind": "request",
            "params": {"$ref": "#/$defs/PingSessionRequest"},
            "result": {"$ref": "#/$defs/PingSessionResponse"},
            "description": "Checks that a session is alive.",
            "x-unstable": "unstable_ping",
            "x-rust": {"name": "ping_session", "session": "known"}
        }),
        json!({
            "method": "editor/flash", "side": "client", "kind": "notification",
            "params": {"$ref": "#/$defs/FlashEditorNotification"},
            "description": "Flashes the editor's window.",
            "x-unstable": "unstable_ping",
            "x-rust": {"name": "flash_editor", "capability": "fs.readTextFile"}
        }),
    ];
    let defs = json!({
        "PingSessionRequest": object("unstable_ping"),
        "PingSessionResponse": {"type": "object", "x-unstable": "unstable_ping", "properties": {}},
        "FlashEditorNotification": object("unstable_ping"),
    });
    (entries, defs)
}

fn file<'a>(files: &'a [GeneratedFile], path: &str) -> &'a str {
    &files
        .iter()
        .find(|f| f.path.to_str() == Some(path))
        .unwrap_or_else(|| panic!("{path} was not generated"))
        .contents
}

/// The lines of `after` that `before` does not have, trimmed (a multiset difference).
fn added(before: &str, after: &str) -> Vec<String> {
    let mut left: Vec<&str> = before.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for line in after.lines().map(str::trim) {
        match left.iter().position(|l| *l == line) {
            Some(i) => {
                left.remove(i);
            }
            None => out.push(line.to_string()),
        }
    }
    out
}

/// Whether the added lines, read as one text, contain `needle` (whitespace ignored: the
/// formatter breaks long expressions over lines).
fn contains(lines: &[String], needle: &str) -> bool {
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    squeeze(&lines.concat()).contains(&squeeze(needle))
}

#[test]
fn one_more_method_in_the_table_is_one_more_trait_method_dispatch_arm_and_handle_method() {
    let before = generate_v1_sides(acp_schema::V1, acp_schema::V1_UNSTABLE).unwrap();
    let (entries, defs) = extra_methods();
    let after = generate_v1_sides(acp_schema::V1, &overlay_with(entries, defs)).unwrap();
    assert_eq!(before.len(), after.len(), "the same files");

    let diff = |path| added(file(&before, path), file(&after, path));

    // The agent serves `session/ping`: its trait gets the method with the default answer,
    // the dispatch an arm that checks the session, the client's handle a typed call.
    let agent = diff("acp-agent/src/agent/generated.rs");
    assert!(contains(&agent, "async fn ping_session("), "{agent:#?}");
    assert!(contains(&agent, "params: PingSessionRequest"), "{agent:#?}");
    assert!(
        contains(&agent, "Result<PingSessionResponse, Error>"),
        "{agent:#?}"
    );
    assert!(
        contains(&agent, "Err(Error::method_not_found(<PingSessionRequest"),
        "{agent:#?}"
    );
    assert!(
        contains(&agent, "#[cfg(feature = \"unstable_ping\")]"),
        "{agent:#?}"
    );

    let dispatch = diff("acp-agent/src/dispatch/generated.rs");
    assert!(
        contains(&dispatch, "\"session/ping\" => {"),
        "{dispatch:#?}"
    );
    assert!(
        contains(&dispatch, "parse_request::<PingSessionRequest>()?"),
        "{dispatch:#?}"
    );
    assert!(
        contains(&dispatch, "call.known(&params.session_id)?;"),
        "{dispatch:#?}"
    );
    assert!(
        contains(&dispatch, "agent.ping_session(params, &call.cx)"),
        "{dispatch:#?}"
    );

    let to_agent = diff("acp-client/src/handle/generated.rs");
    assert!(
        contains(&to_agent, "pub async fn ping_session("),
        "{to_agent:#?}"
    );
    assert!(
        contains(&to_agent, "self.request(&params).await"),
        "{to_agent:#?}"
    );

    // The client serves `editor/flash`: the `Client` trait method ignores it by default, the
    // client's dispatch routes it, and the agent's handle refuses to send it unless the
    // client advertised the capability the entry names.
    let client = diff("acp-client/src/client/generated.rs");
    assert!(contains(&client, "async fn flash_editor("), "{client:#?}");
    let client_dispatch = diff("acp-client/src/dispatch/generated.rs");
    assert!(
        contains(&client_dispatch, "\"editor/flash\" => {"),
        "{client_dispatch:#?}"
    );
    assert!(
        contains(&client_dispatch, "client.flash_editor(params).await"),
        "{client_dispatch:#?}"
    );
    let to_client = diff("acp-agent/src/handle/generated.rs");
    assert!(
        contains(&to_client, "pub async fn flash_editor("),
        "{to_client:#?}"
    );
    assert!(
        contains(&to_client, "self.require(") && contains(&to_client, "c.fs.read_text_file"),
        "{to_client:#?}"
    );
    assert!(
        contains(&to_client, "self.notify(&params).await"),
        "{to_client:#?}"
    );

    // Nothing else moved: the agent's own trait and the client's trait are untouched by
    // the other side's method.
    assert!(!contains(&agent, "flash_editor") && !contains(&client, "ping_session"));
}

#[test]
fn a_capability_the_schema_does_not_have_fails_generation_with_its_path() {
    let (mut entries, defs) = extra_methods();
    entries[1]["x-rust"]["capability"] = json!("fs.flash");
    let e = generate_v1_sides(acp_schema::V1, &overlay_with(entries, defs)).unwrap_err();
    let message = e.to_string();
    assert!(message.contains("fs.flash"), "{message}");
    assert!(
        message.contains("`FileSystemCapabilities` has no property `flash`"),
        "{message}"
    );
}

#[test]
fn a_method_without_x_rust_fails_generation_and_says_so() {
    let (mut entries, defs) = extra_methods();
    entries[0].as_object_mut().unwrap().remove("x-rust");
    let e = generate_v1_sides(acp_schema::V1, &overlay_with(entries, defs)).unwrap_err();
    assert!(
        e.to_string().contains("x-methods[session/ping].x-rust"),
        "{e}"
    );
}
