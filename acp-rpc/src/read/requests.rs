//! Requests: bounded admission, the in-flight map, the peer's withdrawals
//! (`$/cancel_request`), and the handler's first steps run in the reader.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::task::{Context, Waker};

use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::dispatch::RequestTask;
use crate::error::Error;
use crate::message::{Request, RequestId};
use crate::write::state::{InFlightRequest, lock};

use super::{Reader, Taken};

impl Reader {
    /// The peer's `$/cancel_request`: cancels the request's handler and waits until its
    /// answer (`-32800`, or the result it had already reached) is queued, before reading
    /// on. So a withdrawn request is answered ahead of anything read after the withdrawal:
    /// a peer that cancels, sends one more request and hangs up once that is answered
    /// still gets its `-32800` (the next request's first steps run here in the reader and
    /// would otherwise answer first).
    pub(super) async fn withdraw(&mut self, id: &RequestId) {
        let queued = {
            let mut in_flight = lock(&self.shared.in_flight);
            match in_flight.get_mut(id) {
                Some(request) if request.answer_queued.is_none() => {
                    let (queued, answered) = oneshot::channel();
                    request.answer_queued = Some(queued);
                    request.token.cancel();
                    Some(answered)
                }
                // Withdrawn twice: the first withdrawal already waited.
                Some(_) => None,
                None => {
                    tracing::debug!(id = %id, "cancel for a finished request");
                    return;
                }
            }
        };
        tracing::debug!(id = %id, "peer cancelled request");
        if let Some(answered) = queued {
            tokio::select! {
                biased;
                _ = answered => {}
                () = self.shared.shutdown.cancelled() => {}
            }
        }
    }

    pub(super) async fn on_request(&mut self, mut req: Request, taken: Taken) {
        // Bounded admission: at the cap the reader waits here, reading nothing more, so the
        // peer's writes fill the pipe and block it (the OS pushes back) until we answer.
        let admitted = match self.admission.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_) => {
                tracing::debug!(
                    cap = self.shared.config.max_unanswered_requests,
                    "unanswered request cap reached: reading pauses"
                );
                tokio::select! {
                    biased;
                    _ = self.shared.shutdown.cancelled() => None,
                    p = self.admission.clone().acquire_owned() => p.ok(),
                }
            }
        };
        let Some(admitted) = admitted else { return };
        let token = {
            let mut in_flight = lock(&self.shared.in_flight);
            if in_flight.contains_key(&req.id) {
                None
            } else {
                // A root token, not a child of the shutdown token (see `Shared::shutdown`).
                let token = CancellationToken::new();
                if self.shared.is_closed() {
                    token.cancel();
                }
                let seq = self.shared.requests_received.fetch_add(1, Ordering::AcqRel);
                let entry = InFlightRequest {
                    seq,
                    token: token.clone(),
                    answer_queued: None,
                };
                in_flight.insert(req.id.clone(), entry);
                Some(token)
            }
        };
        let Some(token) = token else {
            let error =
                Error::invalid_request(format!("request id {} is already in flight", req.id));
            return self.reply(Some(&req.id), Err(error)).await;
        };
        #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
        let taken = self.take_from_params(&mut req.params, taken);
        let params = req.params.as_deref().map(RawValue::get);
        self.arrived(&req.method, Some(&req.id), params);
        let span = tracing::info_span!(
            target: crate::observe::flow::TARGET,
            "request",
            direction = "incoming",
            method = req.method.as_str(),
            message_id = %req.id,
            session_id = tracing::field::Empty,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
        );
        #[cfg(feature = "otel")]
        let otel = crate::observe::otel::incoming_request(
            &self.shared.trace,
            &req.method,
            &req.id,
            params,
            taken.as_ref(),
        );
        if !span.is_disabled()
            && let Some(session) = params.and_then(crate::observe::flow::session_id)
        {
            span.record("session_id", session);
        }
        // Sequential requests form a chain: each handler waits for its predecessor's
        // `done` sender to be dropped (when that task ends, however it ends).
        let (after, done) = if self.shared.config.sequential_requests {
            let (done, finished) = oneshot::channel();
            (self.last_request_done.replace(finished), Some(done))
        } else {
            (None, None)
        };
        let task = RequestTask {
            batch: self
                .batch
                .as_ref()
                .map(crate::dispatch::batch::Batch::member),
            after,
            _done: done,
            shared: self.shared.clone(),
            handler: self.handler.clone(),
            peer: self.peer.clone(),
            slots: self.slots.clone(),
            admitted: Some(admitted),
            token,
            notifications_before: self.notifications_received,
            received: self
                .shared
                .config
                .observer
                .is_some()
                .then(std::time::Instant::now),
            #[cfg(feature = "otel")]
            otel: None,
        };
        // When every notification read before this request has been handled, the request's
        // first steps run here, in the reader: a handler that answers without waiting (most
        // do) is answered before the next line is read, with no task spawned and no
        // scheduler hop on the way. One that waits goes on as a task of its own, from where
        // it stopped: the task's first poll registers its real waker (a future must allow
        // being polled again, and the no-op waker's lost wake-ups are re-checked then).
        // With notifications still queued it is spawned at once, as before: running it here
        // would start it ahead of notifications that arrived first.
        #[cfg(feature = "otel")]
        let mut task = match otel {
            // The request's span is current inside the flow log's span (innermost), so a
            // `tracing` span of the handler is its child whatever a layer makes of the flow's.
            Some(otel) => {
                let active = otel.active.clone();
                let mut task = task;
                task.otel = Some(otel);
                Box::pin(crate::observe::otel::scoped(active, task.run(req)).instrument(span))
                    as std::pin::Pin<Box<dyn Future<Output = ()> + Send>>
            }
            None => Box::pin(task.run(req).instrument(span)),
        };
        #[cfg(not(feature = "otel"))]
        let mut task = Box::pin(task.run(req).instrument(span));
        if !self.worker_idle() {
            tokio::spawn(task);
            return;
        }
        let mut cx = Context::from_waker(Waker::noop());
        if task.as_mut().poll(&mut cx).is_pending() {
            tokio::spawn(task);
        }
    }
}
