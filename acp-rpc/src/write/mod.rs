//! The write stage: everything that leaves goes through here to the
//! [transport](crate::transport).
//!
//! - [`outgoing`](crate::outgoing): our side's traffic, the [`Peer`](crate::Peer) handle,
//!   ids, the pending map of our calls, typed calls and the raw-send escape hatch;
//! - `queued` and `reply`: what the writer is handed (a message, a handler's result);
//! - `side`: the writer's buffer in front of the transport, and who waits on it;
//! - `state`: what every stage of a connection shares (the pending and in-flight maps, the
//!   writer's queue and buffer, the slots), kept here beside the queue and buffer it holds
//!   so that the stages above (read, dispatch) depend on this one and never the reverse;
//! - this module: the writer task and the straight-through path.
//!
//! The write barrier ([`crate::barrier`]) is defined at the crate root beside
//! [`Config`](crate::Config), which holds it.
//!
//! # The writer
//!
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
//!
//! With a [write barrier](crate::barrier) the writer task runs the barrier's pending work
//! after it has taken a batch and before it writes it (and before the last flush of an ending
//! connection); a sender writes straight through only while the barrier has no work pending,
//! otherwise it queues its message, which then leaves after the barrier's work.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, TryLockError};
use std::task::{Context, Poll, Waker};

use tokio::sync::mpsc;

use crate::error::{CloseReason, Error};
use crate::write::queued::Outgoing;
use crate::write::state::{ClosedWatch, Shared, lock};

pub mod outgoing;
pub(crate) mod queued;
pub(crate) mod reply;
pub(crate) mod side;
pub(crate) mod state;

impl Shared {
    /// Whether the write barrier, if any, has work to do before the next write.
    fn barrier_pending(&self) -> bool {
        self.config
            .write_barrier
            .as_ref()
            .is_some_and(|barrier| barrier.pending())
    }

    /// Whether no message waits in the outgoing queue (a message being queued counts).
    fn queue_empty(&self) -> bool {
        self.out_tx.capacity() == self.out_tx.max_capacity()
    }

    /// Whether a request or notification is handed to the transport as a value (see
    /// [`crate::transport`]) rather than written as text. With OpenTelemetry recording (the
    /// `otel` feature and a recorder), messages are written as text, which carries the trace
    /// context.
    pub(crate) fn takes_values(&self) -> bool {
        #[cfg(feature = "otel")]
        if self.values && self.trace.recorder().is_some() {
            return false;
        }
        self.values
    }

    /// Whether a notification may cross as a value ([`crate::ParamsValue`]), on either end of
    /// a memory pair: the transport takes values and nobody here reads the text (no
    /// observer, no `acp_rpc::flow` debug logs, no trace recorder).
    pub(crate) fn values_unwatched(&self) -> bool {
        self.takes_values()
            && self.config.observer.is_none()
            && !tracing::enabled!(target: crate::observe::flow::TARGET, tracing::Level::DEBUG)
    }

    /// Sends a message somebody waits on: written straight through when the writer is idle
    /// (see the module docs), otherwise queued like [`Shared::send`].
    pub(crate) async fn send_now(&self, msg: impl Into<Outgoing>) -> Result<(), Error> {
        let msg = msg.into();
        if self.is_closed() {
            return Err(self.closed_error());
        }
        if !self.more_input_ready.load(Ordering::Relaxed)
            && self.queue_empty()
            && !self.barrier_pending()
        {
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

pub(crate) fn write_loop(
    rx: mpsc::Receiver<Outgoing>,
    shared: Arc<Shared>,
) -> impl Future<Output = ()> + Send {
    // Made with the task, not on its first poll: however the task ends (its runtime dropping
    // it, even before it ever ran), `finished` waiters are freed.
    let finished = FinishedOnDrop(shared.clone());
    async move {
        let _finished = finished;
        write_until_closed(rx, &shared).await;
        let mut side = lock(&shared.writer);
        side.transport = None;
        side.abandon();
    }
}

/// Tells [`Shared::finished`] waiters the writer is done, when the writer task ends.
struct FinishedOnDrop(Arc<Shared>);

impl Drop for FinishedOnDrop {
    fn drop(&mut self) {
        self.0.writer_finished.cancel();
    }
}

/// Runs the write barrier's pending work, if any, before the writer writes what it took.
/// `false`: the connection ended and the work did not finish within the grace period, so
/// what waits for it must not be written.
async fn barrier_done(shared: &Shared, shutdown: &mut Pin<&mut ClosedWatch>) -> bool {
    let Some(barrier) = &shared.config.write_barrier else {
        return true;
    };
    if !barrier.pending() {
        return true;
    }
    let mut flush = barrier.flush();
    tokio::select! {
        biased;
        () = &mut flush => true,
        () = shutdown.as_mut() => {
            let grace = shared.config.shutdown_flush_timeout;
            tokio::time::timeout(grace, flush).await.is_ok()
        }
    }
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
        if !barrier_done(shared, &mut shutdown).await {
            return;
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
            if let Some(barrier) = &shared.config.write_barrier
                && barrier.pending()
            {
                barrier.flush().await;
            }
            if poll_fn(|cx| shared.poll_drain(cx)).await.is_err() {
                return;
            }
        }
        let _ = poll_fn(|cx| match &mut lock(&shared.writer).transport {
            Some(transport) => transport.poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        })
        .await;
    })
    .await;
}
