//! Golden test: `tests/fixtures/shapes.json` holds one of every shape the generator accepts;
//! its output is compared with `shapes.types.rs` and `shapes.methods.rs` next to it. After a
//! deliberate generator change, run with `UPDATE_GOLDEN=1` and review the diff.
//!
//! Schemas that break the conventions must fail with an error naming the definition.

use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn golden(name: &str, actual: &str) {
    let path = fixture(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{name} differs from the generator's output; rerun with UPDATE_GOLDEN=1 and review"
    );
}

#[test]
fn every_shape_generates_as_recorded() {
    let text = std::fs::read_to_string(fixture("shapes.json")).unwrap();
    let module = acp_codegen::generate_dialect(&text, "shapes.json").unwrap();
    golden("shapes.types.rs", &module.types);
    golden("shapes.methods.rs", &module.methods);
    for expected in [
        "#[serde(tag = \"type\")]",
        "Unknown(::serde_json::Value)",
        "#[serde(untagged)]\n    StdioServer(StdioServer)",
        "#[serde(flatten)]\n    pub kind: ItemKind,",
        "pub const PARSE_ERROR: Self = Self(-32700);",
        "deserialize_with = \"crate::serde_util::lenient_vec\"",
        "skip_serializing_if = \"Kind::is_default\"",
        "pub struct PingParams;",
        "crate::serde_util::deserialize_null_payload(deserializer)",
        "pub meta: ::std::option::Option<crate::Meta>,",
        "Link(::std::boxed::Box<HttpServer>),",
        ".map(|body| Self::Link(::std::boxed::Box::new(body))),",
        "crate::HasExtra::extra_fields_mut(&mut body).remove(\"type\");\n                        Ok(Self::Link(::std::boxed::Box::new(body)))",
        "pub extra: crate::Extra,",
        "impl ::std::convert::From<HttpServer> for ItemKind {",
    ] {
        assert!(module.types.contains(expected), "missing {expected:?}");
    }
}

fn schema_with(defs: &str) -> String {
    format!(r##"{{"x-dialect": "t", "x-methods": [], "$defs": {defs}}}"##)
}

#[test]
fn anonymous_nested_objects_are_refused_with_the_definition_named() {
    let err = acp_codegen::generate_dialect(
        &schema_with(r#"{"Outer": {"type": "object", "properties": {"inner": {"type": "object", "properties": {"a": {"type": "string"}}}}}}"#),
        "t.json",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("Outer") && err.to_string().contains("inner"),
        "{err}"
    );
}

#[test]
fn dangling_references_are_refused() {
    let err = acp_codegen::generate_dialect(
        &schema_with(
            r##"{"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/Missing"}}}}"##,
        ),
        "t.json",
    )
    .unwrap_err();
    assert!(err.to_string().contains("Missing"), "{err}");
}

#[test]
fn unsupported_keywords_are_refused() {
    let err = acp_codegen::generate_dialect(
        &schema_with(r#"{"A": {"type": "object", "not": {"required": ["x"]}}}"#),
        "t.json",
    )
    .unwrap_err();
    assert!(err.to_string().contains("`not`"), "{err}");
}

#[test]
fn meta_that_is_not_any_object_is_refused() {
    for meta in [
        r#"{"type": ["string", "null"]}"#,
        r#"{"type": ["object", "null"], "additionalProperties": {"type": "string"}}"#,
    ] {
        let err = acp_codegen::generate_dialect(
            &schema_with(&format!(
                r#"{{"A": {{"type": "object", "properties": {{"_meta": {meta}}}}}}}"#
            )),
            "t.json",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("`A`") && err.to_string().contains("_meta"),
            "{err}"
        );
    }
}

#[test]
fn boxing_a_unit_variant_is_refused() {
    let err = acp_codegen::generate_dialect(
        &schema_with(
            r#"{"U": {"x-tag": "type", "oneOf": [{"x-boxed": true, "properties": {"type": {"const": "a"}}, "required": ["type"]}]}}"#,
        ),
        "t.json",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("`U`") && err.to_string().contains("x-boxed"),
        "{err}"
    );
}

#[test]
fn methods_must_point_at_object_definitions() {
    let text = r##"{"x-dialect": "t", "x-methods": [{"method": "a", "side": "agent", "kind": "notification", "params": {"$ref": "#/$defs/S"}}], "$defs": {"S": {"type": "string"}}}"##;
    let err = acp_codegen::generate_dialect(text, "t.json").unwrap_err();
    assert!(err.to_string().contains("x-methods[a]"), "{err}");
}
