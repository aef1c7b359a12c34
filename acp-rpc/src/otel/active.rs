//! An engine span while it runs (feature `otel`): its ids, fixed when it starts (the trace
//! id of its parent or a fresh one, a fresh span id from a fast per-thread generator), its
//! `traceparent` formatted once, the turn's events it gathers, and the record it becomes
//! when it ends ([`EngineSpan`]). While a request's handler (or a notification's) is polled,
//! its span is current: as the OpenTelemetry context (so a `tracing` span the handler opens
//! is its child, and a log line can name the trace) and for the engine, which writes its
//! `traceparent` into what the handler sends ([`Scoped`]).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::SystemTime;

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState,
};

use super::MAX_EVENTS;
use super::record::{EventRecord, Outcome, SpanRecord};
use super::turns::{ConnectionTrace, TurnGuard};
use super::wire::{Traceparent, traceparent_bytes};
use crate::error::Error;
use crate::message::RequestId;
use crate::sync::lock;

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
    static CURRENT: RefCell<Option<Arc<Active>>> = const { RefCell::new(None) };
}

/// A per-thread seed from the standard library's random hash keys.
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x5eed);
    hasher.finish()
}

/// The next number of the thread's wyrand generator (ids need to be unique, not secret).
fn next_u64() -> u64 {
    RNG.with(|state| {
        let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

fn new_span_id() -> SpanId {
    loop {
        let id = next_u64();
        if id != 0 {
            return SpanId::from_bytes(id.to_be_bytes());
        }
    }
}

fn new_trace_id() -> TraceId {
    let id = (u128::from(next_u64()) << 64) | u128::from(next_u64() | 1);
    TraceId::from_bytes(id.to_be_bytes())
}

/// A running engine span: what is current while its handler runs, and where its turn's
/// notifications are counted.
pub(crate) struct Active {
    pub(crate) context: SpanContext,
    pub(crate) traceparent: Traceparent,
    otel: opentelemetry::Context,
    events: Mutex<Events>,
}

#[derive(Default)]
struct Events {
    list: Vec<EventRecord>,
    /// Notifications of the turn (counted past [`MAX_EVENTS`]).
    seen: u64,
}

impl Active {
    /// A notification of this span's turn: counted, and an event when among the first
    /// [`MAX_EVENTS`] (`remote`: the sender's `traceparent`, looked for only then).
    pub(crate) fn turn_event(
        &self,
        method: &str,
        direction: &'static str,
        remote: impl FnOnce() -> Option<Box<str>>,
    ) {
        let mut events = lock(&self.events);
        events.seen += 1;
        if events.list.len() < MAX_EVENTS as usize {
            events.list.push(EventRecord {
                at: SystemTime::now(),
                method: intern(method),
                direction,
                remote: remote(),
            });
        }
    }

    /// A notification sent in this span outside any turn: an event (the first
    /// [`MAX_EVENTS`]), not counted.
    pub(crate) fn event(&self, method: &str, direction: &'static str) {
        let mut events = lock(&self.events);
        if events.list.len() < MAX_EVENTS as usize {
            events.list.push(EventRecord {
                at: SystemTime::now(),
                method: intern(method),
                direction,
                remote: None,
            });
        }
    }
}

/// The span current where a message is sent: one of the engine's, or another (an
/// application's `tracing` span, through `tracing-opentelemetry`).
pub(crate) enum Current {
    Ours(Arc<Active>),
    Other(SpanContext),
}

/// The current OpenTelemetry span context, when valid.
pub(crate) fn current_context() -> Option<SpanContext> {
    opentelemetry::Context::map_current(|cx| {
        let span = cx.span();
        let context = span.span_context();
        context.is_valid().then(|| context.clone())
    })
}

/// The current span (see [`Current`]).
pub(crate) fn current() -> Option<Current> {
    let context = current_context()?;
    let ours = CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|a| a.context.span_id() == context.span_id())
            .cloned()
    });
    Some(match ours {
        Some(active) => Current::Ours(active),
        None => Current::Other(context),
    })
}

/// Makes `active` current until the guard drops.
fn enter(active: &Arc<Active>) -> Entered {
    let previous = CURRENT.with(|c| c.replace(Some(active.clone())));
    let context = active.otel.clone().attach();
    Entered {
        previous,
        _context: context,
    }
}

/// Restores what was current before [`enter`].
pub(crate) struct Entered {
    previous: Option<Arc<Active>>,
    _context: opentelemetry::ContextGuard,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// A future polled with an engine span current.
pub(crate) struct Scoped<F> {
    active: Arc<Active>,
    inner: F,
}

/// Runs `inner` with `active` current.
pub(crate) fn scoped<F: Future>(active: Arc<Active>, inner: F) -> Scoped<F> {
    Scoped { active, inner }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is pinned whenever `self` is (structural pinning): it is never
        // moved out of `self`, and `Scoped` has no `Drop` nor `Unpin` impl of its own.
        let this = unsafe { self.get_unchecked_mut() };
        let _entered = enter(&this.active);
        // SAFETY: see above.
        unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx)
    }
}

/// The methods named without an allocation (the protocol's, and the test's most common).
fn intern(method: &str) -> Cow<'static, str> {
    const KNOWN: &[&str] = &[
        "session/update",
        "session/prompt",
        "session/cancel",
        "session/new",
        "session/load",
        "session/resume",
        "session/request_permission",
        "session/set_mode",
        "initialize",
        "authenticate",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ];
    match KNOWN.iter().find(|known| **known == method) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(method.to_owned()),
    }
}

/// An engine span from its start to its end: a request (sent or received) or a
/// notification received outside any turn. Dropped unfinished (a request whose task was
/// dropped), it is still recorded, without an outcome.
pub(crate) struct EngineSpan {
    trace: Arc<ConnectionTrace>,
    pub(crate) active: Arc<Active>,
    record: Option<Box<SpanRecord>>,
    /// The turn it opened, closed when it ends.
    pub(crate) turn: Option<TurnGuard>,
}

impl EngineSpan {
    /// Starts a span named `name`, the child of `parent` (or the root of a new trace).
    pub(crate) fn start(
        trace: &Arc<ConnectionTrace>,
        name: &'static str,
        kind: SpanKind,
        parent: Option<&SpanContext>,
        method: &str,
        id: Option<RequestId>,
    ) -> EngineSpan {
        let (trace_id, flags, state, parent_id, parent_remote) = match parent {
            Some(p) => (
                p.trace_id(),
                p.trace_flags(),
                p.trace_state().clone(),
                p.span_id(),
                p.is_remote(),
            ),
            None => (
                new_trace_id(),
                TraceFlags::SAMPLED,
                TraceState::default(),
                SpanId::INVALID,
                false,
            ),
        };
        let context = SpanContext::new(trace_id, new_span_id(), flags, false, state);
        let active = Arc::new(Active {
            traceparent: traceparent_bytes(&context),
            otel: opentelemetry::Context::new().with_remote_span_context(context.clone()),
            context: context.clone(),
            events: Mutex::default(),
        });
        let start = SystemTime::now();
        let record = Box::new(SpanRecord {
            name,
            kind,
            context,
            parent: parent_id,
            parent_remote,
            start,
            end: start,
            method: intern(method),
            id,
            session: None,
            roles: None,
            outcome: None,
            events: Vec::new(),
            notifications: 0,
        });
        EngineSpan {
            trace: trace.clone(),
            active,
            record: Some(record),
            turn: None,
        }
    }

    /// Records the request's session.
    pub(crate) fn set_session(&mut self, session: &str) {
        if let Some(record) = &mut self.record {
            record.session = Some(session.into());
        }
    }

    /// Ends the span with the request's outcome.
    pub(crate) fn finish<T>(mut self, result: &Result<T, Error>) {
        let outcome = match result {
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Error {
                code: e.code.0,
                failure: crate::flow::is_failure(e).then(|| e.message.clone()),
            },
        };
        self.end(Some(outcome));
    }

    fn end(&mut self, outcome: Option<Outcome>) {
        let Some(mut record) = self.record.take() else {
            return;
        };
        self.turn = None;
        record.end = SystemTime::now();
        if record.id.is_some() {
            record.roles = self.trace.roles();
        }
        record.outcome = outcome;
        {
            let mut events = lock(&self.active.events);
            record.events = std::mem::take(&mut events.list);
            record.notifications = events.seen;
        }
        if record.context.is_sampled()
            && let Some(recorder) = self.trace.recorder()
        {
            recorder.push(*record);
        }
    }
}

impl Drop for EngineSpan {
    fn drop(&mut self) {
        self.end(None);
    }
}

/// Where an incoming notification is handled, OpenTelemetry-wise.
#[derive(Default)]
pub(crate) enum NotificationScope {
    /// Nothing recorded (no recorder).
    #[default]
    None,
    /// In its session's open turn: the turn's span is current while it is handled.
    Turn(Arc<Active>),
    /// Outside any turn: a span of its own, ended when it is handled.
    Own(EngineSpan),
}

impl NotificationScope {
    /// Makes the span current (until the returned guard drops).
    pub(crate) fn enter(&self) -> Option<Entered> {
        match self {
            NotificationScope::None => None,
            NotificationScope::Turn(active) => Some(enter(active)),
            NotificationScope::Own(span) => Some(enter(&span.active)),
        }
    }

    /// The notification is handled: its own span ends.
    pub(crate) fn finish(&mut self) {
        if let NotificationScope::Own(span) = std::mem::take(self) {
            drop(span);
        }
    }
}
