//! The envelope of a JSON-RPC message read without parsing it whole: the one envelope reader
//! of the tree. The engine's fast paths, acp-remote's routing and observers read messages
//! through it.
//!
//! - [`Envelope::read`]: what routing and observing read of a message (its kind, method, id,
//!   the `sessionId` of its params or result, an error's code), borrowed from the text in one
//!   pass with everything else skipped unparsed. A `serde_json::Value` of every streamed
//!   chunk (a map per object, a string per key) costs more than the rest of the work on it.
//! - [`plain_notification`] and [`plain_response`]: the usual shapes the engine writes,
//!   split by their fixed heads without any parse at all (the engine's read fast paths).
//!
//! Any JSON the full parse accepts is read the same way by [`Envelope::read`]: a field of an
//! unexpected type is kept as "present" (a `method` that is a number still makes a request
//! or notification), and a text the one pass cannot read (a duplicate key, a top level that
//! is not an object) goes through a full parse instead. It does not validate the message:
//! that is the engine's parse ([`Message::parse`](crate::Message::parse)).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::RequestId;

/// What a message is, by the fields it has (the JSON-RPC classification the engine uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `method` and an `id`.
    Request,
    /// A `method` and no `id`.
    Notification,
    /// No `method`, a `result` or an `error`.
    Response,
    /// Neither: not a JSON-RPC message (the engine answers it with an error).
    Invalid,
}

/// The fields of one message that routing and observing read, borrowed from its text where
/// it can be.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Envelope<'a> {
    /// `Some` when the message has a `method` (of any type); the name when it is a string.
    pub method: Option<Option<Cow<'a, str>>>,
    /// The `id` as it was written (`null` included), when there is one.
    pub id: Option<Cow<'a, str>>,
    /// `params.sessionId`, when it is a string.
    pub params_session: Option<Cow<'a, str>>,
    /// Whether there is a `result` (`null` included).
    pub has_result: bool,
    /// `result.sessionId`, when it is a string.
    pub result_session: Option<Cow<'a, str>>,
    /// Whether there is an `error`, and its `code` when that is an integer.
    pub error: Option<Option<i64>>,
}

impl<'a> Envelope<'a> {
    /// Reads `line`; `None` when it is not JSON.
    pub fn read(line: &'a str) -> Option<Envelope<'a>> {
        // A struct reads a JSON array too (its fields in order): only objects take the one pass.
        if line.trim_start().starts_with('{')
            && let Ok(Wire {
                method,
                id,
                params,
                result,
                error,
            }) = serde_json::from_str::<Wire<'a>>(line)
        {
            return Some(Envelope {
                method: method.map(|m| m.0),
                id: id.map(|raw| Cow::Borrowed(raw.get())),
                params_session: params.and_then(|p| p.0),
                has_result: result.is_some(),
                result_session: result.and_then(|r| r.0),
                error: error.map(|e| e.0),
            });
        }
        let value = serde_json::from_str::<Value>(line).ok()?;
        Some(Envelope::of_value(&value))
    }

    /// The same fields from a full parse (what [`Envelope::read`] falls back to).
    pub fn of_value(value: &Value) -> Envelope<'a> {
        let session = |outer: &str| {
            let s = value.get(outer)?.get("sessionId")?.as_str()?;
            Some(Cow::Owned(s.to_owned()))
        };
        Envelope {
            method: value
                .get("method")
                .map(|m| m.as_str().map(|s| Cow::Owned(s.to_owned()))),
            id: value.get("id").map(|id| Cow::Owned(id.to_string())),
            params_session: session("params"),
            has_result: value.get("result").is_some(),
            result_session: session("result"),
            error: value
                .get("error")
                .map(|e| e.get("code").and_then(Value::as_i64)),
        }
    }

    /// The key its answer's waiter is kept under: the id as JSON, written the way
    /// `serde_json` writes a parsed id (so `1` and a request's `1` meet, whatever spacing or
    /// escapes either side used).
    pub fn id_key(&self) -> Option<String> {
        let raw = self.id.as_deref()?;
        Some(match serde_json::from_str::<Value>(raw) {
            Ok(id) => id.to_string(),
            Err(_) => raw.to_owned(),
        })
    }

    /// The id as an observer is told it: an integer or a string.
    pub fn request_id(&self) -> Option<RequestId> {
        match serde_json::from_str::<Value>(self.id.as_deref()?).ok()? {
            Value::Number(n) => n.as_i64().map(RequestId::Int),
            Value::String(s) => Some(RequestId::Str(s)),
            _ => None,
        }
    }

    /// What the message is, by the fields present.
    pub fn kind(&self) -> Kind {
        match (&self.method, &self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, _) if self.error.is_some() || self.has_result => Kind::Response,
            (None, _) => Kind::Invalid,
        }
    }

    /// The `sessionId` of the params, else of the result.
    pub fn session_id(&self) -> Option<&str> {
        self.params_session
            .as_deref()
            .or(self.result_session.as_deref())
    }

    /// The method's name, when it has a string one.
    pub fn method_name(&self) -> Option<&str> {
        self.method.as_ref()?.as_deref()
    }
}

/// The one-pass reading: each field borrowed, of any type, the others skipped. A field
/// that is `null` is present (`Some`), as it is to a full parse.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<AnyString<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<SessionOf<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<SessionOf<'a>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<CodeOf>,
}

/// A field that is there, `null` or not (`Option`'s own reading takes `null` for absent).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The arms of a visitor that reads every other kind of JSON value (an array, a number, a
/// boolean, `null`) as `$none`, consuming it.
macro_rules! other_kinds_read_as {
    ($none:expr) => {
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($none)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

/// A value that is kept as its string when it is one.
struct AnyString<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for AnyString<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyString<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(AnyString(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(AnyString(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(AnyString(Some(Cow::Owned(s))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(AnyString(None))
            }
            other_kinds_read_as!(AnyString(None));
        }
        d.deserialize_any(V)
    }
}

/// The `sessionId` string of an object (of anything else: none).
struct SessionOf<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for SessionOf<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SessionOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut session = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "sessionId" {
                        if session.is_some() {
                            return Err(serde::de::Error::duplicate_field("sessionId"));
                        }
                        session = Some(map.next_value::<AnyString<'de>>()?.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(SessionOf(session.flatten()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(SessionOf(None))
            }
            other_kinds_read_as!(SessionOf(None));
        }
        d.deserialize_any(V)
    }
}

/// The integer `code` of an object (of anything else: none).
struct CodeOf(Option<i64>);

impl<'de> Deserialize<'de> for CodeOf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(CodeOf(value.get("code").and_then(Value::as_i64)))
    }
}

/// The method and params text of a notification written the usual way,
/// `{"jsonrpc":"2.0","method":"<method>","params":<params>}` (trailing whitespace allowed),
/// without parsing it: `None` for any other shape, or a method name with escapes or
/// control characters.
///
/// The params text is not validated. The line is a well-formed notification exactly when
/// it is one JSON value, so a caller that parses all of it (as [`Handler::start_notification`]
/// must) has validated the line; anything else goes through the full parse ([`Message::parse`](crate::Message::parse)).
///
/// [`Handler::start_notification`]: crate::Handler::start_notification
pub fn plain_notification(line: &str) -> Option<(&str, &str)> {
    const HEAD: &str = r#"{"jsonrpc":"2.0","method":""#;
    const PARAMS: &str = r#","params":"#;
    let rest = line.strip_prefix(HEAD)?;
    // (The quote is ASCII, so `end` is a character boundary.)
    let end = memchr::memchr(b'"', rest.as_bytes())?;
    let method = &rest[..end];
    if method.bytes().any(|b| b == b'\\' || b < 0x20) {
        return None;
    }
    let body = rest[end + 1..].strip_prefix(PARAMS)?;
    let body = body.trim_ascii_end().strip_suffix('}')?;
    Some((method, body))
}

/// The id and result text of a successful response written the usual way,
/// `{"jsonrpc":"2.0","id":<integer>,"result":<result>}` (trailing whitespace allowed),
/// without parsing the result: `None` for any other shape.
///
/// The result text is not validated: the line is a well-formed response exactly when it is
/// one JSON value, which a full parse of it (the caller's decode) proves.
pub fn plain_response(line: &str) -> Option<(i64, &str)> {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    let rest = line.strip_prefix(HEAD)?;
    // (Digits and minus signs are ASCII, so `digits_end` is a character boundary.)
    let digits_end = rest
        .bytes()
        .position(|b| b != b'-' && !b.is_ascii_digit())?;
    let digits = &rest[..digits_end];
    // JSON's integer grammar, `-?(0|[1-9][0-9]*)`: no leading zeros, no lone minus.
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty()
        || unsigned.contains('-')
        || (unsigned.len() > 1 && unsigned.starts_with('0'))
    {
        return None;
    }
    let id = digits.parse::<i64>().ok()?;
    let body = rest[digits_end..].strip_prefix(RESULT)?;
    let body = body.trim_ascii_end().strip_suffix('}')?;
    Some((id, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one pass reads what the full parse reads, on every shape a field can take, and
    /// falls back to it on what it cannot read.
    #[test]
    fn the_one_pass_reads_what_the_full_parse_reads() {
        let lines = [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"sessionId":"s2","modes":[1,{"a":2}]}}"#,
            r#"{"jsonrpc":"2.0","id":"x\u0041","result":{"stopReason":"end_turn"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":null,"params":null,"error":null}"#,
            r#"{"jsonrpc":"2.0","id":{"odd":[1,2]},"method":3,"params":[1,"s"]}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"error":{"code":-32602,"message":"bad","data":{}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"error":"not an object"}"#,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":"x"}}"#,
            r#"{"method":"m","params":{"sessionId":5,"update":[1]}}"#,
            r#"{"method":"m","params":{"sessionId":"s\"q"}}"#,
            r#"{"id":1,"id":2,"method":"dup"}"#,
            r#"{"method":"m","params":{"sessionId":"a","sessionId":"b"}}"#,
            r#"  {"method":"spaces" , "id" : 3 }  "#,
            r#"[1,2]"#,
            r#""just a string""#,
        ];
        for line in lines {
            let value: Value = serde_json::from_str(line).unwrap();
            let read = Envelope::read(line).expect(line);
            let full = Envelope::of_value(&value);
            assert_eq!(read.method, full.method, "{line}");
            assert_eq!(read.id_key(), full.id_key(), "{line}");
            assert_eq!(read.params_session, full.params_session, "{line}");
            assert_eq!(read.result_session, full.result_session, "{line}");
            assert_eq!(read.error, full.error, "{line}");
            assert_eq!(read.has_result, full.has_result, "{line}");
            assert_eq!(read.kind(), full.kind(), "{line}");
            assert_eq!(read.request_id(), full.request_id(), "{line}");
        }
        assert!(Envelope::read("not json").is_none());
        assert!(Envelope::read(r#"{"method":"m""#).is_none());
    }

    #[test]
    fn ids_meet_whatever_their_spelling() {
        let key = |line| Envelope::read(line).unwrap().id_key();
        assert_eq!(key(r#"{"id": 1 ,"result":{}}"#).as_deref(), Some("1"));
        assert_eq!(
            key(r#"{"id":"\u0061","result":{}}"#).as_deref(),
            Some("\"a\"")
        );
        assert_eq!(key(r#"{"result":{}}"#), None);
    }

    #[test]
    fn plain_response_splits_only_the_usual_shape_with_a_json_integer_id() {
        fn split(line: &str) -> Option<(i64, &str)> {
            plain_response(line)
        }
        assert_eq!(
            split(r#"{"jsonrpc":"2.0","id":42,"result":{"content":"x"}}"#),
            Some((42, r#"{"content":"x"}"#))
        );
        assert_eq!(
            split(r#"{"jsonrpc":"2.0","id":-7,"result":null} "#),
            Some((-7, "null"))
        );
        assert_eq!(
            split(r#"{"jsonrpc":"2.0","id":0,"result":1}"#),
            Some((0, "1"))
        );
        for other in [
            r#"{"jsonrpc":"2.0","id":"7","result":1}"#,
            r#"{"jsonrpc":"2.0","id":07,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":-,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1-2,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","result":1,"id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1]"#,
        ] {
            assert_eq!(split(other), None, "{other}");
        }
    }

    #[test]
    fn plain_notification_splits_only_the_usual_shape() {
        fn split(line: &str) -> Option<(&str, &str)> {
            plain_notification(line)
        }
        assert_eq!(
            split(r#"{"jsonrpc":"2.0","method":"session/update","params":{"a":[1]}} "#),
            Some(("session/update", r#"{"a":[1]}"#))
        );
        // Not validated: the decoder's full parse is what rejects this one.
        assert_eq!(
            split(r#"{"jsonrpc":"2.0","method":"m","params":{"a":1},"id":2}"#),
            Some(("m", r#"{"a":1},"id":2"#))
        );
        assert_eq!(
            split(r#"{"jsonrpc":"2.0","method":"m","params":{}"#),
            Some(("m", "{"))
        );
        for other in [
            r#"{"method":"m","jsonrpc":"2.0","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{}]"#,
            r#"{"jsonrpc":"2.0","method":"a\"b","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"a\u0062","params":{}}"#,
            "{\"jsonrpc\":\"2.0\",\"method\":\"a\tb\",\"params\":{}}",
            r#"{ "jsonrpc":"2.0","method":"m","params":{}}"#,
        ] {
            assert_eq!(split(other), None, "{other}");
        }
    }

    #[test]
    fn kind_and_session_follow_the_fields() {
        let read = |line| Envelope::read(line).unwrap();
        let r = read(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}"#,
        );
        assert_eq!((r.kind(), r.session_id()), (Kind::Request, Some("s")));
        let n = read(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"t"}}"#);
        assert_eq!((n.kind(), n.session_id()), (Kind::Notification, Some("t")));
        let a = read(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"u"}}"#);
        assert_eq!((a.kind(), a.session_id()), (Kind::Response, Some("u")));
        let e = read(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}"#);
        assert_eq!((e.kind(), e.error), (Kind::Response, Some(Some(-32601))));
        assert_eq!(read(r#"{"jsonrpc":"2.0","id":1}"#).kind(), Kind::Invalid);
    }
}
