//! The envelope of a JSON-RPC message read without parsing it whole: the one envelope reader
//! of the tree. The engine's fast paths, acp-remote's routing and observers read messages
//! through it.
//!
//! - [`Envelope::read`]: what routing and observing read of a message (its kind, method, id,
//!   the `sessionId` of its params or result, an error's code), borrowed from the text in one
//!   pass with everything else skipped unparsed. A `serde_json::Value` of every streamed
//!   chunk (a map per object, a string per key) costs more than the rest of the work on it.
//! - [`Envelope::read_detailed`]: the same, plus the [`Details`] a trace shows (a
//!   `session/update`'s kind, an error's message), in the same one pass. It is a separate
//!   reading so that the engine's and routing's [`Envelope::read`] skip those fields.
//! - [`plain_notification`] (and [`is_plain_notification`] on bytes) and [`plain_response`]: the usual shapes the engine writes,
//!   split by their fixed heads without any parse at all (the engine's read fast paths).
//!
//! Any JSON the full parse accepts is read the same way by [`Envelope::read`]: a field of an
//! unexpected type is kept as "present" (a `method` that is a number still makes a request
//! or notification), and a text the one pass cannot read (a duplicate key, a top level that
//! is not an object) goes through a full parse instead. It does not validate the message:
//! that is the engine's parse ([`Message::parse`](crate::Message::parse)).

use std::borrow::Cow;

use serde_json::Value;

use crate::message::RequestId;

mod one_pass;
mod plain;
#[cfg(test)]
mod tests;

pub use plain::{is_plain_notification, plain_notification, plain_response};

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
            && let Ok(wire) = serde_json::from_str::<one_pass::Wire<'a>>(line)
        {
            return Some(wire.envelope());
        }
        let value = serde_json::from_str::<Value>(line).ok()?;
        Some(Envelope::of_value(&value))
    }

    /// Reads `line` as [`Envelope::read`] does, with the [`Details`] a trace shows, in the
    /// same one pass; `None` when it is not JSON.
    pub fn read_detailed(line: &'a str) -> Option<(Envelope<'a>, Details<'a>)> {
        if line.trim_start().starts_with('{')
            && let Ok(wire) = serde_json::from_str::<one_pass::DetailedWire<'a>>(line)
        {
            return Some(wire.split());
        }
        let value = serde_json::from_str::<Value>(line).ok()?;
        Some((Envelope::of_value(&value), Details::of_value(&value)))
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

/// What a trace shows of a message beyond its [`Envelope`]: read only by
/// [`Envelope::read_detailed`], so routing and the engine never pay for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Details<'a> {
    /// `params.update.sessionUpdate` (a `session/update`'s kind), when it is a string.
    pub update_kind: Option<Cow<'a, str>>,
    /// `error.message`, when it is a string.
    pub error_message: Option<Cow<'a, str>>,
}

impl<'a> Details<'a> {
    /// The same fields from a full parse (what [`Envelope::read_detailed`] falls back to).
    pub fn of_value(value: &Value) -> Details<'a> {
        let string = |v: Option<&Value>| Some(Cow::Owned(v?.as_str()?.to_owned()));
        Details {
            update_kind: string(
                value
                    .get("params")
                    .and_then(|p| p.get("update"))
                    .and_then(|u| u.get("sessionUpdate")),
            ),
            error_message: string(value.get("error").and_then(|e| e.get("message"))),
        }
    }
}
