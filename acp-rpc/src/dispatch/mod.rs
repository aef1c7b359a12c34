//! The dispatch stage: what the reader read goes to the user's [`Handler`] here, and its
//! answers to the write stage's queue.
//!
//! - this module: incoming requests each on a task of their own (concurrent, capped,
//!   cancellable, panic-safe) and the ordered notification worker;
//! - [`handler`](crate::handler): the user side, the [`Handler`] trait and its contexts;
//! - `batch`: a JSON-RPC batch's answers, gathered and written as one line;
//! - [`ParamsValue`](crate::ParamsValue): a notification's params handed over as a value.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::dispatch::handler::{Handler, NotificationContext, RequestContext, StartedNotification};
use crate::error::{Error, ErrorCode, panic_message};
use crate::message::{Notification, Request, write_response};
use crate::observe::tap::Direction;
use crate::observe::{MessageKind, RequestEvent};
use crate::params::Params;
use crate::write::outgoing::Peer;
use crate::write::queued::Outgoing;
use crate::write::state::{Deliver, SLOT, Shared, Slot, lock};

pub(crate) mod batch;
pub mod handler;
pub(crate) mod value;

/// Items processed strictly in arrival order by the notification worker.
pub(crate) enum Ordered {
    /// A notification's handler: not started yet, or started by the reader and still to
    /// finish before anything queued after it (see `Reader::enqueue_notification`).
    Notification(NotificationRun),
    /// A response that must wait for the notifications before it (its result copied out
    /// of the line, which the reader reuses).
    Response(Deliver, Result<Box<RawValue>, Error>),
    /// The peer went away: fail the pending calls only after the notifications read before
    /// the end were handled, so a prompt's last updates still come before its error.
    Close(crate::error::CloseReason),
}

pub(crate) struct RequestTask {
    /// Its batch, when it came in one: the answer goes there (see `reader::batch`).
    pub(crate) batch: Option<crate::dispatch::batch::Member>,
    /// Sequential mode: the predecessor's end, awaited before anything else.
    pub(crate) after: Option<oneshot::Receiver<()>>,
    /// Sequential mode: dropped when this task ends, releasing the successor.
    pub(crate) _done: Option<oneshot::Sender<()>>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) handler: Arc<dyn Handler>,
    pub(crate) peer: Peer,
    pub(crate) slots: Arc<Semaphore>,
    /// Its admission permit (released once the answer is queued, or while the handler
    /// awaits the peer).
    pub(crate) admitted: Option<OwnedSemaphorePermit>,
    pub(crate) token: CancellationToken,
    /// Notifications received before this request, for `notifications_handled`.
    pub(crate) notifications_before: u64,
    /// When it was read, if an observer wants its latency.
    pub(crate) received: Option<Instant>,
    /// Its OpenTelemetry span (feature `otel`, with a recorder), ended with its outcome.
    #[cfg(feature = "otel")]
    pub(crate) otel: Option<crate::observe::otel::EngineSpan>,
}

impl RequestTask {
    pub(crate) async fn run(mut self, req: Request) {
        // One wait on the request's token for the task's whole life (borrowed: a clone of a
        // token costs a lock of its tree).
        let cancelled = self.token.cancelled();
        tokio::pin!(cancelled);
        if let Some(predecessor) = self.after.take() {
            tokio::select! {
                biased;
                _ = &mut cancelled => {}
                _ = predecessor => {}
            }
        }
        let start = crate::observe::flow::start();
        tracing::info!(target: crate::observe::flow::TARGET, "request started");
        let Request { id, method, params } = req;
        // Ordered after the notifications read before it, when the handler asks for that.
        if self.handler.waits_for_earlier_notifications(&method) {
            self.shared
                .notifications_handled(self.notifications_before, &self.token)
                .await;
        }
        // A free slot needs no wait at all.
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) if !self.token.is_cancelled() => Some(permit),
            _ => tokio::select! {
                biased;
                _ = &mut cancelled => None,
                p = self.slots.clone().acquire_owned() => p.ok(),
            },
        };
        let slot = Arc::new(Slot {
            slots: self.slots.clone(),
            permit: Mutex::new(None),
            admitted: Mutex::new(self.admitted.take()),
            written: Mutex::new(Some(Vec::new())),
        });
        let result = match permit {
            None => Err(Error::request_cancelled()),
            Some(permit) => {
                *lock(&slot.permit) = Some(permit);
                let slot = slot.clone();
                let cx = RequestContext {
                    id: id.clone(),
                    peer: self.peer.clone(),
                    cancel: self.token.clone(),
                    shared: self.shared.clone(),
                    notifications_before: self.notifications_before,
                    slot: slot.clone(),
                };
                let fut = self
                    .handler
                    .handle_request_reply(cx, &method, Params::new(params));
                // The handler is polled first: one that answers at once never registers a
                // wait on its token (a lock of the token and a waiter in its list).
                tokio::select! {
                    biased;
                    r = SLOT.scope(slot, CatchUnwind(fut)) => r.unwrap_or_else(|panic| {
                        let msg = panic_message(&panic);
                        tracing::error!(panic = %msg, "request handler panicked");
                        Err(Error::internal_error(format!("handler panicked: {msg}")))
                    }),
                    _ = &mut cancelled => Err(Error::request_cancelled()),
                }
            }
        };
        // Removed before the answer is queued, so the peer may reuse the id as soon as it
        // reads the answer. A reader waiting on a withdrawal is told once it is queued.
        let (answering_others, _answer_queued) = {
            let mut in_flight = lock(&self.shared.in_flight);
            let entry = in_flight.remove(&id);
            self.shared
                .answers_being_queued
                .fetch_add(1, Ordering::SeqCst);
            (!in_flight.is_empty(), entry.and_then(|e| e.answer_queued))
        };
        // Whoever waits for the answers to what it sent is told once this one is queued
        // (or dropped with the connection), not before: a caller that closes the
        // connection then must not lose it.
        let _queued = AnswerQueued(&self.shared);
        #[cfg(feature = "otel")]
        if let Some(otel) = self.otel.take() {
            otel.finish(&result);
        }
        crate::observe::flow::completed(start, &result);
        if let (Some(observer), Some(received)) = (&self.shared.config.observer, self.received) {
            let event = RequestEvent {
                direction: Direction::Incoming,
                method: &method,
                id: &id,
                latency: received.elapsed(),
                outcome: result.as_ref().map(|_| ()).map_err(|e| e.code),
            };
            crate::observe::request(&**observer, &event);
        }
        let written = slot.take_written();
        if self.shared.is_closed() {
            slot.release();
            return;
        }
        if let Some(member) = self.batch.take() {
            member.answer(&id, result, written).await;
            return slot.release();
        }
        let framing = &self.shared.config.framing;
        let msg = match result {
            Ok(reply) => {
                // The result goes to the writer as it is: copying (or serializing) a large
                // one into a frame of its own would cost a buffer of its size per response.
                Outgoing::Response { id, body: reply }
            }
            Err(error) => {
                let mut buf = Vec::with_capacity(128);
                write_response(&mut buf, framing, Some(&id), &Err(error));
                let config = &self.shared.config;
                crate::observe::sent(
                    config.observer.as_ref(),
                    MessageKind::Response,
                    None,
                    Some(&id),
                    &buf,
                );
                Outgoing::Frame(buf)
            }
        }
        .signalled(written);
        // The answer to a lone request is written straight through; answers to requests
        // handled together are left to the writer task, which sends them in one write.
        let _ = if answering_others {
            self.shared.send(msg).await
        } else {
            self.shared.send_now(msg).await
        };
        // Answered (queued for the writer): the reader may admit another request.
        slot.release();
    }
}

/// Ends a request's count in [`Shared::answers_being_queued`] once its answer is queued (or
/// given up), and wakes those waiting for answers.
struct AnswerQueued<'a>(&'a Shared);

impl Drop for AnswerQueued<'_> {
    fn drop(&mut self) {
        self.0.answers_being_queued.fetch_sub(1, Ordering::SeqCst);
        if self.0.answer_waiters.load(Ordering::SeqCst) > 0 {
            self.0.request_answered.notify_waiters();
        }
    }
}

pub(crate) async fn notification_worker(mut rx: mpsc::Receiver<Ordered>, shared: Arc<Shared>) {
    while let Some(item) = rx.recv().await {
        match item {
            Ordered::Response(deliver, result) => match result {
                Ok(raw) => deliver.deliver(Ok(&raw)),
                Err(e) => deliver.deliver(Err(e)),
            },
            Ordered::Notification(run) => {
                run.await;
                notification_done(&shared);
            }
            Ordered::Close(reason) => shared.shutdown(reason),
        }
    }
}

/// Counts a handled notification and wakes whoever waits for it
/// ([`RequestContext::notifications_handled`]; the reader's overtaking check reads the
/// count).
pub(crate) fn notification_done(shared: &Shared) {
    shared.notifications_done.fetch_add(1, Ordering::SeqCst);
    if shared.notification_waiters.load(Ordering::SeqCst) > 0 {
        shared.notification_handled.notify_waiters();
    }
}

/// A notification's handler, run to its end: its failure or panic is logged, never
/// propagated. It owns everything it needs and is `Unpin`, so the reader can poll it in
/// place and, should it wait, move it to the worker as it is (no box, no hop when it
/// finishes at once, which most do).
pub(crate) struct NotificationRun {
    future: Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>,
    /// Named when the notification is read (the name need not be kept for it).
    span: tracing::Span,
    /// When the first poll began, with TRACE logging on.
    start: Option<Instant>,
    polled: bool,
    /// The OpenTelemetry span it is handled in (feature `otel`).
    #[cfg(feature = "otel")]
    otel: crate::observe::otel::NotificationScope,
}

impl NotificationRun {
    /// A notification given to [`Handler::handle_notification`] (its params as text).
    pub(crate) fn raw(n: Notification, handler: &Arc<dyn Handler>, peer: &Peer) -> Self {
        let span = Self::span(&n.method);
        let cx = NotificationContext { peer: peer.clone() };
        let handler = handler.clone();
        let Notification { method, params } = n;
        let future = Box::pin(async move {
            handler
                .handle_notification(cx, &method, Params::new(params))
                .await
        });
        Self::new(future, span)
    }

    /// A notification whose handler [`Handler::start_notification`] started.
    pub(crate) fn started(started: StartedNotification) -> Self {
        let span = Self::span(started.method);
        Self::new(started.future, span)
    }

    /// Handled in `otel`'s span (feature `otel`: its session's turn, or its own).
    #[cfg(feature = "otel")]
    pub(crate) fn with_otel(mut self, otel: crate::observe::otel::NotificationScope) -> Self {
        self.otel = otel;
        self
    }

    fn new(
        future: Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>,
        span: tracing::Span,
    ) -> Self {
        NotificationRun {
            future,
            span,
            start: None,
            polled: false,
            #[cfg(feature = "otel")]
            otel: Default::default(),
        }
    }

    /// The flow log's span a notification is handled in.
    pub(crate) fn span(method: &str) -> tracing::Span {
        tracing::debug_span!(
            target: crate::observe::flow::TARGET,
            "notification",
            direction = "incoming",
            method = %method,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
        )
    }
}

impl Future for NotificationRun {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if !this.polled {
            this.polled = true;
            this.start = tracing::enabled!(tracing::Level::TRACE).then(Instant::now);
        }
        let _entered = this.span.enter();
        #[cfg(feature = "otel")]
        let _otel = this.otel.enter();
        let future = &mut this.future;
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Ok(()))) => {}
            Ok(Poll::Ready(Err(e))) if e.code == ErrorCode::METHOD_NOT_FOUND => {
                tracing::debug!("unknown notification: ignored");
            }
            Ok(Poll::Ready(Err(e))) => tracing::warn!(error = %e, "notification handler failed"),
            Err(panic) => {
                tracing::error!(panic = %panic_message(&panic), "notification handler panicked")
            }
        }
        if let Some(start) = this.start {
            tracing::trace!(elapsed = ?start.elapsed(), "handled");
        }
        #[cfg(feature = "otel")]
        {
            drop(_otel);
            this.otel.finish();
        }
        Poll::Ready(())
    }
}

/// Catches a panic raised while polling the inner future.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}
