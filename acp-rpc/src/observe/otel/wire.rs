//! W3C Trace Context on the wire: `traceparent` read and written, `_meta` read from a
//! message's params and written into an outgoing line (feature `otel`).

use std::str::FromStr;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
use serde::Deserialize;
use serde_json::Value;

use super::{TARGET, TRACEPARENT, TRACESTATE};

/// The length of a version-`00` `traceparent`.
pub(crate) const TRACEPARENT_LEN: usize = 55;

/// A version-`00` `traceparent`, formatted once per span.
pub(crate) type Traceparent = [u8; TRACEPARENT_LEN];

/// Reads a W3C `traceparent` header value: `None`, with the reason, when it is malformed
/// (wrong length, version `ff`, upper-case or non-hex digits, an all-zero trace or span id).
///
/// A version above `00` is read as the specification asks: its first four fields, when
/// whatever follows them starts with `-`.
pub fn parse_traceparent(text: &str) -> Result<SpanContext, &'static str> {
    parse_traceparent_bytes(text.as_bytes())
}

/// [`parse_traceparent`] of bytes not yet known to be text (hex digits and dashes are
/// ASCII): the ids decoded here, digit by digit, which costs a fraction of
/// [`TraceId::from_hex`]'s parse of a `u128` (the reader reads one per message).
pub(super) fn parse_traceparent_bytes(bytes: &[u8]) -> Result<SpanContext, &'static str> {
    if bytes.len() < TRACEPARENT_LEN {
        return Err("too short");
    }
    let [version] = decode_hex::<1>(&bytes[..2]).ok_or("version is not hex")?;
    if version == 0xff {
        return Err("version ff is invalid");
    }
    if version == 0 && bytes.len() != TRACEPARENT_LEN {
        return Err("wrong length for version 00");
    }
    if bytes.len() > TRACEPARENT_LEN && bytes[TRACEPARENT_LEN] != b'-' {
        return Err("wrong length");
    }
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return Err("misplaced separators");
    }
    let (trace, span, flags) = (
        decode_hex::<16>(&bytes[3..35]),
        decode_hex::<8>(&bytes[36..52]),
        decode_hex::<1>(&bytes[53..55]),
    );
    let (Some(trace), Some(span), Some([flags])) = (trace, span, flags) else {
        return Err("not lower-case hex");
    };
    let (trace_id, span_id) = (TraceId::from_bytes(trace), SpanId::from_bytes(span));
    if trace_id == TraceId::INVALID {
        return Err("all-zero trace id");
    }
    if span_id == SpanId::INVALID {
        return Err("all-zero span id");
    }
    Ok(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    ))
}

/// `N` bytes from `2 * N` lower-case hex digits; `None` for anything else.
fn decode_hex<const N: usize>(hex: &[u8]) -> Option<[u8; N]> {
    fn digit(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        }
    }
    if hex.len() != 2 * N {
        return None;
    }
    let mut out = [0; N];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

/// The W3C `traceparent` of a span context (version `00`).
pub fn format_traceparent(context: &SpanContext) -> String {
    let bytes = traceparent_bytes(context);
    // Only ASCII hex digits and dashes were written.
    String::from_utf8_lossy(&bytes).into_owned()
}

/// [`format_traceparent`] into a fixed array, without allocating.
pub(crate) fn traceparent_bytes(context: &SpanContext) -> Traceparent {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'-'; TRACEPARENT_LEN];
    out[0] = b'0';
    out[1] = b'0';
    let mut put = |at: usize, bytes: &[u8]| {
        for (i, b) in bytes.iter().enumerate() {
            out[at + 2 * i] = HEX[usize::from(b >> 4)];
            out[at + 2 * i + 1] = HEX[usize::from(b & 0xf)];
        }
    };
    put(3, &context.trace_id().to_bytes());
    put(36, &context.span_id().to_bytes());
    put(53, &[context.trace_flags().to_u8()]);
    out
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

static TRACEPARENT_FINDER: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(TRACEPARENT.as_bytes()));
static META_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"_meta\""));
static PARAMS_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(PARAMS_KEY));

/// What a peer of ours writes first in its params (see [`splice`]).
pub(super) const OURS: &[u8] = br#"{"_meta":{"traceparent":""#;

/// The remote span context in a message's params text (`_meta.traceparent` and
/// `_meta.tracestate`), or `None`: no `_meta.traceparent`, or a malformed one (logged at
/// DEBUG under [`TARGET`], never an error). Params without the word `traceparent` are not
/// parsed at all; params that start as ours do (`{"_meta":{"traceparent":"…"}` and no
/// `tracestate`) are read where they stand.
pub fn extract(params: &str) -> Option<SpanContext> {
    let bytes = params.as_bytes();
    if let Some(rest) = bytes.strip_prefix(OURS)
        && rest.len() > TRACEPARENT_LEN + 1
        && rest[TRACEPARENT_LEN] == b'"'
        && rest[TRACEPARENT_LEN + 1] == b'}'
        && let Ok(text) = std::str::from_utf8(&rest[..TRACEPARENT_LEN])
        && let Ok(context) = parse_traceparent(text)
    {
        return Some(context);
    }
    TRACEPARENT_FINDER.find(bytes)?;
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

pub(super) const PARAMS_KEY: &[u8] = br#","params":"#;

/// Where the params of a line the engine wrote start (`"params"` last, the line ending with
/// the envelope's `}`; a method string holds a quote only escaped, so the first match is
/// it).
pub(crate) fn params_start(line: &[u8]) -> Option<usize> {
    Some(PARAMS_FINDER.find(line)? + PARAMS_KEY.len())
}

/// The params of a line the engine wrote, from their `{` (at `start`, [`params_start`]) up
/// to the envelope's closing `}`.
pub(crate) fn params_from(line: &[u8], start: usize) -> Option<&[u8]> {
    let end = line.len().checked_sub(1)?;
    (start < end).then(|| &line[start..end])
}

/// Writes a span's `traceparent` (`bytes`, formatted once for the span; `context` for the
/// rare slow path) into the params of an envelope the engine wrote (`,"params":` is its last
/// member; a method string holds a quote only escaped, so the first match is it).
///
/// The usual case is a copy: `"_meta":{"traceparent":"…"},` goes in after the params' `{`.
/// Params that have a `_meta` already, or a context with a `tracestate`, are parsed and
/// written again. Params that are not an object are left alone.
pub(crate) fn splice(line: &mut Vec<u8>, bytes: &Traceparent, context: &SpanContext) {
    splice_from(line, params_start(line), Params::Unknown, bytes, context);
}

/// What is known of the params a trace context goes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Params {
    /// Written by a direct writer (no `_meta` at their top, as [`Params::WithoutMeta`])
    /// behind [`META_MEMBER_LEN`] spaces that the engine left for the `_meta` member
    /// ([`gap`](crate::message::write_notification_with)): `start` is where the spaces
    /// start. The member is written over them and the params' `{` becomes the `,` after it,
    /// so nothing is moved; without a trace context to write, the spaces are taken out.
    AfterGap,
    /// Written by a direct writer, which writes no `_meta` at their top: not looked into.
    WithoutMeta,
    /// Anything: looked into for a `_meta` (anywhere, to be safe) to merge into.
    Unknown,
}

/// [`splice`] into params found already: `start` is where they start ([`params_start`]),
/// `None` for a line without params (left alone).
pub(crate) fn splice_from(
    line: &mut Vec<u8>,
    start: Option<usize>,
    known: Params,
    bytes: &Traceparent,
    context: &SpanContext,
) {
    let Some(start) = start else {
        return;
    };
    // `header()` builds a string: asked only of a trace state that is not the empty one.
    let has_state =
        *context.trace_state() != TraceState::NONE && !context.trace_state().header().is_empty();
    let mut known = known;
    if known == Params::AfterGap {
        if !has_state && fill_gap(line, start, bytes) {
            return;
        }
        // Empty params, or a trace state to write too: the params are where the gap was,
        // and go the usual way.
        close_gap(line, start);
        known = Params::WithoutMeta;
    }
    let Some(empty) = params_object(line, start) else {
        return;
    };
    let params = &line[start..line.len() - 1];
    let may_have_meta = known == Params::Unknown && META_FINDER.find(params).is_some();
    if may_have_meta || has_state {
        // The slow path: merge into an existing `_meta` (or add a tracestate).
        let Ok(mut value) = serde_json::from_slice::<Value>(params) else {
            return;
        };
        inject_value(&mut value, context);
        let Ok(new_params) = serde_json::to_vec(&value) else {
            return;
        };
        line.truncate(start);
        line.extend_from_slice(&new_params);
        line.push(b'}');
        return;
    }
    // `{` then `"_meta":{"traceparent":"…"}` then `,` and the rest (none for `{}`).
    let insert = META_MEMBER_LEN - 1 + usize::from(!empty);
    let old = line.len();
    line.resize(old + insert, 0);
    line.copy_within(start + 1..old, start + 1 + insert);
    // The member's `{` is the params' own: written over it, then the `,` when more follows.
    write_member(&mut line[start..start + META_MEMBER_LEN], bytes);
    if !empty {
        line[start + META_MEMBER_LEN] = b',';
    }
}

/// The length of the `_meta` member a peer of ours writes first in its params, with the
/// params' `{`: `{"_meta":{"traceparent":"…"}` (see [`OURS`]).
pub(crate) const META_MEMBER_LEN: usize = OURS.len() + TRACEPARENT_LEN + 2;

/// Writes `{"_meta":{"traceparent":"<bytes>"}` into `out` ([`META_MEMBER_LEN`] bytes): in
/// copies of known lengths, which the compiler writes in place.
fn write_member(out: &mut [u8], bytes: &Traceparent) {
    let out: &mut [u8; META_MEMBER_LEN] = out.try_into().expect("the member's length");
    let (head, rest) = out.split_at_mut(OURS.len());
    head.copy_from_slice(OURS);
    let (text, tail) = rest.split_at_mut(TRACEPARENT_LEN);
    text.copy_from_slice(bytes);
    tail.copy_from_slice(b"\"}");
}

/// Writes the `_meta` member into the gap at `start` (see [`Params::AfterGap`]) and turns
/// the params' `{` behind it into the `,` that follows the member. `false`, with nothing
/// written, for params that are not an object with a member (`{}`: the gap is then taken
/// out instead).
fn fill_gap(line: &mut [u8], start: usize, bytes: &Traceparent) -> bool {
    let params_at = start + META_MEMBER_LEN;
    if params_object(line, params_at) != Some(false) {
        return false;
    }
    write_member(&mut line[start..params_at], bytes);
    line[params_at] = b',';
    true
}

/// Whether the params at `start` of a line the engine wrote (up to the envelope's closing
/// `}`) are an empty object: `Some(true)` for `{}` (spaces allowed), `Some(false)` for an
/// object with members, `None` for anything that does not start with `{`.
fn params_object(line: &[u8], start: usize) -> Option<bool> {
    let end = line.len().checked_sub(1)?;
    if line.get(start) != Some(&b'{') || line[end] != b'}' || end <= start {
        return None;
    }
    Some(
        line[start + 1..end]
            .iter()
            .all(|b| b.is_ascii_whitespace() || *b == b'}'),
    )
}

/// Takes the gap left for the `_meta` member at `start` (see [`Params::AfterGap`]) out of
/// `line`, which is then what the writer would have written without it.
pub(crate) fn close_gap(line: &mut Vec<u8>, start: usize) {
    let end = (start + META_MEMBER_LEN).min(line.len());
    line.drain(start..end);
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
        assert_eq!(&traceparent_bytes(&context)[..], GOOD.as_bytes());
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
            // Not ASCII: no character boundary is assumed anywhere.
            "\u{20ac}-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0\u{e9}4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473\u{e9}00f067aa0ba902b7-01",
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

    #[test]
    fn extract_reads_our_own_params_where_they_stand_and_falls_back_otherwise() {
        let ours = format!(r#"{{"_meta":{{"traceparent":"{GOOD}"}},"x":1}}"#);
        assert_eq!(format_traceparent(&extract(&ours).unwrap()), GOOD);
        // A tracestate after it: the full parse, which reads both.
        let stated = format!(r#"{{"_meta":{{"traceparent":"{GOOD}","tracestate":"k=v"}}}}"#);
        assert_eq!(extract(&stated).unwrap().trace_state().header(), "k=v");
        // Our prefix with a bad value: ignored, as any bad value.
        let bad = GOOD.replace("4bf9", "4BF9");
        assert!(extract(&format!(r#"{{"_meta":{{"traceparent":"{bad}"}}}}"#)).is_none());
    }

    fn context() -> SpanContext {
        parse_traceparent(GOOD).unwrap()
    }

    fn injected(line: &str) -> Value {
        let mut bytes = line.as_bytes().to_vec();
        let context = context();
        splice(&mut bytes, &traceparent_bytes(&context), &context);
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

    /// Params a direct writer wrote are not looked into: the context goes first, the bytes
    /// after it are the writer's own; a trace state still takes the merge.
    #[test]
    fn params_known_without_meta_take_the_context_first_unlooked() {
        let line = br#"{"jsonrpc":"2.0","method":"m","params":{"a":"_meta"}}"#;
        let start = params_start(line);
        let context = context();
        let mut known = line.to_vec();
        splice_from(
            &mut known,
            start,
            Params::WithoutMeta,
            &traceparent_bytes(&context),
            &context,
        );
        let mut looked = line.to_vec();
        splice(&mut looked, &traceparent_bytes(&context), &context);
        let expected = format!(
            r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{GOOD}"}},"a":"_meta"}}}}"#
        );
        assert_eq!(String::from_utf8(known).unwrap(), expected);
        // The looked-at path merges (a value holds `_meta`): the same JSON, its member order
        // serde_json's (which `preserve_order`, on in some builds, changes).
        let looked: Value = serde_json::from_slice(&looked).unwrap();
        assert_eq!(looked, serde_json::from_str::<Value>(&expected).unwrap());

        let stated = with_state(&context);
        let mut line = line.to_vec();
        splice_from(
            &mut line,
            start,
            Params::WithoutMeta,
            &traceparent_bytes(&stated),
            &stated,
        );
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["params"]["_meta"]["traceparent"], GOOD);
        assert_eq!(v["params"]["_meta"]["tracestate"], "k=v");
        assert_eq!(v["params"]["a"], "_meta");
    }

    /// `context` with the trace state `k=v`.
    fn with_state(context: &SpanContext) -> SpanContext {
        SpanContext::new(
            context.trace_id(),
            context.span_id(),
            context.trace_flags(),
            true,
            TraceState::from_key_value([("k", "v")]).unwrap(),
        )
    }

    /// A line as a direct writer leaves it with a gap for the `_meta` member: the envelope,
    /// the gap's spaces, `params`, and where the gap starts.
    fn with_gap(params: &str) -> (Vec<u8>, usize) {
        let mut line = br#"{"jsonrpc":"2.0","method":"m","params":"#.to_vec();
        let at = line.len();
        line.resize(at + META_MEMBER_LEN, b' ');
        line.extend_from_slice(params.as_bytes());
        line.push(b'}');
        (line, at)
    }

    #[test]
    fn the_gap_a_direct_writer_leaves_takes_the_member_or_is_taken_out() {
        let context = context();
        let bytes = traceparent_bytes(&context);
        for params in [r#"{"a":1}"#, "{}", "{ }"] {
            let (mut filled, at) = with_gap(params);
            splice_from(&mut filled, Some(at), Params::AfterGap, &bytes, &context);
            let mut spliced =
                format!(r#"{{"jsonrpc":"2.0","method":"m","params":{params}}}"#).into_bytes();
            splice(&mut spliced, &bytes, &context);
            // Byte for byte what the splice of the line without a gap gives.
            assert_eq!(
                String::from_utf8(filled).unwrap(),
                String::from_utf8(spliced).unwrap()
            );

            let (mut closed, at) = with_gap(params);
            close_gap(&mut closed, at);
            assert_eq!(
                String::from_utf8(closed).unwrap(),
                format!(r#"{{"jsonrpc":"2.0","method":"m","params":{params}}}"#)
            );
        }
        // A trace state to write as well: the gap goes and the params are written again.
        let stated = with_state(&context);
        let (mut line, at) = with_gap(r#"{"a":1}"#);
        splice_from(&mut line, Some(at), Params::AfterGap, &bytes, &stated);
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["params"]["_meta"]["traceparent"], GOOD);
        assert_eq!(v["params"]["_meta"]["tracestate"], "k=v");
        assert_eq!(v["params"]["a"], 1);
        assert!(!line.windows(2).any(|w| w == b"  "), "no gap left");
    }

    #[test]
    fn spliced_params_start_as_extract_reads_them_fast() {
        let mut line = br#"{"jsonrpc":"2.0","method":"m","params":{"a":1}}"#.to_vec();
        let context = context();
        splice(&mut line, &traceparent_bytes(&context), &context);
        let text = std::str::from_utf8(&line).unwrap();
        let params = &text[text.find(r#""params":"#).unwrap() + 9..text.len() - 1];
        assert!(params.as_bytes().starts_with(OURS), "{params}");
        assert_eq!(format_traceparent(&extract(params).unwrap()), GOOD);
    }
}
