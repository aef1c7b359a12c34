//! Reading a recorded cell: the wire transcript the tap wrote, decoded into JSON-RPC messages
//! with requests and responses paired, and the event lines the peers wrote.

use std::path::Path;

use acp_rpc::envelope::Envelope;
use serde_json::Value;

use crate::tap::{Record, Side};

/// What a line on the wire was.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// A request (`id` and `method`).
    Request {
        /// Its id.
        id: Value,
        /// Its method.
        method: String,
    },
    /// A notification (`method`, no `id`).
    Notification {
        /// Its method.
        method: String,
    },
    /// A successful response.
    Result {
        /// The id it answers.
        id: Value,
    },
    /// An error response.
    Error {
        /// The id it answers (`null` for unreadable input).
        id: Value,
        /// The error code.
        code: i64,
    },
    /// Not a JSON-RPC message (not JSON, not an object, or neither shape).
    Invalid,
}

/// One line on the wire, decoded.
#[derive(Clone, Debug)]
pub struct Message {
    /// Its position in the transcript.
    pub seq: u64,
    /// Who wrote it.
    pub from: Side,
    /// The raw text.
    pub raw: String,
    /// The parsed JSON (`Null` if it did not parse).
    pub json: Value,
    /// What it is.
    pub kind: Kind,
}

impl Message {
    fn decode(record: Record) -> Message {
        let json: Value = serde_json::from_str(&record.line).unwrap_or(Value::Null);
        // The envelope as acp-rpc reads it (the one reader of the tree); the id is kept as
        // the JSON value the checks compare.
        let envelope = Envelope::of_value(&json);
        let id = json.get("id").cloned();
        let kind = match (envelope.method_name(), id) {
            (Some(method), Some(id)) => Kind::Request {
                id,
                method: method.to_owned(),
            },
            (Some(method), None) => Kind::Notification {
                method: method.to_owned(),
            },
            (None, Some(id)) if envelope.has_result => Kind::Result { id },
            (None, Some(id)) => match envelope.error.flatten() {
                Some(code) => Kind::Error { id, code },
                None => Kind::Invalid,
            },
            (None, None) => Kind::Invalid,
        };
        Message {
            seq: record.seq,
            from: record.from,
            raw: record.line,
            json,
            kind,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match &self.kind {
            Kind::Request { method, .. } | Kind::Notification { method } => Some(method),
            _ => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&Value> {
        match &self.kind {
            Kind::Request { id, .. } | Kind::Result { id } | Kind::Error { id, .. } => Some(id),
            _ => None,
        }
    }

    /// Whether it is a response (result or error).
    pub fn is_response(&self) -> bool {
        matches!(self.kind, Kind::Result { .. } | Kind::Error { .. })
    }

    /// `params` (or `Null`).
    pub fn params(&self) -> &Value {
        self.json.get("params").unwrap_or(&Value::Null)
    }

    /// `result` (or `Null`).
    pub fn result(&self) -> &Value {
        self.json.get("result").unwrap_or(&Value::Null)
    }

    /// The error code of an error response.
    pub fn error_code(&self) -> Option<i64> {
        match self.kind {
            Kind::Error { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// A whole wire transcript.
#[derive(Clone, Debug, Default)]
pub struct Wire {
    /// Every line in order.
    pub messages: Vec<Message>,
    /// Lines that ended without `\n` (the stream was cut).
    pub partial: usize,
}

impl Wire {
    /// Reads `wire.jsonl` as written by the tap.
    pub fn read(path: &Path) -> Result<Wire, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut wire = Wire::default();
        for (n, line) in text.lines().enumerate() {
            let record = Record::parse(line)
                .map_err(|e| format!("{}:{}: not a tap record: {e}", path.display(), n + 1))?;
            let Some(record) = record else { continue };
            wire.partial += usize::from(record.partial);
            wire.messages.push(Message::decode(record));
        }
        Ok(wire)
    }

    /// Messages written by `side`.
    pub fn from(&self, side: Side) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.from == side)
    }

    /// Requests written by `side` with `method`.
    pub fn requests<'a>(
        &'a self,
        side: Side,
        method: &'a str,
    ) -> impl Iterator<Item = &'a Message> {
        self.from(side)
            .filter(move |m| matches!(&m.kind, Kind::Request { method: m2, .. } if m2 == method))
    }

    /// Notifications written by `side` with `method`.
    pub fn notifications<'a>(
        &'a self,
        side: Side,
        method: &'a str,
    ) -> impl Iterator<Item = &'a Message> {
        self.from(side)
            .filter(move |m| matches!(&m.kind, Kind::Notification { method: m2 } if m2 == method))
    }

    /// Every response to `request` (written by the other side with the same id).
    pub fn responses_to<'a>(&'a self, request: &'a Message) -> Vec<&'a Message> {
        let Some(id) = request.id() else {
            return Vec::new();
        };
        self.from(request.from.other())
            .filter(|m| m.is_response() && m.id() == Some(id))
            .collect()
    }

    /// The (first) response to `request`.
    pub fn response_to<'a>(&'a self, request: &'a Message) -> Option<&'a Message> {
        self.responses_to(request).into_iter().next()
    }

    /// The request a response answers.
    pub fn request_of<'a>(&'a self, response: &'a Message) -> Option<&'a Message> {
        let id = response.id()?;
        self.from(response.from.other())
            .find(|m| matches!(&m.kind, Kind::Request { id: i, .. } if i == id))
    }
}

/// Reads a file of JSON event lines (missing file: no events; bad lines are kept as
/// `{"event": "unreadable", "line": ...}` so a check can name them).
pub fn read_events(path: &Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|_| serde_json::json!({"event": "unreadable", "line": l}))
        })
        .collect()
}

/// Events named `name`.
pub fn events<'a>(events: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> {
    events.iter().filter(move |e| e["event"] == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, from: Side, line: &str) -> Record {
        Record {
            seq,
            us: 0,
            from,
            line: line.to_owned(),
            partial: false,
        }
    }

    #[test]
    fn requests_and_responses_pair_by_id_across_directions() {
        let wire = Wire {
            messages: vec![
                record(
                    1,
                    Side::Client,
                    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
                ),
                record(
                    2,
                    Side::Agent,
                    r#"{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{}}"#,
                ),
                record(
                    3,
                    Side::Client,
                    r#"{"jsonrpc":"2.0","id":0,"result":{"content":"x"}}"#,
                ),
                record(
                    4,
                    Side::Agent,
                    r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"no"}}"#,
                ),
                record(5, Side::Agent, "not json"),
            ]
            .into_iter()
            .map(Message::decode)
            .collect(),
            partial: 0,
        };
        let init = wire.requests(Side::Client, "initialize").next().unwrap();
        let answer = wire.response_to(init).unwrap();
        assert_eq!(answer.seq, 4);
        assert_eq!(answer.error_code(), Some(-32601));
        let read = wire
            .requests(Side::Agent, "fs/read_text_file")
            .next()
            .unwrap();
        assert_eq!(wire.response_to(read).unwrap().seq, 3);
        assert_eq!(
            wire.request_of(answer).unwrap().method(),
            Some("initialize")
        );
        assert_eq!(wire.messages[4].kind, Kind::Invalid);
    }
}
