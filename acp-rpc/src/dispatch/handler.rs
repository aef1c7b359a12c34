//! The user side of incoming traffic: the [`Handler`] trait and the contexts it receives.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use async_trait::async_trait;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::dispatch::value::ParamsValue;
use crate::error::Error;
use crate::message::RequestId;
use crate::params::Params;
use crate::write::outgoing::Peer;
use crate::write::state::{Shared, Slot, lock};

/// Serves incoming requests and notifications.
///
/// Requests run concurrently (each on its own task, at most
/// [`crate::Config::max_concurrent_handlers`] at once); a request handler may freely await
/// its own requests to the peer. Notifications run one at a time in arrival order; a
/// notification handler must **not** await a request to the peer (the response would be
/// queued behind the very notification being handled: spawn a task instead).
///
/// Both methods default to "method not found" (`-32601`; for notifications that means
/// "logged and ignored").
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Handles a request; the result is sent as the response. Dropped (and answered with
    /// `-32800`) if the peer cancels it; a panic is answered with `-32603`.
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let _ = (cx, params);
        Err(Error::method_not_found(method))
    }

    /// [`Handler::handle_request`] for a handler that can hand over its result unserialized
    /// (see [`Reply`]): the connection calls this one, and by default it calls
    /// `handle_request`. Override it (and implement `handle_request` with
    /// [`Reply::into_raw`]) when results can be large: a [`Reply::new`] value is
    /// serialized straight into the writer's buffer, so a 1 MiB result costs no MiB-sized
    /// buffer of its own.
    async fn handle_request_reply(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Reply, Error> {
        self.handle_request(cx, method, params)
            .await
            .map(Reply::from)
    }

    /// Handles a notification. An error is only logged.
    async fn handle_notification(
        &self,
        cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let _ = (cx, params);
        Err(Error::method_not_found(method))
    }

    /// Whether a request of `method` is handed to [`Handler::handle_request`] only after
    /// every notification the peer sent before it has been handled (see `concepts`,
    /// *Ordering*). Requests otherwise run as soon as they are read, concurrently with the
    /// notification worker, so a request's handler could see the world before the
    /// notifications sent ahead of it: ACP's `session/request_permission` about a tool call
    /// announced by the `session/update` just before it, say. The wait has no timeout and
    /// counts no lines: it ends when the notification worker has handled them (or the
    /// request is cancelled). A slow notification handler delays such requests too. The
    /// default is `false` (the engine knows no methods); acp-client answers `true` for
    /// every request an agent sends.
    fn waits_for_earlier_notifications(&self, method: &str) -> bool {
        let _ = method;
        false
    }

    /// Sees every incoming request and notification in the order they were read, on the
    /// reader, before any of them is dispatched: requests run concurrently and
    /// notifications on their own worker, so this is the one place where their arrival
    /// order is known. A handler that must relate a notification to requests read before
    /// it (ACP's `session/cancel` stops the prompt read *before* it, not one read after)
    /// records what it needs here. It runs on the reader: keep it quick, never block.
    /// `$/cancel_request`, duplicate request ids and lines that are not messages are not
    /// offered. The default does nothing.
    fn arrived(&self, arrival: Arrival<'_>) {
        let _ = arrival;
    }

    /// Decodes a notification's params in the reader, while they still lie in the line,
    /// and starts its handler: for handlers that receive many notifications of one kind (a
    /// client's `session/update` stream). The line is then read once, by your typed
    /// parser, instead of once by the envelope parser and again by yours; the params are
    /// never copied out as raw JSON, and the handler owns the decoded value inside its own
    /// future (no box for the value, no second box for the future). The returned handler
    /// runs in arrival order with every other notification. Return `None` (the default)
    /// to receive the notification in [`Handler::handle_notification`] as usual.
    ///
    /// It is offered only lines of the usual shape
    /// `{"jsonrpc":"2.0","method":"<method>","params":<params>}` (how this crate and the
    /// official SDKs write notifications); `params` is the text after `"params":` up to the
    /// line's closing brace and **has not been validated**. Parse all of it
    /// ([`serde_json::from_str`] does, and rejects trailing text) and return `None` on any
    /// failure: the line then takes the ordinary path, which answers malformed JSON with
    /// `-32700` and gives a well-formed notification to `handle_notification`, where a
    /// params error is reported as usual. `$/cancel_request` is never offered. A panic here
    /// is caught, and the line takes the ordinary path too.
    fn start_notification(
        self: Arc<Self>,
        cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        let _ = (cx, method, params);
        None
    }

    /// Starts a notification's handler from its params as a value: what the engine at the
    /// other end of a [`memory_pair`](crate::transport::memory_pair) was given by
    /// [`Peer::notify_value`](crate::Peer::notify_value). Take the value with
    /// [`ParamsValue::downcast`] when it is of the type your handler decodes, and the
    /// notification is then neither written as JSON nor parsed. Return it (`Err`, the
    /// default) to have its text handled as usual, by [`Handler::start_notification`] or
    /// [`Handler::handle_notification`]. The handler runs in arrival order as any other.
    ///
    /// Only the engines' fast path offers values: never `$/cancel_request`, and never when
    /// an observer watches the connection or its `acp_rpc::flow` logs are on (both see the
    /// text). [`Handler::arrived`] sees such a notification with no params text. A panic here
    /// is caught and logged, and the notification is dropped.
    fn start_notification_value(
        self: Arc<Self>,
        cx: NotificationContext,
        method: &str,
        params: ParamsValue,
    ) -> Result<StartedNotification, ParamsValue> {
        let _ = (cx, method);
        Err(params)
    }
}

/// A notification's handler as [`Handler::start_notification`] returns it: the method's
/// name (for logs) and the future that handles it, owning everything it needs. Nothing
/// runs until the connection polls it, in the notification's turn.
pub struct StartedNotification {
    pub(crate) method: &'static str,
    pub(crate) future: Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>,
}

impl StartedNotification {
    /// The handler of a notification of `method` (a `'static` name, so passing it on costs
    /// no allocation). An `Err` it returns is only logged, as from
    /// [`Handler::handle_notification`].
    pub fn new(
        method: &'static str,
        future: impl Future<Output = Result<(), Error>> + Send + 'static,
    ) -> Self {
        StartedNotification {
            method,
            future: Box::pin(future),
        }
    }

    /// The method's name.
    pub fn method(&self) -> &'static str {
        self.method
    }
}

impl std::fmt::Debug for StartedNotification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedNotification")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// An incoming request or notification as [`Handler::arrived`] sees it.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Arrival<'a> {
    /// Its place in the arrival order, counting requests and notifications from 0.
    pub seq: u64,
    /// The method.
    pub method: &'a str,
    /// The id of a request; `None` for a notification.
    pub id: Option<&'a RequestId>,
    /// The raw params text (`None` when absent or `null`, and for a notification handed over
    /// as a value: see [`Handler::start_notification_value`]). For a notification of the
    /// usual shape (see [`Handler::start_notification`]) it has not been validated yet.
    pub params: Option<&'a str>,
}

pub use crate::write::reply::Reply;

/// A handler that serves nothing: every request gets `-32601`.
#[async_trait]
impl Handler for () {}

/// What a request handler knows about its request.
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) id: RequestId,
    pub(crate) peer: Peer,
    pub(crate) cancel: CancellationToken,
    pub(crate) shared: Arc<Shared>,
    /// How many notifications had arrived when this request did.
    pub(crate) notifications_before: u64,
    /// The request's slot, where waits for its answer's write are registered.
    pub(crate) slot: Arc<Slot>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("notifications_before", &self.notifications_before)
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    /// The request's id, as received.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// A handle to send requests and notifications to the peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Resolves when the request is cancelled (by the peer or by the connection ending).
    /// The handler's future is dropped at that point anyway; this is for work handed to
    /// other tasks.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Whether the request has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The cancellation token, to hand to spawned work.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Resolves once every notification the peer sent before this request has been
    /// handled (or the request is cancelled).
    ///
    /// Requests run concurrently, while notifications are handled one by one in arrival
    /// order, so a request handler may start before the handler of a notification sent just
    /// ahead of it has finished. A handler that depends on what earlier notifications did
    /// (a proxy that must forward a `tool_call` before the permission request about it, say)
    /// awaits this first.
    pub async fn notifications_handled(&self) {
        self.shared
            .notifications_handled(self.notifications_before, &self.cancel)
            .await;
    }

    /// Resolves once this request's response has been written to the transport and
    /// flushed: what a handler needs when something it sends later must not reach the peer
    /// before the response (ACP's `session/new` answer names a session, and the session's
    /// first updates must follow it). Ask for it while the handler runs, and await it after
    /// the handler returned (in a spawned task: the response is written only once the
    /// handler is done). Anything sent once it has resolved goes after the response on the
    /// wire (the writer keeps one order; see `concepts`).
    ///
    /// Fails with `-32099` when the connection ends before the response is written (the
    /// request was cancelled by a closing connection), and with `-32603` when asked for
    /// after the handler has returned.
    pub fn response_written(&self) -> ResponseWritten {
        let (tx, rx) = oneshot::channel();
        let registered = match lock(&self.slot.written).as_mut() {
            Some(waits) => {
                waits.push(tx);
                true
            }
            None => false,
        };
        ResponseWritten {
            rx: registered.then_some(rx),
            shared: self.shared.clone(),
        }
    }
}

/// The future of [`RequestContext::response_written`].
#[must_use = "a future does nothing unless awaited"]
pub struct ResponseWritten {
    rx: Option<oneshot::Receiver<()>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ResponseWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseWritten").finish_non_exhaustive()
    }
}

impl Future for ResponseWritten {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let Some(rx) = self.rx.as_mut() else {
            return Poll::Ready(Err(Error::internal_error(
                "response_written was asked for after the request's handler returned",
            )));
        };
        match std::task::ready!(Pin::new(rx).poll(cx)) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(_) => Poll::Ready(Err(self.shared.closed_error())),
        }
    }
}

/// What a notification handler receives.
#[derive(Clone, Debug)]
pub struct NotificationContext {
    pub(crate) peer: Peer,
}

impl NotificationContext {
    /// A handle to the peer (do not await requests from a notification handler: spawn).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }
}
