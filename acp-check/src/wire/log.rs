//! The record of the wire: every line numbered, timed and classified ([`Log`],
//! [`Entry`], [`Kind`]), what the kit's calls got back ([`Reply`], [`NoReply`]), and the
//! bounded findings the checks read.

use std::time::{Duration, Instant};

use acp_rpc::envelope::Envelope;
use serde_json::Value;

/// How much of a line is kept for evidence.
pub(crate) const EVIDENCE: usize = 300;
/// How many lines the log keeps per connection (later ones are counted, not kept).
pub(crate) const MAX_LOG: usize = 100_000;
/// How many findings of one kind are kept (later ones are counted).
pub(crate) const MAX_FINDINGS: usize = 20;

/// Which way a line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    ToAgent,
    FromAgent,
}

/// A line as the checks look at it.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub seq: u64,
    pub at: Instant,
    pub dir: Dir,
    pub kind: Kind,
    /// The start of the line, for evidence.
    pub text: String,
    /// The whole line's length in bytes.
    pub len: usize,
}

impl Entry {
    /// The line for a report: its place in the run's order (the `seq` of `--trace`) and
    /// its start.
    pub fn evidence(&self) -> String {
        format!("[seq {}] {}", self.seq, self.text)
    }
}

/// What a line was.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// Not a JSON object.
    NotJson,
    Request {
        id: Value,
        method: String,
        /// Its `params.sessionId`, if any.
        session: Option<String>,
        /// `session/request_permission`: the `toolCall.toolCallId` it asks about.
        tool_call: Option<String>,
    },
    Notification {
        method: String,
        session: Option<String>,
        /// `session/update`: the update's `sessionUpdate` and its `toolCallId`, if any.
        update: Option<String>,
        tool_call: Option<String>,
    },
    Response {
        id: Value,
        error: Option<i64>,
        /// The `sessionId` of a result that carries one (`session/new`).
        session: Option<String>,
    },
}

/// Findings made while lines were read.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub entries: Vec<Entry>,
    pub dropped: usize,
    /// Agent lines that were not JSON (`robustness.stdout_protocol_only`).
    pub not_json: Findings,
    /// Agent messages that do not validate (`schema.agent_messages`).
    pub invalid: Findings,
    /// Agent messages validated.
    pub validated: usize,
    /// `session/update`s of turn content for a session id not announced yet (session,
    /// evidence); those whose session a later answer announces arrived early
    /// ([`Wire::early_updates`]). Session metadata may arrive at any time.
    pub unannounced: Vec<(String, String)>,
}

/// A bounded list of findings with a count of all of them.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub first: Vec<String>,
    pub count: usize,
}

impl Findings {
    pub(crate) fn push(&mut self, finding: String) {
        self.count += 1;
        if self.first.len() < MAX_FINDINGS {
            self.first.push(finding);
        }
    }
}

/// The agent's answer to one of the kit's requests.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    /// The whole message.
    pub message: Value,
    /// How long after the request was written.
    pub elapsed: Duration,
    pub seq: u64,
}

impl Reply {
    pub fn result(&self) -> Option<&Value> {
        self.message.get("result")
    }
    /// `(code, message)` of an error answer.
    pub fn error(&self) -> Option<(i64, String)> {
        let error = self.message.get("error")?;
        Some((
            error
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(i64::MIN),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        ))
    }
    /// The answer, short, for evidence.
    pub fn describe(&self) -> String {
        match self.error() {
            Some((code, message)) => format!("error {code} ({})", cut(&message, 120)),
            None => format!(
                "result {}",
                cut(
                    &self.result().map(Value::to_string).unwrap_or_default(),
                    160
                )
            ),
        }
    }
}

/// Why [`Wire::call`] got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NoReply {
    /// No answer within the bound.
    Timeout(Duration),
    /// The agent closed its stdout (or exited) first.
    Closed,
}

impl std::fmt::Display for NoReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoReply::Timeout(d) => write!(f, "no answer within {} ms", d.as_millis()),
            NoReply::Closed => f.write_str("the agent closed the connection without answering"),
        }
    }
}

/// What a line the kit writes is (for the log).
pub(crate) fn classify(line: &[u8]) -> Kind {
    serde_json::from_slice::<Value>(line)
        .ok()
        .filter(Value::is_object)
        .as_ref()
        .map_or(Kind::NotJson, kind_of)
}

pub(crate) fn kind_of(message: &Value) -> Kind {
    // Method, session ids and error code as acp-rpc's envelope reads them (the one reader
    // of the tree); the id is kept as the JSON value, and the update kind and tool call
    // (which no envelope carries) are read from the params.
    let envelope = Envelope::of_value(message);
    let str_at = |v: &Value, path: &[&str]| {
        let mut v = v;
        for key in path {
            v = v.get(key)?;
        }
        v.as_str().map(str::to_owned)
    };
    let params = message.get("params").unwrap_or(&Value::Null);
    let session = envelope.params_session.as_deref().map(str::to_owned);
    match (envelope.method_name(), message.get("id").cloned()) {
        (Some(method), Some(id)) => Kind::Request {
            id,
            method: method.to_owned(),
            session,
            // v1 names the tool call at `toolCall`, v2 at `subject.toolCall`.
            tool_call: str_at(params, &["toolCall", "toolCallId"])
                .or_else(|| str_at(params, &["subject", "toolCall", "toolCallId"])),
        },
        (Some(method), None) => Kind::Notification {
            method: method.to_owned(),
            session,
            update: str_at(params, &["update", "sessionUpdate"]),
            tool_call: str_at(params, &["update", "toolCallId"]),
        },
        (None, id) => Kind::Response {
            id: id.unwrap_or(Value::Null),
            error: envelope.error.flatten(),
            session: envelope.result_session.as_deref().map(str::to_owned),
        },
    }
}

/// The `session/update` kinds that are a turn's content: only these count as early or late.
/// Session metadata (`available_commands_update`, `session_info_update`,
/// `current_mode_update`, `config_option_update`, `usage_update`, and kinds the kit does not
/// know) describes the session, not a turn, and may arrive at any time.
const TURN_CONTENT: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];

/// Whether an update of kind `kind` (its `sessionUpdate`) is turn content ([`TURN_CONTENT`]).
pub(crate) fn is_turn_content(kind: Option<&str>) -> bool {
    kind.is_some_and(|k| TURN_CONTENT.contains(&k))
}

pub(crate) use acp_rpc::sync::lock;

pub(crate) use crate::text::cut;

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
