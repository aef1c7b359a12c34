//! The writer's buffer in front of the transport: messages serialized in order, the bytes
//! not yet taken by the transport, and who waits to hear they were (see the writer module
//! for how the writer task and senders share it).

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

use crate::config::Config;
use crate::error::{Error, panic_message};
use crate::message::{blank_line_breaks, write_response, write_response_head};
use crate::observe::MessageKind;
use crate::queued::Outgoing;
use crate::reply::ReplyBody;
use crate::tap::{Direction, TapEvent};

/// Stop adding ready messages to a batch beyond this many bytes.
const BATCH_BYTES: usize = 256 * 1024;
/// Give back buffer memory above this size after a batch.
const KEEP_CAPACITY: usize = 4 * 1024 * 1024;

/// Where the writer's messages go: a byte stream (each message a line) or a channel of
/// frames (each message one frame, its line end left off).
pub(crate) enum Sink {
    Bytes(Pin<Box<dyn AsyncWrite + Send>>),
    Frames(PollSender<Bytes>),
}

impl Sink {
    pub(crate) fn frames(tx: mpsc::Sender<Bytes>) -> Sink {
        Sink::Frames(PollSender::new(tx))
    }

    /// Ends the output: the peer sees the end of the stream.
    pub(crate) fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Sink::Bytes(w) => w.as_mut().poll_shutdown(cx),
            Sink::Frames(tx) => {
                tx.close();
                Poll::Ready(Ok(()))
            }
        }
    }
}

/// The transport and the bytes not yet written to it (behind [`Shared::writer`]).
pub(crate) struct WriteSide {
    /// `None` once the writer task has ended: the transport is dropped then, so the peer
    /// sees the end of the stream even while handles to the connection live on.
    pub(crate) transport: Option<Sink>,
    /// Serialized messages, in order, each ending with `\n`; the first `written` bytes are
    /// on the transport.
    pub(crate) buf: Vec<u8>,
    pub(crate) written: usize,
    /// Where each message of `buf` ends (after its `\n`), kept for a frame sink only.
    ends: std::collections::VecDeque<usize>,
    /// Bytes were written since the last flush.
    pub(crate) unflushed: bool,
    /// Told once `buf` is written and flushed: the senders of signalled messages in it.
    pub(crate) on_written: Vec<oneshot::Sender<()>>,
    /// Bytes the transport has taken so far (the stall watch looks for progress).
    pub(crate) progress: u64,
}

impl WriteSide {
    pub(crate) fn new(transport: Sink) -> Self {
        WriteSide {
            transport: Some(transport),
            buf: Vec::with_capacity(64 * 1024),
            written: 0,
            ends: Default::default(),
            unflushed: false,
            on_written: Vec::new(),
            progress: 0,
        }
    }

    /// Serializes one message onto the end of the buffer, with its line end.
    pub(crate) fn push(&mut self, msg: Outgoing, config: &Config) {
        match msg {
            Outgoing::Signalled(msg, signals) => {
                append(&mut self.buf, &msg, config);
                self.on_written.extend(signals);
            }
            msg => append(&mut self.buf, &msg, config),
        }
        if matches!(self.transport, Some(Sink::Frames(_))) {
            self.ends.push_back(self.buf.len());
        }
    }

    /// The buffer will never be written: whoever waits to hear it was learns that now.
    pub(crate) fn abandon(&mut self) {
        self.on_written.clear();
    }

    /// Nothing is waiting to be written or flushed.
    pub(crate) fn idle(&self) -> bool {
        self.buf.is_empty() && !self.unflushed
    }

    /// Writes and flushes the buffer; on success it is empty again.
    pub(crate) fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = ready!(self.poll_write_all(cx));
        if result.is_err() {
            self.abandon();
            return Poll::Ready(result);
        }
        for written in self.on_written.drain(..) {
            let _ = written.send(());
        }
        self.buf.clear();
        self.written = 0;
        self.ends.clear();
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::with_capacity(64 * 1024);
        }
        Poll::Ready(Ok(()))
    }

    /// Writes the rest of the buffer and flushes.
    pub(crate) fn poll_write_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let transport = match &mut self.transport {
            None => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            Some(Sink::Frames(tx)) => {
                // One frame per message, its line end left off; the channel's bound is the
                // pipe's: a peer that takes nothing stalls the writer here.
                while let Some(&end) = self.ends.front() {
                    ready!(tx.poll_reserve(cx))
                        .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
                    let frame = Bytes::copy_from_slice(&self.buf[self.written..end - 1]);
                    tx.send_item(frame)
                        .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
                    self.progress += (end - self.written) as u64;
                    self.written = end;
                    self.ends.pop_front();
                }
                return Poll::Ready(Ok(()));
            }
            Some(Sink::Bytes(transport)) => transport,
        };
        while self.written < self.buf.len() {
            let n = ready!(transport.as_mut().poll_write(cx, &self.buf[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
            self.progress += n as u64;
            self.unflushed = true;
        }
        if self.unflushed {
            ready!(transport.as_mut().poll_flush(cx))?;
            self.unflushed = false;
        }
        Poll::Ready(Ok(()))
    }

    /// Takes the messages that are ready now (at most [`BATCH_BYTES`] of them), never the
    /// ones a producer queues meanwhile: a batch holds at most one queue's worth, so a fast
    /// producer cannot run ahead of a slow reader by more than the queue bounds.
    pub(crate) fn fill(&mut self, rx: &mut mpsc::Receiver<Outgoing>, config: &Config) {
        let ready = rx.len();
        for _ in 0..ready {
            if self.buf.len() >= BATCH_BYTES {
                break;
            }
            match rx.try_recv() {
                Ok(msg) => self.push(msg, config),
                Err(_) => break,
            }
        }
    }
}

/// Serializes one message onto the end of `buf`, with its line end.
fn append(buf: &mut Vec<u8>, msg: &Outgoing, config: &Config) {
    match msg {
        Outgoing::Frame(msg) => {
            if let Some(tap) = &config.tap {
                tap(TapEvent::Line(Direction::Outgoing, msg));
            }
            // (The caller guarantees `msg` has no line break: compact JSON never does.)
            buf.reserve(msg.len() + 1);
            buf.extend_from_slice(msg);
            buf.push(b'\n');
        }
        Outgoing::Signalled(msg, _) => append(buf, msg, config),
        Outgoing::Response { id, body } => {
            let start = buf.len();
            write_response_head(buf, &config.framing, Some(id));
            let body_start = buf.len();
            let written = match &body.0 {
                ReplyBody::Raw(raw) => {
                    buf.extend_from_slice(raw.get().as_bytes());
                    Ok(())
                }
                ReplyBody::Value(value) => {
                    match catch_unwind(AssertUnwindSafe(|| value.write_json(buf))) {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(format!("result failed to serialize: {e}")),
                        Err(panic) => Err(format!(
                            "result failed to serialize: it panicked: {}",
                            panic_message(&panic)
                        )),
                    }
                }
            };
            match written {
                Ok(()) => {
                    blank_line_breaks(&mut buf[body_start..]);
                    buf.extend_from_slice(b"}");
                }
                Err(message) => {
                    tracing::error!(%id, error = %message, "answering with -32603");
                    buf.truncate(start);
                    let error = Err(Error::internal_error(message));
                    write_response(buf, &config.framing, Some(id), &error);
                }
            }
            if let Some(tap) = &config.tap {
                tap(TapEvent::Line(Direction::Outgoing, &buf[start..]));
            }
            crate::observe::sent(config, MessageKind::Response, None, Some(id), &buf[start..]);
            buf.push(b'\n');
        }
    }
}
