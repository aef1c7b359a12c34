//! The drift comparison on small fixture schemas: each kind of difference is found, an
//! allow-listed one is explained, and a stale allow-list entry fails the check.

use super::*;

/// A tiny official document: one method, an object with two fields, a capability object, a
/// string enum and a tagged union.
const OFFICIAL: &str = r#"{
  "$defs": {
    "PingRequest": {"type": "object", "x-method": "ping", "x-side": "agent",
      "properties": {"sessionId": {"type": "string"}, "note": {"type": "string"}}},
    "PingCapabilities": {"type": "object", "properties": {"loud": {"type": "boolean"}}},
    "Mood": {"oneOf": [{"type": "string", "const": "calm"}, {"type": "string", "const": "end_turn"}]},
    "Update": {"oneOf": [
      {"type": "object", "properties": {"kind": {"type": "string", "const": "ping"}}},
      {"type": "object", "properties": {"kind": {"type": "string", "const": "pong"}}}]}
  }
}"#;

/// Ours, identical to [`OFFICIAL`] in every respect the check looks at.
const SAME: &str = r#"{
  "x-methods": [{"method": "ping", "side": "agent", "kind": "request"}],
  "$defs": {
    "PingRequest": {"type": "object",
      "properties": {"sessionId": {"type": "string"}, "note": {"type": "string"}}},
    "PingCapabilities": {"type": "object", "properties": {"loud": {"type": "boolean"}}},
    "Mood": {"type": "string", "oneOf": [{"const": "calm"}, {"const": "end_turn"}]},
    "Update": {"x-tag": "kind", "oneOf": [
      {"properties": {"kind": {"const": "ping"}}, "required": ["kind"]},
      {"properties": {"kind": {"const": "pong"}}, "required": ["kind"]}]}
  }
}"#;

const EMPTY_OVERLAY: &str = r#"{"$defs": {}}"#;
const NO_UNSTABLE: &str = r#"{"$defs": {}}"#;

fn keys(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.key.as_str()).collect()
}

#[test]
fn identical_schemas_have_no_findings() {
    let found = compare_schemas(OFFICIAL, NO_UNSTABLE, SAME, EMPTY_OVERLAY).unwrap();
    assert_eq!(found, Vec::<Finding>::new());
}

#[test]
fn a_missing_field_and_a_missing_capability_are_found() {
    let ours = SAME
        .replace(r#", "note": {"type": "string"}"#, "")
        .replace(r#""loud": {"type": "boolean"}"#, "");
    let found = compare_schemas(OFFICIAL, NO_UNSTABLE, &ours, EMPTY_OVERLAY).unwrap();
    assert_eq!(
        keys(&found),
        ["capability PingCapabilities.loud", "field PingRequest.note"]
    );
}

#[test]
fn a_renamed_enum_value_is_reported_with_our_spelling() {
    let ours = SAME.replace(r#""const": "end_turn""#, r#""const": "endTurn""#);
    let found = compare_schemas(OFFICIAL, NO_UNSTABLE, &ours, EMPTY_OVERLAY).unwrap();
    assert_eq!(keys(&found), ["value Mood.end_turn"]);
    assert_eq!(found[0].detail, "spelled `endTurn` here");
}

#[test]
fn missing_methods_types_and_union_tags_are_found() {
    let ours = SAME
        .replace(r#""method": "ping""#, r#""method": "pong""#)
        .replace(r#""const": "pong""#, r#""const": "other""#)
        .replace("\"Mood\"", "\"Temper\"");
    let found = compare_schemas(OFFICIAL, NO_UNSTABLE, &ours, EMPTY_OVERLAY).unwrap();
    assert_eq!(
        keys(&found),
        ["method ping", "type Mood", "value Update.pong"]
    );
}

#[test]
fn a_method_served_by_the_other_side_is_found() {
    let ours = SAME.replace(r#""side": "agent""#, r#""side": "client""#);
    let found = compare_schemas(OFFICIAL, NO_UNSTABLE, &ours, EMPTY_OVERLAY).unwrap();
    assert_eq!(keys(&found), ["method-side ping"]);
}

#[test]
fn the_overlay_answers_the_unstable_document_but_not_the_stable_one() {
    // Upstream has `note` in its unstable document only: our overlay's `x-extend` covers it.
    let ours = SAME.replace(r#", "note": {"type": "string"}"#, "");
    let overlay = r#"{"$defs": {}, "x-extend": {"PingRequest": {"properties":
        {"note": {"type": "string", "x-unstable": "unstable_note"}}}}}"#;
    let stable_upstream = OFFICIAL.replace(r#", "note": {"type": "string"}"#, "");
    let found = compare_schemas(&stable_upstream, OFFICIAL, &ours, overlay).unwrap();
    assert_eq!(found, Vec::<Finding>::new());
    // Once upstream makes it stable, the check says it is still behind a feature here.
    let found = compare_schemas(OFFICIAL, OFFICIAL, &ours, overlay).unwrap();
    assert_eq!(keys(&found), ["stabilized field PingRequest.note"]);
}

#[test]
fn features_upstream_lacks_or_adds_are_found() {
    let toml = "[package]\nname = \"x\"\n[features]\ndefault = []\nunstable = [\"unstable_a\"]\n\
                unstable_a = []\nunstable_b = []\n[dependencies]\nunstable_c = \"1\"\n";
    let official = cargo_toml_features(toml);
    assert_eq!(official, ["unstable_a", "unstable_b"]);
    let ours = vec!["unstable_a".to_string(), "unstable_z".to_string()];
    let found = compare_features(&official, &ours);
    assert_eq!(
        keys(&found),
        ["feature unstable_b", "retired feature unstable_z"]
    );
}

#[test]
fn cargo_info_output_gives_the_feature_names() {
    let stdout = "agent-client-protocol-schema #agent\nversion: 1.20.0\nfeatures:\n \
                  +default = [schemars]\n  unstable = [unstable_a]\n  unstable_a = []\n  \
                  unstable_b = []\nnote: something\n";
    assert_eq!(cargo_info_features(stdout), ["unstable_a", "unstable_b"]);
}

#[test]
fn the_allow_list_explains_findings_and_stale_entries_fail() {
    let ours = SAME.replace(r#", "note": {"type": "string"}"#, "");
    let found = compare_schemas(OFFICIAL, NO_UNSTABLE, &ours, EMPTY_OVERLAY).unwrap();
    let allow = AllowList::parse(
        "# why each difference stays\nfield PingRequest.note -- kept in extra on purpose\n",
    )
    .unwrap();
    let verdict = judge(found.clone(), &allow);
    assert!(verdict.clean(), "{verdict:?}");
    assert_eq!(verdict.allowed[0].1, "kept in extra on purpose");

    let allow = AllowList::parse("type Gone -- fixed long ago\n").unwrap();
    let verdict = judge(found, &allow);
    assert!(!verdict.clean());
    assert_eq!(keys(&verdict.unexplained), ["field PingRequest.note"]);
    assert_eq!(verdict.stale, ["type Gone"]);
}

#[test]
fn allow_list_lines_need_a_reason_and_appear_once() {
    assert!(AllowList::parse("type X\n").is_err());
    assert!(AllowList::parse("type X -- \n").is_err());
    assert!(AllowList::parse("type X -- a\ntype X -- b\n").is_err());
    assert!(AllowList::parse("# only a comment\n\n").is_ok());
}

#[test]
fn values_of_a_union_our_object_embeds_count_as_its_own() {
    // Upstream writes the tag on the object's own `oneOf`; we embed a union through `allOf`.
    let official = r#"{"$defs": {"Ask": {"type": "object", "oneOf": [
        {"properties": {"mode": {"const": "form"}}}, {"properties": {"mode": {"const": "url"}}}]}}}"#;
    let ours = r##"{"$defs": {
        "Ask": {"type": "object", "allOf": [{"$ref": "#/$defs/AskMode", "x-field": "kind"}]},
        "AskMode": {"x-tag": "mode", "oneOf": [{"properties": {"mode": {"const": "form"}}}]}}}"##;
    let found = compare_schemas(official, NO_UNSTABLE, ours, EMPTY_OVERLAY).unwrap();
    assert_eq!(keys(&found), ["value Ask.url"]);
}

#[test]
fn the_v2_comparison_finds_the_same_differences_under_a_v2_prefix() {
    assert_eq!(compare_v2(OFFICIAL, SAME).unwrap(), Vec::<Finding>::new());
    let ours = SAME.replace(r#", "note": {"type": "string"}"#, "");
    let found = compare_v2(OFFICIAL, &ours).unwrap();
    assert_eq!(keys(&found), ["v2 field PingRequest.note"]);
}
