//! WebSocket framing (RFC 6455, section 5) as acp-remote does it itself: the client reads
//! the server's frames where they were read, in one buffer, and hands each text message to
//! the engine as a slice of it (no copy, no per-frame allocation); both sides write their
//! frames into one output buffer ([`encode`]: the client's masked, the server's not).
//!
//! Pure: no socket here. [`FrameReader`] turns the bytes a client read into [`Incoming`]
//! events and says when the server broke the protocol ([`Violation`], with the close code
//! to answer); [`MaskKeys`] hands out the masking keys a client must use, from the OS's
//! random source in batches.

use bytes::{Buf, Bytes, BytesMut};

/// Continues a fragmented message.
const CONTINUATION: u8 = 0x0;
/// A text message (or its first fragment).
pub(crate) const TEXT: u8 = 0x1;
/// A binary message (or its first fragment): not an ACP message, skipped.
const BINARY: u8 = 0x2;
/// The close handshake.
pub(crate) const CLOSE: u8 = 0x8;
/// A ping, answered with a pong carrying the same payload.
const PING: u8 = 0x9;
/// A pong: nothing to do.
pub(crate) const PONG: u8 = 0xA;

/// The largest payload of a control frame (RFC 6455, 5.5).
const MAX_CONTROL_PAYLOAD: u64 = 125;

/// What the server's frames amount to, one event at a time.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// A whole text message, its fragments joined.
    Text(Bytes),
    /// A ping, to be answered with a pong of the same payload.
    Ping(Bytes),
    /// The server's close frame, with its status code when it gave one.
    Close(Option<u16>),
}

/// Why the server's frames cannot be read on: the connection closes with
/// [`Violation::close_code`].
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum Violation {
    /// The frames break RFC 6455.
    #[error("the server broke the WebSocket protocol: {0}")]
    Protocol(&'static str),
    /// A frame or a message over the connection's size limit.
    #[error("the server sent a WebSocket message of {len} bytes or more, over the limit of {max}")]
    TooBig { len: u64, max: usize },
    /// A text message that is not UTF-8.
    #[error("the server sent a text message that is not UTF-8")]
    NotText,
}

impl Violation {
    /// The status code of the close frame that answers it (1002 protocol error, 1009
    /// message too big).
    pub(crate) fn close_code(&self) -> u16 {
        match self {
            Violation::Protocol(_) => 1002,
            Violation::TooBig { .. } => 1009,
            Violation::NotText => 1007,
        }
    }
}

/// A message arriving in fragments: text is kept until its last fragment, binary only
/// counted (it is skipped, but still bounded).
enum Partial {
    Text(BytesMut),
    Binary(u64),
}

/// The server's frames, parsed out of the bytes read: [`FrameReader::buffer`] is where the
/// next read goes, [`FrameReader::next`] what has arrived. Memory is bounded by the limit
/// it was made with: one frame's bytes in the buffer and one message's in a fragment.
pub(crate) struct FrameReader {
    buf: BytesMut,
    partial: Option<Partial>,
    max: usize,
}

/// One frame's header, parsed.
struct Header {
    is_final: bool,
    opcode: u8,
    /// The payload's length.
    len: usize,
    /// The header's own length.
    size: usize,
}

impl FrameReader {
    /// A reader of frames and messages of at most `max` bytes, starting with what was read
    /// past the upgrade's response (`leftover`).
    pub(crate) fn new(max: usize, leftover: BytesMut) -> Self {
        FrameReader {
            buf: leftover,
            partial: None,
            max,
        }
    }

    /// Where the next read goes, with room for `at_least` more bytes (more when a frame
    /// that has begun needs it).
    pub(crate) fn buffer(&mut self, at_least: usize) -> &mut BytesMut {
        self.buf.reserve(at_least);
        &mut self.buf
    }

    /// The next event of the bytes read so far; `Ok(None)` until more are read.
    pub(crate) fn next(&mut self) -> Result<Option<Incoming>, Violation> {
        loop {
            let Some(header) = self.header()? else {
                return Ok(None);
            };
            let whole = header.size + header.len;
            if self.buf.len() < whole {
                // Room for the rest of this frame, so that one read can finish it.
                self.buf.reserve(whole - self.buf.len());
                return Ok(None);
            }
            self.buf.advance(header.size);
            let payload = self.buf.split_to(header.len);
            if let Some(event) = self.take(header.opcode, header.is_final, payload)? {
                return Ok(Some(event));
            }
        }
    }

    /// The header at the start of the buffer, checked; `None` while it is incomplete.
    fn header(&self) -> Result<Option<Header>, Violation> {
        let b = &self.buf[..];
        let [first, second, ..] = *b else {
            return Ok(None);
        };
        if first & 0x70 != 0 {
            return Err(Violation::Protocol(
                "a reserved bit is set, and no extension was agreed",
            ));
        }
        if second & 0x80 != 0 {
            return Err(Violation::Protocol("a server's frame must not be masked"));
        }
        let (len, size) = match second & 0x7f {
            126 => match b.get(2..4) {
                Some(n) => (u64::from(u16::from_be_bytes([n[0], n[1]])), 4),
                None => return Ok(None),
            },
            127 => match b.get(2..10) {
                Some(n) => (u64::from_be_bytes(n.try_into().expect("eight bytes")), 10),
                None => return Ok(None),
            },
            n => (u64::from(n), 2),
        };
        let is_final = first & 0x80 != 0;
        let opcode = first & 0x0f;
        match opcode {
            CONTINUATION | TEXT | BINARY => {}
            CLOSE | PING | PONG if !is_final => {
                return Err(Violation::Protocol(
                    "a control frame must not be fragmented",
                ));
            }
            CLOSE | PING | PONG if len > MAX_CONTROL_PAYLOAD => {
                return Err(Violation::Protocol(
                    "a control frame carries at most 125 bytes",
                ));
            }
            CLOSE | PING | PONG => {}
            _ => return Err(Violation::Protocol("an opcode RFC 6455 does not define")),
        }
        if len > self.max as u64 {
            return Err(Violation::TooBig { len, max: self.max });
        }
        Ok(Some(Header {
            is_final,
            opcode,
            len: len as usize,
            size,
        }))
    }

    /// One whole frame's payload: the event it completes, if any.
    fn take(
        &mut self,
        opcode: u8,
        is_final: bool,
        payload: BytesMut,
    ) -> Result<Option<Incoming>, Violation> {
        match opcode {
            TEXT | BINARY if self.partial.is_some() => Err(Violation::Protocol(
                "a new message began before the fragmented one ended",
            )),
            TEXT if is_final => text(payload),
            TEXT => {
                self.partial = Some(Partial::Text(payload));
                Ok(None)
            }
            BINARY => {
                if !is_final {
                    self.partial = Some(Partial::Binary(payload.len() as u64));
                }
                Ok(None)
            }
            CONTINUATION => self.continued(is_final, payload),
            PING => Ok(Some(Incoming::Ping(payload.freeze()))),
            CLOSE => match payload.len() {
                0 => Ok(Some(Incoming::Close(None))),
                1 => Err(Violation::Protocol(
                    "a close frame's payload starts with a two-byte code",
                )),
                _ => Ok(Some(Incoming::Close(Some(u16::from_be_bytes([
                    payload[0], payload[1],
                ]))))),
            },
            // PONG: nothing was asked that it answers.
            _ => Ok(None),
        }
    }

    /// A continuation frame: joined to the message it continues, bounded by the limit.
    fn continued(
        &mut self,
        is_final: bool,
        payload: BytesMut,
    ) -> Result<Option<Incoming>, Violation> {
        let max = self.max;
        let Some(partial) = self.partial.as_mut() else {
            return Err(Violation::Protocol(
                "a continuation frame with no message to continue",
            ));
        };
        let so_far = match partial {
            Partial::Text(text) => text.len() as u64,
            Partial::Binary(len) => *len,
        };
        let len = so_far + payload.len() as u64;
        if len > max as u64 {
            return Err(Violation::TooBig { len, max });
        }
        match partial {
            Partial::Text(text) => text.extend_from_slice(&payload),
            Partial::Binary(counted) => *counted = len,
        }
        if !is_final {
            return Ok(None);
        }
        match self.partial.take() {
            Some(Partial::Text(whole)) => text(whole),
            _ => Ok(None),
        }
    }
}

/// A whole text message, once it is checked to be UTF-8 (RFC 6455 8.1: a text message that
/// is not fails the connection).
fn text(payload: BytesMut) -> Result<Option<Incoming>, Violation> {
    match std::str::from_utf8(&payload) {
        Ok(_) => Ok(Some(Incoming::Text(payload.freeze()))),
        Err(_) => Err(Violation::NotText),
    }
}

/// Appends one final frame of `opcode` carrying `payload` to `out`: masked with `mask` by a
/// client (which masks every frame it sends, RFC 6455 5.3), unmasked (`None`) by a server.
pub(crate) fn encode(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>, out: &mut Vec<u8>) {
    out.push(0x80 | opcode);
    let masked = if mask.is_some() { 0x80 } else { 0 };
    let len = payload.len();
    if len < 126 {
        out.push(masked | len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.push(masked | 126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(masked | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    let Some(mask) = mask else {
        out.extend_from_slice(payload);
        return;
    };
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// XORs `buf` with `mask` repeated (four bytes at a time, then the rest).
fn apply_mask(buf: &mut [u8], mask: [u8; 4]) {
    let word = u32::from_ne_bytes(mask);
    let (words, rest) = buf.as_chunks_mut::<4>();
    for w in words {
        *w = (u32::from_ne_bytes(*w) ^ word).to_ne_bytes();
    }
    for (b, m) in rest.iter_mut().zip(mask) {
        *b ^= m;
    }
}

/// Masking keys from the OS's random source, read a batch at a time (a system call per
/// frame would cost more than the frame).
pub(crate) struct MaskKeys {
    pool: [u8; 1024],
    used: usize,
}

impl MaskKeys {
    pub(crate) fn new() -> Self {
        MaskKeys {
            pool: [0; 1024],
            used: 1024,
        }
    }

    /// The next key. Should the OS refuse randomness (it does not on any platform this
    /// builds for), the keys come from the clock instead: masking guards intermediaries
    /// against crafted bytes, and a key they cannot guess ahead still does.
    pub(crate) fn next(&mut self) -> [u8; 4] {
        if self.used == self.pool.len() {
            if getrandom::fill(&mut self.pool).is_err() {
                let seed = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                for (i, chunk) in self.pool.chunks_mut(8).enumerate() {
                    let x = seed
                        .wrapping_add(i as u64)
                        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    chunk.copy_from_slice(&(x ^ (x >> 29)).to_le_bytes()[..chunk.len()]);
                }
            }
            self.used = 0;
        }
        let key = self.pool[self.used..self.used + 4]
            .try_into()
            .expect("four bytes");
        self.used += 4;
        key
    }
}

#[cfg(test)]
mod tests;
