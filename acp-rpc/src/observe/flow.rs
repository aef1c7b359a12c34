//! Message-flow logging: what every connection tells `tracing` about the messages it moves,
//! so a log answers "what happened to this session's prompt, and how long did it take".
//!
//! Everything is under the target [`TARGET`] (`acp_rpc::flow`), with these fields:
//! `direction` (`incoming` or `outgoing`, seen from this side), `method`, `message_id` (the
//! JSON-RPC id; absent for notifications), `session_id` (the params' `sessionId`, when they
//! have one) and, at the end of a request, `duration_ms` and `ok`.
//!
//! | level | what |
//! | --- | --- |
//! | DEBUG | every message: `received` (each incoming request and notification) and `sent` (each outgoing request and notification) |
//! | INFO | a request's flow: `request started` and `request completed` (with `duration_ms`), in the span `request` (incoming) or `outgoing_request`, which carry the same fields |
//! | ERROR | a request that failed: an error answer other than the expected ones (method not found, cancelled, unknown resource, authentication required: those complete at INFO with their `error`), a timeout, a closed connection, a panicking handler |
//!
//! Retries and recovery are logged at WARN by the layer that does them (acp-client's
//! `restart::SupervisedAgent`). The session id is read from the params only when the event or
//! span is enabled, so a quiet log costs nothing per message.

use std::sync::LazyLock;
use std::time::Instant;

use memchr::memmem::Finder;

use crate::error::{Error, ErrorCode};

/// The `tracing` target of every message-flow event.
pub const TARGET: &str = "acp_rpc::flow";

/// The top-level `sessionId` string of a params (or whole message) text, found without
/// parsing: the first `"sessionId"` key followed by a string value. `None` without one, or
/// when it holds escapes (not worth decoding for a log field). Params that start with it
/// (as ours are written) are read where they stand.
pub fn session_id(text: &str) -> Option<&str> {
    session_id_in(text.as_bytes())
}

/// [`session_id`] in bytes that need not be checked as UTF-8 first (a line the engine just
/// wrote): only the value found is.
pub(crate) fn session_id_in(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(session_id_bytes_in(bytes)?).ok()
}

/// [`session_id_in`] as bytes, not checked as UTF-8: for a comparison with a session id
/// already known (the OpenTelemetry turns' lookup, once per notification).
pub(crate) fn session_id_bytes_in(bytes: &[u8]) -> Option<&[u8]> {
    static KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""sessionId""#));
    if let Some(rest) = bytes.strip_prefix(br#"{"sessionId":""#) {
        return plain_bytes(rest);
    }
    let ends = KEY.find_iter(bytes).map(|at| at + KEY.needle().len());
    first_value(bytes, ends).map(str::as_bytes)
}

/// The string value of the first `"key"` in `text` that is followed by `:` and a string,
/// found by a scan, without parsing (so the key may be nested anywhere). `None` without
/// one, or when the value holds escapes. What [`session_id`] uses, for other such fields
/// (a `session/update`'s `sessionUpdate` kind).
pub fn string_field<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let bytes = text.as_bytes();
    let quoted = memchr::memmem::find_iter(bytes, key.as_bytes()).filter_map(|at| {
        let end = at + key.len();
        (at > 0 && bytes[at - 1] == b'"' && bytes.get(end) == Some(&b'"')).then_some(end + 1)
    });
    first_value(bytes, quoted)
}

/// The value of the first quoted key (each ending at one of `ends`, after its closing quote)
/// that a `:` follows: its string, or `None` when that value is not a string without
/// escapes.
fn first_value(bytes: &[u8], ends: impl Iterator<Item = usize>) -> Option<&str> {
    for end in ends {
        let Some(rest) = bytes
            .get(end..)
            .and_then(|r| json_trim(r).strip_prefix(b":"))
        else {
            continue;
        };
        return plain_string(json_trim(rest).strip_prefix(b"\"")?);
    }
    None
}

/// `bytes` without the JSON whitespace it starts with.
fn json_trim(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(bytes.len());
    &bytes[skip..]
}

/// The string that `rest` starts (after its opening quote) when it holds no escape.
fn plain_string(rest: &[u8]) -> Option<&str> {
    std::str::from_utf8(plain_bytes(rest)?).ok()
}

/// The bytes of a JSON string without escapes, up to its closing quote (`rest` starts after
/// the opening one).
fn plain_bytes(rest: &[u8]) -> Option<&[u8]> {
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"').then(|| &rest[..end])
}

/// Whether a request that ended with `error` failed (ERROR) or just had an expected answer
/// (INFO).
pub(crate) fn is_failure(error: &Error) -> bool {
    !matches!(
        error.code,
        ErrorCode::METHOD_NOT_FOUND
            | ErrorCode::REQUEST_CANCELLED
            | ErrorCode::RESOURCE_NOT_FOUND
            | ErrorCode::AUTH_REQUIRED
    )
}

/// When a request starts: the time, if its end will be logged (reading the clock costs a
/// system call on some virtual machines, per request, for a log nobody reads otherwise).
pub(crate) fn start() -> Option<Instant> {
    tracing::enabled!(target: TARGET, tracing::Level::ERROR).then(Instant::now)
}

/// Logs the end of a request in the current span. (With the `otel` feature, the caller
/// records it on the span first: `otel::completed`, which builds on this module.)
pub(crate) fn completed<T>(start: Option<Instant>, result: &Result<T, Error>) {
    let Some(start) = start else { return };
    let duration_ms = start.elapsed().as_secs_f64() * 1000.0;
    match result {
        Ok(_) => tracing::info!(target: TARGET, duration_ms, ok = true, "request completed"),
        Err(e) if !is_failure(e) => tracing::info!(
            target: TARGET,
            duration_ms,
            ok = false,
            error = %e,
            "request completed"
        ),
        Err(e) => tracing::error!(
            target: TARGET,
            duration_ms,
            ok = false,
            error = %e,
            "request failed"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_id_is_found_without_parsing() {
        assert_eq!(
            session_id(r#"{"sessionId":"s-1","prompt":[]}"#),
            Some("s-1")
        );
        assert_eq!(
            session_id(r#"{"cwd":"/", "sessionId" : "abc"}"#),
            Some("abc")
        );
        assert_eq!(session_id(r#"{"cwd":"/"}"#), None);
        assert_eq!(session_id(r#"{"sessionId":7}"#), None);
        assert_eq!(session_id(r#"{"sessionId":"a\"b"}"#), None);
        assert_eq!(session_id(r#"{"sessionId":"#), None);
        assert_eq!(
            string_field(
                r#"{"x":"sessionUpdate","update":{"sessionUpdate":"plan"}}"#,
                "sessionUpdate"
            ),
            Some("plan")
        );
        assert_eq!(
            string_field(r#"{"mySessionUpdate":"x"}"#, "sessionUpdate"),
            None
        );
    }
}
