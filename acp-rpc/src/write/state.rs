//! The state every part of a connection shares, and nothing else: the pending map of our
//! requests, the in-flight map of the peer's, the writer's queue, the shutdown token, and
//! the concurrency and admission slots of running request handlers. It imports none of the
//! parts (reader, dispatch, handler, writer), which form a line:
//! reader -> dispatch -> handler -> writer; only what they hand each other (the queued
//! message, the write buffer).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::config::Config;
use crate::error::{CloseReason, Error};
use crate::message::RequestId;
use crate::write::queued::Outgoing;
use crate::write::side::WriteSide;

/// Hands the outcome of one of our requests to its caller. The reader calls it with the
/// result still in its line buffer, so the caller's type is read from the line directly,
/// without copying the result out first (see `Peer::call`).
pub(crate) trait Waiter: Send {
    /// Decodes a result whose text has not been validated (a response of the usual shape,
    /// see `envelope::plain_response`). `true`: it decoded, which proves the text one JSON
    /// value, and the caller has it. `false`: nothing was delivered; the line then takes the
    /// ordinary path, which validates it and calls [`Waiter::deliver`].
    fn try_unvalidated(&mut self, result: &str) -> bool;

    /// Hands the outcome to the caller.
    fn deliver(self: Box<Self>, result: Result<&RawValue, Error>);
}

/// A boxed [`Waiter`], as the pending map holds it.
pub(crate) type Deliver = Box<dyn Waiter>;

/// What waits for the response to one of our requests.
pub(crate) enum Pending {
    /// A caller awaiting the result.
    Waiter(Deliver),
    /// A fire-and-forget request (legacy dialect notification): the response is dropped,
    /// and with it the request's outgoing slot.
    Discard(OwnedSemaphorePermit),
}

#[derive(Default)]
pub(crate) struct PendingMap {
    pub(crate) closed: Option<CloseReason>,
    pub(crate) map: HashMap<i64, Pending>,
}

/// State shared by the reader, the writer, handlers and every [`Peer`].
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) out_tx: mpsc::Sender<Outgoing>,
    /// The transport and its buffer, shared by the writer task and senders writing
    /// straight through (see the writer module).
    pub(crate) writer: Mutex<WriteSide>,
    /// Wakes the writer task to finish what a sender writing straight through left.
    pub(crate) writer_wake: tokio::sync::Notify,
    /// The reader holds another complete line: answers it gives now are left to the writer
    /// task, so the answers to a burst of requests leave in one write.
    pub(crate) more_input_ready: AtomicBool,
    pub(crate) next_id: AtomicI64,
    /// The transport takes messages as values (one end of a memory pair): requests,
    /// notifications and answers are handed on unwritten (see [`crate::transport`]).
    pub(crate) values: bool,
    /// The transport carries each message as a frame of text (a WebSocket message, a
    /// memory pair's item) rather than as a line of bytes: every frame must be UTF-8.
    pub(crate) frames: bool,
    pub(crate) pending: Mutex<PendingMap>,
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when the writer task has ended: what was queued is written (or given up
    /// after [`Config::shutdown_flush_timeout`]) and the transport is shut down.
    pub(crate) writer_finished: CancellationToken,
    /// Set by [`Shared::shutdown`] before anything else: the cheap check of a closed
    /// connection (the token's own check takes its lock, and every message made it).
    pub(crate) closed: AtomicBool,
    pub(crate) reason: OnceLock<CloseReason>,
    /// Notifications whose handlers have completed (written by the notification worker).
    pub(crate) notifications_done: AtomicU64,
    /// Woken each time `notifications_done` grows (see
    /// [`RequestContext::notifications_handled`](crate::RequestContext::notifications_handled)).
    pub(crate) notification_handled: tokio::sync::Notify,
    /// Callers waiting on `notification_handled`; handled notifications wake them only when
    /// there are some (a wake takes the notifier's lock, once per notification otherwise).
    pub(crate) notification_waiters: AtomicUsize,
    /// Incoming requests whose handlers have not answered yet, with the arrival number of
    /// each (for cancellation, duplicate detection and [`Peer::received_requests_handled`](crate::Peer::received_requests_handled)).
    pub(crate) in_flight: Mutex<HashMap<RequestId, InFlightRequest>>,
    /// Callers waiting in [`Peer::received_requests_handled`](crate::Peer::received_requests_handled); request tasks wake them
    /// only when there are some.
    pub(crate) answer_waiters: AtomicUsize,
    /// Answers on their way to the outgoing queue: their requests have left `in_flight`
    /// (so the peer may reuse the id) but the answer is not queued yet. Counted from under
    /// the `in_flight` lock, so a request is always in one of the two.
    pub(crate) answers_being_queued: AtomicUsize,
    /// Senders waiting for room in the outgoing queue, counted until their message is in
    /// (see [`Shared::send`]).
    pub(crate) queue_waiters: AtomicUsize,
    /// Messages queued without waiting while others waited, since a sender last stepped
    /// back for them (see [`Shared::send`]).
    pub(crate) sends_past_waiters: AtomicUsize,
    /// Woken when an answer is queued while `answer_waiters` is not zero.
    pub(crate) request_answered: tokio::sync::Notify,
    /// Requests received so far (the arrival number of the next one).
    pub(crate) requests_received: AtomicU64,
    /// One permit per outgoing request awaiting its response (see
    /// [`Config::max_pending_requests`]).
    pub(crate) outgoing_slots: Arc<Semaphore>,
    /// How large our next request's frame will likely be (see [`FrameSizeHint`]).
    pub(crate) request_size: FrameSizeHint,
    /// How large our next notification's frame will likely be.
    pub(crate) notification_size: FrameSizeHint,
    /// OpenTelemetry: the connection's role and its sessions' open turns.
    #[cfg(feature = "otel")]
    pub(crate) trace: Arc<crate::observe::otel::ConnectionTrace>,
}

/// The capacity a new outgoing frame starts with: about the size of the previous frame of
/// its kind. A stream of similar messages (a prompt's chunks) then serializes each into a
/// buffer that fits, where a fixed small start grew it twice per message, each growth a
/// reallocation and a copy. The hint is bounded ([`FrameSizeHint::MAX`]), so a frame
/// queued behind a large one wastes at most that much.
pub(crate) struct FrameSizeHint(AtomicUsize);

impl FrameSizeHint {
    const MIN: usize = 96;
    const MAX: usize = 4096;

    pub(crate) fn new() -> Self {
        FrameSizeHint(AtomicUsize::new(Self::MIN))
    }

    /// An empty buffer with the hinted capacity.
    pub(crate) fn buffer(&self) -> Vec<u8> {
        Vec::with_capacity(self.0.load(Ordering::Relaxed))
    }

    /// Remembers the length of a frame just serialized. The hint stays while frames fit it
    /// and fill more than half of it, so small differences (a counter's digits) do not
    /// move it; otherwise it becomes the length with a quarter to spare.
    pub(crate) fn record(&self, len: usize) {
        let hint = self.0.load(Ordering::Relaxed);
        if len <= hint && len > hint / 2 {
            return;
        }
        let new = (len + len / 4)
            .next_multiple_of(64)
            .clamp(Self::MIN, Self::MAX);
        if new != hint {
            self.0.store(new, Ordering::Relaxed);
        }
    }
}

/// An incoming request being handled.
pub(crate) struct InFlightRequest {
    /// Its arrival number (see [`Shared::requests_received`]).
    pub(crate) seq: u64,
    /// Cancels its handler.
    pub(crate) token: CancellationToken,
    /// Set when the peer withdraws the request (`$/cancel_request`): dropped by the
    /// request's task once its answer (`-32800`) is queued, which the reader waits for
    /// before it reads on (see `Reader::withdraw`).
    pub(crate) answer_queued: Option<oneshot::Sender<()>>,
}

pub(crate) use crate::sync::lock;

impl Shared {
    /// Ends the connection (first reason wins): fails every pending call at once and
    /// cancels in-flight handlers, the reader and (after a final flush) the writer.
    pub(crate) fn shutdown(&self, reason: CloseReason) {
        let _ = self.reason.set(reason);
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let reason = self.close_reason().expect("set above");
        let drained = {
            let mut pending = lock(&self.pending);
            if pending.closed.is_none() {
                pending.closed = Some(reason.clone());
            }
            std::mem::take(&mut pending.map)
        };
        if !drained.is_empty() {
            tracing::debug!(count = drained.len(), %reason, "failing pending calls");
        }
        for (_, p) in drained {
            if let Pending::Waiter(deliver) = p {
                deliver.deliver(Err(Error::connection_closed(&reason)));
            }
        }
        self.shutdown.cancel();
        // Each handler's token is a root of its own (a child of the shutdown token would lock
        // that shared token as it is made and dropped, once per request), so the handlers
        // still running are cancelled here. One that starts later finds `closed` set.
        for request in lock(&self.in_flight).values() {
            request.token.cancel();
        }
    }

    /// Resolves once `before` notifications from the peer have been handled (or `cancel`
    /// fires): what a request read after them waits for (see
    /// [`RequestContext::notifications_handled`](crate::RequestContext::notifications_handled)).
    pub(crate) async fn notifications_handled(&self, before: u64, cancel: &CancellationToken) {
        if self.notifications_done.load(Ordering::SeqCst) >= before {
            return;
        }
        // Counted as a waiter while waiting: a handled notification wakes waiters only when
        // it sees one. The count goes up before each check of `notifications_done`, and the
        // worker adds to that before reading the count (all sequentially consistent), so
        // either the check sees the new total or the worker sees this waiter.
        let _waiting = CountedWait::new(&self.notification_waiters);
        loop {
            let handled = self.notification_handled.notified();
            tokio::pin!(handled);
            handled.as_mut().enable();
            if self.notifications_done.load(Ordering::SeqCst) >= before || cancel.is_cancelled() {
                return;
            }
            tokio::select! {
                () = handled => {}
                () = cancel.cancelled() => return,
            }
        }
    }

    /// Whether the connection has ended (or is ending).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.reason.get().cloned()
    }

    pub(crate) async fn closed(&self) -> CloseReason {
        self.shutdown.cancelled().await;
        self.close_reason().unwrap_or(CloseReason::Local)
    }

    pub(crate) async fn finished(&self) -> CloseReason {
        let reason = self.closed().await;
        self.writer_finished.cancelled().await;
        reason
    }

    /// The error for calls that can no longer be made or answered.
    pub(crate) fn closed_error(&self) -> Error {
        Error::connection_closed(&self.close_reason().unwrap_or(CloseReason::Local))
    }

    /// Waits for a free outgoing request slot; fails once the connection is shutting down.
    pub(crate) async fn outgoing_slot(&self) -> Result<OwnedSemaphorePermit, Error> {
        if let Ok(permit) = self.outgoing_slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        tokio::select! {
            biased;
            _ = self.shutdown.cancelled() => Err(self.closed_error()),
            p = self.outgoing_slots.clone().acquire_owned() => p.map_err(|_| self.closed_error()),
        }
    }

    /// Queues one serialized message for the writer task, waiting while the queue is full
    /// (backpressure). Fails once the connection is shutting down. (Messages somebody waits
    /// on go through `send_now`, in the writer module.)
    pub(crate) async fn send(&self, msg: impl Into<Outgoing>) -> Result<(), Error> {
        let msg = msg.into();
        if self.is_closed() {
            return Err(self.closed_error());
        }
        // The common case, a queue with room, costs no wait on the shutdown token.
        let msg = match self.out_tx.try_send(msg) {
            Ok(()) => {
                self.step_back_if_others_wait().await;
                return Ok(());
            }
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(self.closed_error()),
            Err(mpsc::error::TrySendError::Full(msg)) => msg,
        };
        // Boxed: the wait is a large future (the queue's and the shutdown token's waits), and
        // every future that sends holds this one; kept inline it made a streamed update's
        // future (and the copies of it each caller makes) kilobytes large for a path taken
        // once per queue's worth of messages.
        Box::pin(self.send_when_room(msg)).await
    }

    /// [`Shared::send`] when the queue is full: waits for room or the shutdown.
    async fn send_when_room(&self, msg: Outgoing) -> Result<(), Error> {
        let _waiting = CountedWait::new(&self.queue_waiters);
        tokio::select! {
            biased;
            r = self.out_tx.send(msg) => r.map_err(|_| self.closed_error()),
            _ = self.shutdown.cancelled() => Err(self.closed_error()),
        }
    }

    /// Fair sharing of the outgoing queue among senders streaming at once (an agent's
    /// sessions, each sending updates in a loop). The writer empties the queue a batch at a
    /// time; the room it makes goes first to the senders waiting, one message each, and the
    /// rest is free for whoever runs next. That was the first woken sender, which then took
    /// all of it, came back first in the line, and so took it again on every batch: one
    /// session streamed to its end while every other one got a message per batch (with
    /// 1,000 sessions on the defaults, the first 256 took 1.8 s to stream what later ones
    /// streamed in 2 ms). So a sender that finds room while others wait takes no more than
    /// its share of the queue (its capacity over the senders waiting and itself) before it
    /// steps back (yields to them). With nobody waiting this costs one atomic load per
    /// message.
    async fn step_back_if_others_wait(&self) {
        let waiting = self.queue_waiters.load(Ordering::Relaxed);
        if waiting == 0 {
            return;
        }
        let share = (self.config.outgoing_queue / (waiting + 1)).max(1);
        if self.sends_past_waiters.fetch_add(1, Ordering::Relaxed) + 1 >= share {
            self.sends_past_waiters.store(0, Ordering::Relaxed);
            tokio::task::yield_now().await;
        }
    }
}

/// One waiter counted in an [`AtomicUsize`] for as long as it lives (also when the waiting
/// future is dropped): the waiter counts that let a notifier skip its wake-up when nobody
/// waits. Sequentially consistent, so a waiter that counts itself and then checks its
/// condition, against a notifier that changes the condition and then reads the count,
/// cannot both miss each other.
pub(crate) struct CountedWait<'a>(&'a AtomicUsize);

impl<'a> CountedWait<'a> {
    pub(crate) fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        CountedWait(count)
    }
}

impl Drop for CountedWait<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The end of the connection, for the reader and writer tasks, which wait on it alongside
/// every read and write: each poll checks [`Shared::closed`], and the token's own wait (two
/// locks per poll) is polled only to register a waker the token does not have yet.
pub(crate) struct ClosedWatch {
    shared: Arc<Shared>,
    wait: Pin<Box<WaitForCancellationFutureOwned>>,
    registered: Option<Waker>,
}

impl ClosedWatch {
    pub(crate) fn new(shared: &Arc<Shared>) -> Self {
        ClosedWatch {
            wait: Box::pin(shared.shutdown.clone().cancelled_owned()),
            shared: shared.clone(),
            registered: None,
        }
    }
}

impl Future for ClosedWatch {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // `closed` is set before the token is cancelled, and cancelling wakes the waker
        // registered below: a poll that finds it unset and returns `Pending` is woken again.
        if self.shared.is_closed() {
            return Poll::Ready(());
        }
        if self
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        match self.wait.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending => {
                self.registered = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// The concurrency slot of the running request handler. A handler that awaits a response
/// from the peer gives its slot back while waiting (see [`release_slot`]), so the cap
/// limits handlers that *run*, and cannot deadlock two peers whose handlers call each other.
/// It gives up its admission permit for good at that point too: the request then waits on
/// the peer, which the reader must stay free to read.
pub(crate) struct Slot {
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) permit: Mutex<Option<OwnedSemaphorePermit>>,
    /// The request's admission permit, held until its answer is queued for the writer.
    pub(crate) admitted: Mutex<Option<OwnedSemaphorePermit>>,
    /// Told when the request's answer has been written (see
    /// [`RequestContext::response_written`](crate::RequestContext::response_written)).
    /// `None` once the answer has been handed to the writer: a wait asked for later fails
    /// at once instead of never resolving.
    pub(crate) written: Mutex<Option<Vec<oneshot::Sender<()>>>>,
}

impl Slot {
    /// The waits for the answer's write, taken as the answer goes to the writer; a wait
    /// asked for after this fails at once.
    pub(crate) fn take_written(&self) -> Vec<oneshot::Sender<()>> {
        lock(&self.written).take().unwrap_or_default()
    }

    /// The request is answered (its answer queued, or the connection gone): the slot and
    /// the admission permit go back now, even while somebody still holds a
    /// [`RequestContext`](crate::RequestContext) of it.
    pub(crate) fn release(&self) {
        drop(lock(&self.permit).take());
        drop(lock(&self.admitted).take());
    }
}

tokio::task_local! {
    pub(crate) static SLOT: Arc<Slot>;
}

/// Gives back the current handler's slot, if called from a request handler holding one.
/// Dropping the returned guard takes a slot again (waiting for it in [`SlotGuard::reacquire`]).
pub(crate) fn release_slot() -> Option<SlotGuard> {
    SLOT.try_with(|slot| {
        drop(lock(&slot.admitted).take());
        let permit = lock(&slot.permit).take();
        permit.map(|_| SlotGuard {
            slot: Some(slot.clone()),
        })
    })
    .ok()
    .flatten()
}

/// Whether the current task is running a request handler.
pub(crate) fn in_request_handler() -> bool {
    SLOT.try_with(|_| ()).is_ok()
}

/// A released slot, to be taken again.
pub(crate) struct SlotGuard {
    slot: Option<Arc<Slot>>,
}

impl SlotGuard {
    /// Waits for a free slot and gives it back to the handler.
    pub(crate) async fn reacquire(mut self) {
        if let Some(slot) = self.slot.take()
            && let Ok(permit) = slot.slots.clone().acquire_owned().await
        {
            *lock(&slot.permit) = Some(permit);
        }
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        // Abandoned while waiting: take a slot back if one is free (best effort).
        if let Some(slot) = self.slot.take()
            && let Ok(permit) = slot.slots.clone().try_acquire_owned()
        {
            *lock(&slot.permit) = Some(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FrameSizeHint;

    #[test]
    fn a_frame_size_hint_fits_the_last_frame_with_room_and_stays_bounded() {
        let hint = FrameSizeHint::new();
        assert_eq!(hint.buffer().capacity(), FrameSizeHint::MIN);
        hint.record(200);
        let fits = hint.buffer().capacity();
        assert!(fits >= 200 + 32, "room for a few more bytes: {fits}");
        // A frame a few bytes longer or shorter keeps the hint.
        hint.record(209);
        assert_eq!(hint.buffer().capacity(), fits);
        hint.record(190);
        assert_eq!(hint.buffer().capacity(), fits);
        // A huge frame does not make every later buffer huge.
        hint.record(10 * 1024 * 1024);
        assert_eq!(hint.buffer().capacity(), FrameSizeHint::MAX);
        // And the hint follows the frames back down.
        hint.record(10);
        assert_eq!(hint.buffer().capacity(), FrameSizeHint::MIN);
    }
}
