//! A connection: builds the shared state and spawns the reader and writer tasks.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::dispatch::handler::Handler;
use crate::error::CloseReason;
use crate::transport::{Halves, Inner, Transport};
use crate::write::outgoing::Peer;
use crate::write::side::{Sink, WriteSide};
use crate::write::state::{FrameSizeHint, PendingMap, Shared};

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
        let (shared, out_rx) = Self::shared(Sink::Bytes(Box::pin(writer)), false, config);
        let peer = Peer::new(shared.clone());
        tokio::spawn(crate::write::write_loop(out_rx, shared.clone()));
        tokio::spawn(crate::read::read_loop(
            reader,
            shared,
            handler,
            peer.clone(),
        ));
        Connection { peer }
    }

    /// Starts a connection on a [`Transport`] (see [`crate::transport`]): like
    /// [`Connection::new`], whatever carries the messages.
    pub fn over<T: Transport, H: Handler>(transport: T, handler: H, config: Config) -> Connection {
        Self::with_handler_over(transport, Arc::new(handler), config)
    }

    /// Like [`Connection::over`] with an already shared handler.
    pub fn with_handler_over<T: Transport>(
        transport: T,
        handler: Arc<dyn Handler>,
        config: Config,
    ) -> Connection {
        let Halves(halves) = transport.into_halves();
        match halves {
            Inner::Lines { reader, writer } => Self::with_handler(reader, writer, handler, config),
            Inner::Frames {
                incoming,
                outgoing,
                values,
                first,
            } => {
                let (shared, out_rx) = Self::shared(
                    Sink::Frames {
                        tx: outgoing,
                        values,
                    },
                    values,
                    config,
                );
                let peer = Peer::new(shared.clone());
                tokio::spawn(crate::write::write_loop(out_rx, shared.clone()));
                tokio::spawn(crate::read::read_frames(
                    first,
                    incoming,
                    shared,
                    handler,
                    peer.clone(),
                ));
                Connection { peer }
            }
        }
    }

    fn shared(
        writer: Sink,
        values: bool,
        config: Config,
    ) -> (Arc<Shared>, mpsc::Receiver<crate::write::queued::Outgoing>) {
        let (out_tx, out_rx) = mpsc::channel(config.outgoing_queue);
        let frames = matches!(writer, Sink::Frames { .. });
        let first_id = config
            .first_request_id
            .unwrap_or(config.framing.first_request_id);
        let shared = Arc::new(Shared {
            out_tx,
            writer: Mutex::new(WriteSide::new(writer)),
            writer_wake: tokio::sync::Notify::new(),
            more_input_ready: AtomicBool::new(false),
            next_id: AtomicI64::new(first_id),
            pending: Mutex::new(PendingMap::default()),
            shutdown: CancellationToken::new(),
            writer_finished: CancellationToken::new(),
            closed: AtomicBool::new(false),
            reason: OnceLock::new(),
            notifications_done: AtomicU64::new(0),
            notification_handled: tokio::sync::Notify::new(),
            notification_waiters: AtomicUsize::new(0),
            in_flight: Mutex::default(),
            answer_waiters: AtomicUsize::new(0),
            answers_being_queued: AtomicUsize::new(0),
            queue_waiters: AtomicUsize::new(0),
            sends_past_waiters: AtomicUsize::new(0),
            request_answered: tokio::sync::Notify::new(),
            requests_received: AtomicU64::new(0),
            outgoing_slots: Arc::new(Semaphore::new(config.max_pending_requests)),
            values,
            frames,
            request_size: FrameSizeHint::new(),
            notification_size: FrameSizeHint::new(),
            #[cfg(feature = "otel")]
            trace: Default::default(),
            config,
        });
        (shared, out_rx)
    }

    /// The handle to send requests and notifications (cheap to clone).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        self.peer.closed().await
    }

    /// Resolves once the connection has ended and its output is done (see
    /// [`Peer::finished`]): what to await before the process exits.
    pub async fn finished(&self) -> CloseReason {
        self.peer.finished().await
    }

    /// Ends the connection locally: pending calls fail, handlers are cancelled, queued
    /// output is flushed (within [`Config::shutdown_flush_timeout`]) and the writer is shut
    /// down so the peer sees EOF.
    pub fn close(&self) {
        self.peer.close();
    }
}

/// Closes each of the two connections as soon as the other one ends, so neither outlives
/// the other (public as `acp_rpc::memory::tie`, beside the in-memory pipe two connections
/// run back to back on). Must be called within a Tokio runtime.
pub fn tie(a: &Peer, b: &Peer) {
    let (a, b) = (a.clone(), b.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = a.closed() => b.close(),
            _ = b.closed() => a.close(),
        }
    });
}
