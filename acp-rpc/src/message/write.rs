//! Writing envelopes: each outgoing message framed as one JSON line in a reused buffer, its
//! params or result serialized straight into it (never through a `Value`).

use serde::Serialize;
use serde_json::value::RawValue;

use super::RequestId;
use crate::error::Error;
use crate::framing::Framing;

fn write_head(buf: &mut Vec<u8>, framing: &Framing) {
    buf.push(b'{');
    if framing.emit_jsonrpc {
        buf.extend_from_slice(br#""jsonrpc":"2.0","#);
    }
}

fn write_id(buf: &mut Vec<u8>, id: Option<&RequestId>) {
    buf.extend_from_slice(br#""id":"#);
    match id {
        None => buf.extend_from_slice(b"null"),
        Some(RequestId::Int(n)) => {
            serde_json::to_writer(JsonOut(buf), n).expect("writing a number to a Vec cannot fail")
        }
        Some(RequestId::Str(s)) => write_str(buf, s),
    }
}

fn write_str(buf: &mut Vec<u8>, s: &str) {
    acp_types::serde_util::write_json_str(buf, s);
}

/// The buffer serde_json writes a message into. serde_json hands its writer a message in
/// many small pieces (a quote, a colon, a brace, a short key); `Vec`'s own `Write` copies
/// each with a call to `memcpy`, which for pieces this small costs more than the copy
/// (the agent side of a stream of chunks spent over a quarter of its time there). Short
/// pieces are pushed byte by byte instead.
pub(crate) struct JsonOut<'a>(pub(crate) &'a mut Vec<u8>);

impl std::io::Write for JsonOut<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        const SHORT: usize = 16;
        if bytes.len() <= SHORT {
            self.0.reserve(bytes.len());
            for &b in bytes {
                self.0.push(b);
            }
        } else {
            self.0.extend_from_slice(bytes);
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Appends raw JSON, turning any (whitespace-only) line break into a space so the value
/// cannot break newline framing.
pub(crate) fn write_raw(buf: &mut Vec<u8>, raw: &str) {
    let start = buf.len();
    buf.extend_from_slice(raw.as_bytes());
    blank_line_breaks(&mut buf[start..]);
}

/// Turns every line break into a space: raw JSON may contain them only as whitespace, and
/// they would break newline framing.
pub(crate) fn blank_line_breaks(json: &mut [u8]) {
    if memchr::memchr2(b'\n', b'\r', json).is_some() {
        for b in json {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
    }
}

/// Writes `,"params":<params>` unless it is null and the dialect omits null params.
/// Fails (leaving `buf` as it was) when `params` does not serialize.
fn write_params<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    params: &P,
    framing: &Framing,
) -> Result<(), Error> {
    let mark = buf.len();
    buf.extend_from_slice(br#","params":"#);
    let value_start = buf.len();
    if let Err(e) = serde_json::to_writer(JsonOut(buf), params) {
        buf.truncate(mark);
        return Err(Error::invalid_params(format!(
            "params failed to serialize: {e}"
        )));
    }
    if framing.omit_null_params && &buf[value_start..] == b"null" {
        buf.truncate(mark);
    }
    Ok(())
}

/// [`write_params`], with `fast` trying first: it writes the params' usual shape itself
/// (exactly as serde_json would, with no `_meta` member at their top) or returns `false`
/// having written nothing. `gap`: how many spaces go before what `fast` writes (room for
/// the trace context's `_meta` member, written there without moving the params; 0 when no
/// trace context is written). Returns where in `buf` the gap (or, without one, the params)
/// starts when `fast` wrote them: the trace context then goes in there without a look for
/// a `_meta` of theirs.
fn write_params_with<P>(
    buf: &mut Vec<u8>,
    params: &P,
    framing: &Framing,
    fast: Option<fn(&P, &mut Vec<u8>) -> bool>,
    gap: usize,
) -> Result<Option<usize>, Error>
where
    P: Serialize + ?Sized,
{
    if let Some(fast) = fast {
        let mark = buf.len();
        buf.extend_from_slice(br#","params":"#);
        let start = buf.len();
        buf.resize(start + gap, b' ');
        if fast(params, buf) {
            return Ok(Some(start));
        }
        buf.truncate(mark);
    }
    write_params(buf, params, framing).map(|()| None)
}

/// Serializes a request envelope into `buf`.
pub(crate) fn write_request<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    framing: &Framing,
    id: i64,
    method: &str,
    params: &P,
) -> Result<(), Error> {
    write_head(buf, framing);
    write_id(buf, Some(&RequestId::Int(id)));
    buf.extend_from_slice(br#","method":"#);
    write_str(buf, method);
    write_params(buf, params, framing)?;
    buf.push(b'}');
    Ok(())
}

/// Serializes a notification envelope into `buf`.
pub(crate) fn write_notification<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    framing: &Framing,
    method: &str,
    params: &P,
) -> Result<(), Error> {
    write_notification_with(buf, framing, method, params, None, 0).map(drop)
}

/// [`write_notification`] with a writer for the params' usual shape (see
/// [`Peer::notify_value_with`](crate::Peer::notify_value_with)), behind `gap` spaces.
/// Returns where the gap (the params, without one) starts when that writer wrote them (they
/// have no `_meta` then).
pub(crate) fn write_notification_with<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    framing: &Framing,
    method: &str,
    params: &P,
    fast: Option<fn(&P, &mut Vec<u8>) -> bool>,
    gap: usize,
) -> Result<Option<usize>, Error> {
    write_head(buf, framing);
    buf.extend_from_slice(br#""method":"#);
    write_str(buf, method);
    let plain = write_params_with(buf, params, framing, fast, gap)?;
    buf.push(b'}');
    Ok(plain)
}

/// Writes the envelope of a successful response up to and including `"result":`; the
/// result and a closing `}` follow (see `Outgoing::Response` in the state module).
pub(crate) fn write_response_head(buf: &mut Vec<u8>, framing: &Framing, id: Option<&RequestId>) {
    write_head(buf, framing);
    write_id(buf, id);
    buf.extend_from_slice(br#","result":"#);
}

/// Serializes a response envelope into `buf`.
pub(crate) fn write_response(
    buf: &mut Vec<u8>,
    framing: &Framing,
    id: Option<&RequestId>,
    result: &Result<Box<RawValue>, Error>,
) {
    write_head(buf, framing);
    write_id(buf, id);
    match result {
        Ok(raw) => {
            buf.extend_from_slice(br#","result":"#);
            write_raw(buf, raw.get());
        }
        Err(error) => {
            buf.extend_from_slice(br#","error":"#);
            serde_json::to_writer(JsonOut(buf), error).expect("an Error always serializes");
        }
    }
    buf.push(b'}');
}

/// Serializes a whole message into `buf`, as the engine would have written it: what a
/// message passed as a value (on an in-memory pair) looks like on a record or to a
/// hand-driven end.
pub(crate) fn write_message(buf: &mut Vec<u8>, framing: &Framing, message: &super::Message) {
    use super::Message;
    match message {
        Message::Request(r) => {
            write_head(buf, framing);
            write_id(buf, Some(&r.id));
            buf.extend_from_slice(br#","method":"#);
            write_str(buf, &r.method);
            write_raw_params(buf, r.params.as_deref(), framing);
            buf.push(b'}');
        }
        Message::Notification(n) => {
            write_head(buf, framing);
            buf.extend_from_slice(br#""method":"#);
            write_str(buf, &n.method);
            write_raw_params(buf, n.params.as_deref(), framing);
            buf.push(b'}');
        }
        Message::Response(r) => {
            // (`as_ref` of a boxed raw value is not a `Result<Box<_>, _>`: written by hand.)
            write_head(buf, framing);
            write_id(buf, r.id.as_ref());
            match &r.result {
                Ok(raw) => {
                    buf.extend_from_slice(br#","result":"#);
                    write_raw(buf, raw.get());
                }
                Err(error) => {
                    buf.extend_from_slice(br#","error":"#);
                    serde_json::to_writer(JsonOut(buf), error).expect("an Error always serializes");
                }
            }
            buf.push(b'}');
        }
    }
}

/// `,"params":<raw>` (or `null` for absent params, unless the dialect omits it).
fn write_raw_params(buf: &mut Vec<u8>, params: Option<&RawValue>, framing: &Framing) {
    match params {
        Some(raw) => {
            buf.extend_from_slice(br#","params":"#);
            write_raw(buf, raw.get());
        }
        None if framing.omit_null_params => {}
        None => buf.extend_from_slice(br#","params":null"#),
    }
}

/// A whole message's JSON text (see [`write_message`]).
pub(crate) fn message_text(framing: &Framing, message: &super::Message) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    write_message(&mut buf, framing, message);
    buf
}

/// The JSON text of a notification whose params are a value
/// ([`Peer::notify_value`](crate::Peer::notify_value)). A value that fails to serialize is
/// logged and written as a notification without params: the text is for a hand-driven end
/// of a memory pair, which has no way to be told.
pub(crate) fn value_text(framing: &Framing, method: &str, params: &crate::ParamsValue) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    let written = params
        .to_raw()
        .and_then(|raw| write_notification(&mut buf, framing, method, &raw));
    if let Err(e) = written {
        tracing::error!(method, error = %e.message, "a notification's params were left out");
        buf.clear();
        let _ = write_notification(&mut buf, framing, method, &());
    }
    buf
}

/// The length of [`message_text`], found without writing it when the message is clearly
/// far from `limit` (the common case): whether the message is over `limit` bytes, and its
/// length when it had to be written to tell.
pub(crate) fn message_over(
    framing: &Framing,
    message: &super::Message,
    limit: usize,
) -> Option<usize> {
    use super::Message;
    // The method, the id and the payload bound the text from below; the envelope's own
    // punctuation, keys and escapes add a little.
    const ENVELOPE: usize = 128;
    let id_len = |id: Option<&RequestId>| match id {
        Some(RequestId::Str(s)) => s.len(),
        _ => 20,
    };
    let payload = match message {
        Message::Request(r) => {
            r.method.len() + id_len(Some(&r.id)) + r.params.as_ref().map_or(0, |p| p.get().len())
        }
        Message::Notification(n) => n.method.len() + n.params.as_ref().map_or(0, |p| p.get().len()),
        Message::Response(r) => {
            id_len(r.id.as_ref())
                + match &r.result {
                    Ok(raw) => raw.get().len(),
                    Err(e) => e.message.len() + e.data.as_ref().map_or(0, |_| limit),
                }
        }
    };
    if payload + ENVELOPE <= limit {
        return None;
    }
    let len = message_text(framing, message).len();
    (len > limit).then_some(len)
}
