//! Differential test against the official Rust crate `agent-client-protocol-schema` 1.17.0.
//!
//! Every example message under `tests/corpus/v1` is read by our types (through the generated
//! message enums, exactly as a connection would read it) and by the official crate's types;
//! both re-serialize, and the two JSON values must be equal, except that we also write back the
//! fields our types do not know (kept in each object's `extra` map), where the official crate
//! drops them: every key only we write must be in the input at the same place with the same
//! value. A message one side rejects must be rejected by the other too.
//!
//! Deliberate differences are listed in [`DELIBERATE`] with the reason; each is still checked
//! (our output must match the expectation written there), so it cannot drift silently.

mod support;

use serde_json::Value;
use support::official::{corpus_files, official_roundtrip};
use support::ours;

/// Corpus files where we knowingly differ from the official crate: `(file, kept value)`.
///
/// All of them are one decision. An enum value, `sessionUpdate` kind, content block type,
/// permission outcome or transport that this schema version does not know is **kept as sent**
/// (an `Unknown` variant holding the raw value) instead of rejecting the message or replacing
/// the value with a default, as the official crate does. That is the forward compatibility
/// acp-rs promises: a newer peer's message is not lost, and a proxy passes it through intact.
/// For each file the test checks that we accept it and that the unknown value is in our output.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "session_new.params.mcp_unknown_transport.json",
        "\"websocket\"",
    ),
    (
        "session_new.result.config_unknown_kind_skipped.json",
        "\"slider\"",
    ),
    (
        "session_prompt.params.invalid_annotations_dropped.json",
        "\"robot\"",
    ),
    ("session_prompt.params.unknown_block_type.json", "\"video\""),
    (
        "session_prompt.result.unknown_stop_reason.json",
        "\"paused\"",
    ),
    (
        "session_request_permission.params.unknown_option_kind.json",
        "\"allow_session\"",
    ),
    (
        "session_request_permission.result.unknown_outcome.json",
        "\"dismissed\"",
    ),
    (
        "session_update.params.chunk_unknown_content_type.json",
        "\"video\"",
    ),
    (
        "session_update.params.plan_invalid_entry_skipped.json",
        "\"urgent\"",
    ),
    (
        "session_update.params.tool_call_invalid_content_skipped.json",
        "\"screenshot\"",
    ),
    (
        "session_update.params.tool_call_unknown_kind.json",
        "\"teleport\"",
    ),
    (
        "session_update.params.tool_call_unknown_status.json",
        "\"paused\"",
    ),
    (
        "session_update.params.tool_call_update_bad_status_dropped.json",
        "\"paused\"",
    ),
    (
        "session_update.params.tool_call_update_unknown_kind.json",
        "\"teleport\"",
    ),
    (
        "session_update.params.unknown_session_update.json",
        "\"subagent_update\"",
    ),
];

#[test]
fn every_corpus_message_reads_and_writes_like_the_official_crate() {
    let files = corpus_files();
    assert!(files.len() >= 100, "corpus too small: {}", files.len());
    let mut failures = Vec::new();
    let mut deliberate_seen = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let method = case["method"].as_str().unwrap();
        let part = case["part"].as_str().unwrap();
        let value = &case["value"];
        let expect_accept = case["expect"] == "accept";
        let theirs = official_roundtrip(method, part, value);
        let ours = ours(method, part, value);
        if let Some((_, kept)) = DELIBERATE.iter().find(|(f, _)| *f == name) {
            deliberate_seen += 1;
            match &ours {
                Ok(out) if out.to_string().contains(kept) => {}
                _ => failures.push(format!(
                    "{name}: expected {kept} kept, ours: {}",
                    show(&ours)
                )),
            }
            continue;
        }
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) if same_or_kept(a, b, value) && expect_accept => {}
            (Err(_), Err(_)) if !expect_accept => {}
            _ => failures.push(format!(
                "{name}\n   expect: {}\n   ours:   {}\n   theirs: {}",
                case["expect"],
                show(&ours),
                show(&theirs)
            )),
        }
    }
    assert_eq!(
        deliberate_seen,
        DELIBERATE.len(),
        "a DELIBERATE entry names no corpus file"
    );
    assert!(
        failures.is_empty(),
        "{} of {} corpus files differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// `ours` equals `theirs`, except for object keys only `ours` has, which must come unchanged
/// from `input` (unknown fields we keep and the official crate drops).
fn same_or_kept(ours: &Value, theirs: &Value, input: &Value) -> bool {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let input = input.as_object();
            a.iter().all(|(k, v)| match b.get(k) {
                Some(w) => same_or_kept(v, w, input.and_then(|i| i.get(k)).unwrap_or(&Value::Null)),
                None => input.and_then(|i| i.get(k)) == Some(v),
            }) && b.keys().all(|k| a.contains_key(k))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .enumerate()
                    .all(|(i, (v, w))| same_or_kept(v, w, input.get(i).unwrap_or(&Value::Null)))
        }
        _ => ours == theirs,
    }
}

#[test]
fn only_input_fields_may_be_added() {
    let input = serde_json::json!({"a": 1, "x": {"y": 2}});
    let theirs = serde_json::json!({"a": 1});
    assert!(same_or_kept(&input, &theirs, &input));
    assert!(!same_or_kept(
        &serde_json::json!({"a": 1, "z": 3}),
        &theirs,
        &input
    ));
    assert!(!same_or_kept(
        &serde_json::json!({"a": 2, "x": {"y": 2}}),
        &theirs,
        &input
    ));
}

fn show(r: &Result<Value, String>) -> String {
    match r {
        Ok(v) => v.to_string(),
        Err(e) => format!("REJECTED: {e}"),
    }
}
