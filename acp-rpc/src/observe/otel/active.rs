//! An engine span while it runs (feature `otel`): its ids, fixed when it starts (the trace
//! id of its parent or a fresh one, a fresh span id from a fast per-thread generator), its
//! `traceparent` formatted once, and the turn's events it gathers (the span itself, and the
//! record it becomes when it ends, are `span.rs`'s). While a request's handler (or a
//! notification's) is polled, its span is current: as the OpenTelemetry context (so a
//! `tracing` span the handler opens is its child, and a log line can name the trace) and for
//! the engine, which writes its `traceparent` into what the handler sends ([`Scoped`]).

use std::borrow::Cow;
use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::SystemTime;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceId};

use super::record::EventRecord;
use super::turns::names_first;
use super::wire::{Traceparent, traceparent_bytes};
use crate::sync::lock;

/// The most `acp.notification` events one turn's span gets (the SDK's default
/// `OTEL_SPAN_EVENT_COUNT_LIMIT`).
pub const MAX_EVENTS: u32 = 128;

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
    /// The engine span entered on this thread (see [`enter`]), null outside any: what a
    /// notification its handler sends finds its turn by, without a lookup.
    static ENTERED: Cell<*const Active> = const { Cell::new(std::ptr::null()) };
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

pub(super) fn new_span_id() -> SpanId {
    loop {
        let id = next_u64();
        if id != 0 {
            return SpanId::from_bytes(id.to_be_bytes());
        }
    }
}

pub(super) fn new_trace_id() -> TraceId {
    let id = (u128::from(next_u64()) << 64) | u128::from(next_u64() | 1);
    TraceId::from_bytes(id.to_be_bytes())
}

/// A running engine span: what is current while its handler runs, and where its turn's
/// notifications are counted.
pub(crate) struct Active {
    pub(crate) context: SpanContext,
    pub(crate) traceparent: Traceparent,
    otel: opentelemetry::Context,
    events: Mutex<Vec<EventRecord>>,
    /// Notifications of the turn (counted past [`MAX_EVENTS`]).
    seen: AtomicU64,
    /// Whether `events` holds [`MAX_EVENTS`]: past that a notification is only counted,
    /// without taking the lock.
    full: AtomicBool,
    /// The turn this span opened, if it did (set once, when it opens).
    turn: OnceLock<TurnOf>,
}

/// The turn an engine span opened: on which connection, for which session.
struct TurnOf {
    /// The connection's [`ConnectionTrace`](super::turns::ConnectionTrace), by address.
    connection: usize,
    session: Box<str>,
}

impl Active {
    /// A span's running state, from its ids (its `traceparent` formatted once).
    pub(super) fn new(context: SpanContext) -> Arc<Active> {
        Arc::new(Active {
            traceparent: traceparent_bytes(&context),
            // The span alone (one reference to count each time it is entered): the engine
            // knows its own spans by what it entered on the thread (see `current`).
            otel: opentelemetry::Context::new().with_remote_span_context(context.clone()),
            context,
            events: Mutex::default(),
            seen: AtomicU64::new(0),
            full: AtomicBool::new(false),
            turn: OnceLock::new(),
        })
    }

    /// Marks this span as the one of `session`'s turn on the connection `connection` (see
    /// [`entered_turn`]).
    pub(super) fn opened_turn(&self, connection: usize, session: &str) {
        let _ = self.turn.set(TurnOf {
            connection,
            session: session.into(),
        });
    }

    /// The events gathered so far and the turn's notification count, taken for the record.
    pub(super) fn take_events(&self) -> (Vec<EventRecord>, u64) {
        let events = std::mem::take(&mut *lock(&self.events));
        (events, self.seen.load(Ordering::Acquire))
    }

    /// Adds an event unless [`MAX_EVENTS`] are there (`remote` is called only then).
    fn push_event(
        &self,
        method: &str,
        direction: &'static str,
        remote: impl FnOnce() -> Option<Box<str>>,
    ) {
        if self.full.load(Ordering::Relaxed) {
            return;
        }
        let mut events = lock(&self.events);
        if events.len() < MAX_EVENTS as usize {
            events.push(EventRecord {
                at: SystemTime::now(),
                method: intern(method),
                direction,
                remote: remote(),
            });
        }
        if events.len() >= MAX_EVENTS as usize {
            self.full.store(true, Ordering::Relaxed);
        }
    }

    /// A notification of this span's turn: counted, and an event when among the first
    /// [`MAX_EVENTS`] (`remote`: the sender's `traceparent`, looked for only then).
    pub(crate) fn turn_event(
        &self,
        method: &str,
        direction: &'static str,
        remote: impl FnOnce() -> Option<Box<str>>,
    ) {
        self.seen.fetch_add(1, Ordering::AcqRel);
        self.push_event(method, direction, remote);
    }

    /// A notification sent in this span outside any turn: an event (the first
    /// [`MAX_EVENTS`]), not counted.
    pub(crate) fn event(&self, method: &str, direction: &'static str) {
        self.push_event(method, direction, || None);
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

/// The current span (see [`Current`]). `likely`: an engine span that is probably the
/// current one (a sent notification's turn, when its handler sends it), recognised by its
/// span id before the one entered on this thread is looked at.
///
/// An engine span is known as ours while it is entered on this thread ([`enter`]: its
/// handler is being polled). Its context attached elsewhere (a task the handler spawned with
/// it) reads as another span's: the same `traceparent` goes out, and an event outside any
/// turn goes to that context's span.
pub(crate) fn current(likely: Option<&Arc<Active>>) -> Option<Current> {
    opentelemetry::Context::map_current(|cx| {
        let span = cx.span();
        let context = span.span_context();
        if !context.is_valid() {
            return None;
        }
        if let Some(active) = likely.filter(|a| a.context.span_id() == context.span_id()) {
            return Some(Current::Ours(active.clone()));
        }
        // A context made from ours (a child span's) is not ours: the span decides.
        let entered = ENTERED.with(Cell::get);
        if !entered.is_null() {
            // SAFETY: `enter` set it from an `Arc<Active>` that its `Entered` guard borrows,
            // and the guard puts the previous one back when it drops: while it is set on
            // this thread, the span it points to is alive.
            let active = unsafe { &*entered };
            if active.context.span_id() == context.span_id() {
                // SAFETY: `entered` is `Arc::as_ptr` of that live `Arc`; the count taken
                // here is the returned `Arc`'s own.
                return Some(Current::Ours(unsafe {
                    Arc::increment_strong_count(entered);
                    Arc::from_raw(entered)
                }));
            }
        }
        Some(Current::Other(context.clone()))
    })
}

/// Makes `active` current until the guard drops (which borrows it: the span outlives its
/// being entered).
pub(super) fn enter(active: &Arc<Active>) -> Entered<'_> {
    Entered {
        _context: active.otel.clone().attach(),
        previous: ENTERED.replace(Arc::as_ptr(active)),
        _active: PhantomData,
    }
}

/// Restores what was current before [`enter`]. Not `Send` (it restores this thread's).
pub(crate) struct Entered<'a> {
    _context: opentelemetry::ContextGuard,
    previous: *const Active,
    _active: PhantomData<&'a Active>,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        ENTERED.set(self.previous);
    }
}

/// What a notification sent by the handler of its own turn carries, found without a lookup
/// of the connection's turns: when the engine span entered on this thread opened the turn of
/// the session that `params` name first (`{"sessionId":"…"`, as the protocol's writers put
/// it) on the connection `connection`, and is the current OpenTelemetry span (not a child the
/// handler opened), the notification is counted on that turn (`method`: its event, among
/// the first [`MAX_EVENTS`]) and the span's `traceparent` and context are returned. `None`:
/// the caller looks the turn up (see `ConnectionTrace::notification`).
pub(crate) fn entered_turn(
    connection: usize,
    params: &[u8],
    method: &str,
) -> Option<(Traceparent, SpanContext)> {
    ENTERED.with(|entered| {
        let at = entered.get();
        if at.is_null() {
            return None;
        }
        // SAFETY: `enter` set it from an `Arc<Active>` that its `Entered` guard borrows, and
        // the guard puts the previous one back when it drops: while it is set on this
        // thread, the span it points to is alive.
        let active = unsafe { &*at };
        let turn = active.turn.get()?;
        if turn.connection != connection || !names_first(params, turn.session.as_bytes()) {
            return None;
        }
        let is_current = opentelemetry::Context::map_current(|cx| {
            cx.span().span_context().span_id() == active.context.span_id()
        });
        if !is_current {
            return None;
        }
        active.turn_event(method, "outgoing", || None);
        Some((active.traceparent, active.context.clone()))
    })
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
pub(super) fn intern(method: &str) -> Cow<'static, str> {
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
