//! Newline-delimited framing: a bounded line codec modelled on tokio-util's `LinesCodec`,
//! the one line framer of the tree. Whoever must frame lines over `AsyncRead`/`AsyncWrite`
//! (the engine's newline transport, a trace proxy, a checker driving a process) uses
//! [`LineCodec`]: with tokio-util's `FramedRead`/`FramedWrite`, or through [`LineReader`]
//! and [`write_line`] without them.
//!
//! Decoding never fails fatally: an over-long line is skipped in *discard mode* (its bytes
//! are dropped as they arrive, so it is never assembled in memory) and reported as
//! [`Frame::Oversized`]; a line that is not UTF-8 is reported as [`Frame::InvalidUtf8`].
//! A trailing `\r` is stripped, a leading UTF-8 BOM is skipped, and blank lines (empty or
//! only ASCII whitespace) are skipped. Encoding appends `\n` and refuses a line that holds a
//! line break (it would be two frames). The connection's reader reads ordinary lines in
//! place in its buffer and leaves everything else (CRLF, BOM, blanks, oversized or half-read
//! lines) to this codec; the connection's writer frames its batches itself, with the same
//! rule (compact JSON has no line break).
//!
//! A recorder that must keep what crossed the wire as it was (a trace proxy, a recording
//! relay) frames with [`RawLineCodec`], the same framer in raw mode: every line comes out
//! as its bytes (blank lines, a BOM, a `\r`, bytes that are not UTF-8 kept), with the same
//! length limit and the same discard of an over-long line.

use std::io;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder};

mod raw;

pub use raw::{RawLineCodec, RawLines, WireLine};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One decoded item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, valid UTF-8, without line end or BOM.
    Line(Bytes),
    /// A line longer than the limit was skipped; `len` is its length (without line end).
    Oversized {
        /// Length of the skipped line in bytes.
        len: usize,
    },
    /// A line that is not valid UTF-8 was skipped.
    InvalidUtf8,
}

/// What [`LineCodec`] finds in the bytes before any UTF-8 check: the connection's reader,
/// which turns each line into text itself (checking every byte once), reads these, and
/// [`Decoder::decode`] turns them into [`Frame`]s.
#[derive(Debug)]
pub(crate) enum RawFrame {
    /// A complete line without line end or BOM, not yet known to be text.
    Line(BytesMut),
    /// A line longer than the limit was skipped; `len` is its length (without line end).
    Oversized { len: usize },
}

impl RawFrame {
    fn checked(self) -> Frame {
        match self {
            RawFrame::Line(line) if std::str::from_utf8(&line).is_err() => Frame::InvalidUtf8,
            RawFrame::Line(line) => Frame::Line(line.freeze()),
            RawFrame::Oversized { len } => Frame::Oversized { len },
        }
    }
}

/// The bounded newline codec: [`Decoder`] of [`Frame`]s, [`Encoder`] of one line per item.
///
/// ```
/// use acp_rpc::codec::{Frame, LineCodec};
/// use bytes::BytesMut;
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = LineCodec::new(8);
/// let mut out = BytesMut::new();
/// codec.encode("{}", &mut out).unwrap();
/// out.extend_from_slice(b"{\"far too long\":1}\n");
/// assert_eq!(codec.decode(&mut out).unwrap(), Some(Frame::Line("{}".into())));
/// assert_eq!(codec.decode(&mut out).unwrap(), Some(Frame::Oversized { len: 18 }));
/// ```
#[derive(Clone, Debug)]
pub struct LineCodec {
    max_len: usize,
    /// Where to resume searching for `\n` in the buffer.
    next_index: usize,
    /// `Some(n)`: discarding an oversized line of which `n` bytes were dropped so far.
    discarding: Option<usize>,
    /// Raw mode ([`RawLineCodec`]): lines are kept as they are, not cleaned or skipped.
    pub(crate) raw: bool,
}

impl LineCodec {
    /// A codec accepting lines of up to `max_len` bytes (line end excluded).
    pub fn new(max_len: usize) -> Self {
        LineCodec {
            max_len,
            next_index: 0,
            discarding: None,
            raw: false,
        }
    }

    /// The line length limit.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The length of the next line of `buf` (its line end excluded) when it is an ordinary
    /// one that can be read where it lies: the codec is between lines, the line ends within
    /// the limit with a bare `\n`, and it starts with `{` (so it has no BOM and is not
    /// blank). The caller reads `buf[..len]` and then drops `len + 1` bytes, which is what
    /// [`Decoder::decode`] would have done, less the copy of the line's handle. `None`
    /// leaves the line to `decode`.
    pub(crate) fn plain_line_len(&self, buf: &[u8]) -> Option<usize> {
        if self.discarding.is_some() || self.next_index != 0 || buf.first() != Some(&b'{') {
            return None;
        }
        let limit = buf.len().min(self.max_len.saturating_add(1));
        let len = memchr::memchr(b'\n', &buf[..limit])?;
        // (`len` is at least 1: the line starts with `{`.)
        (buf[len - 1] != b'\r').then_some(len)
    }

    fn finish_line(&self, mut line: BytesMut) -> Option<RawFrame> {
        if line.last() == Some(&b'\n') {
            line.truncate(line.len() - 1);
        }
        if self.raw {
            return Some(RawFrame::Line(line));
        }
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.starts_with(BOM) {
            let _ = line.split_to(BOM.len());
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(RawFrame::Line(line))
    }

    /// The next line or skipped line of `buf`, unchecked for UTF-8; `None` when `buf` holds
    /// no complete line yet.
    pub(crate) fn next_raw(&mut self, buf: &mut BytesMut) -> Option<RawFrame> {
        loop {
            if let Some(dropped) = self.discarding {
                match memchr::memchr(b'\n', buf) {
                    Some(i) => {
                        let _ = buf.split_to(i + 1);
                        self.discarding = None;
                        self.next_index = 0;
                        // (A `\r` before the `\n` is counted: the length is informative.)
                        return Some(RawFrame::Oversized { len: dropped + i });
                    }
                    None => {
                        self.discarding = Some(dropped + buf.len());
                        buf.clear();
                        return None;
                    }
                }
            }
            // A line may be max_len bytes plus "\r\n".
            let limit = buf.len().min(self.max_len.saturating_add(2));
            let found = memchr::memchr(b'\n', &buf[self.next_index.min(limit)..limit])
                .map(|i| i + self.next_index.min(limit));
            match found {
                Some(i) => {
                    self.next_index = 0;
                    let line = buf.split_to(i + 1);
                    let content_len = if i > 0 && line[i - 1] == b'\r' {
                        i - 1
                    } else {
                        i
                    };
                    if content_len > self.max_len {
                        return Some(RawFrame::Oversized { len: content_len });
                    }
                    match self.finish_line(line) {
                        Some(frame) => return Some(frame),
                        None => continue,
                    }
                }
                None if buf.len() > self.max_len.saturating_add(1) => {
                    // No line end within the limit: skip up to the next line end.
                    self.discarding = Some(0);
                    self.next_index = 0;
                }
                None => {
                    self.next_index = buf.len();
                    return None;
                }
            }
        }
    }

    /// [`LineCodec::next_raw`] at the end of input: the last line may have no line end.
    pub(crate) fn next_raw_eof(&mut self, buf: &mut BytesMut) -> Option<RawFrame> {
        if let Some(frame) = self.next_raw(buf) {
            return Some(frame);
        }
        if let Some(dropped) = self.discarding.take() {
            let len = dropped + buf.len();
            buf.clear();
            return Some(RawFrame::Oversized { len });
        }
        self.next_index = 0;
        while !buf.is_empty() {
            let line = buf.split();
            if line.len() > self.max_len {
                return Some(RawFrame::Oversized { len: line.len() });
            }
            if let Some(frame) = self.finish_line(line) {
                return Some(frame);
            }
        }
        None
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        Ok(self.next_raw(buf).map(RawFrame::checked))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        Ok(self.next_raw_eof(buf).map(RawFrame::checked))
    }
}

impl<T: AsRef<[u8]>> Encoder<T> for LineCodec {
    type Error = io::Error;

    /// Appends `line` and its `\n`. A line holding a `\n`, or longer than the limit, is an
    /// `InvalidInput` error and nothing is appended: the peer's decoder would not read it as
    /// the one frame it is meant to be.
    fn encode(&mut self, line: T, dst: &mut BytesMut) -> Result<(), io::Error> {
        let line = line.as_ref();
        check_line(line, self.max_len)?;
        dst.reserve(line.len() + 1);
        dst.put_slice(line);
        dst.put_u8(b'\n');
        Ok(())
    }
}

fn check_line(line: &[u8], max_len: usize) -> io::Result<()> {
    if line.len() > max_len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "line of {} bytes is over the limit of {max_len}",
                line.len()
            ),
        ));
    }
    if memchr::memchr(b'\n', line).is_some() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a line must not hold a line break",
        ));
    }
    Ok(())
}

/// Writes `line` and its `\n` to `writer` (not flushed), after the [`Encoder`]'s check for
/// a line break in it (no length limit: the reader's codec has its own).
pub async fn write_line<W: AsyncWrite + Unpin>(writer: &mut W, line: &[u8]) -> io::Result<()> {
    check_line(line, usize::MAX)?;
    let mut framed = Vec::with_capacity(line.len() + 1);
    framed.extend_from_slice(line);
    framed.push(b'\n');
    writer.write_all(&framed).await
}

/// Lines read off an `AsyncRead` through a [`LineCodec`], one [`Frame`] per call, without
/// tokio-util's `FramedRead` (whose stream ends once after an error, see its docs).
///
/// ```
/// use acp_rpc::codec::{Frame, LineReader};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut lines = LineReader::new(&b"{\"a\":1}\r\n\n{}"[..], 1024);
/// assert_eq!(lines.next_frame().await.unwrap(), Some(Frame::Line("{\"a\":1}".into())));
/// assert_eq!(lines.next_frame().await.unwrap(), Some(Frame::Line("{}".into())));
/// assert_eq!(lines.next_frame().await.unwrap(), None);
/// # }
/// ```
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    codec: LineCodec,
    buf: BytesMut,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Frames `reader`'s bytes into lines of at most `max_len` bytes.
    pub fn new(reader: R, max_len: usize) -> Self {
        LineReader {
            reader,
            codec: LineCodec::new(max_len),
            buf: BytesMut::with_capacity(8 * 1024),
            eof: false,
        }
    }

    /// The next frame; `Ok(None)` at the end of the stream (a last line without `\n` is
    /// still returned). Over-long and non-UTF-8 lines come as frames, not errors; an `Err`
    /// is the reader's I/O error.
    pub async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            if self.eof {
                return self.codec.decode_eof(&mut self.buf);
            }
            if let Some(frame) = self.codec.decode(&mut self.buf)? {
                return Ok(Some(frame));
            }
            if self.buf.capacity() - self.buf.len() < 1024 {
                self.buf.reserve(8 * 1024);
            }
            if self.reader.read_buf(&mut self.buf).await? == 0 {
                self.eof = true;
            }
        }
    }

    /// The bytes read but not framed yet.
    pub fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// The reader back, with the bytes read but not framed yet.
    pub fn into_parts(self) -> (R, BytesMut) {
        (self.reader, self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut LineCodec, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(f) = codec.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn strips_crlf_bom_and_skips_blank_lines() {
        let mut c = LineCodec::new(100);
        let frames = decode_all(&mut c, &[b"\xEF\xBB\xBF{}\r\n\n  \r\n{\"a\":1}\n"]);
        assert_eq!(frames, vec![line("{}"), line("{\"a\":1}")]);
    }

    #[test]
    fn lines_split_across_reads_are_reassembled() {
        let mut c = LineCodec::new(100);
        let frames = decode_all(&mut c, &[b"{\"a\"", b":1", b"}\n{", b"}"]);
        assert_eq!(frames, vec![line("{\"a\":1}"), line("{}")]);
    }

    #[test]
    fn oversized_line_is_skipped_and_the_next_line_survives() {
        let mut c = LineCodec::new(8);
        let frames = decode_all(&mut c, &[b"0123456", b"789abcdef", b"ghij\n{}\n"]);
        assert_eq!(frames, vec![Frame::Oversized { len: 20 }, line("{}")]);
        let frames = decode_all(&mut c, &[b"0123456789abcdef\n{}\n"]);
        assert_eq!(frames, vec![Frame::Oversized { len: 16 }, line("{}")]);
    }

    #[test]
    fn discard_mode_keeps_the_buffer_small() {
        let mut c = LineCodec::new(8);
        let mut buf = BytesMut::new();
        for _ in 0..1000 {
            buf.extend_from_slice(&[b'x'; 100]);
            assert_eq!(c.decode(&mut buf).unwrap(), None);
            assert!(buf.len() <= 10);
        }
        buf.extend_from_slice(b"\n");
        assert_eq!(
            c.decode(&mut buf).unwrap(),
            Some(Frame::Oversized { len: 100_000 })
        );
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_accepted_with_crlf() {
        let mut c = LineCodec::new(4);
        let frames = decode_all(&mut c, &[b"abcd\r\nabcde\n"]);
        assert_eq!(frames, vec![line("abcd"), Frame::Oversized { len: 5 }]);
    }

    #[test]
    fn invalid_utf8_is_reported_not_fatal() {
        let mut c = LineCodec::new(100);
        let frames = decode_all(&mut c, &[b"\xff\xfe\n{}\n"]);
        assert_eq!(frames, vec![Frame::InvalidUtf8, line("{}")]);
    }

    #[test]
    fn a_plain_line_is_found_in_place_only_when_decode_would_return_it_unchanged() {
        let c = LineCodec::new(8);
        assert_eq!(c.plain_line_len(b"{\"a\":1}\nrest"), Some(7));
        assert_eq!(
            c.plain_line_len(b"{\"a\":12}\n"),
            Some(8),
            "exactly the limit"
        );
        for other in [
            &b"{\"ab\":12}\n"[..], // one over the limit: decode reports it
            b"{\"a\":1}\r\n",      // CRLF: decode strips the CR
            b"\xef\xbb\xbf{}\n",   // BOM
            b"  {}\n",             // leading blanks
            b"\n",                 // blank line
            b"{\"a\":1",           // no line end yet
        ] {
            assert_eq!(c.plain_line_len(other), None, "{other:?}");
        }
        // Between lines only: not while a line is half read or an oversized one skipped.
        let mut c = LineCodec::new(8);
        let mut buf = BytesMut::from(&b"{\"a\""[..]);
        assert_eq!(c.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(b":1}\n");
        assert_eq!(c.plain_line_len(&buf), None);
        assert_eq!(c.decode(&mut buf).unwrap(), Some(line("{\"a\":1}")));
        let mut buf = BytesMut::from(&b"{\"abcdefghij\":1}"[..]);
        assert_eq!(c.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(b"\n{}\n");
        assert_eq!(c.plain_line_len(&buf), None);
    }

    #[test]
    fn raw_frames_pass_any_bytes_on_as_a_line_for_the_reader_to_check() {
        let mut c = LineCodec::new(4);
        let mut buf = BytesMut::from(&b"\xff\xfe\n{\"long\":1}\n{}"[..]);
        let mut frames = Vec::new();
        while let Some(frame) = c.next_raw_eof(&mut buf) {
            frames.push(match frame {
                RawFrame::Line(line) => Ok(line.freeze()),
                RawFrame::Oversized { len } => Err(len),
            });
        }
        assert_eq!(
            frames,
            vec![
                Ok(Bytes::from_static(b"\xff\xfe")),
                Err(10),
                Ok(Bytes::from_static(b"{}"))
            ]
        );
    }

    #[test]
    fn final_line_without_newline_is_decoded_at_eof() {
        let mut c = LineCodec::new(100);
        assert_eq!(decode_all(&mut c, &[b"{}"]), vec![line("{}")]);
    }

    #[test]
    fn encoding_appends_a_line_end_and_refuses_line_breaks_and_long_lines() {
        let mut c = LineCodec::new(8);
        let mut out = BytesMut::new();
        c.encode("{}", &mut out).unwrap();
        c.encode(b"[1]".as_slice(), &mut out).unwrap();
        assert_eq!(&out[..], b"{}\n[1]\n");
        assert!(c.encode("{\n}", &mut out).is_err());
        assert!(c.encode("{\"long\":12}", &mut out).is_err());
        assert_eq!(&out[..], b"{}\n[1]\n", "nothing appended on error");
    }

    #[tokio::test]
    async fn the_line_reader_frames_what_the_decoder_frames_and_hands_back_the_rest() {
        let input = b"{\"a\":1}\n0123456789\n\xff\n{}\nrest".to_vec();
        let mut lines = LineReader::new(&input[..], 8);
        assert_eq!(lines.next_frame().await.unwrap(), Some(line("{\"a\":1}")));
        assert_eq!(
            lines.next_frame().await.unwrap(),
            Some(Frame::Oversized { len: 10 })
        );
        assert_eq!(lines.next_frame().await.unwrap(), Some(Frame::InvalidUtf8));
        assert_eq!(lines.next_frame().await.unwrap(), Some(line("{}")));
        assert_eq!(lines.buffered(), b"rest");
        assert_eq!(lines.next_frame().await.unwrap(), Some(line("rest")));
        assert_eq!(lines.next_frame().await.unwrap(), None);
        let mut out = Vec::new();
        write_line(&mut out, b"{}").await.unwrap();
        assert!(write_line(&mut out, b"a\nb").await.is_err());
        assert_eq!(out, b"{}\n");
    }
}
