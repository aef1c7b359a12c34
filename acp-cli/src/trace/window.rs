//! The bounded window of a live trace: the newest [`LIMIT`] messages of a run, each kept as
//! the skeleton the analysis reads (method, id, session, update kind, error), so a long run
//! or a huge message never grows memory without bound.
//!
//! A message's skeleton is a JSON-RPC object with only `method`, `id`, `params.sessionId`,
//! `params.protocolVersion`, `params.update.sessionUpdate` (with a v2 `state_update`'s
//! `state` and `stopReason`), `result.sessionId`, `result.stopReason` and
//! `result.protocolVersion` (a `result` with none of them is kept as `null`) and
//! `error.code`/`error.message`, each string cut to [`FIELD_BYTES`]; a line that is not a
//! JSON object is kept as its first [`FIELD_BYTES`] bytes (still not one). So an entry is at
//! most [`ENTRY_BYTES`] and the window at most [`LIMIT`] entries. The analysis
//! ([`super::view::analyse`]) reads the window as a trace that may start mid-run.
//!
//! A line no longer than [`ENTRY_BYTES`] may be held as it is ([`Window::push_line`]) and
//! cut to its skeleton only when the window is analysed ([`Snapshot::analysis`], out of any
//! lock): `acp serve`'s connections hand every message over on their routing task, where a
//! copy costs less than a parse, and the analysis, paced by what it costs, reads each line
//! at most a few times rather than every message once as it passes.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use acp_rpc::envelope::Envelope;
use serde_json::{Map, Value};

use super::record::{self, Record};
use super::view::{self, Analysis, LiveWindow, Trace};

/// Messages kept: the newest of the run.
pub const LIMIT: usize = 5000;

/// The longest string kept of any field (cut at a character boundary).
pub const FIELD_BYTES: usize = 200;

/// The longest skeleton of one message: ten cut strings (an error's `code` may be one),
/// each at most six times its length once JSON-escaped, plus the keys and two numbers.
pub const ENTRY_BYTES: usize = 10 * 6 * FIELD_BYTES + 320;

/// What the window holds of one message.
#[derive(Clone, Debug)]
enum Held {
    /// Its skeleton.
    Skeleton(String),
    /// The line itself (at most [`ENTRY_BYTES`]), from connection `connection` of a server
    /// (its ids are shown as `N:ID`); cut to its skeleton at analysis.
    Line { text: Arc<str>, connection: u64 },
}

impl Held {
    fn len(&self) -> usize {
        match self {
            Held::Skeleton(s) => s.len(),
            Held::Line { text, .. } => text.len(),
        }
    }

    fn skeleton(&self) -> String {
        match self {
            Held::Skeleton(s) => s.clone(),
            Held::Line { text, connection } => skeleton_tagged(text, Some(*connection)),
        }
    }
}

/// One message of the window.
#[derive(Clone, Debug)]
struct Entry {
    /// Its number since the start of the run.
    number: usize,
    ts: f64,
    dir: Cow<'static, str>,
    seq: u64,
    held: Held,
}

impl Entry {
    fn record(&self) -> (usize, Record) {
        let mut r = Record::new(self.ts, &self.dir);
        r.seq = Some(self.seq);
        r.line = Some(self.held.skeleton());
        (self.number, r)
    }
}

/// The newest messages of a run, plus its start and exit.
#[derive(Debug)]
pub struct Window {
    messages: VecDeque<Entry>,
    limit: usize,
    total: u64,
    bytes: usize,
    start: Option<Record>,
    exit: Option<Record>,
}

impl Window {
    /// An empty window keeping at most `limit` messages.
    pub fn new(limit: usize) -> Window {
        Window {
            messages: VecDeque::with_capacity(limit.min(1024)),
            limit: limit.max(1),
            total: 0,
            bytes: 0,
            start: None,
            exit: None,
        }
    }

    /// Takes one record: a start or exit is kept as such, a protocol line as its skeleton
    /// (the oldest message leaves when the window is full).
    pub fn push(&mut self, r: &Record) {
        match r.dir.as_str() {
            record::START => self.start = Some(r.clone()),
            record::EXIT => self.exit = Some(r.clone()),
            dir => {
                let line = skeleton(r.line.as_deref().unwrap_or(""));
                let dir = match dir {
                    record::CLIENT_TO_AGENT => Cow::Borrowed(record::CLIENT_TO_AGENT),
                    record::AGENT_TO_CLIENT => Cow::Borrowed(record::AGENT_TO_CLIENT),
                    other => Cow::Owned(other.to_owned()),
                };
                self.push_held(r.ts, dir, r.seq, Held::Skeleton(line));
            }
        }
    }

    /// Takes one protocol line of connection `connection` (its ids shown as `N:ID`), seen at
    /// `ts` going `dir`: held as it is when it is no longer than [`ENTRY_BYTES`] (cut to its
    /// skeleton at analysis), else cut now.
    pub fn push_line(&mut self, ts: f64, dir: &'static str, connection: u64, line: &str) {
        let held = if line.len() <= ENTRY_BYTES {
            Held::Line {
                text: Arc::from(line),
                connection,
            }
        } else {
            Held::Skeleton(skeleton_tagged(line, Some(connection)))
        };
        self.push_held(ts, Cow::Borrowed(dir), None, held);
    }

    fn push_held(&mut self, ts: f64, dir: Cow<'static, str>, seq: Option<u64>, held: Held) {
        self.total += 1;
        debug_assert!(held.len() <= ENTRY_BYTES);
        self.bytes += held.len();
        if self.messages.len() == self.limit
            && let Some(old) = self.messages.pop_front()
        {
            self.bytes -= old.held.len();
        }
        self.messages.push_back(Entry {
            number: self.total as usize,
            ts,
            dir,
            seq: seq.unwrap_or(self.total),
            held,
        });
    }

    /// Messages held now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Bytes of the skeletons and lines held now.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Messages seen since the start.
    #[cfg(test)]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// What [`Snapshot::analysis`] needs, taken quickly (under a lock, say): the messages
    /// (lines are shared, not copied), the start and exit, and how much of the run the
    /// window holds.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            messages: self.messages.iter().cloned().collect(),
            start: self.start.clone(),
            exit: self.exit.clone(),
            live: LiveWindow {
                total: self.total,
                limit: self.limit,
            },
        }
    }

    /// The analysis of what the window holds, with how much of the run that is.
    #[cfg(test)]
    pub fn analysis(&self) -> Analysis {
        self.snapshot().analysis()
    }
}

/// A copy of a window's content ([`Window::snapshot`]).
#[derive(Debug)]
pub struct Snapshot {
    messages: Vec<Entry>,
    start: Option<Record>,
    exit: Option<Record>,
    live: LiveWindow,
}

impl Snapshot {
    /// The window as a trace (line numbers are message numbers since the start), each
    /// message cut to its skeleton.
    fn trace(&self) -> Trace {
        let partial = self.live.total > self.messages.len() as u64;
        let mut records = Vec::with_capacity(self.messages.len() + 2);
        // The start's time would stretch the timeline over messages no longer held.
        if let Some(start) = self.start.as_ref().filter(|_| !partial) {
            records.push((0, start.clone()));
        }
        records.extend(self.messages.iter().map(Entry::record));
        if let Some(exit) = &self.exit {
            records.push((self.live.total as usize + 1, exit.clone()));
        }
        Trace {
            records,
            problems: Vec::new(),
            partial,
        }
    }

    /// The analysis of the copy (the slow part, out of any lock).
    pub fn analysis(self) -> Analysis {
        let mut analysis = view::analyse(&self.trace());
        if analysis.command.is_none() {
            analysis.command = self.start.and_then(|s| s.command);
        }
        analysis.live = Some(self.live);
        analysis
    }
}

/// `text` cut to at most [`FIELD_BYTES`] bytes, at a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= FIELD_BYTES {
        return text;
    }
    let mut end = FIELD_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn cut_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(cut(s).to_owned()),
        Value::Number(_) | Value::Null | Value::Bool(_) => value.clone(),
        other => Value::String(cut(&other.to_string()).to_owned()),
    }
}

/// A string field of `obj` at `path`, cut.
fn string_at(obj: &Value, path: &[&str]) -> Option<Value> {
    let mut at = obj;
    for key in path {
        at = at.get(key)?;
    }
    Some(Value::String(cut(at.as_str()?).to_owned()))
}

/// The skeleton of one protocol line (see the module doc).
pub fn skeleton(line: &str) -> String {
    skeleton_tagged(line, None)
}

/// [`skeleton`], with the id (if any, and not null) shown as the string `"N:ID"` when
/// `connection` is `Some(N)` (`acp serve` numbers its connections: ids repeat across them).
///
/// One pass over the line through acp-rpc's envelope reader
/// ([`Envelope::read_detailed`]), allocating only what it keeps; a field of a shape the
/// envelope does not keep (a `method` that is not a string, an `error` without an integer
/// `code`) and a line that is not an object go through a full parse instead, with the same
/// result.
pub fn skeleton_tagged(line: &str, connection: Option<u64>) -> String {
    if line.trim_start().starts_with('{')
        && let Some(out) = skeleton_of_envelope(line, connection)
    {
        return out;
    }
    skeleton_full(line, connection)
}

/// [`skeleton_tagged`] from the envelope of the line; `None` when it is not one or holds a
/// field the envelope does not keep as it is.
fn skeleton_of_envelope(line: &str, connection: Option<u64>) -> Option<String> {
    let (envelope, details) = Envelope::read_detailed(line)?;
    if matches!(envelope.method, Some(None)) || matches!(envelope.error, Some(None)) {
        return None;
    }
    // What the envelope does not read (the handshake's versions, how a turn ended, a v2
    // state) is in few messages: those take the full parse. A result is looked at as text
    // first, so a large answer (a file's contents) is not parsed whole for nothing.
    let result_has_more = envelope.has_result
        && envelope.result_session.is_none()
        && (line.contains("\"stopReason\"") || line.contains("\"protocolVersion\""));
    if envelope.method_name() == Some("initialize")
        || details.update_kind.as_deref() == Some("state_update")
        || result_has_more
    {
        return None;
    }
    let string = |s: Option<&str>| s.map(|s| Value::String(cut(s).to_owned()));
    let mut out = Map::new();
    out.insert("jsonrpc".into(), Value::String("2.0".into()));
    if let Some(method) = string(envelope.method_name()) {
        out.insert("method".into(), method);
    }
    if let Some(id) = envelope.id.as_deref() {
        let full: Value = serde_json::from_str(id).ok()?;
        out.insert("id".into(), tagged(cut_value(&full), &full, connection));
    }
    let mut params = Map::new();
    if let Some(s) = string(envelope.params_session.as_deref()) {
        params.insert("sessionId".into(), s);
    }
    if let Some(kind) = string(details.update_kind.as_deref()) {
        let mut update = Map::new();
        update.insert("sessionUpdate".into(), kind);
        params.insert("update".into(), Value::Object(update));
    }
    if !params.is_empty() {
        out.insert("params".into(), Value::Object(params));
    }
    if envelope.has_result {
        let result = match string(envelope.result_session.as_deref()) {
            Some(s) => Value::Object(Map::from_iter([("sessionId".to_owned(), s)])),
            None => Value::Null,
        };
        out.insert("result".into(), result);
    }
    if let Some(code) = envelope.error.flatten() {
        let mut e = Map::new();
        e.insert("code".into(), Value::from(code));
        if let Some(message) = string(details.error_message.as_deref()) {
            e.insert("message".into(), message);
        }
        out.insert("error".into(), Value::Object(e));
    }
    Some(Value::Object(out).to_string())
}

/// [`skeleton_tagged`] by a full parse of the line.
fn skeleton_full(line: &str, connection: Option<u64>) -> String {
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
        return cut(line).to_owned();
    };
    let obj = Value::Object(obj);
    let mut out = Map::new();
    out.insert("jsonrpc".into(), Value::String("2.0".into()));
    if let Some(method) = obj.get("method") {
        out.insert("method".into(), cut_value(method));
    }
    if let Some(id) = obj.get("id") {
        out.insert("id".into(), tagged(cut_value(id), id, connection));
    }
    let mut params = Map::new();
    if let Some(s) = string_at(&obj, &["params", "sessionId"]) {
        params.insert("sessionId".into(), s);
    }
    if let Some(version) = version_at(&obj, "params") {
        params.insert("protocolVersion".into(), version);
    }
    if let Some(kind) = string_at(&obj, &["params", "update", "sessionUpdate"]) {
        let mut update = Map::new();
        update.insert("sessionUpdate".into(), kind);
        for field in ["state", "stopReason"] {
            if let Some(value) = string_at(&obj, &["params", "update", field]) {
                update.insert(field.into(), value);
            }
        }
        params.insert("update".into(), Value::Object(update));
    }
    if !params.is_empty() {
        out.insert("params".into(), Value::Object(params));
    }
    if obj.get("result").is_some() {
        let mut result = Map::new();
        for field in ["sessionId", "stopReason"] {
            if let Some(value) = string_at(&obj, &["result", field]) {
                result.insert(field.into(), value);
            }
        }
        if let Some(version) = version_at(&obj, "result") {
            result.insert("protocolVersion".into(), version);
        }
        let result = if result.is_empty() {
            Value::Null
        } else {
            Value::Object(result)
        };
        out.insert("result".into(), result);
    }
    if let Some(error) = obj.get("error") {
        let mut e = Map::new();
        if let Some(code) = error.get("code") {
            e.insert("code".into(), cut_value(code));
        }
        if let Some(message) = string_at(error, &["message"]) {
            e.insert("message".into(), message);
        }
        out.insert("error".into(), Value::Object(e));
    }
    Value::Object(out).to_string()
}

/// `protocolVersion` of `obj[outer]` when it is a version number (a `u16` in every version).
fn version_at(obj: &Value, outer: &str) -> Option<Value> {
    let version = obj.get(outer)?.get("protocolVersion")?.as_u64()?;
    (version <= u64::from(u16::MAX)).then(|| Value::from(version))
}

/// `kept` (the cut id), or the id `full` shown as `"N:ID"` for `connection` N.
fn tagged(kept: Value, full: &Value, connection: Option<u64>) -> Value {
    let Some(connection) = connection.filter(|_| !full.is_null()) else {
        return kept;
    };
    let shown = match full {
        Value::String(s) => format!("{connection}:{s}"),
        other => format!("{connection}:{other}"),
    };
    Value::String(cut(&shown).to_owned())
}

#[cfg(test)]
mod tests;
