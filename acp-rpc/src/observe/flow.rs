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

use std::time::Instant;

use crate::error::{Error, ErrorCode};

/// The `tracing` target of every message-flow event.
pub const TARGET: &str = "acp_rpc::flow";

/// The top-level `sessionId` string of a params (or whole message) text, found without
/// parsing: the first `"sessionId"` key followed by a string value. `None` without one, or
/// when it holds escapes (not worth decoding for a log field).
pub fn session_id(text: &str) -> Option<&str> {
    string_field(text, "sessionId")
}

/// The string value of the first `"key"` in `text` that is followed by `:` and a string,
/// found by a scan, without parsing (so the key may be nested anywhere). `None` without
/// one, or when the value holds escapes. What [`session_id`] uses, for other such fields
/// (a `session/update`'s `sessionUpdate` kind).
pub fn string_field<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    for (at, _) in text.match_indices(key) {
        let quoted = text[..at].ends_with('"') && text[at + key.len()..].starts_with('"');
        if !quoted {
            continue;
        }
        let rest = text[at + key.len() + 1..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let rest = rest.trim_start().strip_prefix('"')?;
        let end = rest.find('"')?;
        let value = &rest[..end];
        return (!value.contains('\\')).then_some(value);
    }
    None
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
