//! The usual shapes the engine writes, split by their fixed heads without any parse at all
//! (the engine's read fast paths).

use std::ops::Range;

/// The method and params text of a notification written the usual way,
/// `{"jsonrpc":"2.0","method":"<method>","params":<params>}` (trailing whitespace allowed),
/// without parsing it: `None` for any other shape, or a method name with escapes or
/// control characters.
///
/// The params text is not validated. The line is a well-formed notification exactly when
/// it is one JSON value, so a caller that parses all of it (as [`Handler::start_notification`]
/// must) has validated the line; anything else goes through the full parse ([`Message::parse`](crate::Message::parse)).
///
/// [`Handler::start_notification`]: crate::Handler::start_notification
pub fn plain_notification(line: &str) -> Option<(&str, &str)> {
    let (method, params) = plain_notification_spans(line.as_bytes())?;
    // (Both spans start and end at ASCII bytes, so they are character boundaries.)
    Some((line.get(method)?, line.get(params)?))
}

/// Whether `line` is a notification written the usual way (see [`plain_notification`]),
/// read from its bytes: a router that passes such lines on unread need not check that the
/// whole line is UTF-8 first (the params are not looked at, as there).
pub fn is_plain_notification(line: &[u8]) -> bool {
    plain_notification_spans(line).is_some()
}

/// Where the method and the params text of a plain notification lie in `line`.
fn plain_notification_spans(line: &[u8]) -> Option<(Range<usize>, Range<usize>)> {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":""#;
    const PARAMS: &[u8] = br#","params":"#;
    let rest = line.strip_prefix(HEAD)?;
    let end = memchr::memchr(b'"', rest)?;
    if rest[..end].iter().any(|&b| b == b'\\' || b < 0x20) {
        return None;
    }
    let body = rest[end + 1..].strip_prefix(PARAMS)?;
    let body = body.trim_ascii_end().strip_suffix(b"}")?;
    let method_start = HEAD.len();
    let params_start = method_start + end + 1 + PARAMS.len();
    Some((
        method_start..method_start + end,
        params_start..params_start + body.len(),
    ))
}

/// The id and result text of a successful response written the usual way,
/// `{"jsonrpc":"2.0","id":<integer>,"result":<result>}` (trailing whitespace allowed),
/// without parsing the result: `None` for any other shape.
///
/// The result text is not validated: the line is a well-formed response exactly when it is
/// one JSON value, which a full parse of it (the caller's decode) proves.
pub fn plain_response(line: &str) -> Option<(i64, &str)> {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    let rest = line.strip_prefix(HEAD)?;
    // (Digits and minus signs are ASCII, so `digits_end` is a character boundary.)
    let digits_end = rest
        .bytes()
        .position(|b| b != b'-' && !b.is_ascii_digit())?;
    let digits = &rest[..digits_end];
    // JSON's integer grammar, `-?(0|[1-9][0-9]*)`: no leading zeros, no lone minus.
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty()
        || unsigned.contains('-')
        || (unsigned.len() > 1 && unsigned.starts_with('0'))
    {
        return None;
    }
    let id = digits.parse::<i64>().ok()?;
    let body = rest[digits_end..].strip_prefix(RESULT)?;
    let body = body.trim_ascii_end().strip_suffix('}')?;
    Some((id, body))
}
