//! The JSON-RPC envelope: ids, requests, notifications, responses; parsing one line into a
//! [`Message`] (the envelope is parsed once, params stay raw); writing envelopes into a
//! reused buffer is [`write`]'s.

use std::fmt;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::framing::Framing;

/// A request id: an integer or a string, echoed exactly as received.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (this crate numbers its own requests with these).
    Int(i64),
    /// A string id.
    Str(String),
}

impl From<i64> for RequestId {
    fn from(id: i64) -> Self {
        RequestId::Int(id)
    }
}

impl From<i32> for RequestId {
    fn from(id: i32) -> Self {
        RequestId::Int(id.into())
    }
}

impl From<String> for RequestId {
    fn from(id: String) -> Self {
        RequestId::Str(id)
    }
}

impl From<&str> for RequestId {
    fn from(id: &str) -> Self {
        RequestId::Str(id.to_owned())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Int(n) => write!(f, "{n}"),
            RequestId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// An incoming request (has a method and an id).
#[derive(Debug)]
pub struct Request {
    /// The id to echo in the response.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params, kept raw until the handler's type is known (`None` if absent or `null`).
    pub params: Option<Box<RawValue>>,
}

/// An incoming notification (has a method, no id).
#[derive(Debug)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The raw params (`None` if absent or `null`).
    pub params: Option<Box<RawValue>>,
}

/// An incoming response (no method).
#[derive(Debug)]
pub struct Response {
    /// The id; `None` when it was `null` (an error about a message the peer could not read).
    pub id: Option<RequestId>,
    /// The raw `result`, or the `error`.
    pub result: Result<Box<RawValue>, Error>,
}

/// One parsed line.
#[derive(Debug)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response to one of our requests.
    Response(Response),
}

/// A response whose result still lies in the line it was read from.
#[derive(Debug)]
pub(crate) struct BorrowedResponse<'a> {
    pub(crate) id: Option<RequestId>,
    pub(crate) result: Result<&'a RawValue, Error>,
}

/// One parsed line, responses borrowing from it (what the reader uses).
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
    Request(Request),
    Notification(Notification),
    Response(BorrowedResponse<'a>),
}

/// Why a line is not a message, with the reply it deserves.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParseFailure {
    /// The error to reply with (`-32700` or `-32600`).
    pub error: Error,
    /// For a malformed response: the id it carried, so a waiting caller can be failed.
    pub response_id: Option<RequestId>,
    /// Whether the line is a response (no `"method"`, a `"result"` or an `"error"`). A
    /// malformed response is answered only when it names a request of ours that was
    /// waiting (its caller is told too); to an unknown id it is not answered: answering could
    /// start a reply loop between two peers, and nobody waits for it.
    pub is_response: bool,
    /// For a request that is rejected whole because its `"jsonrpc"` is not `"2.0"`: its id,
    /// which the error reply echoes so the sender can match it. `None`: the reply has
    /// `id: null`.
    pub request_id: Option<RequestId>,
}

fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Box<RawValue>>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

fn parse_error(e: &serde_json::Error) -> ParseFailure {
    ParseFailure {
        error: Error::parse_error(format!("parse error: {e}")),
        response_id: None,
        is_response: false,
        request_id: None,
    }
}

fn invalid(message: impl Into<String>) -> ParseFailure {
    ParseFailure {
        error: Error::invalid_request(message),
        response_id: None,
        is_response: false,
        request_id: None,
    }
}

/// A JSON id as this crate keeps it: an integer that fits `i64` or a string. `None` for
/// anything else (`null`, a fraction, an integer past `i64`, an object...), which callers
/// report with the id's text exactly as received (`2^70` stays `1180591620717411303424`,
/// not a float's rendering).
fn id_from_raw(raw: &RawValue) -> Option<RequestId> {
    let text = raw.get();
    if text.starts_with('"') {
        return serde_json::from_str::<String>(text)
            .ok()
            .map(RequestId::Str);
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok().map(RequestId::Int)
}

pub(crate) fn non_null(raw: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
    raw.filter(|r| r.get() != "null")
}

impl Message {
    /// Parses one line (without its newline). The envelope is parsed once; `params` and
    /// `result` are kept as [`RawValue`].
    ///
    /// Classification: a JSON array is a batch and is rejected (`-32600`, "batches are not
    /// supported"); an object with `"method"` is a request (with `"id"`) or a notification
    /// (without); any other object is a response to one of *our* ids.
    // The error side is rare (bad input) and no larger than a `Message` once serde_json's
    // `preserve_order` is on elsewhere in the build; boxing it would cost every bad line an
    // allocation for nothing.
    #[allow(clippy::result_large_err)]
    pub fn parse(line: &[u8], framing: &Framing) -> Result<Message, ParseFailure> {
        let line = match std::str::from_utf8(line) {
            Ok(line) => line,
            // Not JSON either: serde_json words where it goes wrong (a `Value`, unlike
            // `IgnoredAny`, checks the bytes of every string).
            Err(_) => {
                return Err(match serde_json::from_slice::<Value>(line) {
                    Err(e) => parse_error(&e),
                    Ok(_) => ParseFailure {
                        error: Error::parse_error("line is not valid UTF-8"),
                        response_id: None,
                        is_response: false,
                        request_id: None,
                    },
                });
            }
        };
        Ok(match parse_line(line, framing)? {
            Parsed::Request(r) => Message::Request(r),
            Parsed::Notification(n) => Message::Notification(n),
            Parsed::Response(r) => Message::Response(Response {
                id: r.id,
                result: r.result.map(RawValue::to_owned),
            }),
        })
    }
}

/// [`Message::parse`] of a line known to be UTF-8 (so its strings are not checked again),
/// leaving a response's result in the line.
#[allow(clippy::result_large_err)]
pub(crate) fn parse_line<'a>(line: &'a str, framing: &Framing) -> Result<Parsed<'a>, ParseFailure> {
    let first = line.bytes().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        return match serde_json::from_str::<IgnoredAny>(line) {
            Ok(_) => Err(invalid("batches are not supported")),
            Err(e) => Err(parse_error(&e)),
        };
    }
    let env: Envelope<'_> = match serde_json::from_str(line) {
        Ok(env) => env,
        Err(e) => {
            return Err(match e.classify() {
                serde_json::error::Category::Data => {
                    // Valid JSON of the wrong shape, or a syntax error after a shape error?
                    match serde_json::from_str::<IgnoredAny>(line) {
                        Ok(_) => invalid(format!("invalid message: {e}")),
                        Err(e) => parse_error(&e),
                    }
                }
                _ => parse_error(&e),
            });
        }
    };
    let is_response = env.method.is_none() && (env.result.is_some() || env.error.is_some());
    let version_error = match env.jsonrpc.as_deref() {
        Some("2.0") => None,
        // A request of another version still has an id its sender can match: echo it.
        Some(other) => Some((format!("unsupported jsonrpc version {other:?}"), true)),
        None if framing.accept_missing_jsonrpc => None,
        None => Some(("missing \"jsonrpc\": \"2.0\"".to_owned(), false)),
    };
    if let Some((message, echo_id)) = version_error {
        let mut failure = invalid(message);
        failure.is_response = is_response;
        if echo_id && env.method.is_some() {
            failure.request_id = env.id.and_then(id_from_raw);
        }
        return Err(failure);
    }
    if let Some(method) = env.method {
        return match env.id {
            None => Ok(Parsed::Notification(Notification {
                method,
                params: non_null(env.params),
            })),
            Some(raw) if raw.get() == "null" => Err(invalid("request id must not be null")),
            Some(raw) => match id_from_raw(raw) {
                Some(id) => Ok(Parsed::Request(Request {
                    id,
                    method,
                    params: non_null(env.params),
                })),
                None => Err(invalid(format!(
                    "request id must be an integer or a string, got {}",
                    raw.get()
                ))),
            },
        };
    }
    let id = match env.id {
        None => return Err(invalid("message has neither \"method\" nor \"id\"")),
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => match id_from_raw(raw) {
            Some(id) => Some(id),
            None => {
                let mut failure = invalid(format!(
                    "response id must be an integer or a string, got {}",
                    raw.get()
                ));
                failure.is_response = is_response;
                return Err(failure);
            }
        },
    };
    let result = match (env.result, env.error) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(match serde_json::from_value::<Error>(error) {
            Ok(e) => e,
            Err(e) => Error::internal_error(format!("peer sent a malformed error object: {e}")),
        }),
        (Some(_), Some(_)) => {
            let mut failure = invalid("response has both \"result\" and \"error\"");
            failure.response_id = id;
            failure.is_response = true;
            return Err(failure);
        }
        (None, None) => {
            // No method, no result, no error: not recognisably a response (a request that
            // lost its method, say), so it is answered.
            let mut failure = invalid("response has neither \"result\" nor \"error\"");
            failure.response_id = id;
            return Err(failure);
        }
    };
    Ok(Parsed::Response(BorrowedResponse { id, result }))
}

mod write;

pub(crate) use write::*;

#[cfg(test)]
mod tests {
    use super::JsonOut;

    #[test]
    fn message_parse_answers_bytes_that_are_not_utf8_with_a_parse_error() {
        let framing = crate::Framing::default();
        for line in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}"[..],
            b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[\"\xc3\x28\"]}",
            b"\xfe{}",
        ] {
            let failure = super::Message::parse(line, &framing).expect_err("not UTF-8");
            assert_eq!(
                failure.error.code,
                crate::ErrorCode::PARSE_ERROR,
                "{line:?}"
            );
            assert!(
                failure.error.message.starts_with("parse error: "),
                "{}",
                failure.error.message
            );
        }
    }

    #[test]
    fn json_out_appends_pieces_of_every_length_exactly() {
        use std::io::Write;
        let text: Vec<u8> = (0u8..64).collect();
        let mut out = b"head".to_vec();
        let mut expected = out.clone();
        for len in 0..=40 {
            JsonOut(&mut out).write_all(&text[..len]).unwrap();
            expected.extend_from_slice(&text[..len]);
        }
        assert_eq!(out, expected);
        let value = serde_json::json!({"a": "x\n\"y\"", "long key of some length": [1, 2.5, null]});
        let mut serialized = Vec::new();
        serde_json::to_writer(JsonOut(&mut serialized), &value).unwrap();
        assert_eq!(serialized, serde_json::to_vec(&value).unwrap());
    }
}
