//! `acp trace view FILE [--html OUT]`: reads a trace ([`load`]), pairs requests with their
//! responses and sums it up ([`analyse`]) as a plain-text summary ([`summary`]) or a page
//! ([`super::html`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::record::{self, Record};

/// A trace as read: its records and the lines that could not be read, by line number.
#[derive(Debug, Default)]
pub struct Trace {
    /// The records, in file order, with their line numbers.
    pub records: Vec<(usize, Record)>,
    /// "line N: what is wrong" for every line that is not a record.
    pub problems: Vec<String>,
    /// The records start mid-run (a live window that let its oldest go): a response to a
    /// request before them is expected, not a problem.
    pub partial: bool,
}

/// Reads a trace file. Only an unreadable file is an error; bad lines are `problems`.
pub fn load(path: &Path) -> Result<Trace, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(parse(&bytes))
}

/// Parses trace text (see [`load`]).
pub fn parse(bytes: &[u8]) -> Trace {
    let mut trace = Trace::default();
    let ends_with_newline = bytes.last() == Some(&b'\n');
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let count = lines.len();
    for (i, line) in lines.into_iter().enumerate() {
        let number = i + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let last = number == count && !ends_with_newline;
        match Record::parse(line) {
            Ok(record) => trace.records.push((number, record)),
            Err(e) if last && e.is_eof() => trace.problems.push(format!(
                "line {number}: truncated (the file ends inside a record)"
            )),
            Err(e) => trace
                .problems
                .push(format!("line {number}: not a trace record ({e})")),
        }
    }
    trace
}

/// One protocol message of the trace.
#[derive(Clone, Debug, Serialize)]
pub struct Message {
    /// Line number in the trace file.
    pub line: usize,
    /// Milliseconds since the first record.
    pub t: f64,
    /// `c2a` or `a2c`.
    pub dir: &'static str,
    /// `request`, `notification`, `response`, `error` (an error response) or `invalid`.
    pub kind: &'static str,
    /// The method (for a response: its request's).
    pub method: Option<String>,
    /// The id, as JSON text.
    pub id: Option<String>,
    /// The session it concerns, if it names one.
    pub session: Option<String>,
    /// `sessionUpdate` of a `session/update`.
    pub update: Option<String>,
    /// The session's foreground state a v2 `state_update` reports: `running`,
    /// `requires_action` or `idle`.
    pub state: Option<String>,
    /// How a turn ended: the `stopReason` of a v1 `session/prompt` answer or of a v2 `idle`
    /// `state_update`.
    pub stop_reason: Option<String>,
    /// Error code and message of an error response.
    pub error: Option<String>,
    /// For a request: the index of its response; for a response: of its request.
    pub pair: Option<usize>,
    /// For a request and its response: milliseconds between them.
    pub latency: Option<f64>,
}

/// Latency figures of one request method.
#[derive(Clone, Debug, Serialize)]
pub struct MethodStats {
    /// Requests sent.
    pub requests: usize,
    /// Error responses.
    pub errors: usize,
    /// Requests never answered.
    pub unanswered: usize,
    /// Latencies in milliseconds, sorted.
    pub latencies: Vec<f64>,
}

/// A session's state at the end of the trace.
#[derive(Clone, Debug, Serialize)]
pub struct SessionHealth {
    /// The session id.
    pub id: String,
    /// `open`, `prompting`, `waiting` (v2: the agent's work waits on the user,
    /// `requires_action`), `errored` or `ended`. In v2 a prompt is answered as soon as it is
    /// accepted and the turn runs until the agent reports `idle`: the state follows the
    /// session's `state_update`s.
    pub state: &'static str,
    /// How its last turn ended, when the trace shows it.
    pub stop_reason: Option<String>,
    /// Prompts sent.
    pub prompts: usize,
    /// Error responses about it.
    pub errors: usize,
    /// Notifications by `sessionUpdate` kind.
    pub updates: BTreeMap<String, usize>,
}

/// Everything the views show.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// The messages in order.
    pub messages: Vec<Message>,
    /// Request methods.
    pub requests: BTreeMap<String, MethodStats>,
    /// Notification methods and their counts.
    pub notifications: BTreeMap<String, usize>,
    /// Sessions.
    pub sessions: Vec<SessionHealth>,
    /// Messages per time bucket: `[start ms, client to agent, agent to client]`.
    pub timeline: Vec<(f64, usize, usize)>,
    /// Duration in milliseconds.
    pub duration: f64,
    /// The protocol version spoken: the agent's answer to `initialize`, else the version the
    /// client offered (`None` without a handshake in the trace).
    pub protocol: Option<u64>,
    /// The agent's command line, if recorded.
    pub command: Option<Vec<String>>,
    /// How the agent exited, if recorded.
    pub exit: Option<String>,
    /// Problems: unreadable lines, lines that are not JSON-RPC, unmatched responses.
    pub problems: Vec<String>,
    /// For a live window: how much of the run it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveWindow>,
}

/// What a live window ([`super::window`]) holds of the run.
#[derive(Clone, Debug, Serialize)]
pub struct LiveWindow {
    /// Messages seen since the start.
    pub total: u64,
    /// The most messages the window keeps (the newest).
    pub limit: usize,
}

/// The value at quantile `q` of sorted `values` (nearest rank).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The records in the order they crossed: `start` first, then the protocol lines by `seq`
/// (the file holds each direction in order, but the two directions may interleave
/// differently), then the rest (`exit`) where they were.
fn in_crossing_order(records: &[(usize, Record)]) -> Vec<&(usize, Record)> {
    let mut ordered: Vec<&(usize, Record)> = records.iter().collect();
    ordered.sort_by_key(|(line, r)| match (r.dir.as_str(), r.seq) {
        (record::START, _) => (0, 0, *line),
        (_, Some(seq)) => (1, seq, *line),
        _ => (2, 0, *line),
    });
    ordered
}

/// Pairs, counts and sums up a trace.
pub fn analyse(trace: &Trace) -> Analysis {
    let records = in_crossing_order(&trace.records);
    let start = records.first().map_or(0.0, |(_, r)| r.ts);
    let mut messages: Vec<Message> = Vec::new();
    let mut problems = trace.problems.clone();
    let mut pending: HashMap<(&'static str, String), usize> = HashMap::new();
    let mut requests: BTreeMap<String, MethodStats> = BTreeMap::new();
    let mut notifications: BTreeMap<String, usize> = BTreeMap::new();
    let mut command = None;
    let mut exit = None;
    let mut offered: Option<u64> = None;
    let mut answered: Option<u64> = None;
    for (line_no, r) in records.iter().copied() {
        let t = (r.ts - start) * 1000.0;
        let dir = match r.dir.as_str() {
            record::CLIENT_TO_AGENT => "c2a",
            record::AGENT_TO_CLIENT => "a2c",
            record::START => {
                command = r.command.clone();
                continue;
            }
            record::EXIT => {
                exit = Some(match (r.code, r.signal) {
                    (Some(code), _) => format!("exit code {code}"),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    _ => "exited".to_owned(),
                });
                continue;
            }
            other => {
                problems.push(format!("line {line_no}: unknown direction {other:?}"));
                continue;
            }
        };
        let text = r.line.as_deref().unwrap_or("");
        let mut m = Message {
            line: *line_no,
            t,
            dir,
            kind: "invalid",
            method: None,
            id: None,
            session: None,
            update: None,
            state: None,
            stop_reason: None,
            error: None,
            pair: None,
            latency: None,
        };
        let value: Option<Value> = serde_json::from_str(text).ok();
        let Some(Value::Object(obj)) = value else {
            problems.push(format!(
                "line {line_no}: the {} line is not a JSON object",
                describe_dir(dir)
            ));
            messages.push(m);
            continue;
        };
        let method = obj.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = obj
            .get("id")
            .filter(|v| !v.is_null())
            .map(|v| v.to_string());
        let params = obj.get("params");
        m.session = params
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let index = messages.len();
        match (method, id) {
            (Some(method), Some(id)) => {
                m.kind = "request";
                requests
                    .entry(method.clone())
                    .or_insert_with(|| MethodStats {
                        requests: 0,
                        errors: 0,
                        unanswered: 0,
                        latencies: Vec::new(),
                    })
                    .requests += 1;
                pending.insert((dir, id.clone()), index);
                if method == "initialize" {
                    offered = params
                        .and_then(|p| p.get("protocolVersion"))
                        .and_then(Value::as_u64);
                }
                m.method = Some(method);
                m.id = Some(id);
            }
            (Some(method), None) => {
                m.kind = "notification";
                *notifications.entry(method.clone()).or_default() += 1;
                let update = params.and_then(|p| p.get("update"));
                let field = |name: &str| {
                    update
                        .and_then(|u| u.get(name))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                m.update = field("sessionUpdate");
                if m.update.as_deref() == Some("state_update") {
                    m.state = field("state");
                    m.stop_reason = field("stopReason");
                }
                m.method = Some(method);
            }
            (None, Some(id)) => {
                let request_dir = if dir == "c2a" { "a2c" } else { "c2a" };
                let error = obj.get("error");
                m.kind = if error.is_some() { "error" } else { "response" };
                if let Some(error) = error {
                    let code = error.get("code").map(|c| c.to_string()).unwrap_or_default();
                    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
                    m.error = Some(format!("{code} {message}"));
                }
                if m.session.is_none() {
                    m.session = obj
                        .get("result")
                        .and_then(|r| r.get("sessionId"))
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                match pending.remove(&(request_dir, id.clone())) {
                    Some(req) => {
                        let latency = t - messages[req].t;
                        messages[req].pair = Some(index);
                        messages[req].latency = Some(latency);
                        m.pair = Some(req);
                        m.latency = Some(latency);
                        m.method = messages[req].method.clone();
                        let result = obj.get("result");
                        match m.method.as_deref() {
                            Some("initialize") => {
                                answered = result
                                    .and_then(|r| r.get("protocolVersion"))
                                    .and_then(Value::as_u64);
                            }
                            Some("session/prompt") => {
                                m.stop_reason = result
                                    .and_then(|r| r.get("stopReason"))
                                    .and_then(Value::as_str)
                                    .map(str::to_owned);
                            }
                            _ => {}
                        }
                        if m.session.is_none() {
                            m.session = messages[req].session.clone();
                        }
                        if let Some(stats) = m.method.as_ref().and_then(|k| requests.get_mut(k)) {
                            stats.latencies.push(latency);
                            if m.error.is_some() {
                                stats.errors += 1;
                            }
                        }
                    }
                    None if trace.partial => {}
                    None => problems.push(format!(
                        "line {line_no}: a response (id {id}) to no request in the trace"
                    )),
                }
                m.id = Some(id);
            }
            (None, None) => {
                problems.push(format!(
                    "line {line_no}: neither a request, a notification nor a response"
                ));
            }
        }
        messages.push(m);
    }
    for stats in requests.values_mut() {
        stats.latencies.sort_by(f64::total_cmp);
    }
    for &index in pending.values() {
        if let Some(stats) = messages[index]
            .method
            .as_ref()
            .and_then(|k| requests.get_mut(k))
        {
            stats.unanswered += 1;
        }
    }
    let duration = messages.last().map_or(0.0, |m| m.t).max(
        trace
            .records
            .last()
            .map_or(0.0, |(_, r)| (r.ts - start) * 1000.0),
    );
    let sessions = session_health(&messages, exit.is_some());
    Analysis {
        timeline: timeline(&messages, duration),
        messages,
        requests,
        notifications,
        sessions,
        duration,
        protocol: answered.or(offered),
        command,
        exit,
        problems,
        live: None,
    }
}

fn describe_dir(dir: &str) -> &'static str {
    if dir == "c2a" {
        "client-to-agent"
    } else {
        "agent-to-client"
    }
}

/// Each session's state at the end of the trace.
fn session_health(messages: &[Message], agent_exited: bool) -> Vec<SessionHealth> {
    let mut order: Vec<String> = Vec::new();
    let mut by_id: HashMap<String, SessionHealth> = HashMap::new();
    let mut prompting: HashMap<String, bool> = HashMap::new();
    let mut errored: HashMap<String, bool> = HashMap::new();
    let mut closed: HashMap<String, bool> = HashMap::new();
    // v2: the foreground state of the session's last `state_update`.
    let mut foreground: HashMap<String, String> = HashMap::new();
    for m in messages {
        let Some(id) = &m.session else { continue };
        let health = by_id.entry(id.clone()).or_insert_with(|| {
            order.push(id.clone());
            SessionHealth {
                id: id.clone(),
                state: "open",
                prompts: 0,
                errors: 0,
                stop_reason: None,
                updates: BTreeMap::new(),
            }
        });
        let method = m.method.as_deref().unwrap_or("");
        match m.kind {
            "request" if method == "session/prompt" => {
                health.prompts += 1;
                prompting.insert(id.clone(), m.pair.is_none());
            }
            "error" => {
                health.errors += 1;
                errored.insert(id.clone(), true);
            }
            "response" if method == "session/prompt" => {
                errored.insert(id.clone(), false);
                if m.stop_reason.is_some() {
                    health.stop_reason.clone_from(&m.stop_reason);
                }
            }
            "response" if method == "session/close" || method == "session/delete" => {
                closed.insert(id.clone(), true);
            }
            "notification" => {
                if let Some(kind) = &m.update {
                    *health.updates.entry(kind.clone()).or_default() += 1;
                }
                if let Some(state) = &m.state {
                    foreground.insert(id.clone(), state.clone());
                    if m.stop_reason.is_some() {
                        health.stop_reason.clone_from(&m.stop_reason);
                    }
                }
            }
            _ => {}
        }
    }
    order
        .into_iter()
        .filter_map(|id| {
            let mut health = by_id.remove(&id)?;
            health.state = if closed.get(&id) == Some(&true) || agent_exited {
                "ended"
            } else if foreground.get(&id).map(String::as_str) == Some("running")
                || prompting.get(&id) == Some(&true)
            {
                "prompting"
            } else if foreground.get(&id).map(String::as_str) == Some("requires_action") {
                "waiting"
            } else if errored.get(&id) == Some(&true) {
                "errored"
            } else {
                "open"
            };
            Some(health)
        })
        .collect()
}

/// Message counts in up to 60 equal time buckets.
fn timeline(messages: &[Message], duration: f64) -> Vec<(f64, usize, usize)> {
    if messages.is_empty() {
        return Vec::new();
    }
    let buckets = 60usize;
    let width = (duration / buckets as f64).max(1.0);
    let count = ((duration / width).floor() as usize + 1).min(buckets + 1);
    let mut out: Vec<(f64, usize, usize)> = (0..count).map(|i| (i as f64 * width, 0, 0)).collect();
    for m in messages {
        let i = ((m.t / width).floor() as usize).min(count - 1);
        if m.dir == "c2a" {
            out[i].1 += 1;
        } else {
            out[i].2 += 1;
        }
    }
    out
}

/// The plain-text summary.
pub fn summary(a: &Analysis, name: &str) -> String {
    let mut s = String::new();
    let c2a = a.messages.iter().filter(|m| m.dir == "c2a").count();
    s.push_str(&format!(
        "trace {name}: {} messages ({c2a} client to agent, {} agent to client) over {:.1}s\n",
        a.messages.len(),
        a.messages.len() - c2a,
        a.duration / 1000.0
    ));
    if let Some(command) = &a.command {
        s.push_str(&format!("agent: {}\n", command.join(" ")));
    }
    if let Some(version) = a.protocol {
        s.push_str(&format!("protocol: v{version}\n"));
    }
    if let Some(exit) = &a.exit {
        s.push_str(&format!("agent exit: {exit}\n"));
    }
    s.push_str("\nrequests                          count  errors  p50 ms   p99 ms  unanswered\n");
    for (method, st) in &a.requests {
        let fmt = |q: Option<f64>| q.map_or("-".to_owned(), |v| format!("{v:.2}"));
        s.push_str(&format!(
            "  {method:<32}{:>5}  {:>6}  {:>7}  {:>7}  {:>10}\n",
            st.requests,
            st.errors,
            fmt(quantile(&st.latencies, 0.5)),
            fmt(quantile(&st.latencies, 0.99)),
            st.unanswered
        ));
    }
    s.push_str("\nnotifications                     count\n");
    for (method, count) in &a.notifications {
        s.push_str(&format!("  {method:<32}{count:>5}\n"));
    }
    if !a.sessions.is_empty() {
        s.push_str("\nsessions\n");
        for h in &a.sessions {
            let ended = h
                .stop_reason
                .as_ref()
                .map_or(String::new(), |r| format!(", last turn: {r}"));
            s.push_str(&format!(
                "  {}  {}  {} prompt(s), {} error(s){ended}\n",
                h.id, h.state, h.prompts, h.errors
            ));
        }
    }
    let errors: Vec<&Message> = a.messages.iter().filter(|m| m.kind == "error").collect();
    if !errors.is_empty() {
        s.push_str("\nerrors\n");
        for m in errors {
            s.push_str(&format!(
                "  line {}: {} (id {}): {}\n",
                m.line,
                m.method.as_deref().unwrap_or("?"),
                m.id.as_deref().unwrap_or("?"),
                m.error.as_deref().unwrap_or("")
            ));
        }
    }
    if !a.problems.is_empty() {
        s.push_str("\nproblems\n");
        for p in &a.problems {
            s.push_str(&format!("  {p}\n"));
        }
    }
    crate::sanitize::terminal_safe(&s)
}

#[cfg(test)]
mod tests;
