//! Raw params and their typed deserialization, producing `-32602` errors whose `data`
//! names the offending field.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::Error;

/// The params of an incoming request or notification, still raw JSON.
#[derive(Debug, Default)]
pub struct Params(Option<Box<RawValue>>);

impl Params {
    /// Wraps raw params (`None` when absent or `null`).
    pub fn new(raw: Option<Box<RawValue>>) -> Self {
        Params(raw)
    }

    /// The raw JSON text, if any.
    pub fn raw(&self) -> Option<&RawValue> {
        self.0.as_deref()
    }

    /// Takes the raw value out.
    pub fn into_raw(self) -> Option<Box<RawValue>> {
        self.0
    }

    /// Deserializes into `T` (absent params deserialize as `null`, which suits `()` and
    /// `Option<_>`). See [`deserialize_params`] for the error.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Error> {
        deserialize_params(self.0.as_deref().map_or("null", RawValue::get))
    }
}

/// Deserializes params text into `T`, or returns `-32602` with
/// `data: {"field": <path or null>, "message": <serde message>}`.
///
/// serde_json does not report paths, so the field is recovered from the error: for
/// "missing field `x`" / "unknown field `x`" it is `x` under the object where the error
/// was found; for other errors it is the path of the value at the error position (e.g.
/// `mcpServers[0].name`), found by scanning the (already valid) JSON text up to that point.
/// `field` is `null` when the params themselves have the wrong type.
pub fn deserialize_params<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| params_error(text, &e))
}

fn params_error(text: &str, e: &serde_json::Error) -> Error {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    let offset = byte_offset(text, e.line(), e.column());
    let mut levels = levels_at(text, offset);
    if let Some(rest) = message.strip_prefix("missing field `") {
        // Reported at the end of the object: the last key seen is not the culprit.
        if let Some(Level::Object(key)) = levels.last_mut() {
            *key = Some(rest.split('`').next().unwrap_or_default().to_owned());
        }
    }
    let path = render(&levels);
    let field = if path.is_empty() {
        Value::Null
    } else {
        Value::String(path)
    };
    Error::invalid_params(format!("invalid params: {message}"))
        .with_data(serde_json::json!({ "field": field, "message": message }))
}

fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    (start + column.saturating_sub(1)).min(text.len())
}

enum Level {
    Object(Option<String>),
    Array(usize),
}

/// The nesting (keys and indices) of the value containing byte `offset` in valid JSON.
fn levels_at(text: &str, offset: usize) -> Vec<Level> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Level> = Vec::new();
    let mut i = 0;
    while i < offset.min(bytes.len()) {
        match bytes[i] {
            b'{' => stack.push(Level::Object(None)),
            b'[' => stack.push(Level::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Level::Array(n)) => *n += 1,
                Some(Level::Object(key)) => *key = None,
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if let Some(Level::Object(key @ None)) = stack.last_mut() {
                    let raw = &text[start..(i + 1).min(text.len())];
                    *key = Some(serde_json::from_str(raw).unwrap_or_else(|_| raw.to_owned()));
                }
            }
            _ => {}
        }
        i += 1;
    }
    stack
}

/// Renders levels as `a.b[2].c`.
fn render(levels: &[Level]) -> String {
    let mut path = String::new();
    for level in levels {
        match level {
            Level::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Level::Object(None) => {}
            Level::Array(n) => path.push_str(&format!("[{n}]")),
        }
    }
    path
}

/// Serializes a handler's result into a raw value (`-32603` if it does not serialize).
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, Error> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| Error::internal_error(format!("result failed to serialize: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    struct Server {
        name: String,
        port: u16,
    }

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct NewSession {
        cwd: String,
        #[serde(default)]
        mcp_servers: Vec<Server>,
    }

    fn data_of(text: &str) -> Value {
        let e = deserialize_params::<NewSession>(text).unwrap_err();
        assert_eq!(e.code, crate::ErrorCode::INVALID_PARAMS);
        e.data.unwrap()
    }

    #[test]
    fn missing_field_is_named() {
        let d = data_of(r#"{"mcpServers":[]}"#);
        assert_eq!(d["field"], "cwd");
        assert_eq!(d["message"], "missing field `cwd`");
    }

    #[test]
    fn wrong_type_names_the_field_path() {
        assert_eq!(data_of(r#"{"cwd": 5}"#)["field"], "cwd");
        let d = data_of(r#"{"cwd":"/","mcpServers":[{"name":"a","port":1},{"name":7,"port":2}]}"#);
        assert_eq!(d["field"], "mcpServers[1].name");
        let d = data_of(r#"{"cwd":"/","mcpServers":[{"name":"a","port":1},{"name":"b"}]}"#);
        assert_eq!(d["field"], "mcpServers[1].port");
    }

    #[test]
    fn unknown_field_is_named() {
        assert_eq!(data_of(r#"{"cwd":"/","bogus":1}"#)["field"], "bogus");
    }

    #[test]
    fn wrong_top_level_type_has_null_field() {
        assert_eq!(data_of(r#""text""#)["field"], Value::Null);
        assert_eq!(data_of("null")["field"], Value::Null);
    }
}
