//! [`RemoteLink`](super::RemoteLink)'s JSON lines over the carriers' frames: the bytes an
//! application writes are cut into messages by acp-rpc's line framer (the one place lines
//! are framed) and handed to the carrier one frame per message; the carrier's frames are
//! read back as lines. There is no byte pipe between: a carrier (the POST loop, the
//! WebSocket sender) takes whole messages, as it does from an engine on
//! [`connect_transport`](super::connect_transport).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use acp_rpc::transport::{Closed, FrameSender, FrameSource};
use acp_rpc::{Frame, LineCodec};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::codec::Decoder;

type Sending = Pin<Box<dyn Future<Output = Result<(), Closed>> + Send>>;

/// The client's messages, one JSON object per line ([`RemoteLink::writer`](super::RemoteLink::writer)):
/// each complete line goes to the server as one message. A line over the connection's
/// limit or not UTF-8 fails the write (as it ended the link before). Shutting it down (or
/// dropping it) ends the remote connection once what was written has gone.
pub struct LinkWriter {
    codec: LineCodec,
    buf: BytesMut,
    /// `None` once shut down.
    sender: Option<FrameSender>,
    /// A message waiting for the carrier to take it.
    sending: Option<Sending>,
}

impl std::fmt::Debug for LinkWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkWriter")
            .field("buffered", &self.buf.len())
            .finish_non_exhaustive()
    }
}

fn broken() -> io::Error {
    io::ErrorKind::BrokenPipe.into()
}

impl LinkWriter {
    pub(crate) fn new(sender: FrameSender, max: usize) -> Self {
        LinkWriter {
            codec: LineCodec::new(max),
            buf: BytesMut::new(),
            sender: Some(sender),
            sending: None,
        }
    }

    /// Hands the carrier every complete line buffered; ready once none is left (the last,
    /// unfinished one stays) or with the error of a line that cannot go.
    fn poll_lines(&mut self, cx: &mut Context<'_>, eof: bool) -> Poll<io::Result<()>> {
        loop {
            if let Some(sending) = &mut self.sending {
                ready!(sending.as_mut().poll(cx)).map_err(|_| broken())?;
                self.sending = None;
            }
            let frame = match eof {
                true => self.codec.decode_eof(&mut self.buf)?,
                false => self.codec.decode(&mut self.buf)?,
            };
            let line = match frame {
                None => return Poll::Ready(Ok(())),
                Some(Frame::Line(line)) => line,
                Some(Frame::Oversized { len }) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("a message of {len} bytes is over the connection's limit"),
                    )));
                }
                Some(Frame::InvalidUtf8) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a message that is not UTF-8",
                    )));
                }
            };
            let sender = self.sender.as_ref().ok_or_else(broken)?;
            if let Err(Closed(line)) = sender.try_send(line) {
                if sender.is_closed() {
                    return Poll::Ready(Err(broken()));
                }
                let sender = sender.clone();
                self.sending = Some(Box::pin(async move { sender.send(line).await }));
            }
        }
    }
}

impl AsyncWrite for LinkWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.sender.is_none() {
            return Poll::Ready(Err(broken()));
        }
        // The lines of earlier writes go first: at most one write's worth is buffered.
        ready!(this.poll_lines(cx, false))?;
        this.buf.extend_from_slice(data);
        match this.poll_lines(cx, false) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            // Taken: the lines the carrier has no room for yet go on the next call.
            _ => Poll::Ready(Ok(data.len())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_lines(cx, false)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.sender.is_some() {
            ready!(this.poll_lines(cx, true))?;
        }
        // The carrier's input ends with the sender: the goodbye goes out.
        this.sender = None;
        Poll::Ready(Ok(()))
    }
}

/// The server's messages as JSON lines, read from the carrier's frames (a WebSocket's
/// text messages, or the Streamable HTTP streams' events as a
/// [`FrameReceiver`](acp_rpc::transport::FrameReceiver) gives them):
/// each frame is copied once, straight into the reader's buffer, with its newline. A frame
/// holding a raw line end (it would read as two lines) is dropped; the end of the frames is
/// the end of the lines.
pub(crate) struct FrameLines<S> {
    frames: S,
    /// The frame being copied out, and how much of it has been.
    current: Bytes,
    copied: usize,
    /// The current frame's newline is still to be copied.
    newline_due: bool,
    ended: bool,
}

impl<S: FrameSource> FrameLines<S> {
    pub(crate) fn new(frames: S) -> Self {
        FrameLines {
            frames,
            current: Bytes::new(),
            copied: 0,
            newline_due: false,
            ended: false,
        }
    }
}

impl<S> std::fmt::Debug for FrameLines<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameLines")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<S: FrameSource + Unpin> AsyncRead for FrameLines<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        loop {
            let left = &this.current[this.copied..];
            let n = left.len().min(buf.remaining());
            buf.put_slice(&left[..n]);
            this.copied += n;
            if this.copied < this.current.len() {
                return Poll::Ready(Ok(()));
            }
            if this.newline_due {
                if buf.remaining() == 0 {
                    return Poll::Ready(Ok(()));
                }
                buf.put_slice(b"\n");
                this.newline_due = false;
            }
            // Nothing filled and nothing to come: the end of the lines.
            if this.ended || buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            let frame = match this.frames.poll_frame(cx) {
                Poll::Pending if buf.filled().len() > before => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
                Poll::Ready(frame) => frame,
            };
            match frame {
                Some(frame) if memchr::memchr2(b'\n', b'\r', &frame).is_some() => {
                    tracing::warn!("the server sent a message with a raw line end; dropped");
                }
                Some(frame) => {
                    this.current = frame;
                    this.copied = 0;
                    this.newline_due = true;
                }
                None => this.ended = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use acp_rpc::transport::{FramePort, memory_pair};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};

    use super::*;

    /// Two ports joined back to back: what one's sender takes, the other's receiver gives.
    fn ports() -> (FramePort, FramePort) {
        let (a, b) = memory_pair(8);
        (a.into_port(), b.into_port())
    }

    #[tokio::test]
    async fn lines_written_in_any_pieces_leave_as_one_message_each() {
        let (app, mut carrier) = ports();
        let mut writer = LinkWriter::new(app.sender, 64);
        let reading = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(frame) = carrier.receiver.recv().await {
                got.push(String::from_utf8(frame.to_vec()).unwrap());
            }
            got
        });
        let text = "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n{\"d\":4}\n{\"e\":\"unended\"}";
        for piece in text.as_bytes().chunks(3) {
            writer.write_all(piece).await.unwrap();
        }
        writer.shutdown().await.unwrap();
        let got = reading.await.unwrap();
        assert_eq!(
            got,
            [
                r#"{"a":1}"#,
                r#"{"b":2}"#,
                r#"{"c":3}"#,
                r#"{"d":4}"#,
                r#"{"e":"unended"}"#
            ]
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_fails_the_write_and_a_gone_carrier_breaks_the_pipe() {
        let (app, carrier) = ports();
        let mut writer = LinkWriter::new(app.sender, 16);
        let long = format!("{}\n", "x".repeat(40));
        let error = writer.write_all(long.as_bytes()).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        drop(carrier);
        let (app, carrier) = ports();
        let mut writer = LinkWriter::new(app.sender, 16);
        drop(carrier);
        let error = writer.write_all(b"{}\n{}\n{}\n").await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test]
    async fn frames_become_lines_whatever_the_size_of_the_reads() {
        let (app, carrier) = ports();
        let long = format!(r#"{{"b":"{}"}}"#, "x".repeat(1000));
        for frame in [r#"{"a":1}"#, &long, "{\"split\":\n1}", r#"{"c":3}"#] {
            carrier.sender.send(frame.to_owned()).await.unwrap();
        }
        drop(carrier);
        let mut read = String::new();
        BufReader::with_capacity(7, FrameLines::new(app.receiver))
            .read_to_string(&mut read)
            .await
            .unwrap();
        assert_eq!(read, format!("{{\"a\":1}}\n{long}\n{{\"c\":3}}\n"));
    }
}
