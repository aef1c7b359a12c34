//! The trace context the reader takes off an incoming message (feature `otel`): a peer of
//! ours writes it first in the params, `{"_meta":{"traceparent":"…"},…}`; the engine reads it
//! as the parent of the handling span and hands the handler the params without it (see
//! [the module's docs](super#what-the-handler-reads)).

use opentelemetry::trace::SpanContext;
use serde_json::value::RawValue;

use super::TARGET;
use super::wire::{OURS, PARAMS_KEY, TRACEPARENT_LEN, Traceparent, parse_traceparent_bytes};

/// A trace context the reader took off an incoming message (see [`take_from_line`]): the
/// sender's `traceparent`, read as a span context only where one is needed (a streamed
/// notification in a turn needs none).
#[derive(Clone, Debug)]
pub(crate) struct Taken {
    /// The `traceparent` as it came: 55 lower-case hex digits and dashes.
    text: Traceparent,
    /// Where, in the line, the params now start (their new `{`).
    pub(crate) params_at: usize,
    /// Where they started before.
    params_from: usize,
    /// The byte the new `{` replaced: the `,` after the `_meta` member, or its `}`.
    was: u8,
}

impl Taken {
    /// The sender's span (remote), or `None` when the `traceparent` is malformed (an
    /// all-zero id, version `ff`): logged at DEBUG and ignored, as anywhere else; the message
    /// is served as if it had none.
    pub(crate) fn context(&self) -> Option<SpanContext> {
        match parse_traceparent_bytes(&self.text) {
            Ok(context) => Some(context),
            Err(why) => {
                tracing::debug!(target: TARGET, traceparent = self.text(), why, "malformed traceparent: ignored");
                None
            }
        }
    }

    /// The `traceparent` as text.
    pub(crate) fn text(&self) -> &str {
        // Only lower-case hex digits and dashes are taken.
        std::str::from_utf8(&self.text).unwrap_or_default()
    }

    /// The line as it was before [`take_from_line`] edited it.
    pub(crate) fn restore(&self, line: &[u8]) -> Vec<u8> {
        let mut original = Vec::with_capacity(line.len());
        original.extend_from_slice(&line[..self.params_from]);
        original.extend_from_slice(OURS);
        original.extend_from_slice(&self.text);
        original.push(b'"');
        if self.was == b',' {
            original.push(b'}');
        }
        original.push(self.was);
        original.extend_from_slice(&line[self.params_at + 1..]);
        original
    }
}

/// Where the params of an incoming request or notification written the usual way start
/// (checked member by member, as the line is edited in place; `wire::params_start` finds
/// them in a line the engine itself wrote):
/// `{"jsonrpc":"2.0",` then, for a request, `"id":<integer>,`, then `"method":"<name>"` (no
/// escapes) and `,"params":`. `None` for any other shape.
fn usual_params_start(line: &[u8]) -> Option<usize> {
    let mut rest = line.strip_prefix(br#"{"jsonrpc":"2.0","#.as_slice())?;
    if let Some(after) = rest.strip_prefix(br#""id":"#.as_slice()) {
        let digits = after
            .iter()
            .position(|b| *b != b'-' && !b.is_ascii_digit())?;
        rest = after[digits..].strip_prefix(b",".as_slice())?;
    }
    let method = rest.strip_prefix(br#""method":""#.as_slice())?;
    // The name ends at the first quote, unless an escape comes first.
    let end = memchr::memchr2(b'"', b'\\', method)?;
    if method[end] != b'"' {
        return None;
    }
    let params = method[end + 1..].strip_prefix(PARAMS_KEY)?;
    Some(line.len() - params.len())
}

/// Takes the trace context off a line whose params start with the `_meta` our engine
/// writes, `{"_meta":{"traceparent":"<55 lower-case hex digits and dashes>"}` (nothing else
/// in that `_meta`), then `,` or `}`: the engine reads it (the parent of the span that
/// handles the message; a malformed one is ignored, as anywhere), so the handler's params
/// come without it. The line is edited in place and stays the same JSON less that member:
/// the `_meta` member becomes spaces and the params' `{` moves up to where the next member
/// starts ([`Taken::params_at`]), so neither a copy nor a parse of the `_meta` is made. Any
/// other line is left as it is.
pub(crate) fn take_from_line(line: &mut [u8]) -> Option<Taken> {
    let (start, text, cut) = ours_in_line(line)?;
    let was = line[cut];
    line[start..cut].fill(b' ');
    line[cut] = b'{';
    Some(Taken {
        text,
        params_at: cut,
        params_from: start,
        was,
    })
}

/// Whether [`take_from_line`] would take anything off `line`: for a line held where it
/// cannot be edited, copied only then.
pub(crate) fn would_take_from_line(line: &[u8]) -> bool {
    ours_in_line(line).is_some()
}

/// Where in `line` the params start, the `traceparent` of our `_meta` first in them, and
/// the offset in `line` of the byte that becomes the params' new `{`.
fn ours_in_line(line: &[u8]) -> Option<(usize, Traceparent, usize)> {
    let start = usual_params_start(line)?;
    let (text, cut) = ours_first(&line[start..])?;
    Some((start, text, start + cut))
}

/// The same for params held on their own (a message read whole, an element of a batch, one
/// a memory pair handed over): the params are written again without the `_meta` member.
pub(crate) fn take_from_params(params: &mut Option<Box<RawValue>>) -> Option<Taken> {
    let raw = params.as_deref()?.get();
    let (text, cut) = ours_first(raw.as_bytes())?;
    let was = raw.as_bytes()[cut];
    let mut rest = String::with_capacity(raw.len() - cut);
    rest.push('{');
    rest.push_str(&raw[cut + 1..]);
    *params = Some(RawValue::from_string(rest).ok()?);
    Some(Taken {
        text,
        params_at: 0,
        params_from: 0,
        was,
    })
}

/// Whether every byte is a lower-case hex digit or a dash: checked without a branch per
/// byte, so that the compiler checks many at once (one `all` with `||` cost the reader
/// about 50 ns a message).
fn is_traceparent_text(text: &Traceparent) -> bool {
    text.iter().fold(true, |ok, &b| {
        ok & ((b == b'-') | (b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6))
    })
}

/// The `traceparent` of params that start with our `_meta` (see [`take_from_line`]), and the
/// offset of the byte that becomes the params' new `{` (the `,` after the `_meta` member, or
/// its closing `}` when nothing follows it).
fn ours_first(params: &[u8]) -> Option<(Traceparent, usize)> {
    let rest = params.strip_prefix(OURS)?;
    let text: Traceparent = rest.get(..TRACEPARENT_LEN)?.try_into().ok()?;
    // No quote, backslash or anything else that could make the string end elsewhere.
    if !is_traceparent_text(&text) {
        return None;
    }
    let after = rest.get(TRACEPARENT_LEN..TRACEPARENT_LEN + 3)?;
    if after[0] != b'"' || after[1] != b'}' {
        return None;
    }
    let end_of_meta = OURS.len() + TRACEPARENT_LEN + 1;
    match after[2] {
        b',' => Some((text, end_of_meta + 1)),
        b'}' => Some((text, end_of_meta)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::observe::otel::format_traceparent;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    /// `line` after [`take_from_line`], parsed, and what it took.
    fn taken_from(line: &str) -> (Option<Taken>, String) {
        let mut bytes = line.as_bytes().to_vec();
        let taken = take_from_line(&mut bytes);
        (taken, String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn the_reader_takes_our_trace_context_off_a_line_and_can_put_it_back() {
        for (line, params) in [
            (
                format!(
                    r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{GOOD}"}},"a":1}}}}"#
                ),
                r#"{"a":1}"#,
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":-7,"method":"m","params":{{"_meta":{{"traceparent":"{GOOD}"}}}}}}"#
                ),
                "{}",
            ),
        ] {
            let (taken, edited) = taken_from(&line);
            let taken = taken.unwrap_or_else(|| panic!("nothing taken off {line}"));
            assert_eq!(taken.text(), GOOD);
            let context = taken.context().unwrap();
            assert_eq!(format_traceparent(&context), GOOD);
            assert!(context.is_remote());
            // The same JSON less the member: the params start at their new `{`.
            let before: Value = serde_json::from_str(&line).unwrap();
            let after: Value = serde_json::from_str(&edited).unwrap();
            assert_eq!(
                after["params"],
                serde_json::from_str::<Value>(params).unwrap()
            );
            assert_eq!(after["method"], before["method"]);
            assert_eq!(after.get("id"), before.get("id"));
            assert_eq!(&edited[taken.params_at..edited.len() - 1], params);
            assert_eq!(taken.restore(edited.as_bytes()), line.as_bytes());
        }
    }

    #[test]
    fn anything_but_our_trace_context_first_in_the_params_is_left_alone() {
        let upper = GOOD.to_uppercase();
        let quoted = format!(r#"{}\""#, &GOOD[..53]);
        for line in [
            // More in `_meta`, or a `tracestate`: the handler gets it whole.
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{GOOD}","x":1}}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{GOOD}","tracestate":"k=v"}}}}}}"#
            ),
            // Not lower-case hex: a string that might not end where ours would.
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{upper}"}}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{quoted}"}}}}}}"#
            ),
            // Not first in the params, not at the top, not the usual envelope.
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{{"a":1,"_meta":{{"traceparent":"{GOOD}"}}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","x":{{"params":{{"_meta":{{"traceparent":"{GOOD}"}}}}}},"params":{{}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"m\",\"params\":","params":{{"_meta":{{"traceparent":"{GOOD}"}}}}}}"#
            ),
            format!(
                r#"{{"method":"m","jsonrpc":"2.0","params":{{"_meta":{{"traceparent":"{GOOD}"}}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":"s","method":"m","params":{{"_meta":{{"traceparent":"{GOOD}"}}}}}}"#
            ),
            // Truncated where the member ends.
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{GOOD}"}}"#
            ),
        ] {
            let (taken, edited) = taken_from(&line);
            assert!(taken.is_none(), "took from {line}");
            assert_eq!(edited, line);
        }
    }

    #[test]
    fn a_malformed_one_of_our_shape_is_taken_and_ignored() {
        let zeros = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"m","params":{{"_meta":{{"traceparent":"{zeros}"}},"a":1}}}}"#
        );
        let (taken, edited) = taken_from(&line);
        let taken = taken.unwrap();
        assert_eq!(taken.text(), zeros);
        assert!(taken.context().is_none());
        let after: Value = serde_json::from_str(&edited).unwrap();
        assert_eq!(after["params"], serde_json::json!({"a": 1}));
    }

    #[test]
    fn params_read_whole_lose_our_trace_context_too() {
        let raw = |text: &str| Some(serde_json::value::RawValue::from_string(text.into()).unwrap());
        let mut params = raw(&format!(
            r#"{{"_meta":{{"traceparent":"{GOOD}"}},"a":[1]}}"#
        ));
        let taken = take_from_params(&mut params).unwrap();
        assert_eq!(taken.text(), GOOD);
        assert_eq!(params.unwrap().get(), r#"{"a":[1]}"#);
        let mut params = raw(&format!(r#"{{"_meta":{{"traceparent":"{GOOD}"}}}}"#));
        assert!(take_from_params(&mut params).is_some());
        assert_eq!(params.unwrap().get(), "{}");
        let kept = format!(r#"{{"_meta":{{"traceparent":"{GOOD}","x":1}}}}"#);
        let mut params = raw(&kept);
        assert!(take_from_params(&mut params).is_none());
        assert_eq!(params.unwrap().get(), kept);
        assert!(take_from_params(&mut None).is_none());
    }
}
