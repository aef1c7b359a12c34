//! Tests of the unstable overlay: gating, the variants an overlay adds to unions and
//! string enums, and the features it names being declared where they are used.

use super::*;

#[test]
fn items_fields_builders_and_conversions_of_the_overlay_are_gated() {
    let mut overlay = Overlay::default();
    overlay.defs.insert("ModelId".into(), "unstable_x".into());
    overlay
        .fields
        .insert(("Resp".into(), "models".into()), "unstable_x".into());
    let text = "pub struct ModelId(pub String);\n\
        impl ::std::convert::From<ModelId> for ::std::string::String { fn from(v: ModelId) -> Self { v.0 } }\n\
        pub struct Resp { pub a: u8, pub models: Option<ModelId> }\n\
        impl Resp { pub fn new() -> Self { Self { a: 0, models: None } } pub fn models(self) -> Self { self } pub fn a(self) -> Self { self } }\n";
    let out = gate(text, &overlay).unwrap();
    let gates = out.matches("#[cfg(feature = \"unstable_x\")]").count();
    // The struct, the conversion, the field, the literal field and the builder.
    assert_eq!(gates, 5, "{out}");
    assert!(
        !out.contains("#[cfg(feature = \"unstable_x\")]\n    pub fn a"),
        "{out}"
    );
}

mod variants {
    use super::*;

    const BASE: &str = r##"{"$defs": {
        "Body": {"type": "object", "properties": {}},
        "Update": {"x-tag": "kind", "oneOf": [
            {"$ref": "#/$defs/Body", "properties": {"kind": {"const": "old"}}, "required": ["kind"]}
        ]}
    }}"##;

    #[test]
    fn new_union_variants_are_appended_and_their_variant_arms_and_constructors_gated() {
        let overlay = r##"{
            "$defs": {"NewBody": {"type": "object", "properties": {}, "x-unstable": "unstable_x"}},
            "x-extend": {"Update": {"oneOf": [
                {"$ref": "#/$defs/NewBody", "properties": {"kind": {"const": "new_kind"}},
                 "required": ["kind"], "x-unstable": "unstable_x"}
            ]}}
        }"##;
        let (merged, found) = merge(BASE, overlay).unwrap();
        let merged: Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(
            merged["$defs"]["Update"]["oneOf"].as_array().unwrap().len(),
            2
        );
        assert_eq!(
            found.variants.get(&("Update".into(), "NewKind".into())),
            Some(&"unstable_x".to_string())
        );
        let text = "pub enum Update { Old(Body), NewKind(NewBody), Unknown(u8) }\n\
            impl Update { pub fn old() -> Self { Self::Old(Body) } pub fn new_kind() -> Self { Self::NewKind(NewBody) } }\n\
            impl From<SessionId> for Update { fn from(id: SessionId) -> Self { Self::NewKind(NewBody::new(id)) } }\n\
            impl From<Body> for Update { fn from(body: Body) -> Self { Self::Old(body) } }\n\
            impl Tagged for Update { fn direct(tag: &str) -> Option<Self> { match tag { \"old\" => Some(Self::Old(Body)), \"new_kind\" => Some(Self::NewKind(NewBody)), _ => None } } }\n";
        let out = gate(text, &found).unwrap();
        // The variant, its constructor, the conversion from a stable type into it and its
        // match arm; `NewBody` itself is the $def's.
        let gates = out.matches("#[cfg(feature = \"unstable_x\")]").count();
        assert_eq!(gates, 4, "{out}");
        assert!(
            out.contains("#[cfg(feature = \"unstable_x\")]\nimpl From<SessionId> for Update"),
            "{out}"
        );
        assert!(out.contains("fn direct"), "the trait function stays: {out}");
        assert!(
            !out.contains("#[cfg(feature = \"unstable_x\")]\n    pub fn old"),
            "{out}"
        );
    }

    #[test]
    fn a_new_tagged_variant_goes_before_the_untagged_fallback() {
        let base = r##"{"$defs": {
            "Stdio": {"type": "object", "properties": {}},
            "Http": {"type": "object", "properties": {}},
            "Server": {"x-tag": "type", "anyOf": [
                {"$ref": "#/$defs/Http", "properties": {"type": {"const": "http"}}, "required": ["type"]},
                {"$ref": "#/$defs/Stdio", "x-untagged": true}
            ]}
        }}"##;
        let overlay = r##"{
            "$defs": {"Acp": {"type": "object", "properties": {}, "x-unstable": "unstable_x"}},
            "x-extend": {"Server": {"oneOf": [
                {"$ref": "#/$defs/Acp", "properties": {"type": {"const": "acp"}},
                 "required": ["type"], "x-unstable": "unstable_x"}
            ]}}
        }"##;
        let (merged, found) = merge(base, overlay).unwrap();
        let merged: Value = serde_json::from_str(&merged).unwrap();
        let order: Vec<&str> = merged["$defs"]["Server"]["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["$ref"].as_str().unwrap())
            .collect();
        // serde wants untagged variants last; the fallback is tried only after every tag.
        assert_eq!(order, ["#/$defs/Http", "#/$defs/Acp", "#/$defs/Stdio"]);
        assert!(
            found
                .variants
                .contains_key(&("Server".into(), "Acp".into()))
        );
    }

    #[test]
    fn a_new_string_enum_value_is_appended_and_its_variant_and_arms_gated() {
        let base = r##"{"$defs": {"Category": {"type": "string", "oneOf": [
            {"const": "mode", "description": "m"}
        ]}}}"##;
        let overlay = r##"{"x-extend": {"Category": {"oneOf": [
            {"const": "speed", "description": "s", "x-unstable": "unstable_x"}
        ]}}}"##;
        let (merged, found) = merge(base, overlay).unwrap();
        let merged: Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(merged["$defs"]["Category"]["oneOf"][1]["const"], "speed");
        let types = "pub enum Category { Mode, Speed, Unknown(String) }\n\
            impl Category { pub fn as_str(&self) -> &str { match self { Self::Mode => \"mode\", Self::Speed => \"speed\", Self::Unknown(o) => o } } }\n";
        let out = gate(types, &found).unwrap();
        assert_eq!(
            out.matches("#[cfg(feature = \"unstable_x\")]").count(),
            2,
            "{out}"
        );
        let twice = r##"{"x-extend": {"Category": {"oneOf": [
            {"const": "mode", "x-unstable": "unstable_x"}
        ]}}}"##;
        assert!(merge(base, twice).is_err());
    }

    #[test]
    fn a_variant_that_is_already_stable_or_has_no_feature_is_refused() {
        let twice = r##"{"x-extend": {"Update": {"oneOf": [
            {"$ref": "#/$defs/Body", "properties": {"kind": {"const": "old"}}, "x-unstable": "unstable_x"}
        ]}}}"##;
        assert!(merge(BASE, twice).is_err());
        let unnamed = r##"{"x-extend": {"Update": {"oneOf": [
            {"$ref": "#/$defs/Body", "properties": {"kind": {"const": "other"}}}
        ]}}}"##;
        assert!(merge(BASE, unnamed).is_err());
    }

    #[test]
    fn a_field_another_feature_adds_to_an_overlay_definition_is_gated_by_it() {
        let mut overlay = Overlay::default();
        overlay.defs.insert("Fork".into(), "unstable_a".into());
        overlay
            .fields
            .insert(("Fork".into(), "prompt".into()), "unstable_b".into());
        let out = gate(
            "pub struct Fork { pub id: u8, pub prompt: Option<u8> }\n",
            &overlay,
        )
        .unwrap();
        assert!(
            out.contains("#[cfg(feature = \"unstable_a\")]\npub struct Fork"),
            "{out}"
        );
        assert!(
            out.contains("#[cfg(feature = \"unstable_b\")]\n    pub prompt"),
            "{out}"
        );
    }
}

mod declared {
    /// Every feature the overlay names is declared by acp-types, acp-agent and acp-client and
    /// is part of the `unstable` umbrella.
    #[test]
    fn every_overlay_feature_is_declared_where_it_is_used() {
        let (_, overlay) =
            super::merge(acp_schema::V1, acp_schema::V1_UNSTABLE).expect("the overlay merges");
        let features = super::features(&overlay);
        assert!(!features.is_empty());
        for (krate, manifest) in [
            ("acp-types", include_str!("../../../acp-types/Cargo.toml")),
            ("acp-agent", include_str!("../../../acp-agent/Cargo.toml")),
            ("acp-client", include_str!("../../../acp-client/Cargo.toml")),
        ] {
            let umbrella = manifest
                .lines()
                .find(|l| l.starts_with("unstable = "))
                .map(|first| {
                    // The umbrella may span lines up to its closing bracket.
                    let start = manifest.find(first).unwrap_or(0);
                    let rest = &manifest[start..];
                    rest[..rest.find(']').unwrap_or(rest.len())].to_string()
                })
                .unwrap_or_else(|| panic!("{krate} has no `unstable` umbrella"));
            for f in &features {
                assert!(
                    manifest.lines().any(|l| l.starts_with(&format!("{f} = "))),
                    "{krate} does not declare `{f}`"
                );
                assert!(
                    umbrella.contains(&format!("\"{f}\"")),
                    "{krate}: `unstable` lacks `{f}`"
                );
            }
        }
    }
}
