//! The comparison behind `cargo xtask drift`: what the official ACP schema has that ours lacks.
//!
//! The official schema JSON (the npm package's `schema/v1/schema.json` and
//! `schema.unstable.json`) names its definitions as the official Rust crate does, and so do
//! ours, so the comparison goes definition by definition: every method (`x-method` on the
//! official definitions), definition, property (a *capability* when the definition is a
//! `...Capabilities` object), enum value and union tag value the official document has must
//! exist in ours (`v1.json`, plus the unstable overlay for the unstable document). The
//! official Rust crate's `unstable_*` features are compared with acp-types' features the same
//! way. Every difference is a [`Finding`] with a stable key; a repository allow-list
//! ([`AllowList`]) explains the ones we keep on purpose, and [`judge`] splits findings into
//! explained and unexplained and names allow-list entries that explain nothing.
//!
//! Everything here works on text; the caller (xtask) finds and reads the files.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// One difference between the official schema (or crate) and ours.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// Stable identifier, the allow-list's key: `method session/x`, `type Def`,
    /// `field Def.prop`, `capability Def.prop`, `value Def.value`, `stabilized field Def.prop`,
    /// `feature unstable_x` (upstream has it, we do not) or `retired feature unstable_x`.
    pub key: String,
    /// What a maintainer needs to know (where, and a near spelling if ours has one).
    pub detail: String,
}

impl Finding {
    fn new(key: String, detail: impl Into<String>) -> Self {
        Finding {
            key,
            detail: detail.into(),
        }
    }
}

/// Our schema as the check sees it: definitions and methods, overlay folded in or not.
struct Ours {
    defs: Map<String, Value>,
    methods: BTreeMap<String, String>,
}

fn parse(text: &str, what: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not JSON: {e}"))
}

fn ours(v1: &Value, overlay: Option<&Value>) -> Ours {
    let mut defs = v1["$defs"].as_object().cloned().unwrap_or_default();
    let mut methods = BTreeMap::new();
    let mut add_methods = |doc: &Value| {
        for m in doc["x-methods"].as_array().into_iter().flatten() {
            if let Some(name) = m["method"].as_str() {
                let side = m["side"].as_str().unwrap_or_default().to_string();
                methods.insert(name.to_string(), side);
            }
        }
    };
    add_methods(v1);
    if let Some(overlay) = overlay {
        add_methods(overlay);
        for (name, def) in overlay["$defs"].as_object().into_iter().flatten() {
            defs.insert(name.clone(), def.clone());
        }
        for (name, ext) in overlay["x-extend"].as_object().into_iter().flatten() {
            let Some(Value::Object(target)) = defs.get_mut(name) else {
                continue;
            };
            for (key, list) in [("properties", false), ("oneOf", true)] {
                match (&ext[key], list) {
                    (Value::Object(props), false) => {
                        let entry = target
                            .entry("properties")
                            .or_insert(Value::Object(Map::new()));
                        if let Value::Object(existing) = entry {
                            existing.extend(props.clone());
                        }
                    }
                    (Value::Array(items), true) => {
                        let entry = target.entry("oneOf").or_insert(Value::Array(Vec::new()));
                        if let Value::Array(existing) = entry {
                            existing.extend(items.iter().cloned());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ours { defs, methods }
}

/// The property names of a definition (its own `properties` and those of `allOf` members).
fn properties(def: &Value) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = def["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for member in def["allOf"].as_array().into_iter().flatten() {
        if let Some(p) = member["properties"].as_object() {
            out.extend(p.keys().cloned());
        }
    }
    out
}

/// The constant values a definition can take or tag with: `enum`, `oneOf`/`anyOf` members'
/// `const`, the `const` of a member's properties (union tags), our `x-known-values`, and
/// those of a union an object embeds through `allOf` (`CONVENTIONS.md`, shape 8).
fn values(def: &Value, defs: &Map<String, Value>) -> BTreeSet<String> {
    let render = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out = BTreeSet::new();
    for v in def["enum"].as_array().into_iter().flatten() {
        out.insert(render(v));
    }
    for v in def["x-known-values"].as_array().into_iter().flatten() {
        out.insert(render(&v["value"]));
    }
    for member in def["allOf"].as_array().into_iter().flatten() {
        let target = member["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"));
        if let Some(embedded) = target.and_then(|name| defs.get(name))
            && embedded.get("allOf").is_none()
        {
            out.extend(values(embedded, defs));
        }
    }
    for key in ["oneOf", "anyOf"] {
        for member in def[key].as_array().into_iter().flatten() {
            if let Some(c) = member.get("const") {
                out.insert(render(c));
            }
            for prop in member["properties"].as_object().into_iter().flatten() {
                if let Some(c) = prop.1.get("const") {
                    out.insert(render(c));
                }
            }
        }
    }
    out
}

/// Lower case without `_` and `-`: `sessionId`, `session_id` and `SessionID` meet here.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

fn near<'a>(name: &str, candidates: &'a BTreeSet<String>) -> Option<&'a String> {
    candidates.iter().find(|c| fold(c) == fold(name))
}

/// Everything `official` has that `ours` lacks.
fn compare(official: &Value, ours: &Ours) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(defs) = official["$defs"].as_object() else {
        return out;
    };
    let mut methods = BTreeMap::new();
    for def in defs.values() {
        if let (Some(m), Some(side)) = (def["x-method"].as_str(), def["x-side"].as_str()) {
            methods.insert(m.to_string(), side.to_string());
        }
    }
    for (method, side) in &methods {
        match ours.methods.get(method) {
            None => out.push(Finding::new(
                format!("method {method}"),
                format!("served by the {side} upstream; not in our x-methods"),
            )),
            Some(here) if here != side && here != "protocol" => out.push(Finding::new(
                format!("method-side {method}"),
                format!("served by the {side} upstream, by the {here} here"),
            )),
            Some(_) => {}
        }
    }
    let our_names: BTreeSet<String> = ours.defs.keys().cloned().collect();
    for (name, def) in defs {
        let Some(mine) = ours.defs.get(name) else {
            let detail = match near(name, &our_names) {
                Some(n) => format!("spelled `{n}` here"),
                None => "no definition of that name in our schema".to_string(),
            };
            out.push(Finding::new(format!("type {name}"), detail));
            continue;
        };
        let have = properties(mine);
        let kind = if name.ends_with("Capabilities") {
            "capability"
        } else {
            "field"
        };
        for prop in properties(def) {
            if !have.contains(&prop) {
                let detail = match near(&prop, &have) {
                    Some(n) => format!("spelled `{n}` here"),
                    None => format!("`{prop}` of `{name}` is missing here"),
                };
                out.push(Finding::new(format!("{kind} {name}.{prop}"), detail));
            }
        }
        let have = values(mine, &ours.defs);
        for value in values(def, defs) {
            if !have.contains(&value) {
                let detail = match near(&value, &have) {
                    Some(n) => format!("spelled `{n}` here"),
                    None => format!("value `{value}` of `{name}` is missing here"),
                };
                out.push(Finding::new(format!("value {name}.{value}"), detail));
            }
        }
    }
    out
}

/// Compares the official stable and unstable documents with our `v1.json` and overlay.
///
/// The stable document is compared with `v1.json` alone: what upstream made stable and we
/// still have only behind a feature is reported as `stabilized ...`. The unstable document is
/// compared with `v1.json` plus the overlay; a key the stable comparison already reported is
/// not repeated.
pub fn compare_schemas(
    official_stable: &str,
    official_unstable: &str,
    v1: &str,
    overlay: &str,
) -> Result<Vec<Finding>, String> {
    let stable = parse(official_stable, "the official schema.json")?;
    let unstable = parse(official_unstable, "the official schema.unstable.json")?;
    let v1 = parse(v1, "v1.json")?;
    let overlay = parse(overlay, "v1-unstable.json")?;
    let full = ours(&v1, Some(&overlay));
    let mut out: Vec<Finding> = Vec::new();
    let full_keys: BTreeSet<String> = compare(&stable, &full).into_iter().map(|f| f.key).collect();
    for f in compare(&stable, &ours(&v1, None)) {
        if full_keys.contains(&f.key) {
            out.push(f);
        } else {
            out.push(Finding::new(
                format!("stabilized {}", f.key),
                "stable upstream, only behind an unstable feature here",
            ));
        }
    }
    let seen: BTreeSet<String> = out.iter().map(|f| f.key.clone()).collect();
    out.extend(
        compare(&unstable, &full)
            .into_iter()
            .filter(|f| !seen.contains(&f.key)),
    );
    out.sort();
    out.dedup();
    Ok(out)
}

/// Compares the official v2 document (`schema/v2/schema.json`) with our `v2.json` the same
/// way, definition by definition. Every key starts with `v2 ` (`v2 type AgentRequest`), so the
/// allow-list tells the dialects apart.
pub fn compare_v2(official: &str, v2: &str) -> Result<Vec<Finding>, String> {
    let official = parse(official, "the official v2 schema.json")?;
    let v2 = parse(v2, "v2.json")?;
    let mut out: Vec<Finding> = compare(&official, &ours(&v2, None))
        .into_iter()
        .map(|f| Finding::new(format!("v2 {}", f.key), f.detail))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// The `unstable_*` feature names declared in a `Cargo.toml`'s `[features]` table.
pub fn cargo_toml_features(toml: &str) -> Vec<String> {
    let mut in_features = false;
    let mut out = Vec::new();
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_features = line == "[features]";
            continue;
        }
        if in_features && let Some((name, _)) = line.split_once('=') {
            let name = name.trim();
            if name.starts_with("unstable_") {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The `unstable_*` feature names listed by `cargo info <crate>` (its `features:` block).
pub fn cargo_info_features(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("features:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| {
            let name = l.trim().trim_start_matches('+').split_whitespace().next()?;
            name.starts_with("unstable_").then(|| name.to_string())
        })
        .collect()
}

/// Features the official crate has and we lack (`feature ...`) or we have and it no longer
/// lists (`retired feature ...`: stabilized, renamed or dropped upstream, or our own).
pub fn compare_features(official: &[String], ours: &[String]) -> Vec<Finding> {
    let official: BTreeSet<&String> = official.iter().collect();
    let ours: BTreeSet<&String> = ours.iter().collect();
    let mut out: Vec<Finding> = official
        .difference(&ours)
        .map(|f| {
            Finding::new(
                format!("feature {f}"),
                "an official feature acp-types lacks",
            )
        })
        .collect();
    out.extend(ours.difference(&official).map(|f| {
        Finding::new(
            format!("retired feature {f}"),
            "acp-types has it; the official crate does not list it",
        )
    }));
    out
}

/// The repository's explained differences: one `key -- reason` a line, `#` comments.
#[derive(Debug, Default)]
pub struct AllowList {
    entries: BTreeMap<String, String>,
}

impl AllowList {
    /// Parses the list; a line without a reason, or a key given twice, is an error.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut entries = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, reason)) = line.split_once(" -- ") else {
                return Err(format!("line {}: `key -- reason` expected", n + 1));
            };
            let (key, reason) = (key.trim(), reason.trim());
            if reason.is_empty() {
                return Err(format!("line {}: `{key}` has no reason", n + 1));
            }
            if entries
                .insert(key.to_string(), reason.to_string())
                .is_some()
            {
                return Err(format!("line {}: `{key}` is listed twice", n + 1));
            }
        }
        Ok(AllowList { entries })
    }
}

/// The verdict of one run.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Differences nobody explained: the check fails on these.
    pub unexplained: Vec<Finding>,
    /// Differences the allow-list explains, with its reason.
    pub allowed: Vec<(Finding, String)>,
    /// Allow-list keys that matched nothing (fixed since, or mistyped): the check fails on
    /// these too, so the list stays short and true.
    pub stale: Vec<String>,
}

impl Verdict {
    /// True when nothing is unexplained and no allow-list entry is stale.
    pub fn clean(&self) -> bool {
        self.unexplained.is_empty() && self.stale.is_empty()
    }
}

/// Splits the findings by the allow-list.
pub fn judge(findings: Vec<Finding>, allow: &AllowList) -> Verdict {
    let mut verdict = Verdict::default();
    let mut used = BTreeSet::new();
    for f in findings {
        match allow.entries.get(&f.key) {
            Some(reason) => {
                used.insert(f.key.clone());
                verdict.allowed.push((f, reason.clone()));
            }
            None => verdict.unexplained.push(f),
        }
    }
    verdict.stale = allow
        .entries
        .keys()
        .filter(|k| !used.contains(*k))
        .cloned()
        .collect();
    verdict
}

#[cfg(test)]
#[path = "drift_tests.rs"]
mod tests;
