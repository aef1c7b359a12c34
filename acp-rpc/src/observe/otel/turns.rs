//! The session's span: where a connection's notifications go as events (feature `otel`).
//!
//! A prompt turn streams many notifications (an agent's `session/update`s, a client's
//! `session/cancel`): a span for each would cost more than the message itself. So each
//! notification is an *event* (`acp.notification`) on the span of its session's open turn:
//! the span of the request, sent or received on this connection, that started the turn
//! (`session/prompt`, or `session/load` / `session/resume`, which replay updates) for the
//! notification's `sessionId`. On the client that is its `acp.outgoing_request` span of the
//! prompt; on the agent its `acp.request` span of it. The handler of an incoming
//! notification runs in that span too, so whatever it logs or sends belongs to the turn.
//!
//! Each connection keeps its open turns ([`ConnectionTrace`]); a turn is open from its request's
//! start to its answer (the [`TurnGuard`] drops then). With two open turns for one session,
//! the later one takes the events. A notification with no open turn (no `sessionId`, or
//! between turns) is handled in a span of its own (`acp.notification`), as before.
//!
//! Events are bounded: at most [`MAX_EVENTS`](super::MAX_EVENTS) per turn (the OpenTelemetry SDK's default
//! event limit, past which it would drop them anyway); the turn's span then records how many
//! notifications it saw in all (`acp.notifications`).
//!
//! The connection also learns its role from `initialize` (the side that sends it is the
//! client; or from `session/new` and the turns' requests where the handshake went another
//! way), and every request span then carries `acp.role` (this side) and `acp.peer.role`
//! (the other side): `client` or `agent`.

use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::Recorder;
use super::active::Active;
use crate::sync::lock;

/// The methods whose request opens a turn of its session.
pub const TURN_METHODS: &[&str] = &["session/prompt", "session/load", "session/resume"];

// 0: not known yet.
const ROLE_CLIENT: u8 = 1;
const ROLE_AGENT: u8 = 2;

/// One connection's OpenTelemetry state: where its spans go, its role once known, and its
/// open turns.
pub(crate) struct ConnectionTrace {
    /// The recorder current when the connection was made; `None`: nothing is traced (one
    /// check per message).
    recorder: Option<Recorder>,
    role: AtomicU8,
    /// How many turns are open: the check that spares a lookup (and a scan of the params
    /// for `sessionId`) when none is.
    open: AtomicUsize,
    next_key: AtomicU64,
    /// Counts turns opened and closed: a [`LastTurn`] of an older count is not trusted.
    generation: AtomicU64,
    turns: Mutex<Vec<Turn>>,
}

/// The turn the reader last found an incoming notification's in, with the connection's
/// turn count then: the next notification naming the same session first in its params
/// (as the protocol's writers put it) is in the same turn while no turn has opened or
/// closed since, and is counted there without a lookup (a turn's stream is thousands of
/// them). Kept by the reader, the one caller.
#[derive(Default)]
pub(crate) struct LastTurn(Option<Cached>);

struct Cached {
    generation: u64,
    session: Box<[u8]>,
    active: Arc<Active>,
}

impl Default for ConnectionTrace {
    fn default() -> Self {
        ConnectionTrace {
            recorder: Recorder::current(),
            role: AtomicU8::new(0),
            open: AtomicUsize::new(0),
            next_key: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            turns: Mutex::default(),
        }
    }
}

struct Turn {
    key: u64,
    session: Box<str>,
    active: Arc<Active>,
}

/// Keeps a turn open.
pub(crate) struct TurnGuard {
    trace: Arc<ConnectionTrace>,
    key: u64,
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        let mut turns = lock(&self.trace.turns);
        if let Some(at) = turns.iter().position(|t| t.key == self.key) {
            self.trace.open.fetch_sub(1, Ordering::Relaxed);
            self.trace.generation.fetch_add(1, Ordering::Release);
            turns.swap_remove(at);
        }
    }
}

impl ConnectionTrace {
    /// The connection, by its address: what a span's turn is told apart by.
    pub(crate) fn identity(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Where the connection's spans go, when they are recorded.
    pub(crate) fn recorder(&self) -> Option<&Recorder> {
        self.recorder.as_ref()
    }

    /// Learns the role from a request: the side that sends `initialize` (or, on a connection
    /// whose handshake went another way, such as a remote client's, a session's `new` or a
    /// turn's request) is the client.
    pub(crate) fn request_seen(&self, method: &str, incoming: bool) {
        if method == "initialize" || method == "session/new" || TURN_METHODS.contains(&method) {
            let role = if incoming { ROLE_AGENT } else { ROLE_CLIENT };
            self.role.store(role, Ordering::Relaxed);
        }
    }

    /// This side's role and the peer's, once `initialize` has crossed the connection.
    pub(crate) fn roles(&self) -> Option<(&'static str, &'static str)> {
        match self.role.load(Ordering::Relaxed) {
            ROLE_CLIENT => Some(("client", "agent")),
            ROLE_AGENT => Some(("agent", "client")),
            _ => None,
        }
    }

    /// Opens a turn of `session` when `method` starts one: its notifications are counted
    /// (and the first become events) on `active` until the guard drops.
    pub(crate) fn open_turn(
        self: &Arc<Self>,
        active: &Arc<Active>,
        method: &str,
        session: &str,
    ) -> Option<TurnGuard> {
        if !TURN_METHODS.contains(&method) {
            return None;
        }
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        active.opened_turn(self.identity(), session);
        let mut turns = lock(&self.turns);
        turns.push(Turn {
            key,
            session: session.into(),
            active: active.clone(),
        });
        self.generation.fetch_add(1, Ordering::Release);
        drop(turns);
        self.open.fetch_add(1, Ordering::Relaxed);
        Some(TurnGuard {
            trace: self.clone(),
            key,
        })
    }

    /// A notification going `direction` (`incoming` or `outgoing`) in the open turn of its
    /// session (its `sessionId` read from `params`), if there is one: counted on the turn's
    /// span, an `acp.notification` event (the first [`MAX_EVENTS`](super::MAX_EVENTS)) with
    /// `method`, `direction` and, for an incoming one, the sender's `traceparent` (`remote`,
    /// when well-formed). Returns the turn's span.
    pub(crate) fn notification(
        &self,
        direction: &'static str,
        method: &str,
        params: &[u8],
        remote: impl FnOnce() -> Option<Box<str>>,
    ) -> Option<Arc<Active>> {
        self.found(direction, method, params, remote)
            .map(|(_, active)| active)
    }

    /// [`ConnectionTrace::notification`], with the session `params` name.
    fn found<'p>(
        &self,
        direction: &'static str,
        method: &str,
        params: &'p [u8],
        remote: impl FnOnce() -> Option<Box<str>>,
    ) -> Option<(&'p [u8], Arc<Active>)> {
        if self.open.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let session = crate::observe::flow::session_id_bytes_in(params)?;
        // The latest open turn of the session, with two.
        let active = lock(&self.turns)
            .iter()
            .rev()
            .find(|t| t.session.as_bytes() == session)?
            .active
            .clone();
        active.turn_event(method, direction, remote);
        Some((session, active))
    }

    /// [`ConnectionTrace::notification`] of an incoming notification, by the reader, which
    /// keeps `last`: the turn found for the previous one is taken again without a lookup
    /// when it still holds (see [`LastTurn`]).
    pub(crate) fn incoming_notification(
        &self,
        last: &mut LastTurn,
        method: &str,
        params: &[u8],
        remote: impl FnOnce() -> Option<Box<str>>,
    ) -> Option<Arc<Active>> {
        if self.open.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(cached) = &last.0
            && cached.generation == generation
            && names_first(params, &cached.session)
        {
            cached.active.turn_event(method, "incoming", remote);
            return Some(cached.active.clone());
        }
        let (session, active) = self.found("incoming", method, params, remote)?;
        last.0 = Some(Cached {
            generation,
            session: session.into(),
            active: active.clone(),
        });
        Some(active)
    }
}

/// Whether `params` name `session` first, as `{"sessionId":"<session>"`.
pub(super) fn names_first(params: &[u8], session: &[u8]) -> bool {
    params
        .strip_prefix(br#"{"sessionId":""#.as_slice())
        .and_then(|rest| rest.strip_prefix(session))
        .is_some_and(|rest| rest.first() == Some(&b'"'))
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

    use super::*;

    fn span(n: u8) -> Arc<Active> {
        Active::new(SpanContext::new(
            TraceId::from_bytes([1; 16]),
            SpanId::from_bytes([n; 8]),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ))
    }

    /// The span id of the turn `params` are found in, the reader's way.
    fn found(trace: &ConnectionTrace, last: &mut LastTurn, params: &str) -> Option<u8> {
        trace
            .incoming_notification(last, "session/update", params.as_bytes(), || None)
            .map(|active| active.context.span_id().to_bytes()[0])
    }

    #[test]
    fn the_readers_last_turn_holds_only_while_no_turn_opens_or_closes() {
        let trace = Arc::new(ConnectionTrace::default());
        let mut last = LastTurn::default();
        let s = r#"{"sessionId":"s","update":{}}"#;
        let t = r#"{"sessionId":"t","update":{}}"#;
        assert_eq!(found(&trace, &mut last, s), None);

        let (one, two) = (span(1), span(2));
        let first = trace.open_turn(&one, "session/prompt", "s");
        assert_eq!(found(&trace, &mut last, s), Some(1));
        assert_eq!(found(&trace, &mut last, s), Some(1), "again, from `last`");
        assert_eq!(found(&trace, &mut last, t), None, "another session");
        // A later turn of the same session takes its notifications.
        let second = trace.open_turn(&two, "session/prompt", "s");
        assert_eq!(found(&trace, &mut last, s), Some(2));
        drop(second);
        assert_eq!(found(&trace, &mut last, s), Some(1));
        drop(first);
        assert_eq!(found(&trace, &mut last, s), None, "closed: not from `last`");
        let _third = trace.open_turn(&span(3), "session/prompt", "s");
        assert_eq!(found(&trace, &mut last, s), Some(3));
        // Each turn's span counted the notifications found in it.
        assert_eq!(one.take_events().1, 3);
        assert_eq!(two.take_events().1, 1);
    }
}
