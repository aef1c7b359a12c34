//! The seam between the engine and what carries its messages: a [`Transport`] hands a
//! [`Connection`](crate::Connection) whole messages, one frame per JSON-RPC message.
//!
//! Three transports are in the tree:
//!
//! - [`Lines`]: newline-delimited JSON over `AsyncRead + AsyncWrite` (stdio, child
//!   processes, sockets). The engine frames the bytes with [`LineCodec`](crate::LineCodec),
//!   the one line framer, and writes one line per message. A `(reader, writer)` pair is this
//!   transport too.
//! - [`memory_pair`]: two connected [`MemoryEnd`]s, for engines in one process (an
//!   in-process agent, a dialect translation, tests). A message crosses as a value (its
//!   envelope parsed: kind, id, method, with params and result as raw JSON) through a
//!   bounded channel: the writing engine does not write the envelope as text and the
//!   reading engine does not parse it again; no line framing, no byte pipe, no search for
//!   line ends. A notification sent with [`Peer::notify_value`](crate::Peer::notify_value)
//!   crosses with its params as the sender's own value, which a handler of that type takes
//!   as it is ([`Handler::start_notification_value`](crate::Handler::start_notification_value)):
//!   no JSON at all.
//! - [`frame_adapter`]: a [`FrameAdapter`] the engine runs on and a [`FramePort`] for code
//!   that carries frames itself (a WebSocket message or an HTTP body per JSON-RPC message).
//!   A carrier the engine can drive plugs in without the channel on its side: the engine
//!   polls a [`FrameSource`] for what it reads ([`FrameAdapter::reading`]: a socket's
//!   message stream) or hands each message it writes to a [`FrameSink`]
//!   ([`FrameAdapter::writing`]: a router), or both ([`FrameAdapter::driven`]: a socket), so
//!   no task and no channel hop stand between.
//!
//! Beside them, the byte streams the line transport runs on: [`stdio`] (this
//! process's stdin and stdout without a hop through tokio's thread pool) and
//! [`pipe`](crate::memory::pipe) (an in-memory byte pipe, `acp_rpc::memory`).
//!
//! A frame is the message's JSON text, without a line end (as [`bytes::Bytes`], so handing
//! it on copies nothing); between two engines of a memory pair it is the message itself,
//! written as text only for whoever needs the text (the observer, when one is
//! set; a hand-driven end, [`MemoryEnd::into_port`]). Whatever the transport, the engine keeps the same guarantees:
//! [`Config::max_message_size`](crate::Config::max_message_size) (an incoming frame over it,
//! or a message value whose text would be, is answered like an over-long line and skipped), the ordering of
//! [`concepts`](crate::concepts), the observer (told of each line and message once),
//! backpressure (the channels are bounded; a peer that stops taking frames stalls the writer
//! like a full pipe, and [`Config::write_stall_timeout`](crate::Config::write_stall_timeout)
//! applies), and the end of input (the other side dropping its sender is EOF).
//!
//! ```
//! use acp_rpc::transport::memory_pair;
//! use acp_rpc::{Config, Connection, Error, Handler, Params, RequestContext, to_raw};
//! use serde_json::value::RawValue;
//!
//! struct Echo;
//!
//! #[acp_rpc::async_trait]
//! impl Handler for Echo {
//!     async fn handle_request(
//!         &self,
//!         _cx: RequestContext,
//!         _method: &str,
//!         params: Params,
//!     ) -> Result<Box<RawValue>, Error> {
//!         to_raw(&params.parse::<serde_json::Value>()?)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (a, b) = memory_pair(64);
//! let _server = Connection::over(a, Echo, Config::default());
//! let client = Connection::over(b, (), Config::default());
//! let answer: u32 = client.peer().request("echo", &7).await.unwrap();
//! assert_eq!(answer, 7);
//! # }
//! ```

mod frames;
mod memory;
pub mod pipe;
pub mod stdio;

use std::pin::Pin;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub use frames::{
    Closed, FrameAdapter, FramePort, FrameReceiver, FrameSender, FrameSink, FrameSource,
    frame_adapter,
};
pub use memory::{MemoryEnd, memory_pair};

/// What carries a connection's messages. The engine calls [`Transport::into_halves`] once,
/// when the connection starts.
pub trait Transport: Send + 'static {
    /// The reading and writing halves the engine drives.
    fn into_halves(self) -> Halves;
}

/// A transport's two halves, as the engine takes them: bytes it frames itself, or frames.
/// Made by [`Halves::lines`] or (for the message transports of this module) internally.
pub struct Halves(pub(crate) Inner);

pub(crate) enum Inner {
    /// Newline-delimited JSON.
    Lines {
        reader: Pin<Box<dyn AsyncRead + Send>>,
        writer: Pin<Box<dyn AsyncWrite + Send>>,
    },
    /// One frame per message, in bounded channels or straight from and to a carrier.
    Frames {
        incoming: FramesIn,
        outgoing: FramesOut,
        /// The engine may hand its messages on as values (the other end is an engine of a
        /// memory pair, or converts them to text itself).
        values: bool,
        /// A frame already taken from `incoming` (to look at it: [`FrameAdapter::first_frame`]),
        /// read before the others.
        first: Option<Item>,
    },
}

/// Where an engine on frames reads them: a bounded channel a carrier (or another engine)
/// fills, or a [`FrameSource`] the engine polls itself.
pub(crate) enum FramesIn {
    Channel(mpsc::Receiver<Item>),
    Source(Box<dyn FrameSource>),
}

impl FramesIn {
    /// The next frame; `Ready(None)` at the end of input.
    pub(crate) fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Item>> {
        match self {
            FramesIn::Channel(rx) => rx.poll_recv(cx),
            FramesIn::Source(source) => source.poll_frame(cx).map(|frame| frame.map(Item::Text)),
        }
    }

    /// The next frame if one is ready now (`Some(None)` at the end of input), without
    /// waiting: `None` when the reader must wait for it with [`FramesIn::recv`]. (A source
    /// polled here with no waker to wake is polled again by `recv` before the reader
    /// sleeps, so no wake-up is lost.)
    pub(crate) fn try_recv(&mut self) -> Option<Option<Item>> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match self.poll_recv(&mut cx) {
            std::task::Poll::Ready(frame) => Some(frame),
            std::task::Poll::Pending => None,
        }
    }

    /// The next frame, waiting for it.
    pub(crate) async fn recv(&mut self) -> Option<Item> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Whether another frame is known to be ready now (a source cannot tell: `false`).
    pub(crate) fn has_more(&self) -> bool {
        match self {
            FramesIn::Channel(rx) => !rx.is_empty(),
            FramesIn::Source(_) => false,
        }
    }
}

/// Where an engine on frames writes them: a bounded channel a carrier (or another engine)
/// empties, or a [`FrameSink`] the engine's writer hands each frame to itself.
pub(crate) enum FramesOut {
    Channel(tokio_util::sync::PollSender<Item>),
    Sink(Box<dyn FrameSink>),
}

impl FramesOut {
    /// The channel `tx`, as the writer polls it.
    pub(crate) fn channel(tx: mpsc::Sender<Item>) -> FramesOut {
        FramesOut::Channel(tokio_util::sync::PollSender::new(tx))
    }
}

/// One message in a frame channel: its text, or (between the engines of a memory pair) the
/// message itself.
#[derive(Debug)]
pub(crate) enum Item {
    /// The message's JSON text, without a line end.
    Text(Bytes),
    /// The message as a value; `jsonrpc`: whether its text carries `"jsonrpc":"2.0"` (the
    /// writer's [`Framing::emit_jsonrpc`](crate::Framing::emit_jsonrpc)).
    Message {
        /// Boxed, so that an item is small to move through the channel and the buffers
        /// between the engines (unboxed, a message made items 96 bytes).
        message: Box<crate::message::Message>,
        jsonrpc: bool,
    },
    /// A notification whose params are the sender's own value
    /// ([`Peer::notify_value`](crate::Peer::notify_value)), between the engines of a memory
    /// pair.
    Value {
        method: &'static str,
        params: crate::ParamsValue,
        jsonrpc: bool,
    },
}

impl Item {
    /// The message's text, written now for a message value.
    pub(crate) fn into_text(self) -> Bytes {
        match self {
            Item::Text(text) => text,
            Item::Message { message, jsonrpc } => {
                let framing = crate::Framing::default().emit_jsonrpc(jsonrpc);
                crate::message::message_text(&framing, &message).into()
            }
            Item::Value {
                method,
                params,
                jsonrpc,
            } => {
                let framing = crate::Framing::default().emit_jsonrpc(jsonrpc);
                crate::message::value_text(&framing, method, &params).into()
            }
        }
    }
}

impl Halves {
    /// Newline-delimited JSON over `reader` and `writer`.
    pub fn lines<R, W>(reader: R, writer: W) -> Halves
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        Halves(Inner::Lines {
            reader: Box::pin(reader),
            writer: Box::pin(writer),
        })
    }
}

impl std::fmt::Debug for Halves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Inner::Lines { .. } => "Halves::Lines",
            Inner::Frames { .. } => "Halves::Frames",
        })
    }
}

/// Newline-delimited JSON over a reader and a writer: the transport of stdio and child
/// processes. `(reader, writer)` is the same transport.
#[derive(Debug)]
pub struct Lines<R, W> {
    /// Where the peer's lines come from.
    pub reader: R,
    /// Where the engine's lines go.
    pub writer: W,
}

impl<R, W> Lines<R, W> {
    /// The transport over `reader` and `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        Lines { reader, writer }
    }
}

impl<R, W> Transport for Lines<R, W>
where
    R: AsyncRead + Send + 'static,
    W: AsyncWrite + Send + 'static,
{
    fn into_halves(self) -> Halves {
        Halves::lines(self.reader, self.writer)
    }
}

impl<R, W> Transport for (R, W)
where
    R: AsyncRead + Send + 'static,
    W: AsyncWrite + Send + 'static,
{
    fn into_halves(self) -> Halves {
        Halves::lines(self.0, self.1)
    }
}

impl Transport for Halves {
    fn into_halves(self) -> Halves {
        self
    }
}
