//! The reader: reads and frames lines, parses each once, delivers responses to their
//! callers and hands requests and notifications to dispatch, in arrival order.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Waker};

use bytes::{Buf, BytesMut};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::codec::{LineCodec, RawFrame};
use crate::dispatch::{
    NotificationRun, Ordered, RequestTask, notification_done, notification_worker,
};
use crate::envelope::{plain_notification, plain_response};
use crate::error::{CloseReason, Error, panic_message};
use crate::handler::{Arrival, Handler, NotificationContext, StartedNotification};
use crate::message::{
    BorrowedResponse, Message, Notification, Parsed, Request, RequestId, message_over,
    message_text, parse_line, write_response,
};
use crate::observe::{MessageEvent, MessageKind};
use crate::outgoing::{CANCEL_METHOD, CancelParams, Peer};
use crate::state::{ClosedWatch, InFlightRequest, Pending, Shared, lock};
use crate::tap::{Direction, TapEvent};
use crate::transport::Item;

pub(crate) mod batch;

const READ_CHUNK: usize = 64 * 1024;
/// A read buffer grown past this (by a large line) is replaced by a small one once the
/// line is gone.
const KEEP_CAPACITY: usize = 4 * 1024 * 1024;

struct Reader {
    shared: Arc<Shared>,
    handler: Arc<dyn Handler>,
    peer: Peer,
    ordered: mpsc::Sender<Ordered>,
    /// Notifications handed to the worker so far.
    notifications_received: u64,
    /// Requests and notifications offered to [`Handler::arrived`] so far.
    arrivals: u64,
    slots: Arc<Semaphore>,
    /// Admission: one permit per request read and not yet answered (see
    /// [`Config::max_unanswered_requests`](crate::Config::max_unanswered_requests)).
    admission: Arc<Semaphore>,
    /// With [`Config::sequential_requests`](crate::Config::sequential_requests): resolves
    /// when the handler of the last request received has returned.
    last_request_done: Option<oneshot::Receiver<()>>,
    /// The batch whose elements are being read: answers go into it (see [`batch`]).
    batch: Option<Arc<batch::Batch>>,
}

impl Reader {
    /// The reader's state, with the notification worker started.
    fn start(shared: Arc<Shared>, handler: Arc<dyn Handler>, peer: Peer) -> Reader {
        let (ordered, ordered_rx) = mpsc::channel(shared.config.ordered_queue);
        tokio::spawn(notification_worker(ordered_rx, shared.clone()));
        Reader {
            slots: Arc::new(Semaphore::new(shared.config.max_concurrent_handlers)),
            admission: Arc::new(Semaphore::new(shared.config.max_unanswered_requests)),
            shared,
            handler,
            peer,
            ordered,
            notifications_received: 0,
            arrivals: 0,
            last_request_done: None,
            batch: None,
        }
    }
}

/// Reads whole messages off a frame transport until its end or shutdown, then shuts the
/// connection down. A frame is handled as a line is (see [`read_loop`]), less the framing:
/// one over [`Config::max_message_size`](crate::Config::max_message_size) is skipped and
/// answered as an over-long line is. A message value is dispatched as it is, its envelope
/// not parsed again (see [`Reader::on_message`]).
pub(crate) async fn read_frames(
    mut incoming: mpsc::Receiver<Item>,
    shared: Arc<Shared>,
    handler: Arc<dyn Handler>,
    peer: Peer,
) {
    let mut state = Reader::start(shared, handler, peer);
    let max = state.shared.config.max_message_size;
    let shutdown = ClosedWatch::new(&state.shared);
    tokio::pin!(shutdown);
    let reason = loop {
        let frame = tokio::select! {
            biased;
            _ = &mut shutdown => break None,
            frame = incoming.recv() => frame,
        };
        let Some(frame) = frame else {
            break Some(CloseReason::Eof);
        };
        let more = !incoming.is_empty();
        state.shared.more_input_ready.store(more, Ordering::Relaxed);
        match frame {
            Item::Text(frame) if frame.len() > max => {
                let len = frame.len();
                state.on_frame(RawFrame::Oversized { len }).await;
            }
            Item::Text(frame) => state.on_line(&frame).await,
            Item::Message { message, .. } => state.on_message(message).await,
        }
    };
    if let Some(reason) = reason {
        tracing::debug!(%reason, "reader finished");
        state.close_after_notifications(reason).await;
    }
}

/// Reads frames until EOF, an error or shutdown, then shuts the connection down.
pub(crate) async fn read_loop<R>(
    mut reader: R,
    shared: Arc<Shared>,
    handler: Arc<dyn Handler>,
    peer: Peer,
) where
    R: AsyncRead + Unpin,
{
    let mut codec = LineCodec::new(shared.config.max_message_size);
    let mut state = Reader::start(shared, handler, peer);
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    // One wait on the shutdown token for the reader's whole life (a new one per read would
    // register and unregister a waiter on every line).
    let shutdown = ClosedWatch::new(&state.shared);
    tokio::pin!(shutdown);
    let reason = loop {
        loop {
            // An ordinary line is read where it lies, and then dropped from the buffer.
            if let Some(len) = codec.plain_line_len(&buf) {
                let more = memchr::memchr(b'\n', &buf[len + 1..]).is_some();
                state.shared.more_input_ready.store(more, Ordering::Relaxed);
                state.on_line(&buf[..len]).await;
                buf.advance(len + 1);
                continue;
            }
            match codec.next_raw(&mut buf) {
                Some(frame) => {
                    let more = memchr::memchr(b'\n', &buf).is_some();
                    state.shared.more_input_ready.store(more, Ordering::Relaxed);
                    state.on_frame(frame).await;
                }
                None => {
                    state
                        .shared
                        .more_input_ready
                        .store(false, Ordering::Relaxed);
                    break;
                }
            }
        }
        if buf.capacity() > KEEP_CAPACITY && buf.len() <= READ_CHUNK {
            // A large line (or the part of an oversized one held until it proved too long)
            // is gone: give its memory back instead of keeping it for the connection's life.
            let mut smaller = BytesMut::with_capacity(READ_CHUNK);
            smaller.extend_from_slice(&buf);
            buf = smaller;
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        let read = tokio::select! {
            biased;
            _ = &mut shutdown => break None,
            r = reader.read_buf(&mut buf) => r,
        };
        match read {
            Ok(0) => {
                while let Some(frame) = codec.next_raw_eof(&mut buf) {
                    state.on_frame(frame).await;
                }
                break Some(CloseReason::Eof);
            }
            Ok(_) => {}
            Err(e) => break Some(CloseReason::ReadError(e.to_string())),
        }
    };
    if let Some(reason) = reason {
        tracing::debug!(%reason, "reader finished");
        state.close_after_notifications(reason).await;
    }
}

/// How long the end of the connection waits for queued notifications to be handled before
/// pending calls fail regardless.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Reader {
    /// Offers a request or notification to [`Handler::arrived`], in read order (a panic
    /// there is caught: the reader must survive it).
    fn arrived(&mut self, method: &str, id: Option<&RequestId>, params: Option<&str>) {
        if tracing::enabled!(target: crate::flow::TARGET, tracing::Level::DEBUG) {
            tracing::debug!(
                target: crate::flow::TARGET,
                direction = "incoming",
                method,
                message_id = id.map(tracing::field::display),
                session_id = params.and_then(crate::flow::session_id),
                "received"
            );
        }
        let arrival = Arrival {
            seq: self.arrivals,
            method,
            id,
            params,
        };
        self.arrivals += 1;
        let handler = &self.handler;
        if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| handler.arrived(arrival)))
        {
            tracing::error!(method, panic = %panic_message(&panic), "arrival hook panicked");
        }
    }

    /// Tells the observer, if any, about a message read (`text`: where its session id is).
    fn observe(
        &self,
        kind: MessageKind,
        method: Option<&str>,
        id: Option<&RequestId>,
        size: usize,
        text: &[u8],
    ) {
        if let Some(observer) = &self.shared.config.observer {
            let event = MessageEvent::new(Direction::Incoming, kind, method, id, size, text);
            crate::observe::message(&**observer, &event);
        }
    }

    fn tap(&self, event: TapEvent<'_>) {
        if let Some(tap) = &self.shared.config.tap {
            tap(event);
        }
    }

    async fn reply(&self, id: Option<&RequestId>, result: Result<Box<RawValue>, Error>) {
        let mut buf = Vec::with_capacity(128);
        write_response(&mut buf, &self.shared.config.framing, id, &result);
        if let Some(batch) = &self.batch {
            return batch.add(&buf);
        }
        crate::observe::sent(&self.shared.config, MessageKind::Response, None, id, &buf);
        let _ = self.shared.send(buf).await;
    }

    async fn skip_invalid_utf8(&self) {
        self.tap(TapEvent::Line(Direction::Incoming, b"<invalid UTF-8>"));
        tracing::warn!("skipped a line that is not UTF-8");
        self.reply(None, Err(Error::parse_error("line is not valid UTF-8")))
            .await
    }

    async fn on_frame(&mut self, frame: RawFrame) {
        match frame {
            RawFrame::Line(line) => self.on_line(&line).await,
            RawFrame::Oversized { len } => {
                self.tap(TapEvent::OversizedLine { len });
                self.observe(MessageKind::Invalid, None, None, len, b"");
                tracing::warn!(len, "skipped an oversized line");
                let max = self.shared.config.max_message_size;
                let error = Error::invalid_request(format!(
                    "message of {len} bytes exceeds the maximum of {max} bytes"
                ));
                self.reply(None, Err(error)).await
            }
        }
    }

    /// One line (line end, BOM and blank lines already dealt with), not yet known to be
    /// text.
    async fn on_line(&mut self, line: &[u8]) {
        // The one check that the line is text: everything below reads it as `str`.
        let Ok(line) = std::str::from_utf8(line) else {
            self.observe(MessageKind::Invalid, None, None, line.len(), b"");
            return self.skip_invalid_utf8().await;
        };
        self.tap(TapEvent::Line(Direction::Incoming, line.as_bytes()));
        if self.deliver_plain_response(line) {
            return;
        }
        if let Some((started, method, params)) = self.start_notification(line) {
            let size = line.len();
            self.observe(
                MessageKind::Notification,
                Some(method),
                None,
                size,
                params.as_bytes(),
            );
            self.arrived(method, None, Some(params));
            #[cfg(feature = "otel")]
            let run = match crate::otel::incoming_notification_in_turn(
                &self.shared.trace,
                method,
                Some(params),
            ) {
                Some(turn) => NotificationRun::started_in(started, turn),
                None => {
                    let span = NotificationRun::span(started.method);
                    crate::otel::incoming_notification(&span, Some(params));
                    NotificationRun::started_in(started, span)
                }
            };
            #[cfg(not(feature = "otel"))]
            let run = NotificationRun::started(started);
            return self.enqueue_notification(run).await;
        }
        if let Some(max) = self.shared.config.framing.batches
            && batch::is_batch(line)
        {
            return self.on_batch(line, max).await;
        }
        self.on_parsed_line(line).await
    }

    /// One message, parsed the ordinary way: a line, or an element of a batch.
    async fn on_parsed_line(&mut self, line: &str) {
        match parse_line(line, &self.shared.config.framing) {
            Ok(Parsed::Request(req)) => {
                let (kind, size) = (MessageKind::Request, line.len());
                self.observe(
                    kind,
                    Some(&req.method),
                    Some(&req.id),
                    size,
                    line.as_bytes(),
                );
                self.on_request(req).await
            }
            Ok(Parsed::Notification(n)) => {
                let (kind, size) = (MessageKind::Notification, line.len());
                self.observe(kind, Some(&n.method), None, size, line.as_bytes());
                self.on_notification(n).await
            }
            Ok(Parsed::Response(resp)) => {
                let (kind, size) = (MessageKind::Response, line.len());
                self.observe(kind, None, resp.id.as_ref(), size, line.as_bytes());
                self.on_response(resp).await
            }
            Err(failure) => {
                self.observe(
                    MessageKind::Invalid,
                    None,
                    None,
                    line.len(),
                    line.as_bytes(),
                );
                tracing::warn!(error = %failure.error, "bad message");
                let waited_for = match &failure.response_id {
                    Some(RequestId::Int(id)) => lock(&self.shared.pending).map.contains_key(id),
                    _ => false,
                };
                if let Some(RequestId::Int(id)) = failure.response_id {
                    let result = Err(failure.error.clone());
                    self.on_response(BorrowedResponse {
                        id: Some(RequestId::Int(id)),
                        result,
                    })
                    .await;
                }
                if failure.is_response && !waited_for {
                    return; // nobody waits for it: answering could start a reply loop
                }
                self.reply(failure.request_id.as_ref(), Err(failure.error))
                    .await;
            }
        }
    }

    /// One message handed over as a value (by the engine at the other end of a memory
    /// pair): dispatched as a parsed line is, with no text read. Its text is written only
    /// for the limit check near the limit, and for a tap or an observer when one is set.
    async fn on_message(&mut self, message: Message) {
        let config = &self.shared.config;
        if let Some(len) = message_over(&config.framing, &message, config.max_message_size) {
            return self.on_frame(RawFrame::Oversized { len }).await;
        }
        let text = (config.tap.is_some() || config.observer.is_some())
            .then(|| message_text(&config.framing, &message));
        let text = text.as_deref().unwrap_or_default();
        self.tap(TapEvent::Line(Direction::Incoming, text));
        match message {
            Message::Request(req) => {
                let (method, id) = (Some(req.method.as_str()), Some(&req.id));
                self.observe(MessageKind::Request, method, id, text.len(), text);
                self.on_request(req).await
            }
            Message::Notification(n) => {
                let method = Some(n.method.as_str());
                self.observe(MessageKind::Notification, method, None, text.len(), text);
                let params = n.params.as_deref().map(RawValue::get);
                if let Some(params) = params
                    && let Some(started) = self.start_notification_of(&n.method, params)
                {
                    self.arrived(&n.method, None, Some(params));
                    #[cfg(feature = "otel")]
                    let run = match crate::otel::incoming_notification_in_turn(
                        &self.shared.trace,
                        &n.method,
                        Some(params),
                    ) {
                        Some(turn) => NotificationRun::started_in(started, turn),
                        None => {
                            let span = NotificationRun::span(started.method);
                            crate::otel::incoming_notification(&span, Some(params));
                            NotificationRun::started_in(started, span)
                        }
                    };
                    #[cfg(not(feature = "otel"))]
                    let run = NotificationRun::started(started);
                    return self.enqueue_notification(run).await;
                }
                self.on_notification(n).await
            }
            Message::Response(resp) => {
                let id = resp.id.as_ref();
                self.observe(MessageKind::Response, None, id, text.len(), text);
                let held;
                let result = match resp.result {
                    Ok(raw) => {
                        held = raw;
                        Ok(&*held)
                    }
                    Err(e) => Err(e),
                };
                let id = resp.id;
                self.on_response(BorrowedResponse { id, result }).await
            }
        }
    }

    /// A response of the usual shape, decoded by its caller straight from the line (one pass
    /// over a possibly large result instead of the envelope's and then the caller's).
    /// `false` leaves the line to the ordinary path: another shape, notifications still
    /// queued before it (the ordering guarantee), no caller waiting, or a result that does
    /// not decode (the ordinary path validates it and delivers the error).
    fn deliver_plain_response(&mut self, line: &str) -> bool {
        let Some((id, result)) = plain_response(line) else {
            return false;
        };
        if !self.worker_idle() {
            return false;
        }
        // Bound first: the lock guard of a match scrutinee lives to the end of the match.
        let removed = lock(&self.shared.pending).map.remove(&id);
        let mut waiter = match removed {
            Some(Pending::Waiter(waiter)) => waiter,
            Some(other) => {
                lock(&self.shared.pending).map.insert(id, other);
                return false;
            }
            None => return false,
        };
        if waiter.try_unvalidated(result) {
            self.observe_plain_response(id, line);
            return true;
        }
        let mut pending = lock(&self.shared.pending);
        if pending.closed.is_some() {
            // Shut down meanwhile: the map was drained without this caller.
            drop(pending);
            waiter.deliver(Err(self.shared.closed_error()));
            self.observe_plain_response(id, line);
            return true;
        }
        pending.map.insert(id, Pending::Waiter(waiter));
        false
    }

    fn observe_plain_response(&self, id: i64, line: &str) {
        if self.shared.config.observer.is_some() {
            let id = RequestId::Int(id);
            let size = line.len();
            self.observe(
                MessageKind::Response,
                None,
                Some(&id),
                size,
                line.as_bytes(),
            );
        }
    }

    /// Shuts the connection down for `reason` once the notifications already read have been
    /// handled (the ordering guarantee holds to the end: an update read before the peer went
    /// away reaches the application before the calls fail). A notification handler that does
    /// not finish within [`CLOSE_GRACE`] does not hold the calls: they fail then anyway.
    async fn close_after_notifications(&mut self, reason: CloseReason) {
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
    fn worker_idle(&self) -> bool {
        self.shared.notifications_done.load(Ordering::Acquire) == self.notifications_received
    }

    /// A notification of the usual shape whose handler the handler decodes and starts
    /// straight from the line (see [`Handler::start_notification`]); `None` sends the line
    /// down the ordinary path, and so does a decoder that panics (the reader must survive
    /// it).
    fn start_notification<'l>(
        &self,
        line: &'l str,
    ) -> Option<(StartedNotification, &'l str, &'l str)> {
        let (method, params) = plain_notification(line)?;
        let started = self.start_notification_of(method, params)?;
        Some((started, method, params))
    }

    /// [`Reader::start_notification`] of a notification's method and params text.
    fn start_notification_of(&self, method: &str, params: &str) -> Option<StartedNotification> {
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

    /// Hands a notification to its handler, in arrival order. When every notification read
    /// before it has been handled, its handler starts here, in the reader: one that finishes
    /// without waiting (most do) costs no hop through the worker's queue and no wake-up.
    /// One that waits goes on in the worker, which runs it to its end before anything
    /// queued after it.
    async fn enqueue_notification(&mut self, mut run: NotificationRun) {
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

    async fn on_response(&mut self, resp: BorrowedResponse<'_>) {
        let id = match resp.id {
            Some(RequestId::Int(id)) => id,
            Some(RequestId::Str(s)) => {
                tracing::warn!(id = %s, "response with a string id (ours are integers): ignored");
                return;
            }
            None => {
                match &resp.result {
                    Err(e) => tracing::warn!(error = %e, "peer reported an error with id null"),
                    Ok(_) => tracing::warn!("response with id null: ignored"),
                }
                return;
            }
        };
        let pending = lock(&self.shared.pending).map.remove(&id);
        let deliver = match pending {
            Some(Pending::Waiter(deliver)) => deliver,
            Some(Pending::Discard(_slot)) => return,
            None => {
                tracing::warn!(id, "response for an unknown id: ignored");
                return;
            }
        };
        if self.worker_idle() {
            deliver.deliver(resp.result);
        } else {
            let result = resp.result.map(RawValue::to_owned);
            if let Err(mpsc::error::SendError(Ordered::Response(deliver, _))) =
                self.ordered.send(Ordered::Response(deliver, result)).await
            {
                deliver.deliver(Err(self.shared.closed_error()));
            }
        }
    }

    async fn on_notification(&mut self, n: Notification) {
        if n.method == CANCEL_METHOD {
            let text = n.params.as_deref().map_or("null", RawValue::get);
            match serde_json::from_str::<CancelParams>(text) {
                Ok(p) => self.withdraw(&p.request_id).await,
                Err(e) => tracing::warn!("malformed {CANCEL_METHOD}: {e}"),
            }
            return;
        }
        let params = n.params.as_deref().map(RawValue::get);
        self.arrived(&n.method, None, params);
        #[cfg(feature = "otel")]
        let run =
            match crate::otel::incoming_notification_in_turn(&self.shared.trace, &n.method, params)
            {
                Some(turn) => NotificationRun::raw_in(n, &self.handler, &self.peer, turn),
                None => {
                    let span = NotificationRun::span(&n.method);
                    crate::otel::incoming_notification(&span, params);
                    NotificationRun::raw_in(n, &self.handler, &self.peer, span)
                }
            };
        #[cfg(not(feature = "otel"))]
        let run = NotificationRun::raw(n, &self.handler, &self.peer);
        self.enqueue_notification(run).await;
    }

    /// The peer's `$/cancel_request`: cancels the request's handler and waits until its
    /// answer (`-32800`, or the result it had already reached) is queued, before reading
    /// on. So a withdrawn request is answered ahead of anything read after the withdrawal:
    /// a peer that cancels, sends one more request and hangs up once that is answered
    /// still gets its `-32800` (the next request's first steps run here in the reader and
    /// would otherwise answer first).
    async fn withdraw(&mut self, id: &RequestId) {
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

    async fn on_request(&mut self, req: Request) {
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
        let params = req.params.as_deref().map(RawValue::get);
        self.arrived(&req.method, Some(&req.id), params);
        let span = tracing::info_span!(
            target: crate::flow::TARGET,
            "request",
            direction = "incoming",
            method = req.method.as_str(),
            message_id = %req.id,
            session_id = tracing::field::Empty,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
        );
        #[cfg(feature = "otel")]
        let turn = crate::otel::incoming_request(&self.shared.trace, &span, &req.method, params);
        if !span.is_disabled()
            && let Some(session) = params.and_then(crate::flow::session_id)
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
            batch: self.batch.as_ref().map(batch::Batch::member),
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
        let run = crate::otel::in_turn(turn, task.run(req));
        #[cfg(not(feature = "otel"))]
        let run = task.run(req);
        let mut task = Box::pin(run.instrument(span));
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
