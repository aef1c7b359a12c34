//! One ACP connection of the server ("Connections and sessions" in the RFD): the agent behind
//! it, the pumps to and from the agent, and the routing of the agent's messages to the
//! connection-scoped stream or to a session's stream.
//!
//! Routing reads the JSON: a request or notification of the agent goes to the stream of the
//! session its `params.sessionId` names when this connection knows that session, else to the
//! connection stream; an answer goes where the request it answers asked (the session named by
//! the POST's `Acp-Session-Id`, else the connection stream). One task reads the agent's output
//! in order and pushes to the streams in that order, so each stream keeps the agent's order.
//! Sessions are keyed by connection: another connection's session id names nothing here.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::outbox::{Budget, Outbox};
use crate::metrics::Metrics;
use crate::security::{Identity, Limits};
use acp_rpc::envelope::Envelope;
use acp_rpc::observe::{MessageEvent, MessageKind, Observer, RequestEvent, SharedObserver};
use acp_rpc::sync::lock;
use acp_rpc::{Direction, ErrorCode};

mod agent;
mod agent_output;
mod to_agent;
mod to_client;

pub(crate) use agent::{Guard, Input, Output, OutputSlot, Running};
use agent_output::CloseOnDrop;
pub(crate) use agent_output::RoutedOutput;

/// JSON-RPC code of a refusal by the transport (a limit reached).
pub(crate) const LIMIT_CODE: i64 = -32000;
/// Messages queued towards the agent before a POST waits.
const TO_AGENT_QUEUE: usize = 64;
/// Client requests the agent has not answered yet, per connection; past it a request is
/// answered with a JSON-RPC error instead of forwarded (memory stays bounded even with an
/// agent that never answers).
const MAX_PENDING: usize = 4096;

/// Who is told about a connection's traffic: the server's metrics and the observer of
/// [`crate::ServerBuilder::observe`]. A connection tells them through one
/// [`acp_rpc::Observers`] fan-out ([`Observers::into_shared`]).
pub(crate) struct Observers {
    pub(crate) metrics: Option<Arc<Metrics>>,
    pub(crate) other: Option<SharedObserver>,
}

impl Observers {
    /// The one observer a connection tells: `None` when there is nobody to tell.
    fn into_shared(self) -> Option<SharedObserver> {
        let mut all = acp_rpc::Observers::new();
        if let Some(metrics) = self.metrics {
            all = all.with(metrics);
        }
        if let Some(other) = self.other {
            all = all.with(other);
        }
        all.into_shared()
    }
}

/// A client request the agent has not answered yet, with what the metrics need of it.
struct Waiting {
    to: Pending,
    /// With metrics on: when it was forwarded, and its method.
    timing: Option<(Instant, String)>,
}

/// Where the answer to a client's request goes.
enum Pending {
    /// `initialize` over HTTP: the POST waits for it.
    Initialize(oneshot::Sender<Bytes>),
    /// The stream of `session` (the POST's `Acp-Session-Id`), else the connection stream;
    /// `creates` when it is a `session/new` or `session/fork`, whose answer registers the
    /// session it names.
    Answer {
        session: Option<String>,
        creates: bool,
    },
}

#[derive(Default)]
struct Routing {
    sessions: HashMap<String, Arc<Outbox>>,
    pending: HashMap<String, Waiting>,
    /// `session/new`/`session/fork` sent and not yet answered (they count against the limit).
    creating: usize,
}

/// Why a client message was not forwarded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The named session is not one of this connection's (404).
    UnknownSession,
    /// The connection has ended (404).
    Closed,
    /// Over [`Limits::max_messages_per_second`] (429, or a JSON-RPC error over WebSocket).
    RateLimited,
    /// Over [`Limits::max_inbound_bytes`]: the agent has not read enough of the connection's
    /// earlier messages (429, or a JSON-RPC error over WebSocket).
    Backlog,
}

/// One ACP connection: its agent, routing state and streams.
pub(crate) struct Conn {
    pub(crate) id: String,
    pub(crate) identity: Identity,
    /// WebSocket: every message goes to the one stream.
    pub(crate) websocket: bool,
    to_agent: mpsc::Sender<(Bytes, OwnedSemaphorePermit)>,
    /// [`Limits::max_inbound_bytes`]: a permit per byte queued towards the agent, given back
    /// once the message is written to it.
    inbound: Arc<Semaphore>,
    routing: std::sync::Mutex<Routing>,
    pub(crate) main: Arc<Outbox>,
    budget: Arc<Budget>,
    pub(crate) closed: CancellationToken,
    last_seen: std::sync::Mutex<Instant>,
    /// Readers attached (SSE streams or the WebSocket): a connection with one is not idle.
    attached: AtomicUsize,
    guard: std::sync::Mutex<Option<Guard>>,
    pub(crate) limits: Arc<Limits>,
    ended: AtomicBool,
    /// [`Limits::max_messages_per_second`].
    rate: std::sync::Mutex<crate::security::RateBucket>,
    metrics: Option<Arc<Metrics>>,
    /// Told about every message and answered request ([`Observers::into_shared`]).
    observer: Option<SharedObserver>,
    /// The session guard (MCP policy, served root), set once after start.
    guard_sessions: std::sync::OnceLock<Arc<super::guard::SessionGuard>>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("id", &self.id).finish()
    }
}

impl Conn {
    /// Starts the pumps between the agent and the new connection.
    pub(crate) fn start(
        id: String,
        identity: Identity,
        websocket: bool,
        agent: Running,
        limits: Arc<Limits>,
        observers: Observers,
    ) -> Arc<Conn> {
        let (to_agent, mut rx) = mpsc::channel::<(Bytes, OwnedSemaphorePermit)>(TO_AGENT_QUEUE);
        let inbound = Arc::new(Semaphore::new(inbound_permits(&limits)));
        let budget = Arc::new(Budget::default());
        let conn = Arc::new(Conn {
            id,
            identity,
            websocket,
            to_agent,
            inbound,
            routing: std::sync::Mutex::new(Routing::default()),
            main: Arc::new(Outbox::new(budget.clone())),
            budget,
            closed: CancellationToken::new(),
            last_seen: std::sync::Mutex::new(Instant::now()),
            attached: AtomicUsize::new(0),
            guard: std::sync::Mutex::new(agent.guard),
            rate: std::sync::Mutex::new(crate::security::RateBucket::new(
                limits.max_messages_per_second,
            )),
            limits,
            ended: AtomicBool::new(false),
            metrics: observers.metrics.clone(),
            observer: observers.into_shared(),
            guard_sessions: std::sync::OnceLock::new(),
        });
        let mut input = agent.input;
        let writer = conn.clone();
        let closer = CloseOnDrop(conn.clone(), "the agent's input closed");
        tokio::spawn(async move {
            let _closer = closer;
            loop {
                let message = tokio::select! {
                    m = rx.recv() => m,
                    () = writer.closed.cancelled() => None,
                };
                let Some((message, _permit)) = message else {
                    break;
                };
                let written = match &mut input {
                    Input::Pipe(pipe) => async {
                        pipe.write_all(&message).await?;
                        pipe.write_all(b"\n").await?;
                        pipe.flush().await
                    }
                    .await
                    .is_ok(),
                    // A whole message, as the client sent it: no line end, no copy.
                    Input::Frames(frames) => frames.send(message).await.is_ok(),
                };
                if !written {
                    break;
                }
                // `_permit` goes here: the message's bytes leave the queue.
            }
            drop(input);
        });
        match agent.output {
            Output::Pipe(output) => agent_output::pump_from_pipe(conn.clone(), output),
            Output::Frames(frames) => agent_output::pump_frames(conn.clone(), frames),
            Output::Routed(slot) => slot.attach(&conn),
        }
        conn
    }

    /// Holds this connection's session requests to `guard` (before any is forwarded).
    pub(crate) fn set_guard(&self, guard: Option<Arc<super::guard::SessionGuard>>) {
        if let Some(guard) = guard {
            let _ = self.guard_sessions.set(guard);
        }
    }

    /// Marks activity (a request or a frame), for the idle timeout.
    pub(crate) fn touch(&self) {
        *lock(&self.last_seen) = Instant::now();
    }

    /// Whether the connection has had no request and no reader for the idle timeout.
    pub(crate) fn is_idle(&self) -> bool {
        self.attached.load(Ordering::Relaxed) == 0
            && lock(&self.last_seen).elapsed() >= self.limits.idle_timeout
    }

    /// Counts a reader for as long as the returned guard lives.
    pub(crate) fn reader(self: &Arc<Self>) -> ReaderGuard {
        self.attached.fetch_add(1, Ordering::Relaxed);
        self.touch();
        ReaderGuard(self.clone())
    }

    /// Ends the connection: streams end, the agent is ended (a gateway child reaped).
    pub(crate) fn close(&self, why: &str) {
        self.end(why, false);
    }

    /// Ends the connection because its agent broke the protocol: each of the client's
    /// requests still waiting for an answer is answered with a JSON-RPC error (`-32000`,
    /// `why`) on the stream its answer was due on, the streams deliver what they hold and
    /// end, and the agent is ended (a gateway child reaped). `initialize`'s POST, if it
    /// waits, is answered `502`.
    pub(crate) fn fail(&self, why: &str) {
        if self.ended.load(Ordering::SeqCst) {
            return;
        }
        let answers: Vec<(Arc<Outbox>, Bytes)> = {
            let mut routing = lock(&self.routing);
            let pending: Vec<_> = routing.pending.drain().collect();
            pending
                .into_iter()
                .filter_map(|(id, waiting)| {
                    let Pending::Answer { session, .. } = waiting.to else {
                        return None;
                    };
                    let id = serde_json::from_str::<Value>(&id).ok()?;
                    let outbox = session
                        .and_then(|s| routing.sessions.get(&s).cloned())
                        .unwrap_or_else(|| self.main.clone());
                    Some((outbox, refusal(&id, why)))
                })
                .collect()
        };
        for (outbox, answer) in answers {
            outbox.push(answer);
        }
        self.end(why, true);
    }

    /// [`Conn::close`]; with `flush`, the streams deliver what they hold before they end.
    fn end(&self, why: &str, flush: bool) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::debug!(conn = %self.id, why, "connection closed");
        self.closed.cancel();
        let ending = |outbox: &Outbox| match flush {
            true => outbox.finish(),
            false => outbox.close(),
        };
        ending(&self.main);
        let sessions: Vec<_> = lock(&self.routing)
            .sessions
            .drain()
            .map(|(_, o)| o)
            .collect();
        if let Some(metrics) = &self.metrics {
            metrics.connection_closed(sessions.len());
        }
        for outbox in sessions {
            ending(&outbox);
        }
        if let Some(guard) = lock(&self.guard).take() {
            guard.end(self.metrics.clone());
        }
    }

    /// The outbox of one of this connection's sessions.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Outbox>> {
        lock(&self.routing).sessions.get(id).cloned()
    }

    /// Registers `initialize`'s id: its answer comes back through the returned receiver.
    pub(crate) fn expect_initialize(&self, id: &Value) -> oneshot::Receiver<Bytes> {
        let (tx, rx) = oneshot::channel();
        let waiting = Waiting {
            to: Pending::Initialize(tx),
            timing: None,
        };
        lock(&self.routing).pending.insert(id.to_string(), waiting);
        rx
    }
}

/// Tells the metrics about one message routed (`direction` as the remote client sees the
/// server: `Incoming` from the client), from what routing has read anyway.
fn observe_message(
    observer: &dyn Observer,
    direction: Direction,
    message: &Envelope<'_>,
    line: &[u8],
) {
    let method = message.method_name();
    let id = message.request_id();
    let kind = match (&message.method, &id) {
        (Some(_), Some(_)) => MessageKind::Request,
        (Some(_), None) => MessageKind::Notification,
        (None, _) => MessageKind::Response,
    };
    let event = MessageEvent::new_external(direction, kind, method, id.as_ref(), line.len(), line);
    observer.message(&event);
}

/// Tells the metrics a client request was answered, `latency` after it was forwarded.
fn observe_answer(observer: &dyn Observer, answer: &Envelope<'_>, method: &str, latency: Duration) {
    let outcome = match answer.error {
        None => Ok(()),
        Some(code) => Err(ErrorCode(
            code.and_then(|c| i32::try_from(c).ok()).unwrap_or(0),
        )),
    };
    let Some(id) = answer.request_id() else {
        return;
    };
    let event = RequestEvent::new(Direction::Incoming, method, &id, latency, outcome);
    observer.request(&event);
}

/// The permits of [`Limits::max_inbound_bytes`] (at least one message's worth, within what a
/// semaphore holds and what one message may ask for).
fn inbound_permits(limits: &Limits) -> usize {
    limits.max_inbound_bytes.clamp(1, u32::MAX as usize >> 3)
}

/// A JSON-RPC error answer to `id` for a request the transport refused.
pub(crate) fn refusal(id: &Value, message: &str) -> Bytes {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": LIMIT_CODE, "message": message},
    });
    Bytes::from(error.to_string())
}

/// Keeps a connection counted as read while it lives.
pub(crate) struct ReaderGuard(Arc<Conn>);

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.0.attached.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

#[cfg(test)]
pub(crate) mod tests;
