//! Outgoing traffic: the [`Peer`] handle, per-connection ids, the pending map, timeouts and
//! cancel-on-drop.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::error::{CloseReason, Error, ErrorCode};
use crate::message::{Message, Request, RequestId, message_text, write_request};
use crate::observe::{self, MessageKind};
use crate::write::queued::Outgoing;
use crate::write::state::{CountedWait, Deliver, Pending, Shared, in_request_handler, lock};

mod call;
mod notify;
mod pending;
mod raw;
mod typed;

use call::{CallGuard, CallWaiter, CallWatch, SentCall, copy_raw, decode_value};
pub use pending::PendingResponse;

/// The method of the cancellation notification (params `{"requestId": <id>}`).
pub const CANCEL_METHOD: &str = "$/cancel_request";

/// The params of [`CANCEL_METHOD`]: which request to cancel.
#[derive(Serialize, Deserialize)]
pub(crate) struct CancelParams {
    #[serde(rename = "requestId")]
    pub(crate) request_id: RequestId,
}

/// Per-call options for [`Peer::request_with`].
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Timeout for this call; `None` uses [`crate::Config::default_timeout`].
    pub timeout: Option<Duration>,
    /// Whether dropping the call (or timing out) sends `$/cancel_request`; `None` uses
    /// [`crate::Config::cancel_on_drop`].
    pub cancel_on_drop: Option<bool>,
}

impl CallOptions {
    /// Sets the timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// Sets cancel-on-drop.
    #[must_use]
    pub fn cancel_on_drop(mut self, yes: bool) -> Self {
        self.cancel_on_drop = Some(yes);
        self
    }
}

/// The message-flow events of an outgoing message (see [`crate::flow`]): the request's span
/// learns its session id and starts at INFO; every message is `sent` at DEBUG.
fn log_sent(method: &str, id: Option<i64>, line: &[u8], request: bool) {
    use crate::observe::flow::{TARGET, session_id};
    let debug = tracing::enabled!(target: TARGET, tracing::Level::DEBUG);
    let span = tracing::Span::current();
    if !debug && (!request || span.is_disabled()) {
        return;
    }
    let session = std::str::from_utf8(line).ok().and_then(session_id);
    if request {
        if let Some(session) = session {
            span.record("session_id", session);
        }
        tracing::info!(target: TARGET, "request started");
    }
    tracing::debug!(
        target: TARGET,
        direction = "outgoing",
        method,
        message_id = id,
        session_id = session,
        "sent"
    );
}

/// Params as a message value carries them: raw JSON, `None` for `null` (as a parsed line
/// has them). A value that does not serialize fails as [`write_request`]'s does.
fn raw_params<P: Serialize + ?Sized>(params: &P) -> Result<Option<Box<RawValue>>, Error> {
    let raw = serde_json::value::to_raw_value(params)
        .map_err(|e| Error::invalid_params(format!("params failed to serialize: {e}")))?;
    Ok((raw.get() != "null").then_some(raw))
}

/// Tells the observer, if any, of a message sent as a value: its text is written for it.
fn sent_value(
    shared: &Shared,
    message: &Message,
    kind: MessageKind,
    method: Option<&str>,
    id: Option<i64>,
) {
    if shared.config.observer.is_some() {
        let text = message_text(&shared.config.framing, message);
        let id = id.map(RequestId::Int);
        observe::sent(
            shared.config.observer.as_ref(),
            kind,
            method,
            id.as_ref(),
            &text,
        );
    }
}

/// A cheap, cloneable handle for sending requests and notifications to the peer.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("closed", &self.shared.close_reason())
            .finish()
    }
}

impl Peer {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Peer { shared }
    }

    /// Sends a request and awaits its typed result.
    ///
    /// Dropping the returned future before it completes sends `$/cancel_request` (unless
    /// disabled). A result that does not deserialize into `R` is a `-32603` error whose
    /// `data` names the field.
    pub async fn request<P, R>(&self, method: &str, params: &P) -> Result<R, Error>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned + Send + 'static,
    {
        self.request_with(method, params, CallOptions::default())
            .await
    }

    /// [`Peer::request`] with per-call options.
    pub async fn request_with<P, R>(
        &self,
        method: &str,
        params: &P,
        options: CallOptions,
    ) -> Result<R, Error>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned + Send + 'static,
    {
        let decoded = self
            .request_decoded(method, params, options, decode_value::<R>)
            .await?;
        decoded.map_err(|mut e| {
            e.code = ErrorCode::INTERNAL_ERROR;
            e.message = format!("response to {method} did not deserialize: {}", e.message);
            e
        })
    }

    /// Sends a request and returns the raw result.
    pub async fn request_raw<P>(
        &self,
        method: &str,
        params: &P,
        options: CallOptions,
    ) -> Result<Box<RawValue>, Error>
    where
        P: Serialize + ?Sized,
    {
        let raw = self
            .request_decoded(method, params, options, copy_raw)
            .await?;
        // Only the unvalidated fast path can fail to copy; the ordinary path then validated it.
        raw.map_err(|e| Error::internal_error(format!("response to {method} is not JSON: {e}")))
    }

    /// Sends a request; `decode` reads the result where the reader received it (see
    /// [`Peer::send_call`]). The outer error is the call's, the inner one `decode`'s.
    pub(crate) async fn request_decoded<P, T, E>(
        &self,
        method: &str,
        params: &P,
        options: CallOptions,
        decode: fn(&str) -> Result<T, E>,
    ) -> Result<Result<T, E>, Error>
    where
        P: Serialize + ?Sized,
        T: Send + 'static,
        E: Send + 'static,
    {
        let mut watch = CallWatch::start(&self.shared, method);
        let span = watch.span.clone();
        let result = async {
            let sent = self
                .send_call(&mut watch, method, params, options, decode)
                .await?;
            sent.answer(method).await
        }
        .instrument(span)
        .await;
        watch.finish(&self.shared, method, &result);
        result
    }

    /// [`Peer::request_decoded`] in two steps: returns once the request is queued for the
    /// peer, with its answer still to be awaited ([`PendingResponse`]); `conclude` turns
    /// what `decode` read into the caller's result.
    pub(crate) async fn send_decoded<P, T, E, R>(
        &self,
        method: &'static str,
        params: &P,
        options: CallOptions,
        decode: fn(&str) -> Result<T, E>,
        conclude: fn(Result<T, E>) -> Result<R, Error>,
    ) -> Result<PendingResponse<R>, Error>
    where
        P: Serialize + ?Sized,
        T: Send + 'static,
        E: Send + 'static,
        R: Send + 'static,
    {
        let mut watch = CallWatch::start(&self.shared, method);
        let span = watch.span.clone();
        let sent = self
            .send_call(&mut watch, method, params, options, decode)
            .instrument(span.clone())
            .await;
        let sent = match sent {
            Ok(sent) => sent,
            Err(e) => {
                let failed = Err(e);
                watch.finish(&self.shared, method, &failed);
                return failed;
            }
        };
        let shared = self.shared.clone();
        Ok(PendingResponse::new(async move {
            let result = sent.answer(method).instrument(span).await;
            watch.finish(&shared, method, &result);
            result.and_then(conclude)
        }))
    }

    /// Sends the request and returns what waits for its response. The reader runs `decode`
    /// on the result while it is still in the reader's line buffer (a large result is not
    /// copied into an allocation of its own first) and sends what it returns to the
    /// [`SentCall`]; a panic in `decode` is caught there and resumed in the caller.
    async fn send_call<P, T, E>(
        &self,
        #[cfg_attr(not(feature = "otel"), allow(unused_variables))] watch: &mut CallWatch,
        method: &str,
        params: &P,
        options: CallOptions,
        decode: fn(&str) -> Result<T, E>,
    ) -> Result<SentCall<T, E>, Error>
    where
        P: Serialize + ?Sized,
        T: Send + 'static,
        E: Send + 'static,
    {
        let shared = &*self.shared;
        let id = watch.id;
        let msg = if shared.takes_values() {
            let request = Request {
                id: RequestId::Int(id),
                method: method.to_owned(),
                params: raw_params(params)?,
            };
            let params = request.params.as_deref().map_or("", RawValue::get);
            log_sent(method, Some(id), params.as_bytes(), true);
            let message = Message::Request(request);
            sent_value(
                shared,
                &message,
                MessageKind::Request,
                Some(method),
                Some(id),
            );
            Outgoing::Message(Box::new(message))
        } else {
            let mut buf = shared.request_size.buffer();
            write_request(&mut buf, &shared.config.framing, id, method, params)?;
            #[cfg(feature = "otel")]
            if let Some(otel) = watch.otel.as_mut() {
                crate::observe::otel::outgoing_request_line(&shared.trace, &mut buf, method, otel);
            }
            shared.request_size.record(buf.len());
            log_sent(method, Some(id), &buf, true);
            if shared.config.observer.is_some() {
                let id = RequestId::Int(id);
                observe::sent(
                    shared.config.observer.as_ref(),
                    MessageKind::Request,
                    Some(method),
                    Some(&id),
                    &buf,
                );
            }
            Outgoing::Frame(buf)
        };
        // At most `max_pending_requests` of ours await answers, so the peer never holds
        // more unanswered requests of ours than its admission cap and its reader keeps
        // reading. A call made by a request handler (an answer in the making) is exempt:
        // it is bounded by the peer's requests we admitted, and capping it could leave two
        // peers whose handlers call each other each waiting for the other's slots.
        let outgoing_slot = if in_request_handler() {
            None
        } else {
            Some(shared.outgoing_slot().await?)
        };
        let (tx, rx) = oneshot::channel();
        let deliver: Deliver = Box::new(CallWaiter {
            tx: Some(tx),
            decode,
        });
        let awaiting = self.register(id, Pending::Waiter(deliver))?;
        let cancel_on_drop = options
            .cancel_on_drop
            .unwrap_or(shared.config.cancel_on_drop);
        let mut guard = CallGuard {
            shared: self.shared.clone(),
            id,
            armed: true,
            sent: false,
            cancel_on_drop,
        };
        // A lone call is written straight through (its caller waits on nothing else); calls
        // made together are left to the writer task, which sends them in one write.
        if awaiting == 1 {
            shared.send_now(msg).await?;
        } else {
            shared.send(msg).await?;
        }
        guard.sent = true;
        // The timeout counts from here, however late the answer is awaited.
        let deadline = options
            .timeout
            .or(shared.config.default_timeout)
            .map(|after| (tokio::time::Instant::now() + after, after));
        Ok(SentCall {
            guard,
            rx,
            deadline,
            _outgoing_slot: outgoing_slot,
        })
    }

    /// Records what waits for the answer to request `id`; returns how many of our requests
    /// await answers now, this one included.
    fn register(&self, id: i64, pending: Pending) -> Result<usize, Error> {
        let mut map = lock(&self.shared.pending);
        if let Some(reason) = &map.closed {
            return Err(Error::connection_closed(reason));
        }
        map.map.insert(id, pending);
        Ok(map.map.len())
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        self.shared.closed().await
    }

    /// Resolves once the connection has ended *and* its output is done: what was queued
    /// for the peer is written (or given up after
    /// [`Config::shutdown_flush_timeout`](crate::Config::shutdown_flush_timeout)) and the
    /// transport is shut down. [`Peer::closed`] resolves as the connection starts to end,
    /// before the writer task has flushed; a process about to exit awaits this instead, so
    /// its last answers reach the peer rather than dying with the runtime.
    pub async fn finished(&self) -> CloseReason {
        self.shared.finished().await
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Ends the connection locally (see [`crate::Connection::close`]).
    pub fn close(&self) {
        self.shared.shutdown(CloseReason::Local);
    }

    /// Number of outgoing requests still awaiting a response.
    pub fn pending_requests(&self) -> usize {
        lock(&self.shared.pending).map.len()
    }

    /// Resolves once the handler of every request received from the peer so far has
    /// finished and its answer is queued for the peer (or the connection has ended), so a
    /// caller may close the connection then without losing an answer.
    ///
    /// The legacy dialects send as *requests* what v1 sends as notifications (message
    /// chunks, tool-call updates), and their agents may send them without waiting for the
    /// answers, right before answering the turn itself. A translating client awaits this
    /// after the turn's response arrives, so every chunk sent before that response has been
    /// passed on before the turn is reported over. Requests that arrive later are waited
    /// for too if they arrived before the call.
    pub async fn received_requests_handled(&self) {
        let target = self.shared.requests_received.load(Ordering::Acquire);
        let shared = &self.shared;
        let _waiting = CountedWait::new(&shared.answer_waiters);
        loop {
            let answered = shared.request_answered.notified();
            tokio::pin!(answered);
            answered.as_mut().enable();
            // An answer being queued may be one of the earlier requests' (no longer in
            // `in_flight`): waited for too. The count is raised under the lock that removed
            // the request, so each request is seen in one place or the other.
            let earlier_running = lock(&shared.in_flight).values().any(|r| r.seq < target)
                || shared.answers_being_queued.load(Ordering::SeqCst) > 0;
            if !earlier_running || shared.is_closed() {
                return;
            }
            tokio::select! {
                () = answered => {}
                () = shared.shutdown.cancelled() => return,
            }
        }
    }
}
