//! The writing end of a connection: one reused buffer in front of the transport, shared by
//! the writer task and the senders.
//!
//! Two ways lead to the transport, and they never reorder messages:
//!
//! - **The queue.** The writer task takes every ready message from the outgoing queue into
//!   the buffer, writes it and flushes once per batch. Notifications always go this way, so a
//!   burst of them leaves in few writes.
//! - **Straight through.** A message somebody waits on (a request, a response) is written by
//!   its sender when the writer is idle: no queued message, nothing left in the buffer, and
//!   the reader holding no further line whose answer could join a batch. That saves a hop
//!   to the writer task and its wake-up on each side of a round trip. The sender never
//!   waits on the transport: what the pipe does not take at once stays in the buffer for the
//!   writer task, which goes on from there.
//!
//! The writer task takes a message from the queue only while holding the buffer's lock, and
//! a sender checks the queue only while holding it, so there is no moment in which a message
//! has left the queue but is not yet in the buffer: a message written straight through was
//! sent after everything already written or waiting.

use std::future::{Future, poll_fn};
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, TryLockError};
use std::task::{Context, Poll, Waker, ready};

use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot};

use crate::config::Config;
use crate::error::{CloseReason, Error};
use crate::message::{blank_line_breaks, write_response, write_response_head};
use crate::reply::ReplyBody;
use crate::state::{ClosedWatch, Outgoing, Shared, lock, panic_message};
use crate::tap::{Direction, TapEvent};

/// Stop adding ready messages to a batch beyond this many bytes.
const BATCH_BYTES: usize = 256 * 1024;
/// Give back buffer memory above this size after a batch.
const KEEP_CAPACITY: usize = 4 * 1024 * 1024;

/// The transport and the bytes not yet written to it (behind [`Shared::writer`]).
pub(crate) struct WriteSide {
    /// `None` once the writer task has ended: the transport is dropped then, so the peer
    /// sees the end of the stream even while handles to the connection live on.
    transport: Option<Pin<Box<dyn AsyncWrite + Send>>>,
    /// Serialized messages, in order; the first `written` bytes are on the transport.
    buf: Vec<u8>,
    written: usize,
    /// Bytes were written since the last flush.
    unflushed: bool,
    /// Told once `buf` is written and flushed: the senders of signalled messages in it.
    on_written: Vec<oneshot::Sender<()>>,
    /// Bytes the transport has taken so far (the stall watch looks for progress).
    progress: u64,
}

impl WriteSide {
    pub(crate) fn new(transport: Pin<Box<dyn AsyncWrite + Send>>) -> Self {
        WriteSide {
            transport: Some(transport),
            buf: Vec::with_capacity(64 * 1024),
            written: 0,
            unflushed: false,
            on_written: Vec::new(),
            progress: 0,
        }
    }

    /// Serializes one message onto the end of the buffer, with its line end.
    fn push(&mut self, msg: Outgoing, config: &Config) {
        match msg {
            Outgoing::Signalled(msg, signals) => {
                append(&mut self.buf, &msg, config);
                self.on_written.extend(signals);
            }
            msg => append(&mut self.buf, &msg, config),
        }
    }

    /// The buffer will never be written: whoever waits to hear it was learns that now.
    fn abandon(&mut self) {
        self.on_written.clear();
    }

    /// Nothing is waiting to be written or flushed.
    fn idle(&self) -> bool {
        self.buf.is_empty() && !self.unflushed
    }

    /// Writes and flushes the buffer; on success it is empty again.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
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
    fn poll_write_all(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(transport) = &mut self.transport else {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
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
    fn fill(&mut self, rx: &mut mpsc::Receiver<Outgoing>, config: &Config) {
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
            buf.push(b'\n');
        }
    }
}

impl Shared {
    /// Whether no message waits in the outgoing queue (a message being queued counts).
    fn queue_empty(&self) -> bool {
        self.out_tx.capacity() == self.out_tx.max_capacity()
    }

    /// Sends a message somebody waits on: written straight through when the writer is idle
    /// (see the module docs), otherwise queued like [`Shared::send`].
    pub(crate) async fn send_now(&self, msg: impl Into<Outgoing>) -> Result<(), Error> {
        let msg = msg.into();
        if self.is_closed() {
            return Err(self.closed_error());
        }
        if !self.more_input_ready.load(Ordering::Relaxed) && self.queue_empty() {
            let side = match self.writer.try_lock() {
                Ok(side) => Some(side),
                Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(mut side) = side
                && side.idle()
                && self.queue_empty()
            {
                side.push(msg, &self.config);
                // Never wait here: a partial write is finished by the writer task.
                let mut cx = Context::from_waker(Waker::noop());
                return match side.poll_drain(&mut cx) {
                    Poll::Ready(Ok(())) => Ok(()),
                    Poll::Pending => {
                        drop(side);
                        self.writer_wake.notify_one();
                        Ok(())
                    }
                    Poll::Ready(Err(e)) => {
                        drop(side);
                        tracing::debug!(error = %e, "write failed");
                        self.shutdown(CloseReason::WriteError(e.to_string()));
                        Err(self.closed_error())
                    }
                };
            }
        }
        self.send(msg).await
    }

    /// The writer task's wait for work: takes the ready messages into the buffer (under the
    /// lock, see the module docs), or finds bytes a sender left. `false`: the queue closed.
    fn poll_take(&self, rx: &mut mpsc::Receiver<Outgoing>, cx: &mut Context<'_>) -> Poll<bool> {
        let mut side = lock(&self.writer);
        if !side.idle() {
            return Poll::Ready(true);
        }
        match rx.poll_recv(cx) {
            Poll::Ready(Some(msg)) => {
                side.push(msg, &self.config);
                side.fill(rx, &self.config);
                Poll::Ready(true)
            }
            Poll::Ready(None) => Poll::Ready(false),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_drain(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        lock(&self.writer).poll_drain(cx)
    }
}

/// Drives a write to its end, unless the transport takes not one byte of it for
/// [`Config::write_stall_timeout`]: then the stall is the error. A write the transport takes
/// at once costs no timer.
async fn written_or_stalled<F: Future<Output = io::Result<()>>>(
    mut write: Pin<&mut F>,
    shared: &Shared,
) -> Result<io::Result<()>, CloseReason> {
    if let Poll::Ready(r) = poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await {
        return Ok(r);
    }
    let Some(limit) = shared.config.write_stall_timeout else {
        return Ok(write.await);
    };
    loop {
        let before = lock(&shared.writer).progress;
        match tokio::time::timeout(limit, write.as_mut()).await {
            Ok(r) => return Ok(r),
            Err(_) if lock(&shared.writer).progress == before => {
                return Err(CloseReason::WriteStalled(limit));
            }
            Err(_) => {}
        }
    }
}

pub(crate) async fn write_loop(rx: mpsc::Receiver<Outgoing>, shared: Arc<Shared>) {
    write_until_closed(rx, &shared).await;
    let mut side = lock(&shared.writer);
    side.transport = None;
    side.abandon();
}

async fn write_until_closed(mut rx: mpsc::Receiver<Outgoing>, shared: &Arc<Shared>) {
    // One wait on the shutdown token for the writer's whole life (see the reader).
    let shutdown = ClosedWatch::new(shared);
    tokio::pin!(shutdown);
    let grace = shared.config.shutdown_flush_timeout;
    loop {
        let work = tokio::select! {
            biased;
            more = poll_fn(|cx| shared.poll_take(&mut rx, cx)) => more,
            () = shared.writer_wake.notified() => true,
            () = &mut shutdown => false,
        };
        if !work {
            break;
        }
        let result = {
            let write = poll_fn(|cx| shared.poll_drain(cx));
            tokio::pin!(write);
            tokio::select! {
                biased;
                r = written_or_stalled(write.as_mut(), shared) => match r {
                    Ok(r) => r,
                    Err(stalled) => {
                        tracing::warn!(reason = %stalled, "ending the connection");
                        shared.shutdown(stalled);
                        return;
                    }
                },
                () = &mut shutdown => match tokio::time::timeout(grace, &mut write).await {
                    Ok(r) => r,
                    Err(_) => return,
                },
            }
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "write failed");
            shared.shutdown(CloseReason::WriteError(e.to_string()));
            return;
        }
    }
    // The connection is ending: flush what is already queued, within the grace period.
    let _ = tokio::time::timeout(grace, async {
        loop {
            let work = {
                let mut side = lock(&shared.writer);
                side.fill(&mut rx, &shared.config);
                !side.idle()
            };
            if !work {
                break;
            }
            if poll_fn(|cx| shared.poll_drain(cx)).await.is_err() {
                return;
            }
        }
        let _ = poll_fn(|cx| match &mut lock(&shared.writer).transport {
            Some(transport) => transport.as_mut().poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        })
        .await;
    })
    .await;
}
