//! The kit's place on the wire: one acp-rpc connection to the agent, seen line by line.
//!
//! The connection is the engine of `acp-rpc`, serving the kit's client (files, permissions,
//! terminals) through `acp_client::ClientConnection`: it frames lines (bounded), keeps the
//! ids and the pending map, matches answers and writes every line whole and in order. The
//! kit watches through the engine's observer, a tap of its raw lines: every line of both
//! directions is numbered, timed and recorded in a [`Log`] there, and the agent's messages are validated against the
//! types of the version the connection speaks (v1, or v2 with the kit's v2 client). The kit's own requests go through the engine untyped ([`Wire::call`]): a check
//! needs the exact answer (the error code, the whole message), which the tap records for
//! the request's id. Bad input the engine would never write (a malformed line) leaves
//! through its raw-send escape hatch, `acp_rpc::Peer::send_raw` ([`Wire::send_line`]).
//!
//! The engine answers what it cannot read itself: a line from the agent that is not JSON
//! gets `-32700` back and an oversized one `-32600`, as from any acp-rs peer.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_rpc::{CallOptions, Config, Direction, Peer, TapEvent};
use acp_types::v1::{AgentNotification, AgentRequest, AgentResponse};
use acp_types::v2;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

mod log;

pub use crate::trace::{TraceEvent, TraceSink};
pub(crate) use log::*;

/// The longest agent line the kit reads whole (a longer one is reported and skipped).
pub const MAX_LINE: usize = 32 * 1024 * 1024;

/// How long sending one message may wait for room in the outgoing queue.
const SEND_BOUND: Duration = Duration::from_secs(5);

/// One of the kit's requests, as the tap saw it leave, until its answer is recorded or the
/// kit stops waiting: what the answer is validated against (its method) and timed from.
/// (The engine keeps the pending call; this is only what the tap needs to read the answer.)
struct Sent {
    method: String,
    sent: Instant,
}

struct Shared {
    /// The next line's `seq`, over the whole run. Locked while a line is numbered and
    /// handed to the trace, so the trace gets lines in `seq` order (both directions number
    /// lines on tasks of their own).
    seq: Arc<Mutex<u64>>,
    log: Mutex<Log>,
    /// The kit's requests the agent has not answered yet, by id.
    sent: Mutex<HashMap<i64, Sent>>,
    /// Answers to the kit's requests, whole, as the tap read them, until the call waiting
    /// for them takes them.
    answers: Mutex<HashMap<i64, Reply>>,
    /// Told when an answer joins `answers`.
    answered: tokio::sync::Notify,
    /// Told the id of the next request of the kit's as it leaves ([`Wire::send_request`]
    /// sends one request at a time, so the next request the tap sees is that one).
    next_sent: Mutex<Option<oneshot::Sender<i64>>>,
    /// Request ids, shared by every connection of a run so a trace never holds one id
    /// twice: each connection starts where the last one stopped.
    next_id: Arc<AtomicI64>,
    /// Session ids the agent has announced (a `session/new` answer) or the kit named
    /// (`session/load`, `session/resume`, a deliberately unknown id).
    sessions: Mutex<HashSet<String>>,
    trace: Option<TraceSink>,
    /// The connection speaks v2: the agent's messages are read with v2's types.
    v2: bool,
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

    /// The engine's raw lines (its observer's [`Observer::line`](acp_rpc::Observer::line)):
    /// every line of both directions, as it is read or written.
    fn on_tap(&self, event: TapEvent<'_>) {
        match event {
            TapEvent::Line(Direction::Outgoing, line) => self.on_sent(line),
            TapEvent::Line(Direction::Incoming, line) => self.on_received(line),
            TapEvent::OversizedLine { len } => {
                let finding = format!("a line of {len} bytes (longer than the kit reads)");
                self.record(Dir::FromAgent, finding.as_bytes(), Kind::NotJson);
                lock(&self.log).invalid.push(finding);
            }
        }
    }

    /// A line to the agent: the kit's requests, notifications and raw lines, and the
    /// client's answers.
    fn on_sent(&self, line: &[u8]) {
        let kind = classify(line);
        let (_, at) = self.record(Dir::ToAgent, line, kind.clone());
        if let Kind::Request { id, method, .. } = &kind
            && let Some(id) = id.as_i64()
        {
            lock(&self.sent).insert(
                id,
                Sent {
                    method: method.clone(),
                    sent: at,
                },
            );
            self.next_id
                .fetch_max(id.saturating_add(1), Ordering::Relaxed);
            if let Some(tell) = lock(&self.next_sent).take() {
                let _ = tell.send(id);
            }
        }
    }

    /// A line from the agent.
    fn on_received(&self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let message: Option<Value> = serde_json::from_slice(line).ok().filter(Value::is_object);
        let kind = message.as_ref().map_or(Kind::NotJson, kind_of);
        let (seq, at) = self.record(Dir::FromAgent, line, kind.clone());
        let Some(message) = message else {
            lock(&self.log).not_json.push(format!(
                "[seq {seq}] `{}`",
                cut(&String::from_utf8_lossy(line), 160)
            ));
            return;
        };
        self.inspect(&message, &kind, line, seq);
        if let Kind::Response { id, .. } = &kind
            && let Some(id) = id.as_i64()
            && let Some(sent) = lock(&self.sent).remove(&id)
        {
            let reply = Reply {
                message,
                elapsed: at.saturating_duration_since(sent.sent),
                seq,
            };
            lock(&self.answers).insert(id, reply);
            self.answered.notify_waiters();
        }
    }

    /// Stops waiting for an answer to `id` (a later one is not the kit's business).
    fn forget(&self, id: i64) {
        lock(&self.sent).remove(&id);
        lock(&self.answers).remove(&id);
    }

    /// Waits for the answer to `id` as the tap records it, or for `done` (the engine's call
    /// ended: answered, or the connection closed).
    async fn answer(&self, id: i64, mut done: oneshot::Receiver<()>) -> Option<Reply> {
        loop {
            let answered = self.answered.notified();
            tokio::pin!(answered);
            answered.as_mut().enable();
            if let Some(reply) = lock(&self.answers).remove(&id) {
                return Some(reply);
            }
            tokio::select! {
                _ = answered => {}
                _ = &mut done => return lock(&self.answers).remove(&id),
            }
        }
    }
}

/// The kit's client on one connection: v1's ([`crate::client::CheckClient`]) or v2's
/// ([`crate::client::CheckClientV2`]). The agent's messages are validated against the types
/// of the same version.
pub(crate) enum WireClient {
    V1(Arc<crate::client::CheckClient>),
    V2(Arc<crate::client::CheckClientV2>),
}

/// The running connection of either version: what the kit needs of it is its engine's peer.
enum Link {
    V1(acp_client::ClientConnection),
    V2(acp_client::v2::ClientConnection),
}

impl Link {
    fn peer(&self) -> &Peer {
        match self {
            Link::V1(c) => c.peer(),
            Link::V2(c) => c.peer(),
        }
    }

    fn close(&self) {
        match self {
            Link::V1(c) => c.close(),
            Link::V2(c) => c.close(),
        }
    }
}

/// One connection to one agent.
pub(crate) struct Wire {
    shared: Arc<Shared>,
    /// Held while a request is sent, so the tap tells each its id.
    sending: tokio::sync::Mutex<()>,
    client: Link,
}

impl Wire {
    /// Starts an acp-rpc connection to the agent (`from_agent`, `to_agent`) serving
    /// `client`, with the kit's tap on it.
    pub fn start<R, W>(
        client: WireClient,
        from_agent: R,
        to_agent: W,
        (seq, next_id): (Arc<Mutex<u64>>, Arc<AtomicI64>),
        trace: Option<TraceSink>,
    ) -> Wire
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let first_id = next_id.load(Ordering::Relaxed);
        let shared = Arc::new(Shared {
            seq,
            log: Mutex::default(),
            sent: Mutex::default(),
            answers: Mutex::default(),
            answered: tokio::sync::Notify::new(),
            next_sent: Mutex::default(),
            next_id,
            sessions: Mutex::default(),
            trace,
            v2: matches!(client, WireClient::V2(_)),
        });
        let tap = shared.clone();
        // The kit bounds every wait itself, sends `$/cancel_request` only when a check
        // does, and waits on an agent that stops reading as long as a check's bound.
        let config = Config::default()
            .with_max_message_size(MAX_LINE)
            .with_default_timeout(None)
            .with_cancel_on_drop(false)
            .with_write_stall_timeout(None)
            .with_first_request_id(first_id)
            .with_observer(acp_rpc::tap::on_line(move |event: TapEvent<'_>| {
                tap.on_tap(event)
            }));
        let client = match client {
            WireClient::V1(client) => Link::V1(
                acp_client::Builder::shared(client)
                    .config(config)
                    .io(from_agent, to_agent),
            ),
            WireClient::V2(client) => Link::V2(acp_client::v2::connect_with(
                crate::client::V2Handler(client),
                from_agent,
                to_agent,
                config,
            )),
        };
        Wire {
            shared,
            sending: tokio::sync::Mutex::new(()),
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

    /// Sends a request through the engine; [`Wire::wait`] waits for its answer.
    pub async fn send_request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<(i64, oneshot::Receiver<Reply>), NoReply> {
        let peer = self.client.peer().clone();
        if peer.is_closed() {
            return Err(NoReply::Closed);
        }
        let _one_at_a_time = self.sending.lock().await;
        let (tell, mut told) = oneshot::channel();
        *lock(&self.shared.next_sent) = Some(tell);
        let (done_tx, mut done) = oneshot::channel();
        let method = method.to_owned();
        tokio::spawn(async move {
            let options = CallOptions::default().cancel_on_drop(false);
            // The outcome is read from the wire (the whole answer), not from the call.
            let _ = peer.request_raw(&method, &params, options).await;
            let _ = done_tx.send(());
        });
        let id = tokio::select! {
            biased;
            id = &mut told => id.ok(),
            // The call ended first: the tap may still have told the id in between this
            // task's polls (it did, once in a few hundred runs on a loaded machine, and the
            // answered request was reported as a closed connection).
            _ = &mut done => told.try_recv().ok(),
            _ = tokio::time::sleep(SEND_BOUND) => {
                lock(&self.shared.next_sent).take();
                return Err(NoReply::Timeout(SEND_BOUND));
            }
        };
        let Some(id) = id else {
            lock(&self.shared.next_sent).take();
            return Err(NoReply::Closed);
        };
        let (tx, rx) = oneshot::channel();
        let shared = self.shared.clone();
        tokio::spawn(async move {
            if let Some(reply) = shared.answer(id, done).await {
                let _ = tx.send(reply);
            }
        });
        Ok((id, rx))
    }

    /// Waits at most `bound` for the answer to request `id`. A connection that closes ends
    /// the wait at once (the engine fails the call, and no answer was recorded).
    pub async fn wait(
        &self,
        id: i64,
        mut rx: oneshot::Receiver<Reply>,
        bound: Duration,
    ) -> Result<Reply, NoReply> {
        match tokio::time::timeout(bound, &mut rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => {
                self.shared.forget(id);
                Err(NoReply::Closed)
            }
            Err(_) => {
                self.shared.forget(id);
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
        let peer = self.client.peer();
        match tokio::time::timeout(SEND_BOUND, peer.notify(method, &params)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(NoReply::Closed),
            Err(_) => Err(NoReply::Timeout(SEND_BOUND)),
        }
    }

    /// Sends `line` exactly as given (plus the newline), through the engine's raw-send
    /// escape hatch: for the bad-input checks (a malformed line).
    pub async fn send_line(&self, line: Vec<u8>) -> Result<(), NoReply> {
        let peer = self.client.peer();
        match tokio::time::timeout(SEND_BOUND, peer.send_raw(line)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(NoReply::Closed),
            Err(_) => Err(NoReply::Timeout(SEND_BOUND)),
        }
    }

    /// Ends the connection: the agent's stdin closes once queued lines are written.
    pub fn close(&self) {
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

    /// Whether the connection to the agent has ended.
    pub fn is_closed(&self) -> bool {
        self.client.peer().is_closed()
    }
}

impl Shared {
    /// Validates an agent message against the types of the connection's version and notes
    /// early updates.
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
                && is_turn_content(update.as_deref())
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
                let error = if self.v2 {
                    v2::AgentRequest::decode(method, params).err()
                } else {
                    AgentRequest::decode(method, params).err()
                };
                error.map(|e| format!("`{method}` request: {e}"))
            }
            Kind::Notification { method, .. } => {
                let error = if self.v2 {
                    v2::AgentNotification::decode(method, params).err()
                } else {
                    AgentNotification::decode(method, params).err()
                };
                error.map(|e| format!("`{method}` notification: {e}"))
            }
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
                    .and_then(|id| lock(&self.sent).get(&id).map(|p| p.method.clone()));
                let method = method?;
                // A v1 answer to the kit's v2 offer is the negotiation's business (the
                // handshake checks grade it), not a malformed v2 answer.
                if self.v2
                    && method == "initialize"
                    && result.get("protocolVersion") != Some(&Value::from(2))
                {
                    return None;
                }
                let error = if self.v2 {
                    v2::AgentResponse::decode(&method, result.clone()).err()
                } else {
                    AgentResponse::decode(&method, result.clone()).err()
                };
                error.map(|e| format!("`{method}` answer: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
