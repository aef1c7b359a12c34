//! The observe stage: what a connection tells the world about its traffic, beside the
//! pipeline (read, dispatch, write) at the points where messages pass.
//!
//! - this module: the [`Observer`] trait, the one way to watch a connection (raw lines,
//!   messages, finished requests), and [`Observers`], several as one;
//! - [`tap`]: observers of the raw lines ([`tap::channel`], [`tap::recorder`],
//!   [`tap::on_line`]);
//! - [`flow`]: message-flow logging to `tracing`, always on;
//! - [`record`]: the workspace's one wire record, what [`tap::recorder`] writes;
//! - `otel` (feature `otel`): W3C Trace Context across the wire and the engine's spans.
//!
//! # The observer
//!
//! Observing a connection: one callback per raw line, one per message and one per finished
//! request, for wire traces, metrics, dashboards or OpenTelemetry.
//!
//! Install an [`Observer`] with [`Config::with_observer`](crate::Config::with_observer); a
//! second call adds one more (the connection's one observer slot then holds an
//! [`Observers`], which tells each in the order they were added). The engine tells it about
//! every line it reads or writes, as it crossed the wire ([`Observer::line`]: a recorder, a
//! log of the raw traffic), every message ([`Observer::message`]: direction, kind, method,
//! id, size in bytes, time, and the session id on demand) and every request when its answer
//! is known ([`Observer::request`]: method, latency, outcome), both for the requests the
//! peer sends us and for the ones we send. For one message the line comes first, then the
//! message. The [`crate::flow`] spans stay the logging face, built in and always on (cheap
//! when their level is off); the observer is the counting and recording face.
//!
//! Cost: without an observer, one `Option` check per line, per message and per request.
//! With one, a clock read per event and the callbacks themselves (a callback an observer
//! does not implement is an empty call); nothing is parsed again for it (the session id is
//! looked for in the text only when [`MessageEvent::session_id`] is called).
//!
//! The callbacks run on the connection's reader and writer tasks (and on request tasks):
//! keep them quick (atomic counters, a bounded channel send), never block in them. A panic in
//! one is caught and logged; the connection goes on.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use acp_rpc::observe::{MessageEvent, Observer, RequestEvent};
//! use acp_rpc::Config;
//!
//! #[derive(Default)]
//! struct Counts {
//!     bytes: AtomicU64,
//!     failed: AtomicU64,
//! }
//!
//! impl Observer for Counts {
//!     fn message(&self, event: &MessageEvent<'_>) {
//!         self.bytes.fetch_add(event.size as u64, Ordering::Relaxed);
//!     }
//!     fn request(&self, event: &RequestEvent<'_>) {
//!         if event.outcome.is_err() {
//!             self.failed.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! let counts = Arc::new(Counts::default());
//! // And a trace of the wire: every line as a record of `acp trace`'s format.
//! let (recorder, records) = acp_rpc::tap::recorder(acp_rpc::record::Role::Client);
//! let config = Config::default()
//!     .with_observer(counts.clone())
//!     .with_observer(recorder);
//! # let _ = (config, records);
//! ```

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, panic_message};
use crate::message::RequestId;
use crate::observe::tap::{Direction, TapEvent};

mod fanout;
pub mod flow;
#[cfg(feature = "otel")]
pub mod otel;
pub mod record;
pub mod tap;

pub use fanout::Observers;

/// What kind of message an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageKind {
    /// A request (it has a method and an id).
    Request,
    /// A notification (a method, no id).
    Notification,
    /// A response (an id, a result or an error; no method).
    Response,
    /// An incoming line that is not a valid message (answered with an error, or skipped).
    Invalid,
}

/// One message read or written.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct MessageEvent<'a> {
    /// Read from the peer or written to it.
    pub direction: Direction,
    /// Request, notification, response or invalid.
    pub kind: MessageKind,
    /// The method of a request or notification; `None` for responses and invalid lines.
    pub method: Option<&'a str>,
    /// The id of a request or response; `None` for notifications (and `id: null`).
    pub id: Option<&'a RequestId>,
    /// The size of the line in bytes, without its line end.
    pub size: usize,
    /// When the engine read it (after framing) or queued it for writing.
    pub at: Instant,
    /// The text the session id is looked for in (the line or its params).
    text: &'a [u8],
}

impl<'a> MessageEvent<'a> {
    pub(crate) fn new(
        direction: Direction,
        kind: MessageKind,
        method: Option<&'a str>,
        id: Option<&'a RequestId>,
        size: usize,
        text: &'a [u8],
    ) -> Self {
        MessageEvent {
            direction,
            kind,
            method,
            id,
            size,
            at: Instant::now(),
            text,
        }
    }

    /// A message event from a transport that moves messages itself (acp-remote's gateway
    /// routes lines between a remote client and an agent process, and tells an observer
    /// about them with this). `text` is where [`MessageEvent::session_id`] looks: the line,
    /// or the params.
    pub fn new_external(
        direction: Direction,
        kind: MessageKind,
        method: Option<&'a str>,
        id: Option<&'a RequestId>,
        size: usize,
        text: &'a [u8],
    ) -> Self {
        Self::new(direction, kind, method, id, size, text)
    }

    /// The text of the message as the engine has it: the whole line, or only the params of
    /// a notification decoded straight from the line (see
    /// [`Handler::start_notification`](crate::Handler::start_notification)); empty for
    /// lines that are not UTF-8 or too long. For a scan with [`crate::flow::string_field`],
    /// never for parsing on the hot path.
    pub fn text(&self) -> &'a str {
        std::str::from_utf8(self.text).unwrap_or("")
    }

    /// The message's `sessionId` (the first one in its text: the params' of a request or
    /// notification, the result's of a `session/new` answer), found by a scan of the text
    /// when asked for, never by parsing; `None` without one or when it holds escapes.
    pub fn session_id(&self) -> Option<&'a str> {
        let text = std::str::from_utf8(self.text).ok()?;
        crate::observe::flow::session_id(text)
    }
}

/// A request whose answer is known.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RequestEvent<'a> {
    /// `Incoming`: the peer asked and we answered. `Outgoing`: we asked and the peer
    /// answered (or the call failed: timeout, closed connection).
    pub direction: Direction,
    /// The request's method.
    pub method: &'a str,
    /// The request's id.
    pub id: &'a RequestId,
    /// From reading the request to queuing its answer (incoming), or from sending it to
    /// receiving the answer (outgoing).
    pub latency: Duration,
    /// `Ok` or the error code of the answer (for an outgoing call that never got one, the
    /// code of the local error: [`ErrorCode::REQUEST_TIMED_OUT`],
    /// [`ErrorCode::CONNECTION_CLOSED`]).
    pub outcome: Result<(), ErrorCode>,
}

impl<'a> RequestEvent<'a> {
    /// A request event from a transport that moves messages itself (see
    /// [`MessageEvent::new_external`]).
    pub fn new(
        direction: Direction,
        method: &'a str,
        id: &'a RequestId,
        latency: Duration,
        outcome: Result<(), ErrorCode>,
    ) -> Self {
        RequestEvent {
            direction,
            method,
            id,
            latency,
            outcome,
        }
    }
}

/// Receives a connection's events. Every method defaults to doing nothing.
pub trait Observer: Send + Sync + 'static {
    /// A raw line was read or is being written, as it crossed the wire (without its line
    /// end; after BOM and `\r` stripping for input), or an incoming line over the limit was
    /// skipped. Every line is told, those the engine does not take as a message too (one
    /// that is not JSON, a [raw send](crate::Peer::send_raw)); a line that is not UTF-8 is
    /// told as `<invalid UTF-8>`.
    fn line(&self, event: TapEvent<'_>) {
        let _ = event;
    }
    /// A message was read or is being written.
    fn message(&self, event: &MessageEvent<'_>) {
        let _ = event;
    }
    /// A request's answer is known.
    fn request(&self, event: &RequestEvent<'_>) {
        let _ = event;
    }
}

/// An installed observer, shared by every connection it is given to.
pub type SharedObserver = Arc<dyn Observer>;

/// Tells `observer` (a connection's [`Config::observer`](crate::Config::observer)), if
/// any, about a message being written.
pub(crate) fn sent(
    observer: Option<&SharedObserver>,
    kind: MessageKind,
    method: Option<&str>,
    id: Option<&RequestId>,
    line: &[u8],
) {
    if let Some(observer) = observer {
        let event = MessageEvent::new(Direction::Outgoing, kind, method, id, line.len(), line);
        message(&**observer, &event);
    }
}

/// Tells `observer` (a connection's [`Config::observer`](crate::Config::observer)), if
/// any, about a raw line, catching a panic (the connection must survive it).
#[inline]
pub(crate) fn line(observer: Option<&SharedObserver>, event: TapEvent<'_>) {
    if let Some(observer) = observer {
        line_to(&**observer, event);
    }
}

/// Calls `observer` with a raw line, catching a panic.
pub(crate) fn line_to(observer: &dyn Observer, event: TapEvent<'_>) {
    if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| observer.line(event))) {
        tracing::error!(panic = %panic_message(&panic), "observer panicked");
    }
}

/// Calls `observer` with a message event, catching a panic (the connection must survive it).
pub(crate) fn message(observer: &dyn Observer, event: &MessageEvent<'_>) {
    if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| observer.message(event))) {
        tracing::error!(panic = %panic_message(&panic), "observer panicked");
    }
}

/// Calls `observer` with a request event, catching a panic.
pub(crate) fn request(observer: &dyn Observer, event: &RequestEvent<'_>) {
    if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| observer.request(event))) {
        tracing::error!(panic = %panic_message(&panic), "observer panicked");
    }
}
