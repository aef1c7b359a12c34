//! `x-rust`: how a v1 method appears in the side crates (see acp-schema's `CONVENTIONS.md`).

use serde_json::Value;

use crate::Error;
use crate::model::{Method, MethodKind, Side};

/// The `x-rust` annotation of one v1 method.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RustSide {
    /// The trait method and handle method name (`new_session`).
    pub name: String,
    /// `"session": "known"`: the serving side answers `-32002` for a session id this
    /// connection does not know before the trait method (or hook) is reached.
    pub known_session: bool,
    /// `"context": "prompt"`: the agent's trait method gets a `PromptContext`.
    pub prompt_context: bool,
    /// `"required": true`: the trait method has no default.
    pub required: bool,
    /// `"serve": "hook"`: the serving side's dispatch calls its hand-written
    /// `<name>_hook` instead of the trait method directly.
    pub serve_hook: bool,
    /// `"parse": "hook"`: the serve hook gets the params unparsed and reads them itself
    /// (`initialize`, which answers even a version it cannot read).
    pub hook_parses: bool,
    /// `"call": "hook"`: the calling side's handle method calls its hand-written
    /// `<name>_hook`.
    pub call_hook: bool,
    /// `"capability"`: the path of the client capability (`fs.readTextFile`) without which
    /// the agent's handle refuses to send a client method.
    pub capability: Option<String>,
    /// `"offered"`: the path of the agent capability (`auth.status`) the agent's own
    /// `initialize` answer must have advertised before its handle sends the method.
    pub offered: Option<String>,
    /// `"doc"`: more documentation for the trait method.
    pub doc: Option<String>,
    /// `"call-doc"`: more documentation for the handle method.
    pub call_doc: Option<String>,
    /// `"builtin": "terminals.create"`: the client trait method's default hands the request
    /// to a building block of acp-client that the application may provide (see
    /// `client::BUILTINS`), and answers "method not found" only when it provides none.
    pub builtin: Option<Builtin>,
}

/// Which building block serves a client method by default, and with which of its methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Builtin {
    /// The building block (`terminals`, `fs`).
    pub provider: String,
    /// Its method that serves the request (`create`).
    pub call: String,
}

/// Reads the `x-rust` of `method` (`raw` is its `x-methods` entry as written).
pub fn parse(method: &Method, raw: &Value) -> Result<RustSide, Error> {
    let err = |message: &str| Error::Schema {
        def: format!("x-methods[{}].x-rust", method.wire),
        message: message.to_string(),
    };
    let v = raw
        .get("x-rust")
        .and_then(Value::as_object)
        .ok_or_else(|| err("missing: every v1 method says how it appears in Rust"))?;
    const KEYS: &[&str] = &[
        "name",
        "session",
        "context",
        "required",
        "serve",
        "parse",
        "call",
        "capability",
        "offered",
        "doc",
        "call-doc",
        "builtin",
    ];
    if let Some(unknown) = v.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(err(&format!("unknown key `{unknown}`")));
    }
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let one_of = |k: &str, allowed: &str| -> Result<bool, Error> {
        match v.get(k) {
            None => Ok(false),
            Some(Value::String(s)) if s == allowed => Ok(true),
            Some(_) => Err(err(&format!("`{k}` can only be \"{allowed}\""))),
        }
    };
    let name = text("name").ok_or_else(|| err("missing `name`"))?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return Err(err("`name` must be a snake_case Rust identifier"));
    }
    let side = RustSide {
        name,
        known_session: one_of("session", "known")?,
        prompt_context: one_of("context", "prompt")?,
        required: v.get("required").and_then(Value::as_bool).unwrap_or(false),
        serve_hook: one_of("serve", "hook")?,
        hook_parses: one_of("parse", "hook")?,
        call_hook: one_of("call", "hook")?,
        capability: text("capability"),
        offered: text("offered"),
        doc: text("doc"),
        call_doc: text("call-doc"),
        builtin: match text("builtin") {
            None => None,
            Some(b) => Some(parse_builtin(&b).ok_or_else(|| {
                err("`builtin` is `block.method` in snake_case (`terminals.create`)")
            })?),
        },
    };
    let request = method.kind == MethodKind::Request;
    if side.prompt_context && !(side.serve_hook && method.side == Side::Agent) {
        return Err(err(
            "a prompt context is made by the agent's hook: it needs `\"serve\": \"hook\"`",
        ));
    }
    if side.hook_parses && !side.serve_hook {
        return Err(err("`\"parse\": \"hook\"` needs `\"serve\": \"hook\"`"));
    }
    if side.required && !request {
        return Err(err("a notification cannot be required"));
    }
    if side.capability.is_some() && method.side != Side::Client {
        return Err(err(
            "`capability` gates the agent's calls to client methods only",
        ));
    }
    if side.builtin.is_some() && !(method.side == Side::Client && request) {
        return Err(err("`builtin` serves requests to the client only"));
    }
    if side.offered.is_some() && method.side == Side::Agent {
        return Err(err(
            "`offered` gates the agent's own calls to the client only",
        ));
    }
    Ok(side)
}

fn parse_builtin(text: &str) -> Option<Builtin> {
    let snake = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    let (provider, call) = text.split_once('.')?;
    (snake(provider) && snake(call)).then(|| Builtin {
        provider: provider.to_string(),
        call: call.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(side: Side, kind: MethodKind) -> Method {
        Method {
            wire: "a/b".into(),
            side,
            kind,
            params: "P".into(),
            result: None,
            description: String::new(),
            default: crate::model::NativeDefault::NotFound,
            handle: true,
        }
    }

    fn read(side: Side, kind: MethodKind, rust: &str) -> Result<RustSide, Error> {
        let raw: Value = serde_json::from_str(&format!(r#"{{"x-rust": {rust}}}"#)).unwrap();
        parse(&method(side, kind), &raw)
    }

    #[test]
    fn every_key_is_read() {
        let side = read(
            Side::Client,
            MethodKind::Request,
            r#"{"name": "read_it", "session": "known", "required": true, "call": "hook",
                "capability": "fs.read", "doc": "d", "call-doc": "c", "builtin": "fs.read_it"}"#,
        )
        .unwrap();
        assert_eq!(
            side.builtin,
            Some(Builtin {
                provider: "fs".into(),
                call: "read_it".into()
            })
        );
        assert_eq!(side.name, "read_it");
        assert!(side.known_session && side.required && side.call_hook && !side.serve_hook);
        assert_eq!(side.capability.as_deref(), Some("fs.read"));
        assert_eq!(
            (side.doc.as_deref(), side.call_doc.as_deref()),
            (Some("d"), Some("c"))
        );
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            (Side::Agent, MethodKind::Request, r#"{}"#, "missing `name`"),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "A"}"#,
                "snake_case",
            ),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "a", "nam": 1}"#,
                "unknown key `nam`",
            ),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "a", "serve": "yes"}"#,
                "can only be",
            ),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "a", "context": "prompt"}"#,
                "hook",
            ),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "a", "parse": "hook"}"#,
                "needs",
            ),
            (
                Side::Agent,
                MethodKind::Notification,
                r#"{"name": "a", "required": true}"#,
                "notification",
            ),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "a", "capability": "x"}"#,
                "client methods",
            ),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "a", "offered": "x"}"#,
                "own calls",
            ),
            (
                Side::Agent,
                MethodKind::Request,
                r#"{"name": "a", "builtin": "fs.read"}"#,
                "requests to the client",
            ),
            (
                Side::Client,
                MethodKind::Request,
                r#"{"name": "a", "builtin": "fs"}"#,
                "block.method",
            ),
        ];
        for (side, kind, rust, expected) in cases {
            let e = read(side, kind, rust).unwrap_err().to_string();
            assert!(
                e.contains(expected) && e.contains("x-methods[a/b].x-rust"),
                "{rust}: {e}"
            );
        }
        let raw: Value = serde_json::json!({});
        let e = parse(&method(Side::Agent, MethodKind::Request), &raw).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}
