//! [`Builder`], the one way to start a client: what it speaks, then where it runs (the same
//! shape as acp-agent's `Builder`).
//!
//! ```text
//! Builder::new(client)                      what it speaks: v1 (the default)
//!     .negotiate(options)                   ... or the dialects of a list, offered in turn
//!     .dialect(Dialect::Legacy009)          ... or one legacy dialect, pinned
//!     .v2(v2_client, offer)                 ... or v2 first, falling back to v1
//!     .config(config)                       how
//!     .spawn(&command) | .attach(&mut process) | .io(r, w) | .over(t) | .pipe()
//! ```
//!
//! A client keeps no sessions of its own (the agent's store does), so there is no
//! `.store`. There is no `.url` here either: acp-remote's client (`acp_remote::client`)
//! connects to an agent served over WebSocket or HTTP and hands a transport to
//! [`Builder::over`].
//!
//! A v1 client starts at once (`.io()` returns the [`ClientConnection`]; the `initialize`
//! is yours to send); a negotiating one offers its handshake first, so `.io()` is `async`,
//! does the handshake and may fail ([`NegotiationError`], or `v2::VersionError` with the
//! `v2` feature).

use std::sync::Arc;

use acp_dialects::{AdapterOptions, Input, Output};
use acp_rpc::Config;
use acp_rpc::transport::{MemoryEnd, Transport, memory_pair};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::negotiate::{NegotiateOptions, Negotiated, NegotiationError};
#[cfg(feature = "process")]
use crate::process::{AgentCommand, AgentProcess, ProcessError};
#[cfg(feature = "v2")]
use crate::v2::{Connected, Offer, VersionError};
use crate::{Client, ClientConnection, Dialect};

/// How many messages each direction of [`Builder::pipe`]'s in-memory pair holds unread.
pub const PIPE_CAPACITY: usize = 64;

/// Starts a client connection: see the [module docs](self). `S` is what the client speaks:
/// [`V1`] (the default), [`Pinned`] (one legacy dialect), [`Negotiating`] (a list) or
/// `Versions` (v2 and v1, with the `v2` feature).
#[must_use = "a builder does nothing until told where it runs (.spawn(), .io(), .over(), .pipe())"]
pub struct Builder<S> {
    speaks: S,
    config: Config,
    legacy: AdapterOptions,
}

/// What a [`Builder`] speaks: v1 only, started at once.
pub struct V1<C>(Arc<C>);
/// What a [`Builder`] speaks: one legacy dialect ([`Builder::dialect`]), translated for the
/// v1 client.
pub struct Pinned<C>(Arc<C>, Dialect);
/// What a [`Builder`] speaks: the dialects of [`Builder::negotiate`], offered in turn.
pub struct Negotiating<C>(Arc<C>, NegotiateOptions);
/// What a [`Builder`] speaks: v2 first, v1 when the agent answers 1 ([`Builder::v2`],
/// [`Builder::v2_only`]).
#[cfg(feature = "v2")]
pub struct Versions<C1, C2>(Option<Arc<C1>>, C2, Offer);

impl<C: Client> Builder<V1<C>> {
    /// A builder for `client`, speaking v1 with the default [`Config`].
    pub fn new(client: C) -> Self {
        Self::shared(Arc::new(client))
    }

    /// [`Builder::new`] with a client shared with other code.
    pub fn shared(client: Arc<C>) -> Self {
        Builder {
            speaks: V1(client),
            config: Config::default(),
            legacy: AdapterOptions::default(),
        }
    }

    /// Offers the dialects of `options` in turn (see [`crate::negotiate`]) and starts the
    /// connection in the first one the agent answers, its v1 `initialize` done. The
    /// options' configuration and translation options become the builder's.
    pub fn negotiate(self, options: NegotiateOptions) -> Builder<Negotiating<C>> {
        Builder {
            config: options.config.clone(),
            legacy: options.legacy.clone(),
            speaks: Negotiating(self.speaks.0, options),
        }
    }

    /// Speaks only the legacy `dialect` (its module in [`crate::legacy`] has the mapping),
    /// the v1 client behind a translation; its wire's [`Config`] is the builder's. Nothing
    /// is sent until you call the handle (the v1 `initialize` included).
    pub fn dialect(self, dialect: Dialect) -> Builder<Pinned<C>> {
        self.map(|V1(client)| Pinned(client, dialect))
    }

    /// Offers v2 with `v2` first (the `initialize` of each version is in `offer`), and
    /// falls back to v1 with this builder's client when the agent answers 1 (see
    /// [`crate::v2`]).
    #[cfg(feature = "v2")]
    pub fn v2<C2: crate::v2::Client>(self, v2: C2, offer: Offer) -> Builder<Versions<C, C2>> {
        let config = offer.config.clone();
        self.map(|V1(client)| Versions(Some(client), v2, offer))
            .config(config)
    }

    /// Runs over a reader/writer pair: the agent's stdout and stdin. Must be called within
    /// a Tokio runtime, as every method that starts a connection.
    pub fn io<R, W>(self, reader: R, writer: W) -> ClientConnection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        ClientConnection::start(self.speaks.0, (reader, writer), self.config)
    }

    /// Runs on any [`Transport`]: a `(reader, writer)` pair, one end of an
    /// [`acp_rpc::transport::memory_pair`] (an agent in this process, see acp-agent's
    /// `Builder::pipe`), or acp-remote's WebSocket transport.
    pub fn over<T: Transport>(self, transport: T) -> ClientConnection {
        ClientConnection::start(self.speaks.0, transport, self.config)
    }

    /// Runs in this process: the client on one end of an in-memory message pair, the other
    /// end returned for the agent (`acp_agent::Builder::new(agent).over(end)`).
    pub fn pipe(self) -> (ClientConnection, MemoryEnd) {
        let (ours, theirs) = memory_pair(PIPE_CAPACITY);
        (self.over(ours), theirs)
    }

    /// Spawns the agent `command` (see [`AgentProcess`]) and runs over its stdio. The
    /// connection is closed by [`AgentProcess::shutdown`].
    #[cfg(feature = "process")]
    pub fn spawn(
        self,
        command: &AgentCommand,
    ) -> Result<(AgentProcess, ClientConnection), ProcessError> {
        let mut process = AgentProcess::spawn(command)?;
        let conn = self.attach(&mut process)?;
        Ok((process, conn))
    }

    /// Runs over the stdio of an agent process already spawned (to read its pid first,
    /// say). The connection is closed by [`AgentProcess::shutdown`].
    #[cfg(feature = "process")]
    pub fn attach(self, process: &mut AgentProcess) -> Result<ClientConnection, ProcessError> {
        process.connect(self.speaks.0, self.config)
    }
}

#[cfg(feature = "v2")]
impl<C2: crate::v2::Client> Builder<Versions<NoV1, C2>> {
    /// A builder for a v2 client that offers v2 only.
    pub fn v2_only(v2: C2, offer: Offer) -> Self {
        let config = offer.config.clone();
        Builder {
            speaks: Versions(None, v2, offer),
            config,
            legacy: AdapterOptions::default(),
        }
    }
}

impl<S> Builder<S> {
    /// The connection's configuration (limits, timeouts, observers; see
    /// [`acp_rpc::observe`] for the observer that is told about every line and message,
    /// a wire trace's recorder among them).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// How a legacy agent is translated.
    pub fn legacy(mut self, options: AdapterOptions) -> Self {
        self.legacy = options;
        self
    }

    fn map<T>(self, f: impl FnOnce(S) -> T) -> Builder<T> {
        Builder {
            speaks: f(self.speaks),
            config: self.config,
            legacy: self.legacy,
        }
    }
}

impl<C: Client> Builder<Pinned<C>> {
    /// Drives an agent of the pinned dialect (its stdout is `reader`, its stdin `writer`)
    /// and gives back an ordinary v1 [`ClientConnection`]. `None` when this build lacks the
    /// dialect (or it is v1: use the builder without [`Builder::dialect`]).
    pub fn io(self, reader: impl Input, writer: impl Output) -> Option<ClientConnection> {
        let Pinned(client, dialect) = self.speaks;
        let options = self.legacy.with_config(self.config);
        crate::legacy::connect_translated(dialect, client, reader, writer, options)
    }
}

impl<C: Client> Builder<Negotiating<C>> {
    /// Offers the dialects in turn on the agent's stdin (`writer`), reading its stdout
    /// (`reader`); see [`crate::negotiate`].
    pub async fn io(
        self,
        reader: impl Input,
        writer: impl Output,
    ) -> Result<Negotiated, NegotiationError> {
        let Negotiating(client, mut options) = self.speaks;
        options.config = self.config;
        options.legacy = self.legacy;
        crate::negotiate::connect(client, reader, writer, options).await
    }

    /// Spawns the agent `command` and negotiates over its stdio; a failed negotiation
    /// names the agent's stderr tail ([`ProcessError::Negotiation`]).
    #[cfg(feature = "process")]
    pub async fn spawn(
        self,
        command: &AgentCommand,
    ) -> Result<(AgentProcess, Negotiated), ProcessError> {
        let mut process = AgentProcess::spawn(command)?;
        let negotiated = self.attach(&mut process).await?;
        Ok((process, negotiated))
    }

    /// Negotiates over the stdio of an agent process already spawned; a failed negotiation
    /// names the agent's stderr tail.
    #[cfg(feature = "process")]
    pub async fn attach(self, process: &mut AgentProcess) -> Result<Negotiated, ProcessError> {
        let Negotiating(client, mut options) = self.speaks;
        options.config = self.config;
        options.legacy = self.legacy;
        process.negotiate(client, options).await
    }
}

#[cfg(feature = "v2")]
impl<C1: Client, C2: crate::v2::Client> Builder<Versions<C1, C2>> {
    /// Offers the versions (see [`crate::v2`]) on the agent's stdin (`writer`), reading its
    /// stdout (`reader`), and starts the connection the agent's answer calls for.
    pub async fn io(
        self,
        reader: impl Input,
        writer: impl Output,
    ) -> Result<Connected, VersionError> {
        let Versions(v1, v2, mut offer) = self.speaks;
        offer.config = self.config;
        crate::v2::versions::connect(v1, Some(v2), reader, writer, offer).await
    }
}

/// The v1 side of [`Builder::v2_only`]: no v1 client. Never run.
#[cfg(feature = "v2")]
#[derive(Debug)]
pub struct NoV1;

#[cfg(feature = "v2")]
impl Client for NoV1 {}
