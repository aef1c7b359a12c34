//! The writer's buffer in front of the transport: messages serialized in order, the bytes
//! not yet taken by the transport, and who waits to hear they were (see the writer module
//! for how the writer task and senders share it).

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot};

use crate::config::Config;
use crate::error::{Error, panic_message};
use crate::message::{
    Message, Response, blank_line_breaks, message_text, value_text, write_message, write_response,
    write_response_head,
};
use crate::observe::MessageKind;
use crate::observe::tap::{Direction, TapEvent};
use crate::transport::{FramesOut, Item};
use crate::write::queued::Outgoing;
use crate::write::reply::ReplyBody;

/// Stop adding ready messages to a batch beyond this many bytes.
const BATCH_BYTES: usize = 256 * 1024;
/// Stop adding ready messages to a batch of frames beyond this many.
const BATCH_FRAMES: usize = 256;
/// Give back buffer memory above this size after a batch.
const KEEP_CAPACITY: usize = 4 * 1024 * 1024;

/// Where the writer's messages go: a byte stream (each message a line) or frames, through a
/// channel or to a carrier's sink (each message one frame: its text without the line end,
/// or with `values` the message itself where it was not written as text).
pub(crate) enum Sink {
    Bytes(Pin<Box<dyn AsyncWrite + Send>>),
    Frames { tx: FramesOut, values: bool },
}

impl Sink {
    /// Ends the output: the peer sees the end of the stream.
    pub(crate) fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Sink::Bytes(w) => w.as_mut().poll_shutdown(cx),
            Sink::Frames {
                tx: FramesOut::Channel(tx),
                ..
            } => {
                tx.close();
                Poll::Ready(Ok(()))
            }
            Sink::Frames {
                tx: FramesOut::Sink(sink),
                ..
            } => sink.poll_close(cx),
        }
    }
}

/// The transport and the bytes not yet written to it (behind [`Shared::writer`]).
pub(crate) struct WriteSide {
    /// `None` once the writer task has ended: the transport is dropped then, so the peer
    /// sees the end of the stream even while handles to the connection live on.
    pub(crate) transport: Option<Sink>,
    /// Serialized messages, in order, each ending with `\n`; the first `written` bytes are
    /// on the transport (a byte sink's).
    pub(crate) buf: Vec<u8>,
    pub(crate) written: usize,
    /// A frame sink's messages, in order, not yet taken by the transport.
    frames: std::collections::VecDeque<Item>,
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
            frames: Default::default(),
            unflushed: false,
            on_written: Vec::new(),
            progress: 0,
        }
    }

    /// Serializes one message onto the end of the buffer, with its line end (for a frame
    /// sink: queues it as one frame).
    pub(crate) fn push(&mut self, msg: Outgoing, config: &Config) {
        let msg = match msg {
            Outgoing::Signalled(msg, signals) => {
                self.on_written.extend(signals);
                *msg
            }
            msg => msg,
        };
        match self.transport {
            Some(Sink::Frames { values, .. }) => self.frames.push_back(frame(msg, config, values)),
            _ => append(&mut self.buf, &msg, config),
        }
    }

    /// The buffer will never be written: whoever waits to hear it was learns that now.
    pub(crate) fn abandon(&mut self) {
        self.on_written.clear();
    }

    /// Nothing is waiting to be written or flushed.
    pub(crate) fn idle(&self) -> bool {
        self.buf.is_empty() && self.frames.is_empty() && !self.unflushed
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
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::with_capacity(64 * 1024);
        }
        Poll::Ready(Ok(()))
    }

    /// Writes the rest of the buffer and flushes.
    pub(crate) fn poll_write_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let transport = match &mut self.transport {
            None => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            Some(Sink::Frames {
                tx: FramesOut::Sink(sink),
                ..
            }) => {
                // One frame per message, each when the sink says it takes one: a sink that
                // takes nothing stalls the writer here, as a full pipe does.
                while !self.frames.is_empty() {
                    ready!(sink.poll_ready(cx))?;
                    let frame = self.frames.pop_front().expect("checked above");
                    sink.send(frame.into_text())?;
                    self.progress += 1;
                    self.unflushed = true;
                }
                if self.unflushed {
                    ready!(sink.poll_flush(cx))?;
                    self.unflushed = false;
                }
                return Poll::Ready(Ok(()));
            }
            Some(Sink::Frames {
                tx: FramesOut::Channel(tx),
                ..
            }) => {
                // One frame per message; the channel's bound is the pipe's: a peer that
                // takes nothing stalls the writer here.
                while let Some(frame) = self.frames.pop_front() {
                    // Room in the channel, the usual case, takes a plain `try_send`: waiting
                    // for room through `poll_reserve` made the sender's acquire future anew
                    // for every frame. Order holds: only this writer sends on `tx`, one frame
                    // at a time from the front.
                    let frame = match tx.get_ref().map(|sender| sender.try_send(frame)) {
                        Some(Ok(())) => {
                            self.progress += 1;
                            continue;
                        }
                        Some(Err(mpsc::error::TrySendError::Full(frame))) => frame,
                        Some(Err(mpsc::error::TrySendError::Closed(_))) | None => {
                            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
                        }
                    };
                    self.frames.push_front(frame);
                    ready!(tx.poll_reserve(cx))
                        .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
                    let frame = self.frames.pop_front().expect("pushed back above");
                    tx.send_item(frame)
                        .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
                    self.progress += 1;
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
            if self.buf.len() >= BATCH_BYTES || self.frames.len() >= BATCH_FRAMES {
                break;
            }
            match rx.try_recv() {
                Ok(msg) => self.push(msg, config),
                Err(_) => break,
            }
        }
    }
}

/// One message as a frame sink takes it: its text, or with `values` a message that was not
/// written as text stays a value (a successful answer becomes one, unwritten). The observer
/// sees the text as ever; it is written for it only when one is set.
fn frame(msg: Outgoing, config: &Config, values: bool) -> Item {
    let jsonrpc = config.framing.emit_jsonrpc;
    match msg {
        Outgoing::Frame(text) => {
            crate::observe::line(
                config.observer.as_ref(),
                TapEvent::Line(Direction::Outgoing, &text),
            );
            Item::Text(text.into())
        }
        Outgoing::Message(message) if values => {
            if let Some(observer) = &config.observer {
                let text = message_text(&config.framing, &message);
                crate::observe::line_to(&**observer, TapEvent::Line(Direction::Outgoing, &text));
            }
            Item::Message { message, jsonrpc }
        }
        Outgoing::Value { method, params } if values => {
            if let Some(observer) = &config.observer {
                let text = value_text(&config.framing, method, &params);
                crate::observe::line_to(&**observer, TapEvent::Line(Direction::Outgoing, &text));
            }
            Item::Value {
                method,
                params,
                jsonrpc,
            }
        }
        Outgoing::Response { id, body } if values => {
            let result = match catch_unwind(AssertUnwindSafe(|| body.into_raw())) {
                Ok(result) => result,
                Err(panic) => Err(Error::internal_error(format!(
                    "result failed to serialize: it panicked: {}",
                    panic_message(&panic)
                ))),
            };
            if let Err(error) = &result {
                tracing::error!(%id, error = %error.message, "answering with -32603");
            }
            let message = Message::Response(Response {
                id: Some(id),
                result,
            });
            if let Some(observer) = &config.observer {
                let text = message_text(&config.framing, &message);
                crate::observe::line_to(&**observer, TapEvent::Line(Direction::Outgoing, &text));
                let Message::Response(r) = &message else {
                    unreachable!("built as a response")
                };
                let id = r.id.as_ref();
                crate::observe::sent(Some(observer), MessageKind::Response, None, id, &text);
            }
            Item::Message {
                message: Box::new(message),
                jsonrpc,
            }
        }
        msg => {
            let mut text = Vec::with_capacity(128);
            append(&mut text, &msg, config);
            text.pop(); // the line end
            Item::Text(text.into())
        }
    }
}

/// Serializes one message onto the end of `buf`, with its line end.
fn append(buf: &mut Vec<u8>, msg: &Outgoing, config: &Config) {
    match msg {
        Outgoing::Message(message) => {
            let start = buf.len();
            write_message(buf, &config.framing, message);
            crate::observe::line(
                config.observer.as_ref(),
                TapEvent::Line(Direction::Outgoing, &buf[start..]),
            );
            buf.push(b'\n');
        }
        Outgoing::Value { method, params } => {
            let start = buf.len();
            buf.extend_from_slice(&value_text(&config.framing, method, params));
            crate::observe::line(
                config.observer.as_ref(),
                TapEvent::Line(Direction::Outgoing, &buf[start..]),
            );
            buf.push(b'\n');
        }
        Outgoing::Frame(msg) => {
            crate::observe::line(
                config.observer.as_ref(),
                TapEvent::Line(Direction::Outgoing, msg),
            );
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
            if let Some(observer) = &config.observer {
                let line = &buf[start..];
                crate::observe::line_to(&**observer, TapEvent::Line(Direction::Outgoing, line));
                crate::observe::sent(Some(observer), MessageKind::Response, None, Some(id), line);
            }
            buf.push(b'\n');
        }
    }
}
