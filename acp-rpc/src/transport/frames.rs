//! [`frame_adapter`]: an engine on one side, code that carries each message as one frame
//! (a WebSocket message, an HTTP body, a server-sent event) on the other. Between them a
//! bounded channel each way, or, for a carrier the engine can drive itself, nothing: the
//! engine polls a [`FrameSource`] for what it reads ([`FrameAdapter::reading`]), hands what
//! it writes to a [`FrameSink`] ([`FrameAdapter::writing`]), or both
//! ([`FrameAdapter::driven`]), with no task and no channel hop per message.

use std::io;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::{FramesIn, FramesOut, Halves, Inner, Item, Transport};

/// Frames for an engine to read, from a carrier the engine polls itself (a socket's
/// message stream): each frame one JSON-RPC message's text, without a line end.
///
/// The engine polls it from its reader task, one frame after the other, and handles each
/// before asking for the next; a source that is not ready registers the waker as any poll
/// does. Ending the input is `Ready(None)`; the engine reads nothing after it.
pub trait FrameSource: Send + 'static {
    /// The next frame, or `Ready(None)` at the end of input.
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;
}

/// Where an engine hands its frames when the carrier takes them itself (a router, a
/// socket's sink), each one JSON-RPC message's text without a line end, in the order
/// written. Every frame is UTF-8: the engine writes JSON text, and refuses a raw line
/// ([`Peer::send_raw`](crate::Peer::send_raw)) that is not text on such a transport.
///
/// The engine's writer asks [`FrameSink::poll_ready`] before each frame: `Pending` holds
/// the writer back as a full pipe does (and
/// [`Config::write_stall_timeout`](crate::Config::write_stall_timeout) applies), an error
/// ends the connection's output. After the frames ready at once it calls
/// [`FrameSink::poll_flush`], and [`FrameSink::poll_close`] when the engine ends its
/// output; the sink is dropped when the writer ends.
pub trait FrameSink: Send + 'static {
    /// Whether the sink takes another frame now.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    /// Takes one frame; called only after [`FrameSink::poll_ready`] said it may.
    fn send(&mut self, frame: Bytes) -> io::Result<()>;
    /// Pushes on what the frames sent so far wait for (nothing, by default).
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _ = cx;
        Poll::Ready(Ok(()))
    }
    /// The engine has ended its output (nothing, by default; the sink is dropped after).
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _ = cx;
        Poll::Ready(Ok(()))
    }
}

/// The engine's side of a [`frame_adapter`] (or of a carrier the engine drives:
/// [`FrameAdapter::reading`], [`FrameAdapter::writing`], [`FrameAdapter::driven`]): run a
/// [`Connection`](crate::Connection) on it.
///
/// ```
/// use std::io;
/// use std::sync::{Arc, Mutex};
/// use std::task::{Context, Poll};
///
/// use acp_rpc::transport::{FrameAdapter, FrameSink};
/// use acp_rpc::{Config, Connection};
/// use bytes::Bytes;
///
/// /// Keeps every frame the engine writes (a router would route each).
/// #[derive(Clone, Default)]
/// struct Kept(Arc<Mutex<Vec<Bytes>>>);
///
/// impl FrameSink for Kept {
///     fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
///         Poll::Ready(Ok(()))
///     }
///
///     fn send(&mut self, frame: Bytes) -> io::Result<()> {
///         self.0.lock().unwrap().push(frame);
///         Ok(())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let kept = Kept::default();
/// // The carrier hands the engine its peer's messages through `to_engine`.
/// let (adapter, _to_engine) = FrameAdapter::writing(kept.clone(), 16);
/// let conn = Connection::over(adapter, (), Config::default());
/// conn.peer().notify("hello", &1).await.unwrap();
/// conn.close();
/// conn.finished().await; // the queued output is flushed
/// let frames = kept.0.lock().unwrap();
/// assert_eq!(&frames[0][..], br#"{"jsonrpc":"2.0","method":"hello","params":1}"#);
/// # }
/// ```
pub struct FrameAdapter {
    incoming: FramesIn,
    outgoing: FramesOut,
    first: Option<Item>,
}

impl std::fmt::Debug for FrameAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let incoming = match self.incoming {
            FramesIn::Channel(_) => "channel",
            FramesIn::Source(_) => "source",
        };
        let outgoing = match self.outgoing {
            FramesOut::Channel(_) => "channel",
            FramesOut::Sink(_) => "sink",
        };
        f.debug_struct("FrameAdapter")
            .field("incoming", &incoming)
            .field("outgoing", &outgoing)
            .finish_non_exhaustive()
    }
}

impl FrameAdapter {
    /// An engine that reads `source` itself and writes into a channel of `capacity` frames
    /// (at least 1) that the carrier empties through the returned receiver.
    pub fn reading(source: impl FrameSource, capacity: usize) -> (FrameAdapter, FrameReceiver) {
        let (outgoing, from_engine) = mpsc::channel(capacity.max(1));
        let adapter = FrameAdapter {
            incoming: FramesIn::Source(Box::new(source)),
            outgoing: FramesOut::channel(outgoing),
            first: None,
        };
        (adapter, FrameReceiver(from_engine))
    }

    /// An engine that hands its frames to `sink` itself and reads a channel of `capacity`
    /// frames (at least 1) that the carrier fills through the returned sender.
    pub fn writing(sink: impl FrameSink, capacity: usize) -> (FrameAdapter, FrameSender) {
        let (to_engine, incoming) = mpsc::channel(capacity.max(1));
        let adapter = FrameAdapter {
            incoming: FramesIn::Channel(incoming),
            outgoing: FramesOut::Sink(Box::new(sink)),
            first: None,
        };
        (adapter, FrameSender(to_engine))
    }

    /// An engine that reads `source` and hands its frames to `sink` itself: no channel and no
    /// task of the carrier's either way (a socket whose stream and sink the engine drives).
    pub fn driven(source: impl FrameSource, sink: impl FrameSink) -> FrameAdapter {
        FrameAdapter {
            incoming: FramesIn::Source(Box::new(source)),
            outgoing: FramesOut::Sink(Box::new(sink)),
            first: None,
        }
    }

    /// Waits for the first frame the carrier hands in and shows it without taking it: the
    /// engine started on this adapter reads it first, as if never looked at. For a server
    /// that chooses how to serve a connection by its first message (the protocol version a
    /// client's `initialize` offers). `None` when the carrier ended before sending one.
    pub async fn first_frame(&mut self) -> Option<Bytes> {
        if self.first.is_none() {
            self.first = Some(self.incoming.recv().await?);
        }
        match self.first.take()? {
            Item::Text(text) => {
                self.first = Some(Item::Text(text.clone()));
                Some(text)
            }
            // A carrier hands in text only; a value is shown as its text and kept as that.
            message @ (Item::Message { .. } | Item::Value { .. }) => {
                let text = message.into_text();
                self.first = Some(Item::Text(text.clone()));
                Some(text)
            }
        }
    }
}

impl Transport for FrameAdapter {
    fn into_halves(self) -> Halves {
        Halves(Inner::Frames {
            incoming: self.incoming,
            outgoing: self.outgoing,
            values: false,
            first: self.first,
        })
    }
}

/// The carrier's side of a [`frame_adapter`]: frames for the engine go in through
/// [`FramePort::sender`], the engine's frames come out of [`FramePort::receiver`].
#[derive(Debug)]
pub struct FramePort {
    /// Hands the engine one message per frame; dropping every sender is the end of input.
    pub sender: FrameSender,
    /// The engine's messages, one per frame, in the order written; `None` once the engine
    /// has ended its output.
    pub receiver: FrameReceiver,
}

/// Two connected halves for an engine and a carrier of frames. Each direction holds at most
/// `capacity` frames (at least 1) not yet taken.
pub fn frame_adapter(capacity: usize) -> (FrameAdapter, FramePort) {
    let capacity = capacity.max(1);
    let (to_engine, incoming) = mpsc::channel(capacity);
    let (outgoing, from_engine) = mpsc::channel(capacity);
    (
        FrameAdapter {
            incoming: FramesIn::Channel(incoming),
            outgoing: FramesOut::channel(outgoing),
            first: None,
        },
        FramePort {
            sender: FrameSender(to_engine),
            receiver: FrameReceiver(from_engine),
        },
    )
}

/// The engine has ended (its input or its output): the frame was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the connection has ended")]
pub struct Closed(pub Bytes);

/// Hands frames to the engine (cheap to clone).
#[derive(Clone, Debug)]
pub struct FrameSender(pub(super) mpsc::Sender<Item>);

impl FrameSender {
    /// Hands `frame`, one JSON-RPC message's text, to the engine, waiting while it has
    /// `capacity` frames it has not read yet.
    pub async fn send(&self, frame: impl Into<Bytes>) -> Result<(), Closed> {
        let frame = Item::Text(frame.into());
        self.0
            .send(frame)
            .await
            .map_err(|e| Closed(e.0.into_text()))
    }

    /// Hands `frame` to the engine if it has room now; `Err` with the frame if not (full or
    /// ended: [`FrameSender::is_closed`] tells which).
    pub fn try_send(&self, frame: impl Into<Bytes>) -> Result<(), Closed> {
        self.0
            .try_send(Item::Text(frame.into()))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(f) | mpsc::error::TrySendError::Closed(f) => {
                    Closed(f.into_text())
                }
            })
    }

    /// Whether the engine has stopped reading.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// Resolves once the engine has stopped reading.
    pub async fn closed(&self) {
        self.0.closed().await
    }
}

/// The engine's frames, in the order it wrote them.
#[derive(Debug)]
pub struct FrameReceiver(pub(super) mpsc::Receiver<Item>);

impl FrameReceiver {
    /// The next frame; `None` once the engine has ended its output and every frame was taken.
    pub async fn recv(&mut self) -> Option<Bytes> {
        self.0.recv().await.map(Item::into_text)
    }

    /// The next frame if one is ready now.
    pub fn try_recv(&mut self) -> Option<Bytes> {
        self.0.try_recv().ok().map(Item::into_text)
    }

    /// Polls for the next frame (for carriers written as futures or streams by hand).
    pub fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Bytes>> {
        self.0.poll_recv(cx).map(|item| item.map(Item::into_text))
    }

    /// Whether another frame is ready now (a carrier can batch it with this one).
    pub fn has_more(&self) -> bool {
        !self.0.is_empty()
    }
}

/// The frames a receiver gets are a source too: what reads a carrier's frames (as an
/// engine does, or a reader of lines over them) takes either alike.
impl FrameSource for FrameReceiver {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.poll_recv(cx)
    }
}
