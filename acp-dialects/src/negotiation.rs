//! What both sides' version negotiation shares: which dialect a client's first message
//! shows ([`detect`]), which dialect a `protocolVersion` names ([`dialect_of_version`]),
//! and which dialects this build speaks ([`compiled_dialects`]).
//!
//! A new dialect gets its entry here: how its first message is recognised, and how its
//! handshake answer names it.

use serde_json::Value;

use crate::Dialect;

/// The methods a threads agent serves: a first message calling one of them is the threads
/// dialect, which has no handshake.
pub const THREADS_FIRST_METHODS: [&str; 5] = [
    "getThreads",
    "createThread",
    "openThread",
    "getThreadEntries",
    "sendMessage",
];

/// The session methods a probe agent serves: a first message calling one of them (with no
/// `initialize` before it) is the probe dialect.
pub const PROBE_FIRST_METHODS: [&str; 4] =
    ["newSession", "loadSession", "setSessionMode", "prompt"];

/// The dialects this build speaks (this crate's `legacy-0-0-9`, `legacy-threads`, `probe`
/// and `crow` features), newest first.
pub fn compiled_dialects() -> Vec<Dialect> {
    Dialect::ALL
        .into_iter()
        .filter(|d| match d {
            Dialect::V1 => true,
            Dialect::Legacy009 => cfg!(feature = "legacy-0-0-9"),
            Dialect::Threads => cfg!(feature = "legacy-threads"),
            Dialect::Probe => cfg!(feature = "probe"),
            Dialect::Crow => cfg!(feature = "crow"),
        })
        .collect()
}

/// The dialects of `pinned` this build speaks, in the pinned order; `Err` with every
/// dialect this build speaks when that leaves none.
pub fn accepted(pinned: &[Dialect]) -> Result<Vec<Dialect>, Vec<Dialect>> {
    let compiled = compiled_dialects();
    let accepted: Vec<Dialect> = pinned
        .iter()
        .copied()
        .filter(|d| compiled.contains(d))
        .collect();
    if accepted.is_empty() {
        Err(compiled)
    } else {
        Ok(accepted)
    }
}

/// The dialect a `protocolVersion` value names exactly: the integer `1` is v1, `"0.0.9"`
/// is 0.0.9 and the string `"1"` is probe; anything else (`2`, `"0.0.10"`, `"2"`) names
/// none. A client accepts
/// an `initialize` answer only for a version named here.
///
/// ```
/// use acp_dialects::Dialect;
/// use acp_dialects::negotiation::dialect_of_version;
/// use serde_json::json;
///
/// assert_eq!(dialect_of_version(&json!(1)), Some(Dialect::V1));
/// assert_eq!(dialect_of_version(&json!(2)), None);
/// assert_eq!(dialect_of_version(&json!("0.0.9")), Some(Dialect::Legacy009));
/// assert_eq!(dialect_of_version(&json!("1")), Some(Dialect::Probe));
/// ```
pub fn dialect_of_version(version: &Value) -> Option<Dialect> {
    match version {
        Value::Number(n) if n.as_u64() == Some(1) => Some(Dialect::V1),
        Value::String(s) if s == "0.0.9" => Some(Dialect::Legacy009),
        Value::String(s) if s == "1" => Some(Dialect::Probe),
        _ => None,
    }
}

/// The dialect a client's first message shows, if it shows one: `initialize` with an
/// integer `protocolVersion` is v1 (a v1 agent answers any integer with its latest), with a
/// `"0.0.x"` string the 0.0.9 dialect, with the string `"1"` probe, with another string v1
/// again; a thread method ([`THREADS_FIRST_METHODS`]) is the threads dialect and a probe
/// session method ([`PROBE_FIRST_METHODS`]) the probe dialect; `initialize` with a
/// snake_case `protocol_version` (and no `protocolVersion`) is crow. Anything else (another
/// method, a line that is not JSON) says nothing.
///
/// ```
/// use acp_dialects::Dialect;
/// use acp_dialects::negotiation::detect;
///
/// let v1 = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
/// assert_eq!(detect(v1), Some(Dialect::V1));
/// let zero_nine = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#;
/// assert_eq!(detect(zero_nine), Some(Dialect::Legacy009));
/// assert_eq!(detect(br#"{"id":0,"method":"getThreads","params":null}"#), Some(Dialect::Threads));
/// let probe = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}"#;
/// assert_eq!(detect(probe), Some(Dialect::Probe));
/// let crow = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1}}"#;
/// assert_eq!(detect(crow), Some(Dialect::Crow));
/// assert_eq!(detect(b"not json"), None);
/// ```
pub fn detect(first_message: &[u8]) -> Option<Dialect> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        params: Option<Value>,
    }
    let probe: Probe = serde_json::from_slice(first_message).ok()?;
    match probe.method.as_deref()? {
        "initialize" => {
            let params = probe.params.as_ref()?;
            if params.get("protocolVersion").is_none() && params.get("protocol_version").is_some() {
                return Some(Dialect::Crow);
            }
            let version = params.get("protocolVersion")?;
            dialect_of_version(version).or(match version {
                Value::Number(_) => Some(Dialect::V1),
                Value::String(s) if s.starts_with("0.0.") => Some(Dialect::Legacy009),
                // Another string ("1", "2.0"): a v1 agent answers its latest version.
                Value::String(_) => Some(Dialect::V1),
                _ => None,
            })
        }
        method if THREADS_FIRST_METHODS.contains(&method) => Some(Dialect::Threads),
        method if PROBE_FIRST_METHODS.contains(&method) => Some(Dialect::Probe),
        _ => None,
    }
}

/// The dialect an answer to a client's handshake probe shows: its `protocolVersion` names
/// it ([`dialect_of_version`]), or, answering the threads probe (`getThreads`), a thread
/// list, or, answering the crow probe, a snake_case `protocol_version` of 1. `Err` with the
/// version it names instead (`protocol version 2`), or empty when it
/// names nothing.
pub fn answer_dialect(result: &Value, probe: Dialect) -> Result<Dialect, String> {
    if let (None, Some(version)) = (
        result.get("protocolVersion"),
        result.get("protocol_version"),
    ) {
        return match version {
            Value::Number(n) if n.as_u64() == Some(1) => Ok(Dialect::Crow),
            other => Err(format!("crow protocol version {other}")),
        };
    }
    match result.get("protocolVersion") {
        Some(version @ (Value::Number(_) | Value::String(_))) => {
            dialect_of_version(version).ok_or_else(|| format!("protocol version {version}"))
        }
        _ if probe == Dialect::Threads && result.get("threads").is_some() => Ok(Dialect::Threads),
        _ => Err(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detection_reads_the_handshake_or_the_method() {
        use Dialect::*;
        let init = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":{v}}}}}"#
            )
        };
        assert_eq!(detect(init("1").as_bytes()), Some(V1));
        assert_eq!(detect(init("99").as_bytes()), Some(V1));
        assert_eq!(detect(init(r#""1""#).as_bytes()), Some(Probe));
        assert_eq!(detect(init(r#""2.0""#).as_bytes()), Some(V1));
        let crow = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1,"client_capabilities":{},"client_info":{"name":"crow-ide","version":"0.1.0"}}}"#;
        assert_eq!(detect(crow), Some(Crow));
        assert_eq!(detect(init(r#""0.0.9""#).as_bytes()), Some(Legacy009));
        assert_eq!(detect(init(r#""0.0.11""#).as_bytes()), Some(Legacy009));
        assert_eq!(detect(init("null").as_bytes()), None);
        assert_eq!(detect(br#"{"id":0,"method":"initialize"}"#), None);
        for m in THREADS_FIRST_METHODS {
            let line = format!(r#"{{"id":0,"method":"{m}","params":null}}"#);
            assert_eq!(detect(line.as_bytes()), Some(Threads), "{m}");
        }
        for m in PROBE_FIRST_METHODS {
            let line = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"{m}","params":{{}}}}"#);
            assert_eq!(detect(line.as_bytes()), Some(Probe), "{m}");
        }
        assert_eq!(
            detect(br#"{"jsonrpc":"2.0","id":0,"method":"session/new"}"#),
            None
        );
        assert_eq!(detect(br#"[1,2]"#), None);
        assert_eq!(detect(b"\xff\xfe"), None);
    }

    #[test]
    fn an_answer_is_accepted_only_for_a_version_it_names_exactly() {
        use Dialect::*;
        let answer = |v: Value| json!({ "protocolVersion": v });
        assert_eq!(answer_dialect(&answer(json!(1)), V1), Ok(V1));
        assert_eq!(answer_dialect(&answer(json!(1)), Legacy009), Ok(V1));
        assert_eq!(answer_dialect(&answer(json!("0.0.9")), V1), Ok(Legacy009));
        assert_eq!(answer_dialect(&answer(json!("1")), V1), Ok(Probe));
        assert_eq!(answer_dialect(&answer(json!("1")), Probe), Ok(Probe));
        assert_eq!(
            answer_dialect(&json!({"protocol_version": 1}), Crow),
            Ok(Crow)
        );
        assert_eq!(
            answer_dialect(&json!({"protocol_version": 2}), Crow),
            Err("crow protocol version 2".into())
        );
        assert_eq!(
            answer_dialect(&answer(json!("2")), Probe),
            Err(r#"protocol version "2""#.into())
        );
        assert_eq!(
            answer_dialect(&answer(json!(2)), V1),
            Err("protocol version 2".into())
        );
        assert_eq!(
            answer_dialect(&answer(json!(0)), V1),
            Err("protocol version 0".into())
        );
        assert_eq!(
            answer_dialect(&answer(json!("0.0.10")), V1),
            Err(r#"protocol version "0.0.10""#.into())
        );
        assert_eq!(
            answer_dialect(&json!({"threads": []}), Threads),
            Ok(Threads)
        );
        assert_eq!(
            answer_dialect(&json!({"threads": []}), V1),
            Err(String::new())
        );
    }
}
