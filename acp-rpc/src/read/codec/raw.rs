//! The line framer in raw mode ([`RawLineCodec`], [`RawLines`]), for a recorder that must
//! keep what crossed the wire as it was; re-exported from [`crate::codec`], whose
//! [`LineCodec`] does the framing.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

use super::{LineCodec, RawFrame};

/// One line as it crossed the wire, from [`RawLineCodec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireLine {
    /// A line without its `\n`, byte for byte otherwise: a `\r` before the `\n`, a BOM,
    /// nothing but whitespace, bytes that are not UTF-8 are all kept.
    Line(Bytes),
    /// A line longer than the limit, never assembled (its bytes were dropped as they came);
    /// `len` is its length (without the `\n`).
    Oversized {
        /// Length of the line in bytes.
        len: usize,
    },
}

/// The line framer in raw mode, for a recorder: the same search for line ends, limit and
/// discard as [`LineCodec`], but every line is given as it was ([`WireLine`]), none
/// skipped or cleaned. At the end of the input, the bytes after the last `\n` are a last
/// line ([`Decoder::decode_eof`]).
///
/// ```
/// use acp_rpc::codec::{RawLineCodec, WireLine};
/// use bytes::BytesMut;
/// use tokio_util::codec::Decoder;
///
/// let mut codec = RawLineCodec::new(8);
/// let mut wire = BytesMut::from(&b"{}\r\n\n\xff\nno end"[..]);
/// let mut lines = Vec::new();
/// while let Some(line) = codec.decode_eof(&mut wire).unwrap() {
///     lines.push(line);
/// }
/// let line = |text: &'static [u8]| WireLine::Line(text.into());
/// assert_eq!(lines, [line(b"{}\r"), line(b""), line(b"\xff"), line(b"no end")]);
/// ```
#[derive(Clone, Debug)]
pub struct RawLineCodec(LineCodec);

impl RawLineCodec {
    /// A raw framer of lines of up to `max_len` bytes (line end excluded).
    pub fn new(max_len: usize) -> Self {
        let mut codec = LineCodec::new(max_len);
        codec.raw = true;
        RawLineCodec(codec)
    }

    fn wire(frame: RawFrame) -> WireLine {
        match frame {
            RawFrame::Line(line) => WireLine::Line(line.freeze()),
            RawFrame::Oversized { len } => WireLine::Oversized { len },
        }
    }
}

impl Decoder for RawLineCodec {
    type Item = WireLine;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<WireLine>, std::io::Error> {
        Ok(self.0.next_raw(buf).map(Self::wire))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<WireLine>, std::io::Error> {
        Ok(self.0.next_raw_eof(buf).map(Self::wire))
    }
}

/// A [`RawLineCodec`] with its own buffer, for a recorder that passes the bytes on as they
/// come and records the lines in them: [`RawLines::push`] each chunk, [`RawLines::finish`]
/// at the end of the stream.
#[derive(Debug)]
pub struct RawLines {
    codec: RawLineCodec,
    buf: BytesMut,
}

impl RawLines {
    /// Lines of up to `max_len` bytes (line end excluded).
    pub fn new(max_len: usize) -> Self {
        RawLines {
            codec: RawLineCodec::new(max_len),
            buf: BytesMut::new(),
        }
    }

    /// The lines that `chunk` completes, in order (the start of the next one is kept).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<WireLine> {
        self.buf.extend_from_slice(chunk);
        let mut lines = Vec::new();
        while let Some(line) = self.codec.0.next_raw(&mut self.buf) {
            lines.push(RawLineCodec::wire(line));
        }
        lines
    }

    /// At the end of the stream: the bytes after the last line end, as a last line (none
    /// when the stream ended with a line end).
    pub fn finish(&mut self) -> Option<WireLine> {
        self.codec
            .0
            .next_raw_eof(&mut self.buf)
            .map(RawLineCodec::wire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw mode: fed a byte at a time, the lines come out as they crossed, an over-long
    /// one is skipped without being assembled, and the lines after it come through.
    #[test]
    fn raw_mode_keeps_every_line_as_it_was_and_skips_an_over_long_one() {
        let wire = b"\xef\xbb\xbf{}\r\n   \n\n\xff\xfe\n0123456789ABCDEF\nlast\r\nend";
        let mut codec = RawLineCodec::new(8);
        let mut buf = BytesMut::new();
        let mut lines = Vec::new();
        for &b in wire {
            buf.extend_from_slice(&[b]);
            while let Some(line) = codec.decode(&mut buf).unwrap() {
                lines.push(line);
            }
            assert!(
                buf.len() <= 10,
                "an over-long line is not held: {}",
                buf.len()
            );
        }
        while let Some(line) = codec.decode_eof(&mut buf).unwrap() {
            lines.push(line);
        }
        let line = |text: &'static [u8]| WireLine::Line(Bytes::from_static(text));
        assert_eq!(
            lines,
            [
                line(b"\xef\xbb\xbf{}\r"),
                line(b"   "),
                line(b""),
                line(b"\xff\xfe"),
                WireLine::Oversized { len: 16 },
                line(b"last\r"),
                line(b"end"),
            ]
        );
    }
}
