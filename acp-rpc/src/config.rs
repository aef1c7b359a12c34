//! Connection configuration: limits, timeouts, the observer and the framing
//! knobs ([`Framing`], defined in its own module so that the message layer, which reads it,
//! does not depend on the observer this module names).

use std::time::Duration;

use std::sync::Arc;

use crate::barrier::WriteBarrier;
use crate::observe::{Observers, SharedObserver};

/// Default maximum size of one message (one line), 64 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;

pub use crate::framing::{DEFAULT_MAX_BATCH, Framing};

/// Everything configurable about a connection. Build with `Config::default()` and the
/// `with_*` methods.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// Maximum size of one incoming line in bytes (without its line end). A longer line is
    /// skipped without being buffered whole and answered with `-32600`. Default 64 MiB.
    /// Peak reader memory is about twice this value (buffer growth), see the `concepts` docs.
    pub max_message_size: usize,
    /// Capacity of the outgoing message queue; when full, `notify`/`request` wait
    /// (backpressure). Default 1024 messages.
    pub outgoing_queue: usize,
    /// Maximum number of incoming request handlers running at once; further requests wait
    /// for a slot (up to [`Config::max_unanswered_requests`] of them). Default 256.
    pub max_concurrent_handlers: usize,
    /// Maximum number of incoming requests read but not yet answered (their handler is
    /// queued, running, or its answer waits for room in the outgoing queue). At the cap the
    /// reader stops reading until one is answered, so a peer that floods us with requests
    /// and does not read our answers is pushed back by its own full pipe instead of growing
    /// our memory; no request is refused and no answer is lost. A handler awaiting the
    /// peer's answer to a request of its own stops counting (the reader must stay free to
    /// read that answer), so two peers whose handlers call each other cannot deadlock.
    /// Default 1024.
    pub max_unanswered_requests: usize,
    /// Maximum number of our own requests awaiting the peer's answer; further calls wait
    /// for one to be answered before they are sent. Default 512, half the default
    /// [`Config::max_unanswered_requests`]: two peers on the defaults never hold more of
    /// each other's requests than their admission cap, so neither reader ever stops for
    /// the cap, and their floods cannot deadlock each other. Requests a request handler
    /// sends while it runs are not counted (they are bounded by the peer's requests we
    /// admitted, and counting them could deadlock two peers whose handlers call each
    /// other); notifications in a dialect without them are requests and are counted.
    pub max_pending_requests: usize,
    /// Capacity of the ordered queue that feeds the notification worker (notifications, and
    /// responses that must wait for them). When full, the reader waits. Default 1024.
    pub ordered_queue: usize,
    /// Default timeout of outgoing requests. Default `None` (prompts run for minutes).
    pub default_timeout: Option<Duration>,
    /// Whether dropping the future of an outgoing request sends `$/cancel_request` for it.
    /// Default `true`; per-call override in [`crate::CallOptions`].
    pub cancel_on_drop: bool,
    /// How long the writer may keep flushing queued output once the connection is ending.
    /// Default 1 s.
    pub shutdown_flush_timeout: Duration,
    /// How long output may wait on a peer that takes none of it before the connection ends
    /// with [`CloseReason::WriteStalled`](crate::CloseReason::WriteStalled): a peer that
    /// stops reading (hung, or flooding us while it never reads our answers) would
    /// otherwise block our writes, and every caller waiting on them, forever. Only a write
    /// that makes *no* progress counts: a slow reader that takes some bytes now and then
    /// resets the clock. The end fails every pending call with an error that names the
    /// stall. Default 30 s; `None` waits forever.
    pub write_stall_timeout: Option<Duration>,
    /// How messages are framed on this wire (strict JSON-RPC 2.0 by default).
    pub framing: Framing,
    /// Optional observer told about every raw line, every message and every finished
    /// request: the connection's one observer slot, holding one or, through
    /// [`Config::with_observer`] called again, an [`Observers`] of several (see
    /// [`crate::observe`]). Default `None`: no clock read, no call.
    pub observer: Option<SharedObserver>,
    /// When set, the id of the first outgoing request, overriding
    /// [`Framing::first_request_id`]: negotiation sets it past the ids its offers used, so a
    /// late answer to an offer cannot be taken for the answer to a real request.
    pub first_request_id: Option<i64>,
    /// Whether incoming requests are handled one at a time, in arrival order (each handler
    /// starts when the previous one has returned). Default `false`: requests run
    /// concurrently. The legacy dialects have no notifications, so their editors receive
    /// what v1 streams as notifications (message chunks, tool-call updates) as requests that
    /// peers send back to back without waiting; an editor of those dialects turns this on so
    /// the chunks are shown in the order they were sent. Waiting requests hold no handler
    /// slot, and responses to our own requests are never held up by it.
    pub sequential_requests: bool,
    /// Work the writer waits for before it hands output to the transport, done once per
    /// batch of messages (see [`crate::barrier`]): acp-agent's session recorder appends
    /// the updates of a batch to its store here, so the client never sees an update the
    /// store does not have. Default `None`: no barrier, no cost.
    pub write_barrier: Option<Arc<dyn WriteBarrier>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            outgoing_queue: 1024,
            max_concurrent_handlers: 256,
            max_unanswered_requests: 1024,
            max_pending_requests: 512,
            ordered_queue: 1024,
            default_timeout: None,
            cancel_on_drop: true,
            shutdown_flush_timeout: Duration::from_secs(1),
            write_stall_timeout: Some(Duration::from_secs(30)),
            framing: Framing::default(),
            observer: None,
            first_request_id: None,
            sequential_requests: false,
            write_barrier: None,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("max_message_size", &self.max_message_size)
            .field("outgoing_queue", &self.outgoing_queue)
            .field("max_concurrent_handlers", &self.max_concurrent_handlers)
            .field("max_unanswered_requests", &self.max_unanswered_requests)
            .field("max_pending_requests", &self.max_pending_requests)
            .field("ordered_queue", &self.ordered_queue)
            .field("default_timeout", &self.default_timeout)
            .field("cancel_on_drop", &self.cancel_on_drop)
            .field("shutdown_flush_timeout", &self.shutdown_flush_timeout)
            .field("write_stall_timeout", &self.write_stall_timeout)
            .field("framing", &self.framing)
            .field("observer", &self.observer.is_some())
            .field("first_request_id", &self.first_request_id)
            .field("sequential_requests", &self.sequential_requests)
            .field("write_barrier", &self.write_barrier.is_some())
            .finish()
    }
}

impl Config {
    /// Sets [`Config::max_message_size`] (at least 1).
    #[must_use]
    pub fn with_max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1);
        self
    }
    /// Sets [`Config::outgoing_queue`] (at least 1).
    #[must_use]
    pub fn with_outgoing_queue(mut self, messages: usize) -> Self {
        self.outgoing_queue = messages.max(1);
        self
    }
    /// Sets [`Config::max_concurrent_handlers`] (at least 1).
    #[must_use]
    pub fn with_max_concurrent_handlers(mut self, n: usize) -> Self {
        self.max_concurrent_handlers = n.max(1);
        self
    }
    /// Sets [`Config::max_unanswered_requests`] (at least 1).
    #[must_use]
    pub fn with_max_unanswered_requests(mut self, n: usize) -> Self {
        self.max_unanswered_requests = n.max(1);
        self
    }
    /// Sets [`Config::max_pending_requests`] (at least 1).
    #[must_use]
    pub fn with_max_pending_requests(mut self, n: usize) -> Self {
        self.max_pending_requests = n.max(1);
        self
    }
    /// Sets [`Config::ordered_queue`] (at least 1).
    #[must_use]
    pub fn with_ordered_queue(mut self, n: usize) -> Self {
        self.ordered_queue = n.max(1);
        self
    }
    /// Sets [`Config::default_timeout`].
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.default_timeout = timeout;
        self
    }
    /// Sets [`Config::cancel_on_drop`].
    #[must_use]
    pub fn with_cancel_on_drop(mut self, yes: bool) -> Self {
        self.cancel_on_drop = yes;
        self
    }
    /// Sets [`Config::shutdown_flush_timeout`].
    #[must_use]
    pub fn with_shutdown_flush_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_flush_timeout = timeout;
        self
    }
    /// Sets [`Config::write_stall_timeout`] (`None`: wait forever).
    #[must_use]
    pub fn with_write_stall_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_stall_timeout = timeout;
        self
    }
    /// Sets [`Config::framing`].
    #[must_use]
    pub fn with_framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }
    /// Sets [`Config::first_request_id`].
    #[must_use]
    pub fn with_first_request_id(mut self, id: i64) -> Self {
        self.first_request_id = Some(id);
        self
    }
    /// Sets [`Config::sequential_requests`].
    #[must_use]
    pub fn with_sequential_requests(mut self, yes: bool) -> Self {
        self.sequential_requests = yes;
        self
    }
    /// Adds an observer ([`Config::observer`]): the first is installed as it is; with one
    /// set already, both are, in an [`Observers`] that tells the earlier one first. A wire
    /// tap ([`crate::tap::recorder`], [`crate::tap::channel`], [`crate::tap::on_line`]) is
    /// an observer like any other.
    #[must_use]
    pub fn with_observer(mut self, observer: SharedObserver) -> Self {
        self.observer = match self.observer.take() {
            Some(first) => Observers::new().with(first).with(observer).into_shared(),
            None => Some(observer),
        };
        self
    }
    /// Adds a [`Config::write_barrier`]. A barrier set already stays, and is flushed
    /// before this one.
    #[must_use]
    pub fn with_write_barrier(mut self, barrier: Arc<dyn WriteBarrier>) -> Self {
        self.write_barrier = Some(match self.write_barrier.take() {
            Some(first) => Arc::new(crate::barrier::Both(first, barrier)),
            None => barrier,
        });
        self
    }
}
