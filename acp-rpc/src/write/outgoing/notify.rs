//! Notifications: [`Peer::notify`], and [`Peer::notify_value`] that hands a value over to an
//! engine in the same process.

use std::sync::atomic::Ordering;

use serde::Serialize;
use serde_json::value::RawValue;

use super::{Peer, log_sent, raw_params, sent_value};
use crate::error::Error;
use crate::message::{Message, Notification, RequestId, write_notification_with, write_request};
use crate::observe::{self, MessageKind};
use crate::write::queued::Outgoing;
use crate::write::state::Pending;

impl Peer {
    /// [`Peer::notify`] handing over `params` themselves: to an engine at the other end of a
    /// [`memory_pair`](crate::transport::memory_pair), a notification whose handler takes
    /// the value ([`Handler::start_notification_value`](crate::Handler::start_notification_value))
    /// is neither written as JSON nor parsed. On any other transport, or when an observer, a
    /// trace recorder or the `acp_rpc::flow` debug logs want the text, it is
    /// [`Peer::notify`]. The value is not measured against the other engine's
    /// [`Config::max_message_size`](crate::Config::max_message_size): it never exists as text
    /// unless a reader needs it, and then the limit applies.
    ///
    /// Everything but the wait for room in the queue is done before the returned future is
    /// first polled, so the future holds the message once, not `params` beside it.
    pub fn notify_value<P>(
        &self,
        method: &'static str,
        params: P,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_
    where
        P: Serialize + Send + 'static,
    {
        self.notify_value_with(method, params, None)
    }

    /// [`Peer::notify_value`] with `fast`, a writer for the params' usual shape: where the
    /// params are written as text, `fast` writes them first and serde only when it returns
    /// `false` (having written nothing). `fast` must write exactly what serde_json writes
    /// for the same value, so the wire is the same either way, and only params with no
    /// `_meta` member at their top (it returns `false` for the others): with the feature
    /// `otel` the engine puts its trace context first in what `fast` wrote without looking
    /// for a `_meta` to merge it into. acp-agent passes
    /// `acp_types::v1::SessionNotification::write_text_chunk` for its streamed updates.
    pub fn notify_value_with<P>(
        &self,
        method: &'static str,
        params: P,
        fast: Option<fn(&P, &mut Vec<u8>) -> bool>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_
    where
        P: Serialize + Send + 'static,
    {
        let shared = &*self.shared;
        let ready = if !shared.config.framing.notifications {
            // Boxed, as in `notify`: the rare dialect without notifications pays for it.
            match serde_json::value::to_raw_value(&params) {
                Ok(raw) => Err(Box::pin(async move { self.notify(method, &raw).await })),
                Err(e) => Ok(Err(Error::invalid_params(format!(
                    "params failed to serialize: {e}"
                )))),
            }
        } else if shared.values_unwatched() {
            let params = crate::ParamsValue::new(params);
            Ok(Ok((Outgoing::Value { method, params }, true)))
        } else {
            Ok(self
                .notification(method, &params, fast)
                .map(|message| (message, false)))
        };
        async move {
            match ready {
                // A value is handed straight to the other engine when the writer is idle
                // (no batch to join: the pair takes one message at a time anyway).
                Ok(Ok((message, true))) => shared.send_now(message).await,
                Ok(Ok((message, false))) => shared.send(message).await,
                Ok(Err(e)) => Err(e),
                Err(as_request) => as_request.await,
            }
        }
    }

    /// Sends a notification. Waits while the outgoing queue is full (backpressure).
    ///
    /// In a dialect without notifications ([`crate::Framing::notifications`] = `false`) it
    /// is sent as a request whose response is ignored.
    pub async fn notify<P>(&self, method: &str, params: &P) -> Result<(), Error>
    where
        P: Serialize + ?Sized,
    {
        let shared = &*self.shared;
        if !shared.config.framing.notifications {
            // Boxed, as the wait for a request slot is a large future that every
            // notification's future would otherwise carry for the dialects that have them.
            let buf = shared.notification_size.buffer();
            return Box::pin(self.notify_as_request(buf, method, params)).await;
        }
        let message = self.notification(method, params, None)?;
        shared.send(message).await
    }

    /// A notification as the writer takes it, told to the logs and the observer: a message
    /// value for a transport that takes values, else its text.
    fn notification<P>(
        &self,
        method: &str,
        params: &P,
        fast: Option<fn(&P, &mut Vec<u8>) -> bool>,
    ) -> Result<Outgoing, Error>
    where
        P: Serialize + ?Sized,
    {
        let shared = &*self.shared;
        if shared.takes_values() {
            let notification = Notification {
                method: method.to_owned(),
                params: raw_params(params)?,
            };
            let params = notification.params.as_deref().map_or("", RawValue::get);
            log_sent(method, None, params.as_bytes(), false);
            let message = Message::Notification(notification);
            sent_value(
                shared,
                &message,
                MessageKind::Notification,
                Some(method),
                None,
            );
            return Ok(Outgoing::Message(Box::new(message)));
        }
        let mut buf = shared.notification_size.buffer();
        #[cfg(feature = "otel")]
        let gap = crate::observe::otel::notification_gap(&shared.trace);
        #[cfg(not(feature = "otel"))]
        let gap = 0;
        let plain =
            write_notification_with(&mut buf, &shared.config.framing, method, params, fast, gap)?;
        #[cfg(feature = "otel")]
        crate::observe::otel::outgoing_notification_line(&shared.trace, &mut buf, method, plain);
        #[cfg(not(feature = "otel"))]
        let _ = plain;
        shared.notification_size.record(buf.len());
        log_sent(method, None, &buf, false);
        observe::sent(
            shared.config.observer.as_ref(),
            MessageKind::Notification,
            Some(method),
            None,
            &buf,
        );
        Ok(Outgoing::Frame(buf))
    }

    /// [`Peer::notify`] in a dialect without notifications: a request whose answer is
    /// discarded, sent once a request slot is free.
    async fn notify_as_request<P>(
        &self,
        mut buf: Vec<u8>,
        method: &str,
        params: &P,
    ) -> Result<(), Error>
    where
        P: Serialize + ?Sized,
    {
        let shared = &*self.shared;
        let slot = shared.outgoing_slot().await?;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        write_request(&mut buf, &shared.config.framing, id, method, params)?;
        #[cfg(feature = "otel")]
        crate::observe::otel::outgoing_notification_line(&shared.trace, &mut buf, method, None);
        if shared.config.observer.is_some() {
            let id = RequestId::Int(id);
            let kind = MessageKind::Request;
            observe::sent(
                shared.config.observer.as_ref(),
                kind,
                Some(method),
                Some(&id),
                &buf,
            );
        }
        self.register(id, Pending::Discard(slot))?;
        shared.send(buf).await
    }
}
