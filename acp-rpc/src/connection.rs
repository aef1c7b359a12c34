//! A connection: shared state, and the spawning of the reader and writer tasks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::error::{CloseReason, Error};
use crate::handler::Handler;
use crate::message::RequestId;
use crate::outgoing::Peer;
use crate::writer::Outgoing;

/// Hands the outcome of one of our requests to its caller. The reader calls it with the
/// result still in its line buffer, so the caller's type is read from the line directly,
/// without copying the result out first (see `Peer::call`).
pub(crate) trait Waiter: Send {
    /// Decodes a result whose text has not been validated (a response of the usual shape,
    /// see `message::plain_response`). `true`: it decoded, which proves the text one JSON
    /// value, and the caller has it. `false`: nothing was delivered; the line then takes the
    /// ordinary path, which validates it and calls [`Waiter::deliver`].
    fn try_unvalidated(&mut self, result: &str) -> bool;

    /// Hands the outcome to the caller.
    fn deliver(self: Box<Self>, result: Result<&RawValue, Error>);
}

/// A boxed [`Waiter`], as the pending map holds it.
pub(crate) type Deliver = Box<dyn Waiter>;

/// What waits for the response to one of our requests.
pub(crate) enum Pending {
    /// A caller awaiting the result.
    Waiter(Deliver),
    /// A fire-and-forget request (legacy dialect notification): the response is dropped,
    /// and with it the request's outgoing slot.
    Discard(OwnedSemaphorePermit),
}

#[derive(Default)]
pub(crate) struct PendingMap {
    pub(crate) closed: Option<CloseReason>,
    pub(crate) map: HashMap<i64, Pending>,
}

/// State shared by the reader, the writer, handlers and every [`Peer`].
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) out_tx: mpsc::Sender<Outgoing>,
    pub(crate) next_id: AtomicI64,
    pub(crate) pending: Mutex<PendingMap>,
    pub(crate) shutdown: CancellationToken,
    reason: OnceLock<CloseReason>,
    /// Notifications whose handlers have completed (written by the notification worker).
    pub(crate) notifications_done: AtomicU64,
    /// Woken each time `notifications_done` grows (see
    /// [`RequestContext::notifications_handled`](crate::RequestContext::notifications_handled)).
    pub(crate) notification_handled: tokio::sync::Notify,
    /// Incoming requests whose handlers have not answered yet, with the arrival number of
    /// each (for cancellation, duplicate detection and [`Peer::received_requests_answered`]).
    pub(crate) in_flight: Mutex<HashMap<RequestId, InFlightRequest>>,
    /// Callers waiting in [`Peer::received_requests_answered`]; request tasks wake them
    /// only when there are some.
    pub(crate) answer_waiters: AtomicUsize,
    /// Woken when a request handler finishes while `answer_waiters` is not zero.
    pub(crate) request_answered: tokio::sync::Notify,
    /// Requests received so far (the arrival number of the next one).
    pub(crate) requests_received: AtomicU64,
    /// One permit per outgoing request awaiting its response (see
    /// [`Config::max_pending_requests`]).
    pub(crate) outgoing_slots: Arc<Semaphore>,
}

/// An incoming request being handled.
pub(crate) struct InFlightRequest {
    /// Its arrival number (see [`Shared::requests_received`]).
    pub(crate) seq: u64,
    /// Cancels its handler.
    pub(crate) token: CancellationToken,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// Ends the connection (first reason wins): fails every pending call at once and
    /// cancels in-flight handlers, the reader and (after a final flush) the writer.
    pub(crate) fn shutdown(&self, reason: CloseReason) {
        let _ = self.reason.set(reason);
        let reason = self.close_reason().expect("set above");
        let drained = {
            let mut pending = lock(&self.pending);
            if pending.closed.is_none() {
                pending.closed = Some(reason.clone());
            }
            std::mem::take(&mut pending.map)
        };
        if !drained.is_empty() {
            tracing::debug!(count = drained.len(), %reason, "failing pending calls");
        }
        for (_, p) in drained {
            if let Pending::Waiter(deliver) = p {
                deliver.deliver(Err(Error::connection_closed(&reason)));
            }
        }
        self.shutdown.cancel();
    }

    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.reason.get().cloned()
    }

    pub(crate) async fn closed(&self) -> CloseReason {
        self.shutdown.cancelled().await;
        self.close_reason().unwrap_or(CloseReason::Local)
    }

    /// The error for calls that can no longer be made or answered.
    pub(crate) fn closed_error(&self) -> Error {
        Error::connection_closed(&self.close_reason().unwrap_or(CloseReason::Local))
    }

    /// Waits for a free outgoing request slot; fails once the connection is shutting down.
    pub(crate) async fn outgoing_slot(&self) -> Result<OwnedSemaphorePermit, Error> {
        if let Ok(permit) = self.outgoing_slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        tokio::select! {
            biased;
            _ = self.shutdown.cancelled() => Err(self.closed_error()),
            p = self.outgoing_slots.clone().acquire_owned() => p.map_err(|_| self.closed_error()),
        }
    }

    /// Queues one serialized message for the writer, waiting while the queue is full
    /// (backpressure). Fails once the connection is shutting down.
    pub(crate) async fn send(&self, msg: impl Into<Outgoing>) -> Result<(), Error> {
        let msg = msg.into();
        if self.shutdown.is_cancelled() {
            return Err(self.closed_error());
        }
        tokio::select! {
            biased;
            r = self.out_tx.send(msg) => r.map_err(|_| self.closed_error()),
            _ = self.shutdown.cancelled() => Err(self.closed_error()),
        }
    }
}

/// A running JSON-RPC connection over a reader/writer pair.
///
/// Dropping the `Connection` does not close it: it runs until EOF, an I/O error, or
/// [`Connection::close`]. Use [`Connection::peer`] to talk to the other side.
#[derive(Clone, Debug)]
pub struct Connection {
    peer: Peer,
}

impl Connection {
    /// Starts a connection: spawns the reader task (which also spawns request handler tasks
    /// and the notification worker) and the writer task. Must be called from within a
    /// Tokio runtime.
    pub fn new<R, W, H>(reader: R, writer: W, handler: H, config: Config) -> Connection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        H: Handler,
    {
        Self::with_handler(reader, writer, Arc::new(handler), config)
    }

    /// Like [`Connection::new`] with an already shared handler.
    pub fn with_handler<R, W>(
        reader: R,
        writer: W,
        handler: Arc<dyn Handler>,
        config: Config,
    ) -> Connection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out_tx, out_rx) = mpsc::channel(config.outgoing_queue);
        let first_id = config
            .first_request_id
            .unwrap_or(config.dialect.first_request_id);
        let shared = Arc::new(Shared {
            out_tx,
            next_id: AtomicI64::new(first_id),
            pending: Mutex::new(PendingMap::default()),
            shutdown: CancellationToken::new(),
            reason: OnceLock::new(),
            notifications_done: AtomicU64::new(0),
            notification_handled: tokio::sync::Notify::new(),
            in_flight: Mutex::default(),
            answer_waiters: AtomicUsize::new(0),
            request_answered: tokio::sync::Notify::new(),
            requests_received: AtomicU64::new(0),
            outgoing_slots: Arc::new(Semaphore::new(config.max_pending_requests)),
            config,
        });
        let peer = Peer::new(shared.clone());
        tokio::spawn(crate::writer::write_loop(writer, out_rx, shared.clone()));
        tokio::spawn(crate::incoming::read_loop(
            reader,
            shared,
            handler,
            peer.clone(),
        ));
        Connection { peer }
    }

    /// The handle to send requests and notifications (cheap to clone).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        self.peer.closed().await
    }

    /// Ends the connection locally: pending calls fail, handlers are cancelled, queued
    /// output is flushed (within [`Config::shutdown_flush_timeout`]) and the writer is shut
    /// down so the peer sees EOF.
    pub fn close(&self) {
        self.peer.close();
    }
}
