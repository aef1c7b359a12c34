//! A JSON-RPC 2.0 engine over newline-delimited JSON, the layer every Agent Client Protocol
//! dialect shares. It knows JSON-RPC and framing; it does not know ACP methods.
//!
//! ```no_run
//! use acp_rpc::{Config, Connection, Error, Handler, Params, RequestContext, to_raw};
//! use serde_json::value::RawValue;
//!
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl Handler for Echo {
//!     async fn handle_request(
//!         &self,
//!         _cx: RequestContext,
//!         method: &str,
//!         params: Params,
//!     ) -> Result<Box<RawValue>, Error> {
//!         match method {
//!             "echo" => to_raw(&params.parse::<serde_json::Value>()?),
//!             _ => Err(Error::method_not_found(method)),
//!         }
//!     }
//! }
//!
//! # async fn run() -> Result<(), Error> {
//! let conn = Connection::new(tokio::io::stdin(), tokio::io::stdout(), Echo, Config::default());
//! let answer: String = conn.peer().request("ping", &serde_json::json!({})).await?;
//! conn.peer().notify("log", &"hello").await?;
//! let why = conn.closed().await;
//! # let _ = (answer, why); Ok(()) }
//! ```
//!
//! See [`concepts`] for framing, the ordering guarantee, cancellation, errors and limits.
//!
//! # Layout: the pipeline
//!
//! The source is grouped by the stage a message passes through, in folders:
//!
//! | folder | stage | public as |
//! | --- | --- | --- |
//! | `read/` | the reader (answers, requests, notifications, batch lines), the line framer, the sniffer | [`codec`], [`sniff`] |
//! | `dispatch/` | requests on tasks, the ordered notification worker, the [`Handler`], a batch's answers | [`handler`] |
//! | `write/` | the [`Peer`] and our calls (typed, raw), the queue, the writer and its buffer, the shared state | [`outgoing`] |
//! | `transport/` | the [`Transport`](transport::Transport) seam: lines, the memory pair, the frame adapter; stdio, the byte pipe | [`transport`], [`stdio`], [`memory`] |
//! | `observe/` | the [`Observer`] (raw lines, messages, requests), flow logging, the wire record, OpenTelemetry | [`observe`], [`tap`], [`flow`], [`record`], `otel` |
//!
//! Each stage imports only the ones after it (read, dispatch, write, transport) and
//! `observe/`, never one before it. At the root stays what every stage shares: the
//! [`message`] envelope and its one-pass [`envelope`] reader, [`error`], [`params`],
//! [`config`] (with [`Framing`] in `framing.rs` and the write [`barrier`] it holds),
//! [`sync`], and the [`connection`] that wires the stages together.

#![deny(missing_docs)]

pub mod barrier;
pub mod concepts;
pub mod config;
pub mod connection;
mod dispatch;
pub mod envelope;
pub mod error;
mod framing;
pub mod message;
pub mod observe;
pub mod params;
mod read;
pub mod sync;
pub mod transport;
mod write;

pub use dispatch::handler;
#[cfg(feature = "otel")]
pub use observe::otel;
pub use observe::{flow, record, tap};
pub use read::{codec, sniff};
pub use transport::stdio;
pub use write::outgoing;

/// In-process plumbing for running connections back to back: an in-memory
/// [`pipe`](crate::memory::pipe) and [`tie`](crate::memory::tie), which ends each of two connections when the other ends. The legacy adapters of
/// acp-agent and acp-client run a v1 connection on one end of a pipe and a translating
/// connection on the other. (The pipe is the transport stage's, the tie the connection's.)
pub mod memory {
    #[doc(inline)]
    pub use crate::connection::tie;
    #[doc(inline)]
    pub use crate::transport::pipe::{PIPE_BUFFER, PipeEnd, pipe};
}

pub use barrier::WriteBarrier;
pub use codec::{Frame, LineCodec, LineReader};
pub use config::{Config, DEFAULT_MAX_BATCH, DEFAULT_MAX_MESSAGE_SIZE, Framing};
pub use connection::Connection;
pub use dispatch::value::ParamsValue;
pub use error::{CloseReason, Error, ErrorCode};
pub use handler::{
    Arrival, Handler, NotificationContext, RequestContext, ResponseWritten, StartedNotification,
};
pub use message::{Message, Notification, ParseFailure, Request, RequestId, Response};
pub use observe::{MessageEvent, MessageKind, Observer, Observers, RequestEvent};
pub use outgoing::{CANCEL_METHOD, CallOptions, Peer, PendingResponse};
pub use params::{Params, deserialize_params, to_raw};
pub use tap::{Direction, TapEvent};
pub use write::reply::Reply;

/// Re-exported so handlers can name it without depending on `async-trait` themselves.
pub use async_trait::async_trait;
/// Re-exported: raw JSON values as used for params and results.
pub use serde_json::value::RawValue;
