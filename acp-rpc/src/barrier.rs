//! The write barrier: work a connection's writer waits for before it hands output to the
//! transport ([`Config::write_barrier`](crate::Config::write_barrier)).
//!
//! A layer above the engine that must finish something before the peer may see a message
//! (acp-agent's session recorder: every update is in the store before the client reads it)
//! could do that work once per message, before it queues the message. The writer already
//! takes every ready message from the outgoing queue and writes them in one batch; a
//! barrier lets the layer do its work once per batch instead:
//!
//! 1. The layer notes what it must do (say, an event to append), marks the barrier
//!    [pending](WriteBarrier::pending), and only then queues its message.
//! 2. Before the writer hands anything to the transport (a batch from the queue, the
//!    connection's last flush, or a message a sender would write straight through) it asks
//!    [`WriteBarrier::pending`]; if so, it runs [`WriteBarrier::flush`] to completion first.
//!    A sender that would write straight through while the barrier is pending queues its
//!    message instead, so it leaves after the flush too.
//!
//! So a message queued after its work was noted never reaches the transport before that
//! work is done, and a burst of N messages costs one flush. While a flush runs, nothing is
//! written on the connection (the barrier holds up all output, answers too) and senders
//! fill the outgoing queue until it is full, then wait ([`Config::outgoing_queue`]): a slow
//! barrier slows the senders down, it never lets memory grow.
//!
//! The flush cannot fail the write: a barrier whose work fails decides itself what that
//! means (log it and let the output go, or close the connection with
//! [`Peer::close`](crate::Peer::close) before the future returns). A connection without a
//! barrier does no work for one: the writer checks an `Option`.
//!
//! [`Config::outgoing_queue`]: crate::Config::outgoing_queue

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future of a [`WriteBarrier::flush`].
pub type BarrierFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Work that must be done before output is handed to the transport (see the module docs).
pub trait WriteBarrier: Send + Sync + 'static {
    /// Whether there is work to do before the next write. Called before every write the
    /// writer makes and every message a sender would write straight through, so it must be
    /// cheap (an atomic load). Must be `true` from the moment the work is noted, which is
    /// before the message that depends on it is queued.
    fn pending(&self) -> bool;

    /// Does the pending work. The writer awaits it before it writes: every message queued
    /// so far waits for it. It is called from the connection's writer task only, one flush
    /// at a time.
    fn flush(&self) -> BarrierFuture;
}

/// Two barriers, the first flushed first (what [`crate::Config::with_write_barrier`] makes
/// when a barrier is set already).
pub(crate) struct Both(
    pub(crate) Arc<dyn WriteBarrier>,
    pub(crate) Arc<dyn WriteBarrier>,
);

impl WriteBarrier for Both {
    fn pending(&self) -> bool {
        self.0.pending() || self.1.pending()
    }

    fn flush(&self) -> BarrierFuture {
        let first = self.0.pending().then(|| self.0.flush());
        let second = self.1.clone();
        Box::pin(async move {
            if let Some(first) = first {
                first.await;
            }
            if second.pending() {
                second.flush().await;
            }
        })
    }
}
