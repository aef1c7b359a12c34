//! Reads one schema document into the shapes described in acp-schema's `CONVENTIONS.md`.
//!
//! Everything the generator later relies on is checked here, so a schema that does not follow
//! the conventions fails with an error naming the definition instead of producing odd Rust.

mod types;

pub use types::*;

use serde_json::{Map, Value};

use crate::Error;

fn schema_err(def: &str, message: impl Into<String>) -> Error {
    Error::Schema {
        def: def.to_string(),
        message: message.into(),
    }
}

fn description(v: &Value) -> Option<String> {
    v.get("description")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Turns a wire value such as `agent_message_chunk` or `session/prompt` into `AgentMessageChunk`.
pub fn pascal_case(value: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in value.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

/// Parses and checks a schema document.
pub fn parse(text: &str) -> Result<Schema, Error> {
    let document: Value =
        serde_json::from_str(text).map_err(|e| schema_err("<document>", e.to_string()))?;
    let dialect = document
        .get("x-dialect")
        .and_then(Value::as_str)
        .ok_or_else(|| schema_err("<document>", "missing `x-dialect`"))?
        .to_string();
    let title = document
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let defs_obj = document
        .get("$defs")
        .and_then(Value::as_object)
        .ok_or_else(|| schema_err("<document>", "missing `$defs`"))?;
    let mut defs = Vec::with_capacity(defs_obj.len());
    for (name, v) in defs_obj {
        defs.push(parse_def(name, v)?);
    }
    let methods = document
        .get("x-methods")
        .and_then(Value::as_array)
        .ok_or_else(|| schema_err("<document>", "missing `x-methods`"))?
        .iter()
        .map(parse_method)
        .collect::<Result<Vec<_>, _>>()?;
    let schema = Schema {
        dialect,
        title,
        methods,
        defs,
        document,
    };
    check_references(&schema)?;
    Ok(schema)
}

pub(crate) fn parse_method(v: &Value) -> Result<Method, Error> {
    let wire = v
        .get("method")
        .and_then(Value::as_str)
        .ok_or_else(|| schema_err("x-methods", "an entry has no `method`"))?
        .to_string();
    let err = |m: &str| schema_err(&format!("x-methods[{wire}]"), m);
    let side = match v.get("side").and_then(Value::as_str) {
        Some("agent") => Side::Agent,
        Some("client") => Side::Client,
        Some("protocol") => Side::Protocol,
        _ => return Err(err("`side` must be agent, client or protocol")),
    };
    let kind = match v.get("kind").and_then(Value::as_str) {
        Some("request") => MethodKind::Request,
        Some("notification") => MethodKind::Notification,
        _ => return Err(err("`kind` must be request or notification")),
    };
    let type_ref = |key: &str| -> Result<Option<String>, Error> {
        match v.get(key) {
            None => Ok(None),
            Some(r) => r
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(ref_name)
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| err(&format!("`{key}` must be {{\"$ref\": \"#/$defs/Name\"}}"))),
        }
    };
    let params = type_ref("params")?.ok_or_else(|| err("missing `params`"))?;
    let result = type_ref("result")?;
    match (kind, &result) {
        (MethodKind::Request, None) => return Err(err("a request needs a `result`")),
        (MethodKind::Notification, Some(_)) => return Err(err("a notification has no `result`")),
        _ => {}
    }
    let default = match v.get("x-default").and_then(Value::as_str) {
        None if kind == MethodKind::Notification => NativeDefault::Accept,
        None => NativeDefault::NotFound,
        Some("accept") => NativeDefault::Accept,
        Some("dialect") => NativeDefault::Dialect,
        Some(other) => {
            return Err(err(&format!(
                "`x-default` must be \"accept\" or \"dialect\", not {other:?}"
            )));
        }
    };
    Ok(Method {
        wire,
        side,
        kind,
        params,
        result,
        description: description(v).unwrap_or_default(),
        default,
        handle: v.get("x-handle").and_then(Value::as_bool).unwrap_or(true),
    })
}

fn parse_def(name: &str, v: &Value) -> Result<Def, Error> {
    let err = |m: String| schema_err(name, m);
    let kind = if let Some(tag) = v.get("x-tag").and_then(Value::as_str) {
        DefKind::TaggedUnion(parse_tagged(name, tag, v)?)
    } else if flag(v, "x-untagged") {
        let members = v
            .get("anyOf")
            .and_then(Value::as_array)
            .ok_or_else(|| err("`x-untagged` needs `anyOf`".into()))?
            .iter()
            .map(|m| {
                let title = m
                    .get("title")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err("every untagged member needs a `title`".into()))?;
                Ok(UntaggedMember {
                    title: pascal_case(title),
                    schema: m.clone(),
                    description: description(m),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        DefKind::UntaggedUnion(members)
    } else if v.get("x-known-values").is_some() {
        let format = v
            .get("format")
            .and_then(Value::as_str)
            .ok_or_else(|| err("an integer code needs a `format`".into()))?
            .to_string();
        let known = v["x-known-values"]
            .as_array()
            .ok_or_else(|| err("`x-known-values` must be an array".into()))?
            .iter()
            .map(|k| {
                let n = k.get("name").and_then(Value::as_str);
                let val = k.get("value").and_then(Value::as_i64);
                match (n, val) {
                    (Some(n), Some(val)) => Ok((n.to_string(), val, description(k))),
                    _ => Err(err(
                        "each known value needs `name` and integer `value`".into()
                    )),
                }
            })
            .collect::<Result<Vec<_>, Error>>()?;
        DefKind::Code(CodeDef { format, known })
    } else {
        match v.get("type").and_then(Value::as_str) {
            Some("object") => DefKind::Object(parse_object(name, v)?),
            Some("string") if v.get("oneOf").is_some() => {
                let values = v["oneOf"]
                    .as_array()
                    .ok_or_else(|| err("`oneOf` must be an array".into()))?
                    .iter()
                    .map(|m| {
                        m.get("const")
                            .and_then(Value::as_str)
                            .map(|c| (c.to_string(), description(m)))
                            .ok_or_else(|| err("each enum member needs a string `const`".into()))
                    })
                    .collect::<Result<Vec<_>, Error>>()?;
                let variants = v["oneOf"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .zip(&values)
                    .map(|(m, (c, _))| match m.get("x-variant").and_then(Value::as_str) {
                        Some(name) => Ok(name.to_string()),
                        None if pascal_case(c) == "Unknown" => Err(err(format!(
                            "the value `{c}` would be the variant `Unknown`, which keeps unknown values: name it with `x-variant`"
                        ))),
                        None => Ok(pascal_case(c)),
                    })
                    .collect::<Result<Vec<_>, Error>>()?;
                let default = v.get("default").and_then(Value::as_str).map(str::to_string);
                if let Some(d) = &default
                    && !values.iter().any(|(c, _)| c == d)
                {
                    return Err(err(format!("default `{d}` is not one of the values")));
                }
                DefKind::StringEnum(StringEnumDef {
                    values,
                    variants,
                    default,
                })
            }
            Some("string") => DefKind::StringNewtype,
            Some("integer") => DefKind::IntegerNewtype,
            Some("null") => DefKind::Null,
            _ => {
                return Err(err(
                    "not one of the shapes of CONVENTIONS.md (object, string, integer, enum, union, code, null)"
                        .into(),
                ));
            }
        }
    };
    for forbidden in ["not", "if", "then", "else"] {
        if v.get(forbidden).is_some() {
            return Err(err(format!("`{forbidden}` is not supported")));
        }
    }
    Ok(Def {
        name: name.to_string(),
        description: description(v),
        null_as_default: flag(v, "x-null-as-default"),
        kind,
    })
}

fn parse_tagged(name: &str, tag: &str, v: &Value) -> Result<TaggedUnionDef, Error> {
    let err = |m: String| schema_err(name, m);
    let members = v
        .get("oneOf")
        .or_else(|| v.get("anyOf"))
        .and_then(Value::as_array)
        .ok_or_else(|| err("a tagged union needs `oneOf` or `anyOf`".into()))?;
    let mut variants = Vec::new();
    for m in members {
        let body = match m.get("$ref").and_then(Value::as_str) {
            Some(r) => Some(
                ref_name(r)
                    .ok_or_else(|| err(format!("`{r}` is not a local reference")))?
                    .to_string(),
            ),
            None => None,
        };
        let tag_value = m
            .get("properties")
            .and_then(|p| p.get(tag))
            .and_then(|t| t.get("const"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let untagged = flag(m, "x-untagged");
        if untagged == tag_value.is_some() {
            return Err(err(
                "each variant needs either a `const` tag or `x-untagged: true`".into(),
            ));
        }
        if untagged && body.is_none() {
            return Err(err("the untagged variant needs a `$ref` body".into()));
        }
        let boxed = flag(m, "x-boxed");
        if boxed && body.is_none() {
            return Err(err("`x-boxed` needs a variant with a `$ref` body".into()));
        }
        let rust_name = match m.get("x-variant").and_then(Value::as_str) {
            Some(n) => n.to_string(),
            None => match (&tag_value, &body) {
                (Some(t), _) => pascal_case(t),
                (None, Some(b)) => b.clone(),
                (None, None) => unreachable!("checked above"),
            },
        };
        if rust_name == "Unknown" {
            return Err(err(format!(
                "a variant would be named `Unknown`, which keeps unknown tags: name it with `x-variant`{}",
                tag_value
                    .as_deref()
                    .map(|t| format!(" (tag `{t}`)"))
                    .unwrap_or_default()
            )));
        }
        variants.push(TaggedVariant {
            tag_value,
            body,
            rust_name,
            description: description(m),
            boxed,
        });
    }
    if variants.iter().filter(|v| v.tag_value.is_none()).count() > 1 {
        return Err(err("at most one variant may be `x-untagged`".into()));
    }
    Ok(TaggedUnionDef {
        tag: tag.to_string(),
        variants,
    })
}

fn parse_object(name: &str, v: &Value) -> Result<ObjectDef, Error> {
    let err = |m: String| schema_err(name, m);
    let empty = Map::new();
    let props_obj = match v.get("properties") {
        Some(p) => p
            .as_object()
            .ok_or_else(|| err("`properties` must be an object".into()))?,
        None => &empty,
    };
    let required: Vec<&str> = v
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for r in &required {
        if !props_obj.contains_key(*r) {
            return Err(err(format!("`{r}` is required but not a property")));
        }
    }
    let mut props = Vec::new();
    for (json_name, schema) in props_obj {
        let is_required = required.contains(&json_name.as_str());
        let nullable = match schema.get("type") {
            Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
            _ => schema
                .get("anyOf")
                .and_then(Value::as_array)
                .is_some_and(|m| {
                    m.iter()
                        .any(|x| x.get("type") == Some(&Value::from("null")))
                }),
        };
        if is_required && nullable {
            return Err(err(format!(
                "`{json_name}` is both required and nullable; the generator does not support that"
            )));
        }
        if schema.get("properties").is_some() || schema.get("oneOf").is_some() {
            return Err(err(format!(
                "`{json_name}` declares an anonymous type: give it a name in `$defs`"
            )));
        }
        if json_name == "_meta" && !is_any_object(schema) {
            return Err(err(
                "`_meta` must be `{\"type\": [\"object\", \"null\"], \"additionalProperties\": true}`"
                    .into(),
            ));
        }
        let lenient = if is_required {
            flag(schema, "x-lenient")
        } else {
            !flag(schema, "x-strict")
        };
        props.push(Prop {
            json_name: json_name.clone(),
            schema: schema.clone(),
            required: is_required,
            nullable,
            lenient,
            skip_invalid_items: flag(schema, "x-skip-invalid-items"),
            null_as_default: flag(schema, "x-null-as-default"),
            has_default: schema.get("default").is_some(),
            null_clears: flag(schema, "x-null-clears"),
            patch: flag(schema, "x-patch"),
        });
        if flag(schema, "x-patch")
            && (is_required || !(nullable || is_any_value(schema)) || flag(schema, "x-null-clears"))
        {
            return Err(err(format!(
                "`{json_name}`: `x-patch` needs an optional, nullable property without `x-null-clears`"
            )));
        }
        if flag(schema, "x-null-clears") && (is_required || !(nullable || is_any_value(schema))) {
            return Err(err(format!(
                "`{json_name}`: `x-null-clears` needs an optional, nullable property"
            )));
        }
    }
    let embedded = match v.get("allOf") {
        None => None,
        Some(all) => {
            let all = all
                .as_array()
                .filter(|a| a.len() == 1)
                .ok_or_else(|| err("`allOf` must hold exactly one embedded union".into()))?;
            let r = all[0]
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(ref_name)
                .ok_or_else(|| err("the embedded union must be a `$ref`".into()))?;
            let field = all[0]
                .get("x-field")
                .and_then(Value::as_str)
                .ok_or_else(|| err("the embedded union needs `x-field`".into()))?;
            Some((r.to_string(), field.to_string()))
        }
    };
    Ok(ObjectDef { props, embedded })
}

/// `{}` (with annotations only): any JSON value, `null` included.
fn is_any_value(schema: &Value) -> bool {
    ["type", "$ref", "anyOf", "oneOf", "allOf", "const", "enum"]
        .iter()
        .all(|k| schema.get(*k).is_none())
}

/// `{"type": "object" or ["object", "null"], "additionalProperties": true}`: any JSON object.
fn is_any_object(schema: &Value) -> bool {
    let object = match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "object")
                && types.iter().all(|t| t == "object" || t == "null")
        }
        _ => false,
    };
    object && schema.get("additionalProperties") == Some(&Value::Bool(true))
}

fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                if k == "$ref" {
                    if let Some(s) = val.as_str() {
                        out.push(s);
                    }
                } else {
                    collect_refs(val, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_refs(i, out)),
        _ => {}
    }
}

fn check_references(schema: &Schema) -> Result<(), Error> {
    let mut refs = Vec::new();
    collect_refs(&schema.document, &mut refs);
    for r in refs {
        let name = ref_name(r).ok_or_else(|| schema_err(r, "only `#/$defs/Name` references"))?;
        if schema.def(name).is_none() {
            return Err(schema_err(name, "referenced but not defined"));
        }
    }
    for def in &schema.defs {
        if let DefKind::Object(ObjectDef {
            embedded: Some((union, _)),
            ..
        }) = &def.kind
            && !matches!(
                schema.def(union).map(|d| &d.kind),
                Some(DefKind::TaggedUnion(_) | DefKind::UntaggedUnion(_))
            )
        {
            return Err(schema_err(
                &def.name,
                "the embedded `allOf` must be a union",
            ));
        }
    }
    for m in &schema.methods {
        for name in std::iter::once(&m.params).chain(m.result.iter()) {
            match schema.def(name).map(|d| &d.kind) {
                Some(DefKind::Object(_) | DefKind::Null) => {}
                _ => {
                    return Err(schema_err(
                        &format!("x-methods[{}]", m.wire),
                        format!("`{name}` must be an object or null definition"),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
