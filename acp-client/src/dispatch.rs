//! The client's dispatcher: every message of the agent's routed to the [`Client`] by the
//! generated `route_request`/`route_notification`, each request only after the notifications
//! read before it, and `session/update`s to the prompt streams first (with a fast path that
//! reads them straight from the line).

use std::sync::Arc;

use acp_rpc::{
    Error, Handler, NotificationContext, Params, ParamsValue, RawValue, Reply, RequestContext,
    StartedNotification,
};
use acp_types::v1::{SessionNotification, names};
use async_trait::async_trait;

use crate::client::Client;
use crate::stream::Subscribers;

#[rustfmt::skip]
mod generated;

/// Routes incoming traffic to a [`Client`] (and `session/update`s to prompt streams).
pub(crate) struct Dispatcher<C: Client> {
    pub(crate) client: Arc<C>,
    pub(crate) subscribers: Subscribers,
}

#[async_trait]
impl<C: Client> Handler for Dispatcher<C> {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.handle_request_reply(cx, method, params)
            .await?
            .into_raw()
    }

    /// Every request of the agent's waits until the `session/update`s (and other
    /// notifications) sent before it have been handled: a permission question about a tool
    /// call reaches [`Client::request_permission`] after the update that announced the call
    /// reached [`Client::session_update`] and the prompt streams (see acp-rpc's `concepts`,
    /// *Ordering*).
    fn waits_for_earlier_notifications(&self, _method: &str) -> bool {
        true
    }

    /// Results go out unserialized: the writer serializes them into its own buffer (a
    /// 1 MiB `fs/read_text_file` answer gets no MiB-sized buffer of its own).
    async fn handle_request_reply(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Reply, Error> {
        self.route_request(method, params).await
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.route_notification(method, params).await
    }

    /// `session/update` is the one notification that comes in streams (a prompt's every
    /// chunk), so the reader parses it straight from the line into the future that handles
    /// it: one pass over the text instead of two, and the value is neither boxed nor copied
    /// on its way. Anything that does not parse goes the ordinary way, where a bad message
    /// gets its usual error.
    fn start_notification(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        if method != names::SESSION_UPDATE {
            return None;
        }
        let n: SessionNotification = serde_json::from_str(params).ok()?;
        Some(StartedNotification::new(
            names::SESSION_UPDATE,
            async move { self.session_update_hook(n).await },
        ))
    }

    /// A `session/update` an agent in this process handed over as a value (a dialect
    /// translation on a memory pair, `Peer::notify_value`): taken as it is, not parsed.
    fn start_notification_value(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: ParamsValue,
    ) -> Result<StartedNotification, ParamsValue> {
        if method != names::SESSION_UPDATE {
            return Err(params);
        }
        // Kept in its box until the hook takes it, so the future holds it once.
        let n: Box<SessionNotification> = params.downcast_box()?;
        Ok(StartedNotification::new(
            names::SESSION_UPDATE,
            async move { self.session_update_hook(*n).await },
        ))
    }
}

impl<C: Client> Dispatcher<C> {
    /// A `session/update`: to the prompt streams of its session, then to the client.
    ///
    /// An `async` block, not an `async fn`, which would hold a second copy of the
    /// notification in its future (this one is made and moved for every streamed chunk).
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn's future holds its arguments twice"
    )]
    pub(crate) fn session_update_hook(
        &self,
        n: SessionNotification,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        async move {
            self.subscribers.deliver(&n).await;
            self.client.session_update(n).await
        }
    }
}
