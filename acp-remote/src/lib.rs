//! Remote agents: the Agent Client Protocol over the network, as the RFD "Streamable HTTP &
//! WebSocket Transport" has it, both sides and both profiles.
//!
//! * [`Server`]: one `/acp` endpoint serving an [`acp_agent::Agent`] in process (one agent
//!   value, and so one set of sessions, per remote connection) or a stdio agent command as a
//!   gateway (one child process per remote connection, ended and reaped with it). Both
//!   profiles on the same endpoint: Streamable HTTP (POST, GET as SSE, DELETE) and WebSocket
//!   (GET with `Upgrade`). `GET /healthz` (alive) and `GET /readyz` (under the connection
//!   limit, every [`ReadinessCheck`] passing) answer without a credential; `GET /metrics`
//!   serves [`Metrics`] in the Prometheus text format when they are on;
//!   [`ServerBuilder::observe`] tells an observer of your own about every routed message,
//!   and [`ServerBuilder::dashboard`] serves a live page ([`live`]) at `GET /`.
//! * [`serve_live`]: the same live page on an address of its own.
//! * [`connect`] / [`connect_client`]: reach such an endpoint (`http://HOST/acp` or
//!   `ws://HOST/acp`) and get the same [`acp_client::ClientConnection`] and
//!   [`acp_client::AgentHandle`] as over stdio.
//!
//! Secure by default: a credential on every request ([`BearerToken`] or your own
//! [`Authenticator`], else 401), browser origins refused unless listed, a connection's
//! sessions reachable only through that connection, [`Limits`] on sizes, counts and idle
//! time, a remote client's MCP servers held to an [`acp_agent::mcp::McpPolicy`] before the
//! agent sees them (no stdio server, no address that is not public:
//! [`ServerBuilder::mcp_policy`]; sessions under a served root with [`ServerBuilder::root`]),
//! and a server that will not listen beyond loopback without a credential. TLS is not
//! terminated here: put a proxy in front (see `docs/DEPLOYMENT.md`).
//!
//! ```
//! use acp_client::Client;
//! use acp_remote::{BearerToken, ConnectOptions, Server, connect_client};
//! use acp_agent::{Agent, AgentContext, Error, PromptContext, types::*};
//!
//! struct Echo;
//!
//! #[acp_agent::async_trait]
//! impl Agent for Echo {
//!     async fn initialize(&self, _p: InitializeRequest, _cx: &AgentContext)
//!         -> Result<InitializeResponse, Error> {
//!         Ok(InitializeResponse::new(ProtocolVersion::V1))
//!     }
//!     async fn new_session(&self, _p: NewSessionRequest, _cx: &AgentContext)
//!         -> Result<NewSessionResponse, Error> {
//!         Ok(NewSessionResponse::new("s1"))
//!     }
//!     async fn prompt(&self, _p: PromptRequest, cx: &PromptContext)
//!         -> Result<PromptResponse, Error> {
//!         cx.session().message_chunk("hello").await?;
//!         Ok(PromptResponse::new(StopReason::EndTurn))
//!     }
//! }
//!
//! struct Quiet;
//! impl Client for Quiet {}
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::in_process(|| Echo)
//!     .authenticator(BearerToken::new("s3cret")?)
//!     .bind("127.0.0.1:0".parse()?)
//!     .await?;
//! let options = ConnectOptions::new().token("s3cret");
//! // `ws://` for the WebSocket profile.
//! let conn = connect_client(Quiet, &server.url(), &options, Default::default()).await?;
//! let agent = conn.agent();
//! agent.initialize(InitializeRequest::new(ProtocolVersion::V1)).await?;
//! let session = agent.new_session(NewSessionRequest::new("/tmp", [])).await?;
//! let done = agent.prompt(PromptRequest::new(session.session_id, ["hi".into()])).await?;
//! assert_eq!(done.stop_reason, StopReason::EndTurn);
//! conn.close();
//! server.shutdown();
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod client;
mod frames;
mod http;
pub mod live;
mod metered_store;
pub mod metrics;
mod security;
mod server;

/// Re-exported from acp-store: a store that reports its operations ([`Metrics`] is a meter).
pub use acp_store::MeteredStore;
pub use client::{
    ConnectOptions, Finished, LinkReader, LinkWriter, Profile, RemoteConnector, RemoteLink,
    RemoteTransport, connect, connect_client, connect_transport,
};
pub use live::{LiveFeed, LiveServer, serve_live};
pub use metrics::Metrics;
pub use security::{Authenticator, BearerToken, BearerTokens, Identity, Limits, NoAuth};
pub use server::{ReadinessCheck, RunningServer, Server, ServerBuilder};

/// The header naming the connection (set by the server on `initialize`'s answer and on the
/// WebSocket's 101, sent by the client on every later request).
pub const HEADER_CONNECTION_ID: &str = "acp-connection-id";
/// The header naming the session a request, stream or answer belongs to.
pub const HEADER_SESSION_ID: &str = "acp-session-id";

/// What can go wrong setting up either side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is refused (no credential on a public address, an empty token, a
    /// URL this crate cannot reach).
    #[error("{0}")]
    Config(String),
    /// Listening or connecting failed.
    #[error("{0}")]
    Io(#[source] std::io::Error),
    /// The server refused the connection (its HTTP status and what it said).
    #[error("the server answered {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The start of its body.
        message: String,
    },
    /// The WebSocket handshake failed.
    #[error("websocket: {0}")]
    WebSocket(String),
}

/// A fresh bearer token: 256 random bits from the OS, hex (for a server started without one,
/// which then prints it for its users).
pub fn random_token() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Config(format!("no OS randomness for a token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A connection id: 128 random bits from the OS, hex; `None` if the OS has no randomness
/// to give (the connection is then refused rather than given a guessable id).
pub(crate) fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
