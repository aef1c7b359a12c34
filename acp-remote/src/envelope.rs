//! What routing reads of an agent's message (the server routing it to a stream, the client
//! noting what later POSTs need): the method, the id, the `sessionId` of the params or of the
//! result, and an error's code, borrowed from the line in one pass with everything else
//! skipped unparsed. A `serde_json::Value` of every streamed chunk (a map per object, a string
//! per key) cost more than the rest of the work on it.
//!
//! Any JSON the full parse accepts is read the same way: a field of an unexpected type is
//! kept as "present" (a `method` that is a number still makes a request or notification),
//! and a line the one pass cannot read (a duplicate key, a top level that is not an object)
//! goes through a full parse instead ([`Envelope::read`]).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use acp_rpc::RequestId;

/// The fields of one message that routing and observing read.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Envelope<'a> {
    /// `Some` when the message has a `method` (of any type); the name when it is a string.
    pub(crate) method: Option<Option<Cow<'a, str>>>,
    /// The `id` as it was written (`null` included), when there is one.
    pub(crate) id: Option<Cow<'a, str>>,
    /// `params.sessionId`, when it is a string.
    pub(crate) params_session: Option<Cow<'a, str>>,
    /// `result.sessionId`, when it is a string.
    pub(crate) result_session: Option<Cow<'a, str>>,
    /// Whether there is an `error`, and its `code` when that is an integer.
    pub(crate) error: Option<Option<i64>>,
}

impl<'a> Envelope<'a> {
    /// Reads `line`; `None` when it is not JSON.
    pub(crate) fn read(line: &'a str) -> Option<Envelope<'a>> {
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
                result_session: result.and_then(|r| r.0),
                error: error.map(|e| e.0),
            });
        }
        let value = serde_json::from_str::<Value>(line).ok()?;
        Some(Envelope::of_value(&value))
    }

    /// The same fields from a full parse (what [`Envelope::read`] falls back to).
    pub(crate) fn of_value(value: &Value) -> Envelope<'a> {
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
            result_session: session("result"),
            error: value
                .get("error")
                .map(|e| e.get("code").and_then(Value::as_i64)),
        }
    }

    /// The key its answer's waiter is kept under: the id as JSON, written the way
    /// `serde_json` writes a parsed id (so `1` and a request's `1` meet, whatever spacing or
    /// escapes either side used).
    pub(crate) fn id_key(&self) -> Option<String> {
        let raw = self.id.as_deref()?;
        Some(match serde_json::from_str::<Value>(raw) {
            Ok(id) => id.to_string(),
            Err(_) => raw.to_owned(),
        })
    }

    /// The id as an observer is told it: an integer or a string.
    pub(crate) fn request_id(&self) -> Option<RequestId> {
        match serde_json::from_str::<Value>(self.id.as_deref()?).ok()? {
            Value::Number(n) => n.as_i64().map(RequestId::Int),
            Value::String(s) => Some(RequestId::Str(s)),
            _ => None,
        }
    }

    /// The method's name, when it has a string one.
    pub(crate) fn method_name(&self) -> Option<&str> {
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
}
