//! Dispatch: incoming requests each on a task of their own (concurrent, capped,
//! cancellable, panic-safe) and the ordered notification worker. The reader hands work
//! here; the results go to the writer's queue.

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
use tracing::Instrument;

use crate::error::{Error, ErrorCode};
use crate::handler::{DecodedNotification, Handler, NotificationContext, RequestContext};
use crate::message::{Notification, Request, write_response, write_response_head};
use crate::outgoing::Peer;
use crate::params::Params;
use crate::state::{Deliver, Outgoing, SLOT, Shared, Slot, lock, panic_message};

/// Items processed strictly in arrival order by the notification worker.
pub(crate) enum Ordered {
    Notification(IncomingNotification),
    /// A notification whose handler the reader started and which must still finish before
    /// anything queued after it (see `Reader::enqueue_notification`).
    Started(NotificationTask),
    /// A response that must wait for the notifications before it (its result copied out
    /// of the line, which the reader reuses).
    Response(Deliver, Result<Box<RawValue>, Error>),
    /// The peer went away: fail the pending calls only after the notifications read before
    /// the end were handled, so a prompt's last updates still come before its error.
    Close(crate::error::CloseReason),
}

pub(crate) struct RequestTask {
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
        let start = crate::flow::start();
        tracing::info!(target: crate::flow::TARGET, "request started");
        let Request { id, method, params } = req;
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
        let answering_others = {
            let mut in_flight = lock(&self.shared.in_flight);
            in_flight.remove(&id);
            !in_flight.is_empty()
        };
        if self.shared.answer_waiters.load(Ordering::Acquire) > 0 {
            self.shared.request_answered.notify_waiters();
        }
        crate::flow::completed(start, &result);
        if self.shared.is_closed() {
            return;
        }
        let dialect = &self.shared.config.dialect;
        let msg = match result {
            Ok(reply) => {
                // The result goes to the writer as it is: copying (or serializing) a large
                // one into a frame of its own would cost a buffer of its size per response.
                let mut head = Vec::with_capacity(48);
                write_response_head(&mut head, dialect, Some(&id));
                Outgoing::Response {
                    head,
                    id,
                    body: reply,
                }
            }
            Err(error) => {
                let mut buf = Vec::with_capacity(128);
                write_response(&mut buf, dialect, Some(&id), &Err(error));
                Outgoing::Frame(buf)
            }
        };
        // The answer to a lone request is written straight through; answers to requests
        // handled together are left to the writer task, which sends them in one write.
        let _ = if answering_others {
            self.shared.send(msg).await
        } else {
            self.shared.send_now(msg).await
        };
        // Answered (queued for the writer): the reader may admit another request.
        drop(slot);
    }
}

pub(crate) async fn notification_worker(
    mut rx: mpsc::Receiver<Ordered>,
    handler: Arc<dyn Handler>,
    peer: Peer,
    shared: Arc<Shared>,
) {
    while let Some(item) = rx.recv().await {
        match item {
            Ordered::Response(deliver, result) => match result {
                Ok(raw) => deliver.deliver(Ok(&raw)),
                Err(e) => deliver.deliver(Err(e)),
            },
            Ordered::Notification(n) => {
                notification_task(n, &handler, &peer).await;
                notification_done(&shared);
            }
            Ordered::Started(task) => {
                task.await;
                notification_done(&shared);
            }
            Ordered::Close(reason) => shared.shutdown(reason),
        }
    }
}

/// A notification's handler, run to its end (see [`run_notification`]).
pub(crate) type NotificationTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A notification as the reader hands it on: its params as text, or decoded in the reader
/// by [`Handler::decode_notification`].
pub(crate) enum IncomingNotification {
    Raw(Notification),
    Decoded(DecodedNotification),
}

/// The handler of a notification (see [`run_notification`]).
pub(crate) fn notification_task(
    notification: IncomingNotification,
    handler: &Arc<dyn Handler>,
    peer: &Peer,
) -> NotificationTask {
    let cx = NotificationContext { peer: peer.clone() };
    let handler = handler.clone();
    match notification {
        IncomingNotification::Raw(n) => Box::pin(async move {
            let fut = handler.handle_notification(cx, &n.method, Params::new(n.params));
            run_notification(&n.method, fut).await;
        }),
        IncomingNotification::Decoded(n) => Box::pin(async move {
            let method = n.method();
            run_notification(method, handler.handle_decoded_notification(cx, n)).await;
        }),
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

/// Runs one notification handler to its end, logging (not propagating) its failure or
/// panic.
async fn run_notification<F>(method: &str, fut: F)
where
    F: Future<Output = Result<(), Error>> + Unpin,
{
    let span = tracing::debug_span!(
        target: crate::flow::TARGET,
        "notification",
        direction = "incoming",
        method = %method
    );
    let start = tracing::enabled!(tracing::Level::TRACE).then(Instant::now);
    match CatchUnwind(fut).instrument(span.clone()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) if e.code == ErrorCode::METHOD_NOT_FOUND => {
            span.in_scope(|| tracing::debug!("unknown notification: ignored"));
        }
        Ok(Err(e)) => span.in_scope(|| tracing::warn!(error = %e, "notification handler failed")),
        Err(panic) => span.in_scope(
            || tracing::error!(panic = %panic_message(&panic), "notification handler panicked"),
        ),
    }
    if let Some(start) = start {
        span.in_scope(|| tracing::trace!(elapsed = ?start.elapsed(), "handled"));
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
