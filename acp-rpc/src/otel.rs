//! OpenTelemetry across the wire (feature `otel`): W3C Trace Context in `_meta`, and the
//! engine's spans named for an OpenTelemetry backend.
//!
//! The protocol's "meta-propagation" RFD reserves `_meta.traceparent` and `_meta.tracestate`
//! ([W3C Trace Context](https://www.w3.org/TR/trace-context/)) on every message. With this
//! feature on, and a [`tracing-opentelemetry`](tracing_opentelemetry) layer installed in the
//! application's subscriber:
//!
//! * every request and notification a [`Peer`](crate::Peer) sends carries the current span's
//!   context as `_meta.traceparent` (and `_meta.tracestate` when it has one): for a request,
//!   its `acp.outgoing_request` span; for a notification, the span of the code that sends it
//!   (an agent's `session/update` carries its `session/prompt` span), or its session's turn
//!   when that code runs in no span;
//! * every request we receive is handled in a span (`acp.request`) whose parent is the
//!   remote span of its well-formed `_meta.traceparent`, so one trace runs from an editor
//!   through every process of a chain and back into the editor's handlers of the agent's
//!   requests;
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
//! Cost: without a layer (the feature compiled in, telemetry not set up) one look at the
//! current span per message sent and an atomic load per notification received. With one,
//! the `_meta` object is written into each outgoing line, each request's `_meta` is read,
//! and each notification in a turn costs a scan for its `sessionId` and a short lock (an
//! event only for the first [`MAX_EVENTS`]). [`exported`] is the filter an exporter should
//! use: the spans, not the per-message DEBUG log events.
//!
//! Transports that move messages without the engine (a gateway, a recording proxy) use
//! [`extract`] and [`inject_value`] to add a hop span of their own.

mod turns;

use std::str::FromStr;
use std::sync::Arc;

use opentelemetry::trace::{
    SpanContext, SpanId, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Context, KeyValue};
use serde::Deserialize;
use serde_json::Value;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::error::Error;
pub(crate) use turns::{ConnectionTrace, TurnGuard};
pub use turns::{MAX_EVENTS, TURN_METHODS};

/// The `_meta` key of the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// The `tracing` target of this module's DEBUG logs (a malformed `traceparent`).
pub const TARGET: &str = "acp_rpc::otel";

/// Reads a W3C `traceparent` header value: `None`, with the reason, when it is malformed
/// (wrong length, version `ff`, upper-case or non-hex digits, an all-zero trace or span id).
///
/// A version above `00` is read as the specification asks: its first four fields, when
/// whatever follows them starts with `-`.
pub fn parse_traceparent(text: &str) -> Result<SpanContext, &'static str> {
    let bytes = text.as_bytes();
    if bytes.len() < 55 {
        return Err("too short");
    }
    let version = &text[..2];
    if !is_lower_hex(version) {
        return Err("version is not hex");
    }
    if version == "ff" {
        return Err("version ff is invalid");
    }
    if version == "00" && bytes.len() != 55 {
        return Err("wrong length for version 00");
    }
    if bytes.len() > 55 && bytes[55] != b'-' {
        return Err("wrong length");
    }
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return Err("misplaced separators");
    }
    let (trace, span, flags) = (&text[3..35], &text[36..52], &text[53..55]);
    if !(is_lower_hex(trace) && is_lower_hex(span) && is_lower_hex(flags)) {
        return Err("not lower-case hex");
    }
    let trace_id = TraceId::from_hex(trace).map_err(|_| "bad trace id")?;
    let span_id = SpanId::from_hex(span).map_err(|_| "bad span id")?;
    if trace_id == TraceId::INVALID {
        return Err("all-zero trace id");
    }
    if span_id == SpanId::INVALID {
        return Err("all-zero span id");
    }
    let flags = u8::from_str_radix(flags, 16).map_err(|_| "bad flags")?;
    Ok(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    ))
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The W3C `traceparent` of a span context (version `00`).
pub fn format_traceparent(context: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        context.trace_flags().to_u8()
    )
}

/// The `_meta` fields we read; anything else in the params is skipped unparsed.
#[derive(Deserialize)]
struct Carrier<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    traceparent: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    tracestate: Option<&'a serde_json::value::RawValue>,
}

/// The remote span context in a message's params text (`_meta.traceparent` and
/// `_meta.tracestate`), or `None`: no `_meta.traceparent`, or a malformed one (logged at
/// DEBUG under [`TARGET`], never an error). Params without the word `traceparent` are not
/// parsed at all.
pub fn extract(params: &str) -> Option<SpanContext> {
    memchr::memmem::find(params.as_bytes(), TRACEPARENT.as_bytes())?;
    let carrier: Carrier<'_> = serde_json::from_str(params).ok()?;
    let meta = carrier.meta?;
    let raw = meta.traceparent?;
    let Ok(text) = serde_json::from_str::<&str>(raw.get()) else {
        tracing::debug!(target: TARGET, traceparent = raw.get(), "traceparent is not a string: ignored");
        return None;
    };
    let context = match parse_traceparent(text) {
        Ok(context) => context,
        Err(why) => {
            tracing::debug!(target: TARGET, traceparent = text, why, "malformed traceparent: ignored");
            return None;
        }
    };
    let state = meta
        .tracestate
        .and_then(|raw| serde_json::from_str::<&str>(raw.get()).ok())
        .and_then(|text| TraceState::from_str(text).ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        context.trace_id(),
        context.span_id(),
        context.trace_flags(),
        true,
        state,
    ))
}

/// The remote span context in a parsed message's params (see [`extract`]).
pub fn extract_value(params: &Value) -> Option<SpanContext> {
    let raw = params.get("_meta")?.get(TRACEPARENT)?;
    let Some(text) = raw.as_str() else {
        tracing::debug!(target: TARGET, traceparent = %raw, "traceparent is not a string: ignored");
        return None;
    };
    let context = match parse_traceparent(text) {
        Ok(context) => context,
        Err(why) => {
            tracing::debug!(target: TARGET, traceparent = text, why, "malformed traceparent: ignored");
            return None;
        }
    };
    let state = params["_meta"]
        .get(TRACESTATE)
        .and_then(Value::as_str)
        .and_then(|text| TraceState::from_str(text).ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        context.trace_id(),
        context.span_id(),
        context.trace_flags(),
        true,
        state,
    ))
}

/// What an OpenTelemetry layer should take of the engine's `tracing` output: every span
/// (requests, hops, notifications outside a turn) and every event but the message-flow log's
/// per-message ones ([`crate::flow`] at INFO and below: `received`, `sent`, `request
/// started`, `request completed`, which the spans already say). An exporter that took those
/// would add an event per message to the spans, the cost the turn's events avoid. Use it as
/// `tracing_subscriber::filter::filter_fn(acp_rpc::otel::exported)` beside a level filter.
pub fn exported(meta: &tracing::Metadata<'_>) -> bool {
    meta.is_span() || meta.target() != crate::flow::TARGET || *meta.level() <= tracing::Level::WARN
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

/// Writes `context` into `params` as `_meta.traceparent` (and `_meta.tracestate` when it
/// has one), replacing what was there; `params` that are not an object are left alone.
pub fn inject_value(params: &mut Value, context: &SpanContext) {
    let Some(object) = params.as_object_mut() else {
        return;
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()));
    if !meta.is_object() {
        // A `_meta` that is not an object is not ours to keep: the schema says object.
        *meta = Value::Object(Default::default());
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(TRACEPARENT.into(), format_traceparent(context).into());
        let state = context.trace_state().header();
        if state.is_empty() {
            meta.remove(TRACESTATE);
        } else {
            meta.insert(TRACESTATE.into(), state.into());
        }
    }
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

/// Hook: an incoming request's span (named `acp.request`, a server span), parented by the
/// request's `_meta.traceparent`, with the connection's roles; a turn of its session opens
/// when it is one (the guard closes it: keep it until the request is answered).
pub(crate) fn incoming_request(
    trace: &Arc<ConnectionTrace>,
    span: &tracing::Span,
    method: &str,
    params: Option<&str>,
) -> Option<TurnGuard> {
    trace.request_seen(method, true);
    if span.is_disabled() {
        return None;
    }
    span.record("otel.name", "acp.request");
    span.record("otel.kind", "server");
    span.set_attribute("rpc.system", "jsonrpc");
    trace.record_roles(span);
    set_remote_parent(span, params);
    trace.open_turn(span, method, params?)
}

/// Runs an incoming request's handler (`run`) with its turn open (`turn`), closing the turn
/// when the handler is done.
pub(crate) async fn in_turn<F: std::future::Future>(turn: Option<TurnGuard>, run: F) -> F::Output {
    let output = run.await;
    drop(turn);
    output
}

/// Hook: where an incoming notification is handled. In its session's open turn: an event on
/// the turn's span, and the turn's span to handle it in (`Some`). Otherwise `None`: the
/// engine makes the notification's own span, which [`incoming_notification`] names.
pub(crate) fn incoming_notification_in_turn(
    trace: &ConnectionTrace,
    method: &str,
    params: Option<&str>,
) -> Option<tracing::Span> {
    let params = params?;
    let remote = || {
        let text = crate::flow::string_field(params, TRACEPARENT)?;
        parse_traceparent(text).ok().map(|_| text.to_owned())
    };
    trace
        .notification("incoming", method, params, remote)
        .map(|turn| turn.span)
}

/// Hook: an incoming notification's own span (`acp.notification`, a consumer span, for one
/// outside any turn), parented by the remote span of its `_meta.traceparent`.
pub(crate) fn incoming_notification(span: &tracing::Span, params: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.name", "acp.notification");
    span.record("otel.kind", "consumer");
    set_remote_parent(span, params);
}

/// Hook: our outgoing request's span (`acp.outgoing_request`, a client span), with the
/// connection's roles (learnt first from the request, when it is `initialize`).
pub(crate) fn outgoing_request(trace: &ConnectionTrace, span: &tracing::Span, method: &str) {
    trace.request_seen(method, false);
    if span.is_disabled() {
        return;
    }
    span.record("otel.name", "acp.outgoing_request");
    span.record("otel.kind", "client");
    span.set_attribute("rpc.system", "jsonrpc");
    trace.record_roles(span);
}

/// Hook: the end of a request, in its span: its outcome (`ok` or `error`), the error code
/// of an error answer, and an error status for a failure.
pub(crate) fn completed<T>(result: &Result<T, Error>) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    let Err(error) = result else {
        span.set_attribute("outcome", "ok");
        return;
    };
    span.set_attribute("outcome", "error");
    span.set_attribute("rpc.jsonrpc.error_code", i64::from(error.code.0));
    if crate::flow::is_failure(error) {
        span.set_status(Status::error(error.message.clone()));
    }
}

/// Hook: a request or notification line we are about to send (`line`, the envelope the
/// engine wrote, `"params"` last): the current span's context goes into its params'
/// `_meta`. A notification in its session's open turn is an event on the turn's span (and
/// carries the turn's context when the current span has none); one outside any turn is an
/// event on the current span. A request that starts a turn opens it (in the current span,
/// the request's own): keep the guard until it is answered. Params that are not an object
/// are left alone; so is everything when no OpenTelemetry layer records the spans.
pub(crate) fn outgoing_line(
    trace: &Arc<ConnectionTrace>,
    line: &mut Vec<u8>,
    method: &str,
    notification: bool,
) -> Option<TurnGuard> {
    let span = tracing::Span::current();
    let current = span_context(&span);
    let params = || {
        let text = std::str::from_utf8(line).ok()?;
        let at = text.find(",\"params\":")?;
        Some(&text[at..])
    };
    let mut guard = None;
    let context = if notification {
        let in_turn = params().and_then(|p| trace.notification("outgoing", method, p, || None));
        match (current, in_turn) {
            (Some(current), Some(_)) => Some(current),
            (None, Some(turn)) => Some(turn.context),
            (Some(current), None) => {
                span.add_event(
                    "acp.notification",
                    vec![
                        KeyValue::new("method", method.to_owned()),
                        KeyValue::new("direction", "outgoing"),
                    ],
                );
                Some(current)
            }
            (None, None) => None,
        }
    } else {
        if current.is_some() {
            guard = params().and_then(|p| trace.open_turn(&span, method, p));
        }
        current
    };
    if let Some(context) = context {
        inject_into_envelope(line, &context);
    }
    guard
}

/// Writes `context` into the params of an envelope the engine wrote (`,"params":` is its
/// last member; a method string holds a quote only escaped, so the first match is it).
fn inject_into_envelope(line: &mut Vec<u8>, context: &SpanContext) {
    const KEY: &[u8] = br#","params":"#;
    let Some(at) = memchr::memmem::find(line, KEY) else {
        return;
    };
    let start = at + KEY.len();
    let Some(end) = line.len().checked_sub(1) else {
        return;
    };
    if line.get(start) != Some(&b'{') || line[end] != b'}' || end <= start {
        return;
    }
    let params = &line[start..end];
    let meta = serde_json::json!({ TRACEPARENT: format_traceparent(context) });
    let state = context.trace_state().header();
    let has_meta = memchr::memmem::find(params, b"\"_meta\"").is_some();
    let new_params = if has_meta || !state.is_empty() {
        // The slow path: merge into an existing `_meta` (or add a tracestate).
        let Ok(mut value) = serde_json::from_slice::<Value>(params) else {
            return;
        };
        inject_value(&mut value, context);
        match serde_json::to_vec(&value) {
            Ok(bytes) => bytes,
            Err(_) => return,
        }
    } else {
        // The usual case: `{` then `"_meta":{...}` then `,` and the rest (none for `{}`).
        let mut bytes = Vec::with_capacity(params.len() + 80);
        bytes.extend_from_slice(b"{\"_meta\":");
        bytes.extend_from_slice(meta.to_string().as_bytes());
        let rest = &params[1..];
        if rest.iter().any(|b| !b.is_ascii_whitespace() && *b != b'}') {
            bytes.push(b',');
        }
        bytes.extend_from_slice(rest);
        bytes
    };
    line.truncate(start);
    line.extend_from_slice(&new_params);
    line.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_traceparent_is_read_and_written_back() {
        let context = parse_traceparent(GOOD).unwrap();
        assert!(context.is_remote());
        assert!(context.is_sampled());
        assert_eq!(format_traceparent(&context), GOOD);
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse_traceparent(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_four_fields() {
        let later = format!("01{}-more", &GOOD[2..]);
        assert!(parse_traceparent(&later).is_ok());
        let glued = format!("01{}more", &GOOD[2..]);
        assert!(parse_traceparent(&glued).is_err());
    }

    #[test]
    fn extract_reads_meta_and_ignores_bad_values() {
        let params =
            format!(r#"{{"sessionId":"s","_meta":{{"traceparent":"{GOOD}","tracestate":"k=v"}}}}"#);
        let context = extract(&params).unwrap();
        assert_eq!(context.trace_state().header(), "k=v");
        assert!(extract(r#"{"_meta":{"traceparent":7}}"#).is_none());
        assert!(extract(r#"{"_meta":{"traceparent":null}}"#).is_none());
        assert!(extract(r#"{"_meta":"traceparent"}"#).is_none());
        assert!(extract(r#"{"prompt":"traceparent"}"#).is_none());
        assert!(extract(r#"[1,"traceparent"]"#).is_none());
    }

    fn context() -> SpanContext {
        parse_traceparent(GOOD).unwrap()
    }

    fn injected(line: &str) -> Value {
        let mut bytes = line.as_bytes().to_vec();
        inject_into_envelope(&mut bytes, &context());
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn the_context_goes_into_the_envelopes_params() {
        let v = injected(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}"#);
        assert_eq!(v["params"]["_meta"]["traceparent"], GOOD);
        assert_eq!(v["params"]["a"], 1);
        let v = injected(r#"{"jsonrpc":"2.0","method":"m","params":{}}"#);
        assert_eq!(v["params"]["_meta"]["traceparent"], GOOD);
        let v = injected(
            r#"{"jsonrpc":"2.0","method":"m","params":{"_meta":{"x":1,"traceparent":"old"}}}"#,
        );
        assert_eq!(v["params"]["_meta"]["traceparent"], GOOD);
        assert_eq!(v["params"]["_meta"]["x"], 1);
        let v = injected(r#"{"jsonrpc":"2.0","method":"m","params":[1]}"#);
        assert_eq!(v["params"], serde_json::json!([1]));
        let v = injected(r#"{"jsonrpc":"2.0","method":"m\",\"params\":{","params":null}"#);
        assert_eq!(v["params"], Value::Null);
    }
}
