//! An upgraded socket as the engine's frame carrier: [`SocketFrames`] reads the server's
//! frames ([`crate::frames::FrameReader`] over one buffer the socket is read into) and
//! [`SocketSink`] writes the engine's messages, each one masked text frame. The two share
//! [`Out`], the one place that writes to the socket: the reader's pongs and its answer to
//! the server's close go out there, between the engine's messages, never inside one.
//!
//! Both ends poll the socket's write side; its readiness wakes whichever waits
//! ([`WriteWakers`]), so neither's registration hides the other's (a socket keeps one
//! waker per direction).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker, ready};

use acp_rpc::sync::lock;
use bytes::{Bytes, BytesMut};
use futures_util::task::AtomicWaker;
use tokio::io::{AsyncWrite, ReadHalf, WriteHalf};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::client::stream::Io;
use crate::frames::{CLOSE, FrameReader, Incoming, MaskKeys, PONG, TEXT, encode};

/// How much the reader asks of the socket at once: a streaming turn's frames arrive in a
/// few large reads (a read per frame made a streamed chunk cost a system call).
const READ_CHUNK: usize = 256 * 1024;

/// Output the sink holds before it waits for the socket to take some (the engine's writer
/// then waits too: backpressure, and the write stall timeout, as over a pipe).
const OUT_HIGH_WATER: usize = 64 * 1024;

/// The status code of the close frame the end of the engine's output sends (normal).
const NORMAL_CLOSURE: u16 = 1000;

/// An upgraded socket, and the server's bytes the upgrade read past its response.
pub(crate) struct Upgraded {
    pub(crate) io: Box<dyn Io>,
    pub(crate) leftover: BytesMut,
}

/// Splits an upgraded socket into the engine's carrier: its frames (messages of at most
/// `max` bytes) and its sink. The token is cancelled once the sink is done: after the close
/// frame went out, or when it was dropped.
pub(crate) fn carrier(
    socket: Upgraded,
    max: usize,
) -> (SocketFrames, SocketSink, CancellationToken) {
    let (read, write) = tokio::io::split(socket.io);
    let wakers = Arc::new(WriteWakers::default());
    let out = Arc::new(Mutex::new(Out {
        io: write,
        pending: Vec::new(),
        written: 0,
        keys: MaskKeys::new(),
        closed: false,
        socket_waker: Waker::from(wakers.clone()),
    }));
    let frames = SocketFrames {
        read,
        frames: FrameReader::new(max, socket.leftover),
        out: out.clone(),
        wakers: wakers.clone(),
        owes: false,
        ended: false,
    };
    let over = CancellationToken::new();
    let sink = SocketSink {
        out,
        wakers,
        over: Some(over.clone().drop_guard()),
    };
    (frames, sink, over)
}

/// The tasks that wait for the socket to take output: the sink's (the engine's writer) and
/// the reader's (a pong to send). The socket is given a waker that wakes both.
#[derive(Default)]
struct WriteWakers {
    sink: AtomicWaker,
    reader: AtomicWaker,
}

impl Wake for WriteWakers {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.sink.wake();
        self.reader.wake();
    }
}

/// The socket's write side and the frames waiting for it.
struct Out {
    io: WriteHalf<Box<dyn Io>>,
    /// Encoded frames not yet written, from `written` on.
    pending: Vec<u8>,
    written: usize,
    keys: MaskKeys,
    /// The close frame is queued: nothing goes out after it.
    closed: bool,
    /// Wakes both ends ([`WriteWakers`]); what the socket is polled with.
    socket_waker: Waker,
}

impl Out {
    /// Queues one frame (none after the close frame).
    fn queue(&mut self, opcode: u8, payload: &[u8]) {
        if self.closed {
            return;
        }
        self.closed = opcode == CLOSE;
        let key = self.keys.next();
        encode(opcode, payload, Some(key), &mut self.pending);
    }

    /// Queues the close frame with `code`.
    fn queue_close(&mut self, code: u16) {
        self.queue(CLOSE, &code.to_be_bytes());
    }

    fn unwritten(&self) -> usize {
        self.pending.len() - self.written
    }

    /// Writes what is queued; `Pending` until the socket took all of it.
    fn poll_write_out(&mut self) -> Poll<io::Result<()>> {
        let mut cx = Context::from_waker(&self.socket_waker);
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.io).poll_write(&mut cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    fn poll_flush(&mut self) -> Poll<io::Result<()>> {
        ready!(self.poll_write_out())?;
        Pin::new(&mut self.io).poll_flush(&mut Context::from_waker(&self.socket_waker))
    }
}

/// The server's text messages, for an engine to read straight off the socket. A ping is
/// answered with a pong; binary messages and pongs are not messages; the server's close
/// frame is answered with ours and ends the input, as do the end of the socket, a failed
/// read and frames that break the protocol (answered with the close code that says so).
pub(crate) struct SocketFrames {
    read: ReadHalf<Box<dyn Io>>,
    frames: FrameReader,
    out: Arc<Mutex<Out>>,
    wakers: Arc<WriteWakers>,
    /// Something the reader queued (a pong, a close) may not be written yet: the next poll
    /// tries again (the writer is not locked for every frame read).
    owes: bool,
    ended: bool,
}

impl SocketFrames {
    /// Writes what the reader queued (a pong, a close), waiting for nothing: what the
    /// socket does not take now goes with the sink's next write or the reader's next turn.
    fn push_out(&mut self, cx: &Context<'_>) {
        let mut out = lock(&self.out);
        if out.unwritten() > 0 {
            self.wakers.reader.register(cx.waker());
            let _ = out.poll_flush();
        }
        self.owes = out.unwritten() > 0;
    }

    /// Ends the input, answering with a close frame of `code` unless ours went already.
    fn end(&mut self, cx: &Context<'_>, code: u16) -> Poll<Option<Bytes>> {
        lock(&self.out).queue_close(code);
        self.push_out(cx);
        self.ended = true;
        Poll::Ready(None)
    }
}

impl acp_rpc::transport::FrameSource for SocketFrames {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if self.owes {
            self.push_out(cx);
        }
        loop {
            match self.frames.next() {
                Ok(Some(Incoming::Text(text))) => return Poll::Ready(Some(text)),
                Ok(Some(Incoming::Ping(payload))) => {
                    let mut out = lock(&self.out);
                    // A server that pings and does not read gets no more pongs than fit:
                    // RFC 6455 5.5.3 lets the most recent ping alone be answered.
                    if out.unwritten() < OUT_HIGH_WATER {
                        out.queue(PONG, &payload);
                    }
                    drop(out);
                    self.push_out(cx);
                }
                Ok(Some(Incoming::Close(code))) => {
                    return self.end(cx, code.unwrap_or(NORMAL_CLOSURE));
                }
                Err(violation) => {
                    tracing::warn!(%violation, "WebSocket connection closed");
                    return self.end(cx, violation.close_code());
                }
                Ok(None) => {
                    let buf = self.frames.buffer(READ_CHUNK);
                    match ready!(tokio_util::io::poll_read_buf(
                        Pin::new(&mut self.read),
                        cx,
                        buf
                    )) {
                        Ok(0) | Err(_) => {
                            self.ended = true;
                            return Poll::Ready(None);
                        }
                        Ok(_) => {}
                    }
                }
            }
        }
    }
}

/// The engine's messages, each one text frame, flushed once per burst (the frames its
/// writer has ready at once); the end of its output sends the close frame. Dropping the
/// sink (the engine's writer ended) cancels the connection's token.
pub(crate) struct SocketSink {
    out: Arc<Mutex<Out>>,
    wakers: Arc<WriteWakers>,
    over: Option<DropGuard>,
}

impl acp_rpc::transport::FrameSink for SocketSink {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut out = lock(&self.out);
        if out.unwritten() < OUT_HIGH_WATER {
            return Poll::Ready(Ok(()));
        }
        self.wakers.sink.register(cx.waker());
        out.poll_write_out()
    }

    fn send(&mut self, frame: Bytes) -> io::Result<()> {
        // A text frame carries UTF-8 only: anything else (raw bytes sent on purpose, as a
        // bad-input check does) cannot go out as a message and is dropped, as over a line
        // transport the peer would skip it.
        if std::str::from_utf8(&frame).is_err() {
            tracing::debug!("a message that is not UTF-8 was not sent over the WebSocket");
            return Ok(());
        }
        lock(&self.out).queue(TEXT, &frame);
        Ok(())
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.wakers.sink.register(cx.waker());
        lock(&self.out).poll_flush()
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.wakers.sink.register(cx.waker());
        let mut out = lock(&self.out);
        out.queue_close(NORMAL_CLOSURE);
        // The close frame, then the socket's end; a socket already gone is closed enough.
        let _ = ready!(out.poll_flush());
        drop(out);
        self.over.take();
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests;
