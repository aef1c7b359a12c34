//! The read stage, the first of the pipeline (read, dispatch, write, over a
//! [transport](crate::transport), told to the [observer](crate::observe)): bytes or frames
//! in, whole messages out.
//!
//! - [`codec`](crate::codec): the line framer, the one of the tree ([`LineCodec`]);
//! - [`sniff`](crate::sniff): lines read off a stream before a connection starts on it;
//! - the reader (this module): reads and frames lines, parses each once, delivers responses
//!   to their callers (`answers`) and hands requests (`requests`), notifications
//!   (`notifications`) and batches (`batch`) to [dispatch](crate::Handler), in arrival
//!   order.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{Buf, BytesMut};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::dispatch::handler::{Arrival, Handler};
use crate::dispatch::{NotificationRun, Ordered, notification_worker};
use crate::error::{CloseReason, Error, panic_message};
use crate::message::{
    BorrowedResponse, Message, Parsed, RequestId, message_over, message_text, parse_line,
    write_response,
};
use crate::observe::tap::{Direction, TapEvent};
use crate::observe::{MessageEvent, MessageKind};
use crate::read::codec::{LineCodec, RawFrame};
use crate::transport::{FramesIn, Item};
use crate::write::outgoing::Peer;
use crate::write::state::{ClosedWatch, Shared, lock};

mod answers;
mod batch;
pub mod codec;
mod notifications;
mod requests;
pub mod sniff;
mod trace_context;

use trace_context::Taken;

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
    /// The batch whose elements are being read: answers go into it (see [`crate::batch`]).
    batch: Option<Arc<crate::dispatch::batch::Batch>>,
    /// The turn the last incoming notification was in (feature `otel`).
    #[cfg(feature = "otel")]
    last_turn: crate::observe::otel::LastTurn,
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
            #[cfg(feature = "otel")]
            last_turn: Default::default(),
        }
    }
}

/// Reads whole messages off a frame transport until its end or shutdown, then shuts the
/// connection down. A frame is handled as a line is (see [`read_loop`]), less the framing:
/// one over [`Config::max_message_size`](crate::Config::max_message_size) is skipped and
/// answered as an over-long line is. A message value is dispatched as it is, its envelope
/// not parsed again (see [`Reader::on_message`]).
pub(crate) async fn read_frames(
    mut first: Option<Item>,
    mut incoming: FramesIn,
    shared: Arc<Shared>,
    handler: Arc<dyn Handler>,
    peer: Peer,
) {
    let mut state = Reader::start(shared, handler, peer);
    let max = state.shared.config.max_message_size;
    let shutdown = ClosedWatch::new(&state.shared);
    tokio::pin!(shutdown);
    let reason = loop {
        // A frame that is ready is taken as it is (a socket's source holds a read's worth of
        // them), as the line reader takes the lines of a buffer; only when none is ready does
        // the reader wait on the input and the connection's end together.
        let ready = match first.take() {
            Some(frame) => Some(Some(frame)),
            None if state.shared.is_closed() => break None,
            None => incoming.try_recv(),
        };
        let frame = match ready {
            Some(frame) => frame,
            None => tokio::select! {
                biased;
                _ = &mut shutdown => break None,
                frame = incoming.recv() => frame,
            },
        };
        let Some(frame) = frame else {
            break Some(CloseReason::Eof);
        };
        let more = incoming.has_more();
        state.shared.more_input_ready.store(more, Ordering::Relaxed);
        match frame {
            Item::Text(frame) if frame.len() > max => {
                let len = frame.len();
                state.on_frame(RawFrame::Oversized { len }).await;
            }
            Item::Text(frame) if !state.takes_trace_context() => state.on_line(&frame, None).await,
            Item::Text(frame) => match state.editable_frame(frame) {
                Ok(mut line) => {
                    let taken = state.take_from_line(&mut line);
                    state.on_line(&line, taken).await
                }
                Err(shared) => state.on_line(&shared, None).await,
            },
            Item::Message { message, .. } => state.on_message(*message).await,
            Item::Value { method, params, .. } => state.on_value(method, params).await,
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
                let taken = state.take_from_line(&mut buf[..len]);
                state.on_line(&buf[..len], taken).await;
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
        if tracing::enabled!(target: crate::observe::flow::TARGET, tracing::Level::DEBUG) {
            tracing::debug!(
                target: crate::observe::flow::TARGET,
                direction = "incoming",
                method,
                message_id = id.map(tracing::field::display),
                session_id = params.and_then(crate::observe::flow::session_id),
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

    /// Tells the observer, if any, about a raw line read.
    fn line(&self, event: TapEvent<'_>) {
        crate::observe::line(self.shared.config.observer.as_ref(), event);
    }

    async fn reply(&self, id: Option<&RequestId>, result: Result<Box<RawValue>, Error>) {
        let mut buf = Vec::with_capacity(128);
        write_response(&mut buf, &self.shared.config.framing, id, &result);
        if let Some(batch) = &self.batch {
            return batch.add(&buf);
        }
        crate::observe::sent(
            self.shared.config.observer.as_ref(),
            MessageKind::Response,
            None,
            id,
            &buf,
        );
        let _ = self.shared.send(buf).await;
    }

    async fn skip_invalid_utf8(&self) {
        self.line(TapEvent::Line(Direction::Incoming, b"<invalid UTF-8>"));
        tracing::warn!("skipped a line that is not UTF-8");
        self.reply(None, Err(Error::parse_error("line is not valid UTF-8")))
            .await
    }

    async fn on_frame(&mut self, frame: RawFrame) {
        match frame {
            RawFrame::Line(mut line) => {
                let taken = self.take_from_line(&mut line);
                self.on_line(&line, taken).await
            }
            RawFrame::Oversized { len } => {
                self.line(TapEvent::OversizedLine { len });
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
    /// text; `taken`: the trace context taken off it (see `trace_context`).
    async fn on_line(&mut self, line: &[u8], taken: Taken) {
        // The one check that the line is text: everything below reads it as `str`.
        let Ok(line) = std::str::from_utf8(line) else {
            self.observe(MessageKind::Invalid, None, None, line.len(), b"");
            return self.skip_invalid_utf8().await;
        };
        if self.shared.config.observer.is_some() {
            let read = trace_context::as_read(line.as_bytes(), &taken);
            self.line(TapEvent::Line(Direction::Incoming, &read));
        }
        if self.deliver_plain_response(line) {
            return;
        }
        if let Some((started, method, params)) = self.start_notification(line, &taken) {
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
            let otel = crate::observe::otel::incoming_notification(
                &self.shared.trace,
                &mut self.last_turn,
                method,
                Some(params),
                taken.as_ref(),
            );
            let run = NotificationRun::started(started);
            #[cfg(feature = "otel")]
            let run = run.with_otel(otel);
            return self.enqueue_notification(run).await;
        }
        if let Some(max) = self.shared.config.framing.batches
            && crate::dispatch::batch::is_batch(line)
        {
            return self.on_batch(line, max).await;
        }
        self.on_parsed_line(line, taken).await
    }

    /// One message, parsed the ordinary way: a line, or an element of a batch.
    async fn on_parsed_line(&mut self, line: &str, taken: Taken) {
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
                self.on_request(req, taken).await
            }
            Ok(Parsed::Notification(n)) => {
                let (kind, size) = (MessageKind::Notification, line.len());
                self.observe(kind, Some(&n.method), None, size, line.as_bytes());
                self.on_notification(n, taken).await
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
    /// for the limit check near the limit, and for an observer when one is set.
    async fn on_message(&mut self, message: Message) {
        let config = &self.shared.config;
        if let Some(len) = message_over(&config.framing, &message, config.max_message_size) {
            return self.on_frame(RawFrame::Oversized { len }).await;
        }
        let text = config
            .observer
            .is_some()
            .then(|| message_text(&config.framing, &message));
        let text = text.as_deref().unwrap_or_default();
        self.line(TapEvent::Line(Direction::Incoming, text));
        match message {
            Message::Request(req) => {
                let (method, id) = (Some(req.method.as_str()), Some(&req.id));
                self.observe(MessageKind::Request, method, id, text.len(), text);
                self.on_request(req, None).await
            }
            Message::Notification(mut n) => {
                let taken = self.take_from_params(&mut n.params, None);
                let method = Some(n.method.as_str());
                self.observe(MessageKind::Notification, method, None, text.len(), text);
                let params = n.params.as_deref().map(RawValue::get);
                if let Some(params) = params
                    && let Some(started) = self.start_notification_of(&n.method, params)
                {
                    self.arrived(&n.method, None, Some(params));
                    #[cfg(feature = "otel")]
                    let otel = crate::observe::otel::incoming_notification(
                        &self.shared.trace,
                        &mut self.last_turn,
                        &n.method,
                        Some(params),
                        taken.as_ref(),
                    );
                    let run = NotificationRun::started(started);
                    #[cfg(feature = "otel")]
                    let run = run.with_otel(otel);
                    return self.enqueue_notification(run).await;
                }
                self.on_notification(n, taken).await
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
}
