//! The kit's place on the wire: every line between the kit and the agent passes through here.
//!
//! The agent's stdout is read line by line (bounded), each line is numbered, timed, recorded
//! in a [`Log`], validated against the v1 types and passed on: answers to the kit's own
//! requests go to the waiting check ([`Wire::call`]); the agent's requests and notifications
//! go to an `acp_client::ClientConnection` serving the kit's client (files, permissions,
//! terminals). Lines the kit writes (its requests, deliberately malformed ones, and the
//! client's answers) go out through one writer task, so each leaves whole and in order. The
//! kit's requests bypass the typed client on purpose: a check needs the exact answer (the
//! error code, `id: null`), not a decoded one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_client::ClientConnection;
use acp_types::v1::{AgentNotification, AgentRequest, AgentResponse};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

mod log;

pub(crate) use log::*;

/// The longest agent line the kit reads whole (a longer one is reported and skipped).
pub const MAX_LINE: usize = 32 * 1024 * 1024;
/// Receives every line the kit and the agent exchange, for `--trace`.
pub type TraceSink = Arc<dyn Fn(TraceEvent<'_>) + Send + Sync>;

/// What a [`TraceSink`] is told, in the order it happened.
#[derive(Clone, Copy, Debug)]
pub enum TraceEvent<'a> {
    /// An agent was started (each fresh connection starts one).
    Start {
        /// Its command line (`["in-process"]` for an agent run in process).
        command: &'a [String],
    },
    /// One line crossed.
    Line {
        /// Place in the order of both directions over the whole run.
        seq: u64,
        /// Seconds since the Unix epoch.
        ts: f64,
        /// `true` for kit -> agent (the agent's stdin).
        to_agent: bool,
        /// The line without its newline (repaired if it was not UTF-8).
        line: &'a str,
        /// The line was not valid UTF-8.
        lossy: bool,
    },
    /// The agent's connection ended.
    Exit {
        /// Its exit code, when it was a process that exited.
        code: Option<i32>,
        /// The signal that ended it.
        signal: Option<i32>,
    },
}

struct Pending {
    method: String,
    sent: Instant,
    tx: oneshot::Sender<Reply>,
}

struct Shared {
    /// The next line's `seq`, over the whole run. Locked while a line is numbered and
    /// handed to the trace, so the trace gets lines in `seq` order (both directions number
    /// lines on tasks of their own).
    seq: Arc<Mutex<u64>>,
    log: Mutex<Log>,
    pending: Mutex<HashMap<i64, Pending>>,
    /// Session ids the agent has announced (a `session/new` answer) or the kit named
    /// (`session/load`, `session/resume`, a deliberately unknown id).
    sessions: Mutex<std::collections::HashSet<String>>,
    trace: Option<TraceSink>,
}

impl Shared {
    fn record(&self, dir: Dir, line: &[u8], kind: Kind) -> (u64, Instant) {
        let text = String::from_utf8_lossy(line);
        // Numbered, traced and logged in one step: the trace and the log hold lines in
        // `seq` order.
        let mut next = lock(&self.seq);
        let seq = *next;
        *next += 1;
        let at = Instant::now();
        if let Some(trace) = &self.trace {
            trace(TraceEvent::Line {
                seq,
                ts: unix_now(),
                to_agent: dir == Dir::ToAgent,
                line: &text,
                lossy: std::str::from_utf8(line).is_err(),
            });
        }
        let mut log = lock(&self.log);
        if log.entries.len() < MAX_LOG {
            log.entries.push(Entry {
                seq,
                at,
                dir,
                kind,
                text: cut(&text, EVIDENCE),
                len: line.len(),
            });
        } else {
            log.dropped += 1;
        }
        drop(next);
        (seq, at)
    }
}

/// One connection to one agent.
pub(crate) struct Wire {
    shared: Arc<Shared>,
    /// Taken by [`Wire::close`], so the writer ends and the agent sees EOF.
    out: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// Request ids, shared by every connection of a run so a trace never holds one id twice.
    next_id: Arc<AtomicI64>,
    closed: watch::Receiver<bool>,
    pub client: ClientConnection,
}

impl Wire {
    /// Starts the pumps between the agent (`from_agent`, `to_agent`) and a
    /// `ClientConnection` serving `client`.
    pub fn start<C, R, W>(
        client: Arc<C>,
        from_agent: R,
        to_agent: W,
        (seq, next_id): (Arc<Mutex<u64>>, Arc<AtomicI64>),
        trace: Option<TraceSink>,
    ) -> Wire
    where
        C: acp_client::Client,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared {
            seq,
            log: Mutex::default(),
            pending: Mutex::default(),
            sessions: Mutex::default(),
            trace,
        });
        // The typed client reads what the agent asks through one pipe and answers through
        // the other.
        let (client_in, mut pump_to_client) = tokio::io::duplex(1 << 20);
        let (client_out, pump_from_client) = tokio::io::duplex(1 << 20);
        let client = ClientConnection::with_client(
            client,
            client_in,
            client_out,
            acp_rpc::Config::default(),
        );
        let (out, mut out_rx) = mpsc::channel::<Vec<u8>>(1024);
        let (closed_tx, closed) = watch::channel(false);

        // Writer: every line to the agent goes out here, recorded as it leaves.
        let writer_shared = shared.clone();
        tokio::spawn(async move {
            let mut to_agent = to_agent;
            while let Some(line) = out_rx.recv().await {
                let kind = classify(&line);
                writer_shared.record(Dir::ToAgent, &line, kind);
                let mut framed = line;
                framed.push(b'\n');
                if to_agent.write_all(&framed).await.is_err() || to_agent.flush().await.is_err() {
                    break;
                }
            }
            let _ = to_agent.shutdown().await;
        });

        // The client's answers to the agent's requests join the same writer.
        let client_lines = out.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(pump_from_client);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match lines.read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    buf.pop();
                }
                if client_lines.send(buf.clone()).await.is_err() {
                    break;
                }
            }
        });

        // Reader: the agent's stdout.
        let reader_shared = shared.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(from_agent);
            loop {
                let line = match read_line(&mut reader, MAX_LINE).await {
                    Ok(Some(Line::Whole(line))) => line,
                    Ok(Some(Line::Oversized(len))) => {
                        let finding = format!("a line of {len} bytes (longer than the kit reads)");
                        reader_shared.record(Dir::FromAgent, finding.as_bytes(), Kind::NotJson);
                        lock(&reader_shared.log).invalid.push(finding);
                        continue;
                    }
                    Ok(None) | Err(_) => break,
                };
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let message: Option<Value> =
                    serde_json::from_slice(&line).ok().filter(Value::is_object);
                let kind = message.as_ref().map_or(Kind::NotJson, kind_of);
                let (seq, at) = reader_shared.record(Dir::FromAgent, &line, kind.clone());
                let Some(message) = message else {
                    lock(&reader_shared.log).not_json.push(format!(
                        "[seq {seq}] `{}`",
                        cut(&String::from_utf8_lossy(&line), 160)
                    ));
                    continue;
                };
                reader_shared.inspect(&message, &kind, &line, seq);
                match kind {
                    Kind::Response { id, .. } => {
                        let waiting = id
                            .as_i64()
                            .and_then(|id| lock(&reader_shared.pending).remove(&id));
                        if let Some(p) = waiting {
                            let _ = p.tx.send(Reply {
                                message,
                                elapsed: at.saturating_duration_since(p.sent),
                                seq,
                            });
                        }
                    }
                    _ => {
                        let mut framed = line;
                        framed.push(b'\n');
                        if pump_to_client.write_all(&framed).await.is_err() {
                            break;
                        }
                    }
                }
            }
            // Waiting calls learn the agent is gone (their senders drop).
            lock(&reader_shared.pending).clear();
            let _ = closed_tx.send(true);
        });

        Wire {
            shared,
            out: Mutex::new(Some(out)),
            next_id,
            closed,
            client,
        }
    }

    /// Sends a request and waits at most `bound` for its answer.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        bound: Duration,
    ) -> Result<Reply, NoReply> {
        let (id, rx) = self.send_request(method, params).await?;
        self.wait(id, rx, bound).await
    }

    /// Sends a request; [`Wire::wait`] waits for its answer.
    pub async fn send_request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<(i64, oneshot::Receiver<Reply>), NoReply> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(
            id,
            Pending {
                method: method.to_owned(),
                sent: Instant::now(),
                tx,
            },
        );
        self.send_line(message.to_string().into_bytes()).await?;
        Ok((id, rx))
    }

    /// Waits at most `bound` for the answer to request `id`. A connection that closes ends
    /// the wait at once, also when it closed before the request was registered (an agent
    /// that exits at once): the reader had cleared the pending requests already, so the
    /// request's sender would only drop at the end of the bound.
    pub async fn wait(
        &self,
        id: i64,
        mut rx: oneshot::Receiver<Reply>,
        bound: Duration,
    ) -> Result<Reply, NoReply> {
        let mut closed = self.closed.clone();
        let answer = tokio::time::timeout(bound, async {
            tokio::select! {
                reply = &mut rx => reply.ok(),
                // Every answer the agent sent was delivered before the close was signalled.
                _ = closed.wait_for(|c| *c) => rx.try_recv().ok(),
            }
        })
        .await;
        match answer {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => {
                lock(&self.shared.pending).remove(&id);
                Err(NoReply::Closed)
            }
            Err(_) => {
                lock(&self.shared.pending).remove(&id);
                Err(NoReply::Timeout(bound))
            }
        }
    }

    /// Waits up to `bound` for an answer, keeping the request pending when none comes: the
    /// receiver is handed back, to wait again with [`Wire::wait`].
    pub async fn wait_keeping(
        &self,
        mut rx: oneshot::Receiver<Reply>,
        bound: Duration,
    ) -> Result<Reply, oneshot::Receiver<Reply>> {
        match tokio::time::timeout(bound, &mut rx).await {
            Ok(Ok(reply)) => Ok(reply),
            _ => Err(rx),
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), NoReply> {
        let message = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_line(message.to_string().into_bytes()).await
    }

    /// Sends `line` exactly as given (plus the newline).
    pub async fn send_line(&self, line: Vec<u8>) -> Result<(), NoReply> {
        let Some(out) = lock(&self.out).clone() else {
            return Err(NoReply::Closed);
        };
        match tokio::time::timeout(Duration::from_secs(5), out.send(line)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(NoReply::Closed),
            Err(_) => Err(NoReply::Timeout(Duration::from_secs(5))),
        }
    }

    /// Ends the connection: the agent's stdin closes once queued lines are written.
    pub fn close(&self) {
        lock(&self.out).take();
        self.client.close();
    }

    /// Notes a session id the kit names itself, so updates for it are not "early".
    pub fn know_session(&self, id: &str) {
        lock(&self.shared.sessions).insert(id.to_owned());
    }

    /// The sequence number the next line will get (a mark to look at what came after).
    pub fn mark(&self) -> u64 {
        *lock(&self.shared.seq)
    }

    /// Updates that arrived before the answer announcing their session (an update for a
    /// session never announced is a wrong session id, graded elsewhere).
    pub fn early_updates(&self) -> Vec<String> {
        let sessions = lock(&self.shared.sessions);
        lock(&self.shared.log)
            .unannounced
            .iter()
            .filter(|(session, _)| sessions.contains(session))
            .map(|(_, finding)| finding.clone())
            .collect()
    }

    /// Runs `f` on the log.
    pub fn with_log<T>(&self, f: impl FnOnce(&Log) -> T) -> T {
        f(&lock(&self.shared.log))
    }

    /// Whether the agent's side has ended.
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }
}

impl Shared {
    /// Validates an agent message against the v1 types and notes early updates.
    fn inspect(&self, message: &Value, kind: &Kind, line: &[u8], seq: u64) {
        let problem = self.validate(message, kind);
        let mut log = lock(&self.log);
        log.validated += 1;
        if let Some(problem) = problem {
            log.invalid.push(format!(
                "[seq {seq}] {problem}: `{}`",
                cut(&String::from_utf8_lossy(line), 160)
            ));
        }
        match kind {
            Kind::Response {
                session: Some(session),
                error: None,
                ..
            } => {
                lock(&self.sessions).insert(session.clone());
            }
            Kind::Notification {
                method,
                session: Some(session),
                update,
                ..
            } if method == "session/update"
                && crate::checks::is_turn_content(update.as_deref())
                && !lock(&self.sessions).contains(session)
                && log.unannounced.len() < MAX_LOG =>
            {
                let finding = format!(
                    "[seq {seq}] a `{}` update for session {session} arrived before the answer that created it",
                    update.as_deref().unwrap_or("?")
                );
                log.unannounced.push((session.clone(), finding));
            }
            _ => {}
        }
    }

    fn validate(&self, message: &Value, kind: &Kind) -> Option<String> {
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some("no `\"jsonrpc\": \"2.0\"`".into());
        }
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match kind {
            Kind::NotJson => None,
            Kind::Request { method, id, .. } => {
                if !(id.is_i64() || id.is_u64() || id.is_string()) {
                    return Some(format!("request id {id} is neither a number nor a string"));
                }
                AgentRequest::decode(method, params)
                    .err()
                    .map(|e| format!("`{method}` request: {e}"))
            }
            Kind::Notification { method, .. } => AgentNotification::decode(method, params)
                .err()
                .map(|e| format!("`{method}` notification: {e}")),
            Kind::Response { id, error, .. } => {
                if let Some(e) = message.get("error") {
                    if error.is_none()
                        || !e.get("message").is_some_and(Value::is_string)
                        || message.get("result").is_some()
                    {
                        return Some("an error answer without an integer code and a message (or with a result too)".into());
                    }
                    return None;
                }
                let Some(result) = message.get("result") else {
                    return Some("an answer with neither result nor error".into());
                };
                let method = id
                    .as_i64()
                    .and_then(|id| lock(&self.pending).get(&id).map(|p| p.method.clone()));
                let method = method?;
                AgentResponse::decode(&method, result.clone())
                    .err()
                    .map(|e| format!("`{method}` answer: {e}"))
            }
        }
    }
}

enum Line {
    Whole(Vec<u8>),
    Oversized(usize),
}

/// Reads one line (without its end) of at most `max` bytes; a longer one is skipped to its
/// end without being kept.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut buf = Vec::new();
    let n = (&mut *reader)
        .take(max as u64 + 1)
        .read_until(b'\n', &mut buf)
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        return Ok(Some(Line::Whole(buf)));
    }
    if buf.len() <= max {
        // The last line, without a newline.
        return Ok(Some(Line::Whole(buf)));
    }
    let mut len = buf.len();
    drop(buf);
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            break;
        }
        if let Some(i) = chunk.iter().position(|b| *b == b'\n') {
            len += i;
            reader.consume(i + 1);
            break;
        }
        let n = chunk.len();
        len += n;
        reader.consume(n);
    }
    Ok(Some(Line::Oversized(len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &'static [u8], max: usize) -> Vec<String> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        while let Some(line) = read_line(&mut reader, max).await.unwrap() {
            out.push(match line {
                Line::Whole(l) => String::from_utf8(l).unwrap(),
                Line::Oversized(len) => format!("<{len} bytes skipped>"),
            });
        }
        out
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_to_its_end_and_reading_goes_on() {
        assert_eq!(
            lines(b"short\r\nmuch too long a line\nok\nlast", 8).await,
            ["short", "<20 bytes skipped>", "ok", "last"]
        );
        assert_eq!(
            lines(b"12345678\n123456789", 8).await,
            ["12345678", "<9 bytes skipped>"]
        );
    }

    #[test]
    fn lines_are_classified_with_their_session_and_update() {
        let update = kind_of(
            &serde_json::json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s1", "update": {"sessionUpdate": "tool_call", "toolCallId": "t1"}}}),
        );
        assert_eq!(
            update,
            Kind::Notification {
                method: "session/update".into(),
                session: Some("s1".into()),
                update: Some("tool_call".into()),
                tool_call: Some("t1".into()),
            }
        );
        let answer = kind_of(
            &serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}),
        );
        assert_eq!(
            answer,
            Kind::Response {
                id: Value::Null,
                error: Some(-32700),
                session: None
            }
        );
        assert_eq!(classify(b"not json"), Kind::NotJson);
        assert_eq!(classify(b"[1]"), Kind::NotJson);
    }
}
