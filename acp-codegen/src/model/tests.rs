//! Tests of the schema reader, one module per annotation.

#[cfg(test)]
mod null_clears_tests {
    use crate::model::*;

    fn doc(data: &str) -> String {
        format!(
            r#"{{"x-dialect": "v1", "x-methods": [], "$defs": {{"E": {{"type": "object", "properties": {{"data": {data}}}}}}}}}"#
        )
    }

    #[test]
    fn x_null_clears_takes_nullable_and_any_value_properties_only() {
        // `{}` holds any value, `null` included, so absent and `null` can differ there too.
        for ok in [
            r#"{"x-null-clears": true}"#,
            r#"{"type": ["string", "null"], "x-null-clears": true}"#,
        ] {
            let schema = parse(&doc(ok)).expect(ok);
            let DefKind::Object(o) = &schema.defs[0].kind else {
                panic!("an object")
            };
            assert!(o.props[0].null_clears, "{ok}");
        }
        let refused = parse(&doc(r#"{"type": "string", "x-null-clears": true}"#)).unwrap_err();
        assert!(refused.to_string().contains("nullable"), "{refused}");
    }
}

#[cfg(test)]
mod tagged_variant_name_tests {
    use crate::model::*;

    #[test]
    fn a_tag_that_would_be_the_unknown_variant_needs_x_variant() {
        let doc = |extra: &str| {
            format!(
                r##"{{"x-dialect": "v1", "x-methods": [], "$defs": {{
                    "Body": {{"type": "object", "properties": {{}}}},
                    "State": {{"x-tag": "state", "oneOf": [
                        {{"$ref": "#/$defs/Body", "properties": {{"state": {{"const": "unknown"}}}}, "required": ["state"]{extra}}}
                    ]}}
                }}}}"##
            )
        };
        let clash = parse(&doc("")).unwrap_err();
        assert!(clash.to_string().contains("x-variant"), "{clash}");
        let named = parse(&doc(r#", "x-variant": "Undetermined""#)).expect("named");
        let DefKind::TaggedUnion(u) = &named.def("State").unwrap().kind else {
            panic!("a tagged union")
        };
        assert_eq!(u.variants[0].rust_name, "Undetermined");
    }
}

#[cfg(test)]
mod string_enum_tests {
    use crate::model::*;

    fn enum_doc(members: &str) -> String {
        format!(
            r#"{{"x-dialect": "v1", "x-methods": [], "$defs": {{"State": {{"type": "string", "oneOf": [{members}]}}}}}}"#
        )
    }

    #[test]
    fn x_variant_names_a_member_and_unknown_needs_one() {
        let named = parse(&enum_doc(
            r#"{"const": "ok"}, {"const": "unknown", "x-variant": "Undetermined"}"#,
        ))
        .expect("named");
        let DefKind::StringEnum(e) = &named.defs[0].kind else {
            panic!("a string enum")
        };
        assert_eq!(e.variants, ["Ok", "Undetermined"]);
        // `Unknown` keeps the values the schema does not know: a member may not take it.
        let clash = parse(&enum_doc(r#"{"const": "unknown"}"#)).unwrap_err();
        assert!(clash.to_string().contains("x-variant"), "{clash}");
    }
}

#[cfg(test)]
mod patch_tests {
    use crate::model::*;

    fn doc(data: &str, required: bool) -> String {
        let required = if required {
            r#", "required": ["data"]"#
        } else {
            ""
        };
        format!(
            r#"{{"x-dialect": "v2", "x-methods": [], "$defs": {{"E": {{"type": "object", "properties": {{"data": {data}}}{required}}}}}}}"#
        )
    }

    #[test]
    fn x_patch_takes_optional_nullable_properties_only() {
        for ok in [
            r#"{"x-patch": true}"#,
            r#"{"type": ["string", "null"], "x-patch": true}"#,
        ] {
            let schema = parse(&doc(ok, false)).expect(ok);
            let DefKind::Object(o) = &schema.defs[0].kind else {
                panic!("an object")
            };
            assert!(o.props[0].patch, "{ok}");
        }
        for (bad, required) in [
            (r#"{"type": "string", "x-patch": true}"#, false),
            (
                r#"{"type": ["string", "null"], "x-patch": true, "x-null-clears": true}"#,
                false,
            ),
            (r#"{"x-patch": true}"#, true),
        ] {
            let refused = parse(&doc(bad, required)).unwrap_err();
            assert!(refused.to_string().contains("x-patch"), "{bad}: {refused}");
        }
    }
}
