//! One call's bookkeeping: what reports it (its spans, the observer's event), the waiter
//! the pending map holds for it (decoding its result straight from the reader's line where
//! it can), the wait for its answer, and the guard that withdraws it when the caller stops
//! waiting.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{CANCEL_METHOD, CancelParams};
use crate::error::Error;
use crate::message::{RequestId, write_notification};
use crate::observe::RequestEvent;
use crate::observe::tap::Direction;
use crate::observe::{self, MessageKind};
use crate::write::state::{Shared, Waiter, lock, release_slot};

/// What reports one outgoing request: its id, its `tracing` span (the flow log), its
/// OpenTelemetry span, and when it started, for the flow log and the observer.
pub(super) struct CallWatch {
    pub(super) id: i64,
    pub(super) span: tracing::Span,
    #[cfg(feature = "otel")]
    pub(super) otel: Option<crate::observe::otel::EngineSpan>,
    start: Option<Instant>,
    /// When it started, for the observer's latency (only with an observer).
    observed_since: Option<Instant>,
}

impl CallWatch {
    /// Takes the next id and opens the request's spans.
    pub(super) fn start(shared: &Arc<Shared>, method: &str) -> CallWatch {
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let span = tracing::info_span!(
            target: crate::observe::flow::TARGET,
            "outgoing_request",
            direction = "outgoing",
            method,
            message_id = id,
            session_id = tracing::field::Empty,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
        );
        let start = crate::observe::flow::start();
        let observed_since = shared
            .config
            .observer
            .as_ref()
            .map(|_| start.unwrap_or_else(Instant::now));
        CallWatch {
            id,
            span,
            #[cfg(feature = "otel")]
            otel: crate::observe::otel::outgoing_request(&shared.trace, method, id),
            start,
            observed_since,
        }
    }

    /// Reports the request's end: its spans close, the observer hears its outcome.
    pub(super) fn finish<T>(self, shared: &Shared, method: &str, result: &Result<T, Error>) {
        #[cfg(feature = "otel")]
        if let Some(otel) = self.otel {
            otel.finish(result);
        }
        let start = self.start;
        self.span
            .in_scope(|| crate::observe::flow::completed(start, result));
        if let (Some(observer), Some(since)) = (&shared.config.observer, self.observed_since) {
            let event = RequestEvent {
                direction: Direction::Outgoing,
                method,
                id: &RequestId::Int(self.id),
                latency: since.elapsed(),
                outcome: result.as_ref().map(|_| ()).map_err(|e| e.code),
            };
            crate::observe::request(&**observer, &event);
        }
    }
}

/// A request on its way: the wait for its answer, and what withdraws it if that wait is
/// given up.
pub(super) struct SentCall<T, E> {
    pub(super) guard: CallGuard,
    pub(super) rx: oneshot::Receiver<Outcome<T, E>>,
    /// When the call times out, and its timeout.
    pub(super) deadline: Option<(tokio::time::Instant, Duration)>,
    /// Its place among the requests of ours the peer holds (`None` for a request handler's
    /// call), freed with the answer.
    pub(super) _outgoing_slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl<T: Send + 'static, E: Send + 'static> SentCall<T, E> {
    /// Waits for the answer (or the deadline). A request handler waiting here does not
    /// occupy one of the connection's concurrency slots meanwhile.
    pub(super) async fn answer(self, method: &str) -> Result<Result<T, E>, Error> {
        let SentCall {
            mut guard,
            rx,
            deadline,
            _outgoing_slot,
        } = self;
        let slot = release_slot();
        let received = match deadline {
            None => rx.await,
            Some((at, after)) => match tokio::time::timeout_at(at, rx).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::debug!(method, id = guard.id, ?after, "outgoing request timed out");
                    return Err(Error::timed_out(after));
                }
            },
        };
        guard.armed = false;
        if let Some(slot) = slot {
            slot.reacquire().await;
        }
        match received {
            Ok(Ok(Ok(decoded))) => Ok(decoded),
            Ok(Ok(Err(panic))) => std::panic::resume_unwind(panic),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(guard.shared.closed_error()),
        }
    }
}

/// Removes the pending entry of an abandoned call and sends `$/cancel_request` for it.
pub(super) struct CallGuard {
    pub(super) shared: Arc<Shared>,
    pub(super) id: i64,
    pub(super) armed: bool,
    pub(super) sent: bool,
    pub(super) cancel_on_drop: bool,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let removed = lock(&self.shared.pending).map.remove(&self.id).is_some();
        let shared = &self.shared;
        if !(removed
            && self.sent
            && self.cancel_on_drop
            && shared.config.framing.notifications
            && !shared.is_closed())
        {
            return;
        }
        let mut buf = Vec::with_capacity(64);
        let params = CancelParams {
            request_id: RequestId::Int(self.id),
        };
        if write_notification(&mut buf, &shared.config.framing, CANCEL_METHOD, &params).is_err() {
            return;
        }
        tracing::debug!(id = self.id, "request abandoned: sending {CANCEL_METHOD}");
        let kind = MessageKind::Notification;
        observe::sent(
            shared.config.observer.as_ref(),
            kind,
            Some(CANCEL_METHOD),
            None,
            &buf,
        );
        match shared.out_tx.try_send(buf.into()) {
            Ok(()) => {}
            Err(tokio::sync::mpsc::error::TrySendError::Full(buf)) => {
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    let shared = shared.clone();
                    handle.spawn(async move {
                        let _ = shared.send(buf).await;
                    });
                }
            }
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// What the reader sends the caller: the decoded result (or the panic `decode` raised), or
/// the error the peer answered with.
pub(super) type Outcome<T, E> = Result<std::thread::Result<Result<T, E>>, Error>;

/// The caller of [`Peer::call`] as the pending map holds it: where its outcome goes, and how
/// its result type is read.
pub(super) struct CallWaiter<T, E> {
    /// `None` once the outcome has been sent.
    pub(super) tx: Option<oneshot::Sender<Outcome<T, E>>>,
    pub(super) decode: fn(&str) -> Result<T, E>,
}

impl<T: Send + 'static, E: Send + 'static> Waiter for CallWaiter<T, E> {
    fn try_unvalidated(&mut self, result: &str) -> bool {
        // A caller that is gone, a decode error and a panic all take the ordinary path: it
        // validates the line (malformed JSON must still be answered) and delivers, once.
        if self.tx.as_ref().is_none_or(oneshot::Sender::is_closed) {
            return false;
        }
        let decode = self.decode;
        match std::panic::catch_unwind(AssertUnwindSafe(|| decode(result))) {
            Ok(Ok(value)) => {
                if let Some(tx) = self.tx.take() {
                    let _ = tx.send(Ok(Ok(Ok(value))));
                }
                true
            }
            Ok(Err(_)) | Err(_) => false,
        }
    }

    fn deliver(mut self: Box<Self>, result: Result<&RawValue, Error>) {
        let Some(tx) = self.tx.take() else { return };
        if tx.is_closed() {
            return; // the caller is gone: nothing to read the result for
        }
        let decode = self.decode;
        let decoded =
            result.map(|raw| std::panic::catch_unwind(AssertUnwindSafe(|| decode(raw.get()))));
        let _ = tx.send(decoded);
    }
}

/// The raw result, copied out of the reader's line (what [`Peer::request_raw`] returns).
/// Validates text that has not been (see [`Waiter::try_unvalidated`]).
pub(super) fn copy_raw(text: &str) -> Result<Box<RawValue>, serde_json::Error> {
    RawValue::from_string(text.to_owned())
}

/// The result read as `R` (the error still needs the method's name; see
/// [`Peer::request_with`]).
pub(super) fn decode_value<R: DeserializeOwned>(text: &str) -> Result<R, Error> {
    crate::params::deserialize_params::<R>(text)
}
