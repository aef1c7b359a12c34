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

#![deny(missing_docs)]

pub mod barrier;
mod batch;
pub mod codec;
pub mod concepts;
pub mod config;
pub mod connection;
mod dispatch;
pub mod envelope;
pub mod error;
pub mod flow;
mod framing;
pub mod handler;
pub mod memory;
pub mod message;
pub mod observe;
#[cfg(feature = "otel")]
pub mod otel;
pub mod outgoing;
pub mod params;
mod queued;
mod reader;
pub mod record;
mod reply;
pub mod sniff;
mod state;
pub mod stdio;
pub mod sync;
pub mod tap;
pub mod transport;
mod typed;
mod write_side;
mod writer;

pub use barrier::WriteBarrier;
pub use codec::{Frame, LineCodec, LineReader};
pub use config::{Config, DEFAULT_MAX_BATCH, DEFAULT_MAX_MESSAGE_SIZE, Framing};
pub use connection::Connection;
pub use error::{CloseReason, Error, ErrorCode};
pub use handler::{
    Arrival, Handler, NotificationContext, RequestContext, ResponseWritten, StartedNotification,
};
pub use message::{Message, Notification, ParseFailure, Request, RequestId, Response};
pub use observe::{MessageEvent, MessageKind, Observer, RequestEvent};
pub use outgoing::{CANCEL_METHOD, CallOptions, Peer};
pub use params::{Params, deserialize_params, to_raw};
pub use reply::Reply;
pub use tap::{Direction, TapEvent, WireTap};

/// Re-exported so handlers can name it without depending on `async-trait` themselves.
pub use async_trait::async_trait;
/// Re-exported: raw JSON values as used for params and results.
pub use serde_json::value::RawValue;
