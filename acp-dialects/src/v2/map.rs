//! What both v2 translations share: the shapes v1 and v2 write differently, each mapping
//! next to its inverse. The two versions share most object shapes (content blocks, plan
//! entries, permission options, config options, locations), so a message is re-read from
//! its JSON in the other version's type ([`recast`]) after the fields that differ are
//! rewritten here.

use acp_rpc::Error;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// The `_meta` key a v1 diff's texts travel under inside a v2 diff, so that a v1 peer on
/// the other side of a second translation gets the diff back whole.
pub(crate) const V1_DIFF_META: &str = "acp-rs/v1Diff";

/// The id of the config option a v1 agent's modes are shown as to a v2 client.
pub(crate) const MODE_OPTION: &str = "mode";

/// The `_meta` key that marks the config option made of a v1 agent's modes, so that a v1
/// client on the other side of a second translation gets modes back, not a new option.
pub(crate) const V1_MODES_META: &str = "acp-rs/v1Modes";

/// The id of the config option a v1 agent's models (`models`, unstable `session/set_model`)
/// are shown as to a v2 client.
pub(crate) const MODEL_OPTION: &str = "model";

/// `value` as JSON (what every generated type serializes to without failing).
pub(crate) fn json_of<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// `value` read as the other version's `T`; `-32603` naming `what` when the rewritten
/// message does not fit it (a peer's value the other version cannot hold).
pub(crate) fn recast<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|e| {
        Error::internal_error(format!(
            "{what} cannot be expressed in the other protocol version: {e}"
        ))
        .with_data(json!({ "translation": "v1<->v2", "what": what }))
    })
}

/// `-32601` for a call the other version has no method for, `<method>: <why>`.
pub(crate) fn unmapped(method: &str, why: &str) -> Error {
    Error::new(
        acp_rpc::ErrorCode::METHOD_NOT_FOUND,
        format!("{method}: {why}"),
    )
    .with_data(json!({ "method": method, "translation": "v1<->v2" }))
}

fn object(value: &mut Value) -> Option<&mut Map<String, Value>> {
    value.as_object_mut()
}

// Tool call content: a v1 diff carries the file's texts, a v2 diff the changed paths and
// a git patch.

/// A v1 tool call content item as v2's: a `diff` becomes `changes[]` (`add` when there was
/// no old text, else `modify`) with a whole-file `git_patch`; the texts ride in `_meta`.
pub(crate) fn content_to_v2(mut item: Value) -> Value {
    if item.get("type").and_then(Value::as_str) != Some("diff") {
        return item;
    }
    let path = item
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let old = item
        .get("oldText")
        .and_then(Value::as_str)
        .map(str::to_string);
    let new = item
        .get("newText")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let operation = if old.is_some() { "modify" } else { "add" };
    let texts = json!({ "oldText": old, "newText": new });
    let mut meta = item
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    meta.insert(V1_DIFF_META.into(), texts);
    item = json!({
        "type": "diff",
        "changes": [{ "operation": operation, "path": path }],
        "patch": { "format": "git_patch", "text": git_patch(&path, old.as_deref(), &new) },
        "_meta": meta,
    });
    item
}

/// A v2 tool call content item as v1's: a diff that came from v1 (its texts in `_meta`)
/// becomes that v1 diff again; any other diff becomes a text block holding its patch (or
/// its list of changes), since a v1 diff needs the file's new text, which v2 does not send.
pub(crate) fn content_to_v1(mut item: Value) -> Value {
    if item.get("type").and_then(Value::as_str) != Some("diff") {
        return item;
    }
    let texts = item
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove(V1_DIFF_META));
    let changes = item
        .get("changes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(texts) = texts {
        let path = changes.first().and_then(|c| c.get("path")).cloned();
        let mut diff = json!({
            "type": "diff",
            "path": path.unwrap_or(Value::String(String::new())),
            "oldText": texts.get("oldText").cloned().unwrap_or(Value::Null),
            "newText": texts.get("newText").cloned().unwrap_or(Value::String(String::new())),
        });
        if let Some(meta) = item
            .get("_meta")
            .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))
        {
            diff["_meta"] = meta.clone();
        }
        return diff;
    }
    let text = match item
        .get("patch")
        .and_then(|p| p.get("text"))
        .and_then(Value::as_str)
    {
        Some(patch) => patch.to_string(),
        None => changes
            .iter()
            .map(|c| {
                let op = c
                    .get("operation")
                    .and_then(Value::as_str)
                    .unwrap_or("change");
                let path = c.get("path").and_then(Value::as_str).unwrap_or("");
                format!("{op} {path}")
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    json!({ "type": "content", "content": { "type": "text", "text": text } })
}

/// A whole-file replacement as a git patch (`/dev/null` as the old side of a new file).
pub(crate) fn git_patch(path: &str, old: Option<&str>, new: &str) -> String {
    let rel = path.trim_start_matches('/');
    let old_name = if old.is_some() {
        format!("a/{rel}")
    } else {
        "/dev/null".to_string()
    };
    let old_lines: Vec<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    let new_lines: Vec<&str> = new.lines().collect();
    let start = |n: usize| usize::from(n > 0);
    let mut out = format!(
        "diff --git a/{rel} b/{rel}\n--- {old_name}\n+++ b/{rel}\n@@ -{},{} +{},{} @@\n",
        start(old_lines.len()),
        old_lines.len(),
        start(new_lines.len()),
        new_lines.len()
    );
    for line in old_lines {
        out.push('-');
        out.push_str(line);
        out.push('\n');
    }
    for line in new_lines {
        out.push('+');
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Rewrites the `content` list of a tool call (v1 or v2 JSON) item by item.
pub(crate) fn map_content(call: &mut Value, f: fn(Value) -> Value) {
    if let Some(items) = call.get_mut("content").and_then(Value::as_array_mut) {
        for item in items.iter_mut() {
            *item = f(std::mem::take(item));
        }
    }
}

// Modes and config options: v2 has no modes; a v1 agent's modes are one `select` config
// option of category `mode`, and a v2 agent's mode option is a v1 client's modes.

/// A v1 `SessionModeState` as a v2 `select` config option of category `mode`, id
/// [`MODE_OPTION`].
pub(crate) fn mode_option(modes: &Value) -> Value {
    let options: Vec<Value> = modes
        .get("availableModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| {
            let mut o = json!({ "value": m.get("id"), "name": m.get("name") });
            if let Some(d) = m.get("description").filter(|d| !d.is_null()) {
                o["description"] = d.clone();
            }
            o
        })
        .collect();
    json!({
        "configId": MODE_OPTION,
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": modes.get("currentModeId"),
        "options": options,
        "_meta": { V1_MODES_META: true },
    })
}

/// A v1 config option as v2's: v1's `id` is v2's `configId`.
pub(crate) fn option_to_v2(mut option: Value) -> Value {
    if let Some(o) = option.as_object_mut()
        && let Some(id) = o.remove("id")
    {
        o.insert("configId".into(), id);
    }
    option
}

/// A v2 config option as v1's: v2's `configId` is v1's `id`.
pub(crate) fn option_to_v1(mut option: Value) -> Value {
    if let Some(o) = option.as_object_mut()
        && let Some(id) = o.remove("configId")
    {
        o.insert("id".into(), id);
    }
    option
}

/// The config options a v1 client sees: all but one made of a v1 agent's modes (which it
/// gets as modes).
pub(crate) fn v1_facing(options: &[Value]) -> Vec<Value> {
    let made_of_modes = |o: &Value| o["_meta"][V1_MODES_META] == json!(true);
    options
        .iter()
        .filter(|o| !made_of_modes(o))
        .cloned()
        .collect()
}

/// The config options a v2 client sees for a v1 session: the agent's own, plus its modes as
/// [`mode_option`] unless one of its own already has category `mode`.
pub(crate) fn options_with_modes(config: &[Value], modes: Option<&Value>) -> Vec<Value> {
    let mut out = config.to_vec();
    let has_mode = config
        .iter()
        .any(|o| o.get("category").and_then(Value::as_str) == Some("mode"));
    if let (Some(modes), false) = (modes, has_mode) {
        out.push(mode_option(modes));
    }
    out
}

/// `options` and, when the v1 agent lists `models` (a `SessionModelState`) and none of the
/// options has category `model`, the models as a `select` config option of category
/// `model`, id [`MODEL_OPTION`] (v2 has no models: its model choice is a config option).
pub(crate) fn with_models(mut options: Vec<Value>, models: Option<&Value>) -> Vec<Value> {
    let has_model = options
        .iter()
        .any(|o| o.get("category").and_then(Value::as_str) == Some("model"));
    let Some(models) = models.filter(|_| !has_model) else {
        return options;
    };
    let choices: Vec<Value> = models
        .get("availableModels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| {
            let mut o = json!({ "value": m.get("modelId"), "name": m.get("name") });
            if let Some(d) = m.get("description").filter(|d| !d.is_null()) {
                o["description"] = d.clone();
            }
            o
        })
        .collect();
    options.push(json!({
        "configId": MODEL_OPTION,
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": models.get("currentModelId"),
        "options": choices,
    }));
    options
}

/// A v2 agent's mode option (a `select` of category `mode` with a flat option list) as a
/// v1 `SessionModeState`, with the option's id.
pub(crate) fn modes_of(config: &[Value]) -> Option<(String, Value)> {
    let option = config.iter().find(|o| {
        o.get("category").and_then(Value::as_str) == Some("mode")
            && o.get("type").and_then(Value::as_str) == Some("select")
    })?;
    let id = option.get("configId")?.as_str()?.to_string();
    let modes: Vec<Value> = option
        .get("options")?
        .as_array()?
        .iter()
        .filter(|o| o.get("value").is_some())
        .map(|o| {
            let mut m = json!({ "id": o.get("value"), "name": o.get("name") });
            if let Some(d) = o.get("description").filter(|d| !d.is_null()) {
                m["description"] = d.clone();
            }
            m
        })
        .collect();
    let current = option.get("currentValue")?.clone();
    Some((
        id,
        json!({ "currentModeId": current, "availableModes": modes }),
    ))
}

// Commands and auth methods: v2 tags both with `type`.

/// v1 available commands as v2's (`type: command`).
pub(crate) fn commands_to_v2(commands: &mut Value) {
    for c in commands.as_array_mut().into_iter().flatten() {
        if let Some(o) = object(c) {
            o.entry("type").or_insert_with(|| json!("command"));
        }
    }
}

/// v2 available commands as v1's (the `type` tag removed; other kinds kept for the reader
/// to skip).
pub(crate) fn commands_to_v1(commands: &mut Value) {
    untag(commands, "command");
}

/// v1 auth methods as v2's: the untagged agent method gets `type: agent`, and every
/// method's `id` is v2's `methodId`.
pub(crate) fn auth_methods_to_v2(methods: &mut Value) {
    for m in methods.as_array_mut().into_iter().flatten() {
        if let Some(o) = object(m) {
            o.entry("type").or_insert_with(|| json!("agent"));
            if let Some(id) = o.remove("id") {
                o.insert("methodId".into(), id);
            }
        }
    }
}

/// v2 auth methods as v1's: `type: agent` is v1's untagged form, `methodId` is `id`.
pub(crate) fn auth_methods_to_v1(methods: &mut Value) {
    untag(methods, "agent");
    for m in methods.as_array_mut().into_iter().flatten() {
        if let Some(o) = object(m)
            && let Some(id) = o.remove("methodId")
        {
            o.insert("id".into(), id);
        }
    }
}

/// Removes the `type` tag `tag` from every item of a list.
fn untag(list: &mut Value, tag: &str) {
    for m in list.as_array_mut().into_iter().flatten() {
        if let Some(o) = object(m).filter(|o| o.get("type") == Some(&json!(tag))) {
            o.remove("type");
        }
    }
}

/// v2 MCP servers as v1's: `type: stdio` is v1's untagged form.
pub(crate) fn mcp_servers_to_v1(servers: &mut Value) {
    untag(servers, "stdio");
}

/// v1 MCP servers as v2's: the untagged stdio server gets `type: stdio`.
pub(crate) fn mcp_servers_to_v2(servers: &mut Value) {
    for m in servers.as_array_mut().into_iter().flatten() {
        if let Some(o) = object(m) {
            o.entry("type").or_insert_with(|| json!("stdio"));
        }
    }
}

/// v1 capability flags (`"image": true`) as v2's markers (`"image": {}`): a `true` flag is
/// an empty object, a `false` one absent; `_meta` and objects are kept.
pub(crate) fn flags_to_markers(flags: Option<&Value>) -> Value {
    let mut out = Map::new();
    for (k, v) in flags.and_then(Value::as_object).into_iter().flatten() {
        match v {
            Value::Bool(true) => {
                out.insert(k.clone(), json!({}));
            }
            Value::Bool(false) | Value::Null => {}
            other => {
                out.insert(k.clone(), other.clone());
            }
        }
    }
    Value::Object(out)
}

/// v2 capability markers as v1 flags: a present marker is `true`; `_meta` is kept.
pub(crate) fn markers_to_flags(markers: Option<&Value>) -> Value {
    let mut out = Map::new();
    for (k, v) in markers.and_then(Value::as_object).into_iter().flatten() {
        if k == "_meta" {
            out.insert(k.clone(), v.clone());
        } else if !v.is_null() {
            out.insert(k.clone(), json!(true));
        }
    }
    Value::Object(out)
}

/// The v1 stop reasons are v2's idle stop reasons (and v2 adds `error`).
pub(crate) fn stop_reason_to_v1(reason: Option<&str>) -> &str {
    match reason {
        Some("error") | None => "end_turn",
        Some(other) => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_diff_becomes_a_v2_change_with_a_git_patch_and_comes_back_whole() {
        let v1 =
            json!({"type": "diff", "path": "/w/a.txt", "oldText": "one\n", "newText": "two\n"});
        let v2 = content_to_v2(v1.clone());
        assert_eq!(
            v2["changes"],
            json!([{"operation": "modify", "path": "/w/a.txt"}])
        );
        assert_eq!(v2["patch"]["format"], "git_patch");
        assert_eq!(
            v2["patch"]["text"],
            "diff --git a/w/a.txt b/w/a.txt\n--- a/w/a.txt\n+++ b/w/a.txt\n@@ -1,1 +1,1 @@\n-one\n+two\n"
        );
        assert_eq!(content_to_v1(v2), v1);
    }

    #[test]
    fn a_new_file_is_an_add_from_dev_null() {
        let v2 = content_to_v2(json!({"type": "diff", "path": "/n.txt", "newText": "x"}));
        assert_eq!(v2["changes"][0]["operation"], "add");
        assert!(
            v2["patch"]["text"]
                .as_str()
                .unwrap()
                .contains("--- /dev/null\n")
        );
        assert!(
            v2["patch"]["text"]
                .as_str()
                .unwrap()
                .contains("@@ -0,0 +1,1 @@")
        );
    }

    #[test]
    fn a_native_v2_diff_reaches_v1_as_its_patch_text_or_its_changes() {
        let patched = json!({"type": "diff", "changes": [{"operation": "delete", "path": "/a"}],
            "patch": {"format": "git_patch", "text": "P"}});
        assert_eq!(content_to_v1(patched)["content"]["text"], "P");
        let bare = json!({"type": "diff", "changes": [{"operation": "move", "oldPath": "/a", "path": "/b"}]});
        assert_eq!(content_to_v1(bare)["content"]["text"], "move /b");
    }

    #[test]
    fn modes_are_a_mode_config_option_and_back() {
        let modes = json!({"currentModeId": "ask", "availableModes": [
            {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code", "description": "edits"}]});
        let options = options_with_modes(&[], Some(&modes));
        assert_eq!(options[0]["configId"], MODE_OPTION);
        assert_eq!(options[0]["currentValue"], "ask");
        let (id, back) = modes_of(&options).unwrap();
        assert_eq!(id, MODE_OPTION);
        assert_eq!(back, modes);
        // An agent's own mode option is not doubled.
        assert_eq!(options_with_modes(&options, Some(&modes)).len(), 1);
    }

    /// v1's unstable `models` are a v2 `select` option of category `model` that reads as
    /// v2's type; an agent's own model option is not doubled.
    #[test]
    fn models_are_a_model_config_option() {
        let models = json!({"currentModelId": "fast", "availableModels": [
            {"modelId": "fast", "name": "Fast"}, {"modelId": "slow", "name": "Slow", "description": "careful"}]});
        let options = with_models(Vec::new(), Some(&models));
        assert_eq!(options.len(), 1);
        assert_eq!(options[0]["configId"], MODEL_OPTION);
        assert_eq!(options[0]["category"], "model");
        assert_eq!(options[0]["currentValue"], "fast");
        assert_eq!(options[0]["options"][1]["value"], "slow");
        assert_eq!(options[0]["options"][1]["description"], "careful");
        let typed: acp_types::v2::SessionConfigOption =
            serde_json::from_value(options[0].clone()).expect("a v2 config option");
        assert_eq!(json_of(&typed), options[0]);
        assert_eq!(with_models(options.clone(), Some(&models)).len(), 1);
        assert!(with_models(Vec::new(), None).is_empty());
    }
}

#[cfg(test)]
mod round_trip {
    use super::*;
    use acp_types::{v1, v2};

    /// A v1 agent's model option through both translations, typed at every step.
    #[test]
    fn a_v1_model_option_survives_v2_and_back() {
        let option = json!({"id": "model", "name": "Model", "category": "model", "type": "select",
            "currentValue": "fast", "options": [{"value": "fast", "name": "Fast"}]});
        let v1_answer: v1::NewSessionResponse =
            serde_json::from_value(json!({"sessionId": "s", "configOptions": [option]})).unwrap();
        let to_v2: Vec<Value> = json_of(&v1_answer)["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .cloned()
            .map(option_to_v2)
            .collect();
        let v2_answer: v2::NewSessionResponse =
            recast(json!({"sessionId": "s", "configOptions": to_v2}), "v2").unwrap();
        assert_eq!(v2_answer.config_options.len(), 1);
        let back: Vec<Value> = json_of(&v2_answer)["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .cloned()
            .map(option_to_v1)
            .collect();
        let v1_again: v1::NewSessionResponse =
            recast(json!({"sessionId": "s", "configOptions": back}), "v1").unwrap();
        assert_eq!(v1_again, v1_answer);
    }
}
