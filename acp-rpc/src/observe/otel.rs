//! OpenTelemetry across the wire (feature `otel`): W3C Trace Context in `_meta`, and the
//! engine's spans named for an OpenTelemetry backend.
//!
//! The protocol's "meta-propagation" RFD reserves `_meta.traceparent` and `_meta.tracestate`
//! ([W3C Trace Context](https://www.w3.org/TR/trace-context/)) on every message. With this
//! feature on, and a [`Recorder`] installed (registered as a span processor of the
//! application's tracer provider; see [how the spans are made](self#how-the-spans-are-made)):
//!
//! * every request and notification a [`Peer`](crate::Peer) sends carries the current span's
//!   context as `_meta.traceparent` (and `_meta.tracestate` when it has one): for a request,
//!   its `acp.outgoing_request` span; for a notification, the span of the code that sends it
//!   (an agent's `session/update` carries its `session/prompt` span), or its session's turn
//!   when that code runs in no span;
//! * every request we receive is handled in a span (`acp.request`) whose parent is the
//!   remote span of its well-formed `_meta.traceparent`, so one trace runs from an editor
//!   through every process of a chain and back into the editor's handlers of the agent's
//!   requests; while its handler runs, that span is the current OpenTelemetry context, so a
//!   `tracing` span the handler opens (through `tracing-opentelemetry`) is its child and
//!   [`current`] names it;
//! * every notification, sent or received, is an *event* (`acp.notification`, with `method`,
//!   `direction` and, received, the sender's `traceparent`) on the span of its session's
//!   open turn (the `session/prompt` request: [the session's turn](self#the-sessions-turn)),
//!   not a span of its own: a turn streams thousands. Only a notification outside any turn
//!   gets a span (`acp.notification`, parented by its `traceparent`);
//! * every request span has `method`, `message_id`, `session_id`, `outcome` (`ok` or
//!   `error`), `rpc.jsonrpc.error_code` for an error answer, and `acp.role` / `acp.peer.role`
//!   (`client` or `agent`, once `initialize` or a session request has crossed the
//!   connection); its length is the request's duration; a failed request (what
//!   [`crate::flow`] logs at ERROR) has an error status.
//!
//! The span names and the `method` attribute are the official Python SDK's (`acp.request`,
//! `acp.notification`); the other attributes are the engine's [`crate::flow`] fields
//! (`direction`, `message_id`, `session_id`) plus OpenTelemetry's JSON-RPC conventions
//! (`rpc.system`, `rpc.jsonrpc.error_code`).
//!
//! # The session's turn
//!
//! A connection keeps the open turns of its sessions: a request `session/prompt` (or
//! `session/load`, `session/resume`: [`TURN_METHODS`]) with a `sessionId`, sent or received,
//! from its start to its answer. A notification with that `sessionId` is an event on the
//! turn's span (the later turn's, should a session have two), and an incoming one is handled
//! in that span. At most [`MAX_EVENTS`] events per turn (the SDK's default limit); the turn's
//! span counts them all in `acp.notifications`.
//!
//! A malformed `traceparent` (wrong length, version `ff`, an all-zero id, not hex, not a
//! string) is ignored with a DEBUG log: the message is served as if it had none.
//!
//! # What the handler reads
//!
//! The engine owns the trace context it uses: when the params of a message start with a
//! `_meta` that holds a `traceparent` and nothing else (55 lower-case hex digits and dashes:
//! what the engine writes; a malformed one is ignored, as anywhere), the reader takes that
//! member off the params (in place, in the line it read) before the handler parses them, so
//! the handler's params are what the sending application passed, and no `_meta` map is
//! built per streamed notification for a value already used. A `_meta` with anything else
//! in it reaches the handler whole, and so does everything on a connection that records no
//! spans. Observers see the lines as they were read.
//!
//! # How the spans are made
//!
//! Not as `tracing` spans: a span per request through `tracing-subscriber`'s registry and
//! `tracing-opentelemetry` cost more than the engine's own work on a round trip. On the hot
//! path a span is a few cheap steps: its ids (the trace id of its parent, from the incoming
//! `traceparent` or the current context, or a fresh one; a fresh span id from a per-thread
//! generator), its `traceparent` formatted once and copied into each line it sends (after
//! the params' `{`; a `_meta` already there, or a `tracestate`, takes a slower merge), and,
//! when it ends, a record of its few fields (method, id, session, roles, start and end,
//! outcome, error code, parent, its turn's events) pushed into the [`Recorder`]'s bounded
//! queue (dropped and counted when full: the connection never waits for the exporter). The
//! recorder's thread builds the OpenTelemetry spans from the records and hands them to the
//! span processor (the provider's batch exporter).
//!
//! Cost: without a recorder (the feature compiled in, telemetry not set up) one check of an
//! `Option` per message. With one: per request a span id, a clock read at each end, a short
//! copy into the line, a scan for its `sessionId`, a look at the params' start for an
//! incoming `traceparent`, and a push; per notification in a turn a scan for its `sessionId`
//! and a short lock (an event only for the first [`MAX_EVENTS`]). Sampling follows the
//! parent's `sampled` flag (a root is sampled); the provider's sampler is not asked.
//! [`exported`] is the filter a `tracing-opentelemetry` layer should use beside it.
//!
//! Transports that move messages without the engine (a gateway, a recording proxy) use
//! [`extract`] and [`inject_value`] to add a hop span of their own.

mod active;
mod record;
mod span;
mod taken;
mod turns;
mod wire;

use std::sync::Arc;

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanKind, TraceContextExt};
use serde_json::Value;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use active::Current;
pub use active::MAX_EVENTS;
pub(crate) use active::scoped;
pub use record::{DefaultGuard, QUEUE_CAPACITY, Recorder};
pub(crate) use span::{EngineSpan, NotificationScope};
pub(crate) use taken::{Taken, take_from_line, take_from_params, would_take_from_line};
pub use turns::TURN_METHODS;
pub(crate) use turns::{ConnectionTrace, LastTurn};
use wire::META_MEMBER_LEN;
pub use wire::{extract, extract_value, format_traceparent, inject_value, parse_traceparent};

use crate::message::RequestId;

/// The `_meta` key of the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// The `tracing` target of this module's DEBUG logs (a malformed `traceparent`).
pub const TARGET: &str = "acp_rpc::otel";

/// The current span's context: the engine's span of the request (or notification) whose
/// handler is running, or the application's `tracing` span entered inside it (through a
/// `tracing-opentelemetry` layer, which makes its span's context current on entry); `None`
/// outside any. What a log line names as its trace.
pub fn current() -> Option<SpanContext> {
    active::current_context()
}

/// What a `tracing-opentelemetry` layer should take of the engine's `tracing` output: the
/// hops' spans ([`hop`]) and the events at WARN and above, nothing else of the message-flow
/// log ([`crate::flow`]: its `request` / `notification` spans and per-message events). The
/// engine records its spans itself ([`Recorder`]); a layer that took the flow log's spans
/// too would export each request twice, at the cost this design avoids. Use it as
/// `tracing_subscriber::filter::filter_fn(acp_rpc::otel::exported)` combined with a level
/// filter into one (`level.and(filter_fn(..))`, `FilterExt::and`), and leave `acp_rpc::flow`
/// off in that filter (`acp_rpc::flow=warn`), so the flow log's spans are not even made for
/// the exporter. Two nested `with_filter`s instead of one would let a callsite the outer one
/// passes count as enabled, and the engine then times every message for a TRACE event the
/// inner filter drops.
pub fn exported(meta: &tracing::Metadata<'_>) -> bool {
    meta.target() != crate::observe::flow::TARGET
        || (meta.is_event() && *meta.level() <= tracing::Level::WARN)
}

/// The `tracing` target of the hop spans of [`hop`].
pub const HOP_TARGET: &str = "acp_rpc::otel::hop";

/// Whether [`hop`] spans are recorded (an OpenTelemetry layer that takes [`HOP_TARGET`]):
/// a transport that must parse a line to make one asks this first.
pub fn hop_enabled() -> bool {
    tracing::enabled!(target: HOP_TARGET, tracing::Level::INFO)
}

/// A hop's span for a request or notification (a response gets none, [`tracing::Span::none`])
/// that a transport moves without the engine
/// (the `acp serve` gateway, a recording proxy): named `name` (an OpenTelemetry span name
/// such as `acp.gateway`), a child of the message's `_meta.traceparent`, with the message's
/// `method` and `message_id`. With `rewrite`, the message's `_meta.traceparent` then names
/// the hop, so the next process's span is the hop's child; without it (a proxy that must
/// pass bytes unchanged) the hop is a leaf beside the path. Keep the span until the answer
/// comes back (its length is then the hop's latency), or drop it at once.
///
/// A disabled span (no OpenTelemetry layer, or one that filters `acp_rpc::otel::hop` out)
/// leaves the message as it was.
pub fn hop(name: &'static str, message: &mut Value, rewrite: bool) -> tracing::Span {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // A response: its request's hop was the one that counted.
        return tracing::Span::none();
    };
    let span = tracing::info_span!(
        target: HOP_TARGET,
        "hop",
        otel.name = name,
        otel.kind = "internal",
        method,
        message_id = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(id) = message.get("id") {
        span.record("message_id", tracing::field::display(id));
    }
    let Some(params) = message.get_mut("params") else {
        return span;
    };
    if let Some(remote) = extract_value(params) {
        let _ = span.set_parent(Context::new().with_remote_span_context(remote));
    }
    if rewrite && let Some(context) = span_context(&span) {
        inject_value(params, &context);
    }
    span
}

/// The OpenTelemetry span context of `span`, when an OpenTelemetry layer records it.
pub fn span_context(span: &tracing::Span) -> Option<SpanContext> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then_some(span_context)
}

/// Makes the remote span in `params` (if any) the parent of `span`.
pub fn set_remote_parent(span: &tracing::Span, params: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    if let Some(remote) = params.and_then(extract) {
        let _ = span.set_parent(Context::new().with_remote_span_context(remote));
    }
}

/// Hook: our outgoing request's span (`acp.outgoing_request`, a client span), the child of
/// the current span, when the connection records spans.
pub(crate) fn outgoing_request(
    trace: &Arc<ConnectionTrace>,
    method: &str,
    id: i64,
) -> Option<EngineSpan> {
    trace.request_seen(method, false);
    trace.recorder()?;
    let parent = active::current_context();
    Some(EngineSpan::start(
        trace,
        "acp.outgoing_request",
        SpanKind::Client,
        parent.as_ref(),
        method,
        Some(RequestId::Int(id)),
    ))
}

/// Hook: the line of our outgoing request (`line`, the envelope the engine wrote, `"params"`
/// last): its span's `traceparent` goes into the params' `_meta`, the span gets the
/// request's session, and a turn of that session opens when the request starts one.
pub(crate) fn outgoing_request_line(
    trace: &Arc<ConnectionTrace>,
    line: &mut Vec<u8>,
    method: &str,
    span: &mut EngineSpan,
) {
    if let Some(session) = crate::observe::flow::session_id_in(line) {
        span.set_session(session);
        span.turn = trace.open_turn(&span.active, method, session);
    }
    wire::splice(line, &span.active.traceparent, &span.active.context);
}

/// Hook: a notification line we are about to send (`line`, the envelope the engine wrote,
/// `"params"` last): the current span's context goes into its params' `_meta`. In its
/// session's open turn it is an event on the turn's span (and carries the turn's context
/// when no span is current); outside any turn, an event on the current span. Nothing
/// happens when the connection records no spans.
///
/// `plain`: when a direct writer wrote the params (no `_meta` in them, see
/// [`Peer::notify_value_with`](crate::Peer::notify_value_with)), where the gap of
/// [`notification_gap`] spaces in front of them starts; `None`, and they are found and
/// looked into.
pub(crate) fn outgoing_notification_line(
    trace: &ConnectionTrace,
    line: &mut Vec<u8>,
    method: &str,
    plain: Option<usize>,
) {
    if trace.recorder().is_none() {
        // No gap was left (see `notification_gap`).
        return;
    }
    // The params are found once: read here, written into below.
    let (start, known, params_at) = match plain {
        Some(at) => (Some(at), wire::Params::AfterGap, Some(at + META_MEMBER_LEN)),
        None => {
            let start = wire::params_start(line);
            (start, wire::Params::Unknown, start)
        }
    };
    let params = params_at.and_then(|s| wire::params_from(line, s));
    // Sent by the handler of its turn (a prompt's updates): no lookup.
    if let Some((bytes, context)) =
        active::entered_turn(trace.identity(), params.unwrap_or_default(), method)
    {
        wire::splice_from(line, start, known, &bytes, &context);
        return;
    }
    let in_turn = trace.notification("outgoing", method, params.unwrap_or(line), || None);
    let current = active::current(in_turn.as_ref());
    match (current, in_turn) {
        (Some(Current::Ours(active)), turn) => {
            if turn.is_none() {
                active.event(method, "outgoing");
            }
            wire::splice_from(line, start, known, &active.traceparent, &active.context);
        }
        (Some(Current::Other(context)), turn) => {
            if turn.is_none() {
                Context::map_current(|cx| {
                    cx.span().add_event(
                        "acp.notification",
                        vec![
                            opentelemetry::KeyValue::new("method", method.to_owned()),
                            opentelemetry::KeyValue::new("direction", "outgoing"),
                        ],
                    )
                });
            }
            let bytes = wire::traceparent_bytes(&context);
            wire::splice_from(line, start, known, &bytes, &context);
        }
        (None, Some(turn)) => {
            wire::splice_from(line, start, known, &turn.traceparent, &turn.context)
        }
        (None, None) => {
            if let (Some(at), wire::Params::AfterGap) = (start, known) {
                wire::close_gap(line, at);
            }
        }
    }
}

/// How many spaces a notification's direct writer leaves in front of its params (see
/// [`outgoing_notification_line`]): room for the `_meta` member, so that the trace context
/// is written in place; none when the connection records no spans.
pub(crate) fn notification_gap(trace: &ConnectionTrace) -> usize {
    if trace.recorder().is_some() {
        META_MEMBER_LEN
    } else {
        0
    }
}

/// The sender's span of an incoming message: the one the reader took off its params, else
/// the one in them.
fn remote_context(params: Option<&str>, taken: Option<&Taken>) -> Option<SpanContext> {
    match taken {
        Some(taken) => taken.context(),
        None => params.and_then(extract),
    }
}

/// Hook: an incoming request's span (`acp.request`, a server span), the child of the
/// request's `_meta.traceparent`, with its session; a turn of that session opens when the
/// request starts one (closed when the span ends).
pub(crate) fn incoming_request(
    trace: &Arc<ConnectionTrace>,
    method: &str,
    id: &RequestId,
    params: Option<&str>,
    taken: Option<&Taken>,
) -> Option<EngineSpan> {
    trace.request_seen(method, true);
    trace.recorder()?;
    let remote = remote_context(params, taken);
    let mut span = EngineSpan::start(
        trace,
        "acp.request",
        SpanKind::Server,
        remote.as_ref(),
        method,
        Some(id.clone()),
    );
    if let Some(session) = params.and_then(crate::observe::flow::session_id) {
        span.set_session(session);
        span.turn = trace.open_turn(&span.active, method, session);
    }
    Some(span)
}

/// Hook: where an incoming notification is handled. In its session's open turn: an event on
/// the turn's span, which is current while it is handled. Otherwise a span of its own
/// (`acp.notification`, a consumer span, the child of its `_meta.traceparent`). `taken`:
/// the trace context the reader took off its params, if it did.
pub(crate) fn incoming_notification(
    trace: &Arc<ConnectionTrace>,
    last: &mut LastTurn,
    method: &str,
    params: Option<&str>,
    taken: Option<&Taken>,
) -> NotificationScope {
    if trace.recorder().is_none() {
        return NotificationScope::None;
    }
    if let Some(params) = params {
        let remote = || match taken {
            Some(taken) => taken.context().map(|_| taken.text().into()),
            None => {
                let text = crate::observe::flow::string_field(params, TRACEPARENT)?;
                parse_traceparent(text).ok().map(|_| text.into())
            }
        };
        if let Some(turn) = trace.incoming_notification(last, method, params.as_bytes(), remote) {
            return NotificationScope::Turn(turn);
        }
    }
    let remote = remote_context(params, taken);
    NotificationScope::Own(EngineSpan::start(
        trace,
        "acp.notification",
        SpanKind::Consumer,
        remote.as_ref(),
        method,
        None,
    ))
}
