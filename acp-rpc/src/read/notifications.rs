//! Notifications: started in the reader when nothing is queued before them, else handed to
//! the worker in arrival order; and the ordering guarantee the reader keeps to the end of
//! the connection.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Waker};

use serde_json::value::RawValue;

use crate::dispatch::handler::{NotificationContext, StartedNotification};
use crate::dispatch::value::ParamsValue;
use crate::dispatch::{NotificationRun, Ordered, notification_done};
use crate::envelope::plain_notification;
use crate::error::{CloseReason, panic_message};
use crate::message::Notification;
use crate::write::outgoing::{CANCEL_METHOD, CancelParams};

use super::{CLOSE_GRACE, Reader, Taken};

impl Reader {
    /// Shuts the connection down for `reason` once the notifications already read have been
    /// handled (the ordering guarantee holds to the end: an update read before the peer went
    /// away reaches the application before the calls fail). A notification handler that does
    /// not finish within [`CLOSE_GRACE`] does not hold the calls: they fail then anyway.
    pub(super) async fn close_after_notifications(&mut self, reason: CloseReason) {
        if !self.worker_idle()
            && self
                .ordered
                .send(Ordered::Close(reason.clone()))
                .await
                .is_ok()
        {
            let _ = tokio::time::timeout(CLOSE_GRACE, self.shared.closed()).await;
        }
        self.shared.shutdown(reason);
    }

    /// Whether every notification received so far has been handled. The ordering guarantee:
    /// the reader delivers a response itself only then; otherwise it queues it behind them.
    pub(super) fn worker_idle(&self) -> bool {
        self.shared.notifications_done.load(Ordering::Acquire) == self.notifications_received
    }

    /// A notification of the usual shape whose handler the handler decodes and starts
    /// straight from the line (see [`Handler::start_notification`]); `None` sends the line
    /// down the ordinary path, and so does a decoder that panics (the reader must survive
    /// it).
    pub(super) fn start_notification<'l>(
        &self,
        line: &'l str,
        taken: &Taken,
    ) -> Option<(StartedNotification, &'l str, &'l str)> {
        let (method, params) = plain_notification(line)?;
        let params = super::trace_context::params_after(line, params, taken);
        let started = self.start_notification_of(method, params)?;
        Some((started, method, params))
    }

    /// [`Reader::start_notification`] of a notification's method and params text.
    pub(super) fn start_notification_of(
        &self,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        if method == CANCEL_METHOD {
            return None;
        }
        let cx = NotificationContext {
            peer: self.peer.clone(),
        };
        let handler = self.handler.clone();
        let start = AssertUnwindSafe(|| handler.start_notification(cx, method, params));
        std::panic::catch_unwind(start).unwrap_or_else(|panic| {
            let panic = panic_message(&panic);
            tracing::error!(method, %panic, "notification decoder panicked; handling the line as usual");
            None
        })
    }

    /// A notification whose params are the sending engine's value (a memory pair's
    /// [`Item::Value`](crate::transport::Item)): offered to the handler as the value when
    /// nobody watches the text (no observer, no `acp_rpc::flow` debug logs, no trace
    /// recorder), and otherwise, or when the handler gives it back, written as text and read
    /// like any message. Values come only from an engine in this process, so they are not
    /// measured against the size limit unless they take the text path.
    pub(super) async fn on_value(&mut self, method: &'static str, params: ParamsValue) {
        let mut params = params;
        if self.takes_values(method) {
            let cx = NotificationContext {
                peer: self.peer.clone(),
            };
            let handler = self.handler.clone();
            let start = AssertUnwindSafe(|| handler.start_notification_value(cx, method, params));
            match std::panic::catch_unwind(start) {
                Ok(Ok(started)) => {
                    self.arrived(method, None, None);
                    let run = NotificationRun::started(started);
                    return self.enqueue_notification(run).await;
                }
                Ok(Err(back)) => params = back,
                Err(panic) => {
                    let panic = panic_message(&panic);
                    tracing::error!(method, %panic, "notification value handler panicked; the notification is dropped");
                    return;
                }
            }
        }
        match params.to_raw() {
            Ok(raw) => {
                let notification = Notification {
                    method: method.to_owned(),
                    params: crate::message::non_null(Some(raw)),
                };
                self.on_message(crate::message::Message::Notification(notification))
                    .await
            }
            Err(e) => {
                tracing::error!(method, error = %e.message, "a notification value that does not serialize was dropped");
            }
        }
    }

    /// Whether a notification value of `method` may reach the handler as a value: nobody
    /// reads its text here.
    fn takes_values(&self, method: &str) -> bool {
        method != CANCEL_METHOD && self.shared.values_unwatched()
    }

    /// Hands a notification to its handler, in arrival order. When every notification read
    /// before it has been handled, its handler starts here, in the reader: one that finishes
    /// without waiting (most do) costs no hop through the worker's queue and no wake-up.
    /// One that waits goes on in the worker, which runs it to its end before anything
    /// queued after it.
    pub(super) async fn enqueue_notification(&mut self, mut run: NotificationRun) {
        // Idle means every notification received so far is handled: checked before this
        // one is counted.
        let idle = self.worker_idle();
        self.notifications_received += 1;
        if idle {
            let mut cx = Context::from_waker(Waker::noop());
            if Pin::new(&mut run).poll(&mut cx).is_ready() {
                notification_done(&self.shared);
                return;
            }
        }
        if self.ordered.send(Ordered::Notification(run)).await.is_err() {
            tracing::error!("notification worker is gone");
        }
    }

    pub(super) async fn on_notification(&mut self, mut n: Notification, taken: Taken) {
        if n.method == CANCEL_METHOD {
            let text = n.params.as_deref().map_or("null", RawValue::get);
            match serde_json::from_str::<CancelParams>(text) {
                Ok(p) => self.withdraw(&p.request_id).await,
                Err(e) => tracing::warn!("malformed {CANCEL_METHOD}: {e}"),
            }
            return;
        }
        #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
        let taken = self.take_from_params(&mut n.params, taken);
        let params = n.params.as_deref().map(RawValue::get);
        self.arrived(&n.method, None, params);
        #[cfg(feature = "otel")]
        let otel = crate::observe::otel::incoming_notification(
            &self.shared.trace,
            &mut self.last_turn,
            &n.method,
            params,
            taken.as_ref(),
        );
        let run = NotificationRun::raw(n, &self.handler, &self.peer);
        #[cfg(feature = "otel")]
        let run = run.with_otel(otel);
        self.enqueue_notification(run).await;
    }
}
