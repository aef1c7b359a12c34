//! [`Builder`], the one way to start an agent: what it speaks, what it keeps, then where it
//! runs.
//!
//! ```text
//! Builder::new(agent)                       what it speaks: v1 (the default)
//!     .negotiate(options)                   ... or the dialects of a list, detected
//!     .dialect(Dialect::Legacy009)          ... or one legacy dialect, pinned
//!     .v2(v2_agent)                         ... or v1 and v2, by the client's offer
//!     .store(SqliteStore::open(dir)?)       what it keeps
//!     .config(config).identity(name)        how
//!     .stdio() | .io(r, w) | .over(t) | .pipe()    where it runs
//! ```
//!
//! The agent side has no `.spawn` (the client starts the agent's process) and no `.url`:
//! an agent served over WebSocket or HTTP is hosted by acp-remote's server
//! (`acp_remote::server`), which runs the builder for each remote connection.
//!
//! A v1 agent starts at once (`.stdio()` returns the [`AgentConnection`]); a negotiated one
//! first reads the client's first message, so `.stdio()` is `async` and may fail
//! ([`NegotiationError`], or `v2::VersionError` with the `v2` feature).

use std::sync::Arc;

use acp_dialects::{AdapterOptions, Input, Output, Translation};
use acp_rpc::Config;
use acp_rpc::transport::{MemoryEnd, Transport, memory_pair};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::negotiate::{NegotiateOptions, NegotiatedConnection, NegotiationError};
use crate::store::SessionStore;
#[cfg(feature = "v2")]
use crate::v2::{Served, VersionError};
use crate::{Agent, AgentConnection, Dialect};

/// How many messages each direction of [`Builder::pipe`]'s in-memory pair holds unread.
pub const PIPE_CAPACITY: usize = 64;

/// Starts an agent connection: see the [module docs](self). `S` is what the agent speaks:
/// [`V1`] (the default), [`Pinned`] (one legacy dialect), [`Negotiated`] (a list) or
/// `Versions` (v1 and v2, with the `v2` feature).
#[must_use = "a builder does nothing until told where it runs (.stdio(), .io(), .over(), .pipe())"]
pub struct Builder<S> {
    speaks: S,
    config: Config,
    store: Option<Arc<dyn SessionStore>>,
    identity: Option<Arc<str>>,
    legacy: AdapterOptions,
    dialects: Vec<Dialect>,
}

/// What a [`Builder`] speaks: v1 only, started at once.
pub struct V1<A>(A);
/// What a [`Builder`] speaks: one legacy dialect ([`Builder::dialect`]), translated for the
/// v1 agent.
pub struct Pinned<A>(A, Dialect);
/// What a [`Builder`] speaks: the accepted dialects of [`Builder::negotiate`], the one
/// served detected from the client's first message.
/// The `bool`: whether a v2 offer is served through the v1<->v2 translation
/// (`NegotiateOptions::with_v2`, feature `v2`).
pub struct Negotiated<A>(A, bool);
/// What a [`Builder`] speaks: v1, v2 or both ([`Builder::v2`], [`Builder::v2_only`]), by the
/// version the client's `initialize` offers.
#[cfg(feature = "v2")]
pub struct Versions<A1, A2>(Option<A1>, Option<A2>);

impl<A: Agent> Builder<V1<A>> {
    /// A builder for `agent`, speaking v1 with the default [`Config`], no store.
    pub fn new(agent: A) -> Self {
        Builder {
            speaks: V1(agent),
            config: Config::default(),
            store: None,
            identity: None,
            legacy: AdapterOptions::default(),
            dialects: Vec::new(),
        }
    }

    /// Accepts the dialects of `options` (v1 and the legacy dialects compiled in, by
    /// default every one), the one served detected from the client's first message (see
    /// [`crate::negotiate`]). The options' configuration, translation options and store
    /// become the builder's.
    pub fn negotiate(self, options: NegotiateOptions) -> Builder<Negotiated<A>> {
        #[cfg(feature = "v2")]
        let v2 = options.side.v2;
        #[cfg(not(feature = "v2"))]
        let v2 = false;
        let store = options.side.store.map(|s| s.0).or(self.store);
        Builder {
            speaks: Negotiated(self.speaks.0, v2),
            config: options.config,
            store,
            identity: self.identity,
            legacy: options.legacy,
            dialects: options.dialects,
        }
    }

    /// Speaks only the legacy `dialect` (its module in [`crate::legacy`] has the mapping),
    /// the v1 agent behind a translation; its wire's [`Config`] is the builder's.
    pub fn dialect(self, dialect: Dialect) -> Builder<Pinned<A>> {
        self.map(|V1(agent)| Pinned(agent, dialect))
    }

    /// Serves v2 clients with `v2` and v1 clients with this builder's agent, by the version
    /// the client's `initialize` offers (see the table in [`crate::v2`]).
    #[cfg(feature = "v2")]
    pub fn v2<A2: crate::v2::Agent>(self, v2: A2) -> Builder<Versions<A, A2>> {
        self.map(|V1(agent)| Versions(Some(agent), Some(v2)))
    }

    /// Serves v1 only, but through the version detection of [`Builder::v2`]: the client's
    /// first message is read before the connection starts (a client that closes at once is
    /// [`VersionError::ClosedBeforeFirstMessage`]) and the result says which version was
    /// served ([`Served::version`], always 1 here: a v2 offer is answered in v1, the "only
    /// v1" column of the table in [`crate::v2`]). A plain v1 agent (`.io()` without
    /// `v1_only`) serves the same without waiting for the first message.
    #[cfg(feature = "v2")]
    pub fn v1_only(self) -> Builder<Versions<A, NoV2>> {
        self.map(|V1(agent)| Versions(Some(agent), None))
    }

    /// Serves over stdin/stdout, the usual way an editor runs an agent. When they are pipes
    /// or sockets they are driven by tokio's reactor in non-blocking mode (see
    /// [`acp_rpc::stdio`]), so do not let subprocesses inherit them. Must be called within a
    /// Tokio runtime, as every method that starts a connection.
    pub fn stdio(self) -> AgentConnection {
        self.io(acp_rpc::stdio::stdin(), acp_rpc::stdio::stdout())
    }

    /// Serves over a reader/writer pair (the client's messages in, the agent's out).
    pub fn io<R, W>(self, reader: R, writer: W) -> AgentConnection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.over((reader, writer))
    }

    /// Serves on any [`Transport`]: a `(reader, writer)` pair, or one end of an
    /// [`acp_rpc::transport::memory_pair`].
    pub fn over<T: Transport>(self, transport: T) -> AgentConnection {
        crate::connection::serve_inner(
            self.speaks.0,
            transport,
            self.config,
            self.store,
            self.identity,
        )
    }

    /// Serves in this process: the agent runs on one end of an in-memory message pair (no
    /// JSON lines, no byte pipe), and the other end is returned for the client
    /// (`acp_client::Builder::new(client).over(end)`).
    pub fn pipe(self) -> (AgentConnection, MemoryEnd) {
        let (ours, theirs) = memory_pair(PIPE_CAPACITY);
        (self.over(ours), theirs)
    }
}

#[cfg(feature = "v2")]
impl<A2: crate::v2::Agent> Builder<Versions<NoV1, A2>> {
    /// A builder for a v2 agent that serves v2 only (a client offering v1 is answered in v2
    /// and decides whether it can go on).
    pub fn v2_only(agent: A2) -> Self {
        Builder::new(NoV1).map(|_| Versions(None, Some(agent)))
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

    /// Keeps the sessions in `store` (see [`crate::store`]): the connection records every
    /// session and serves `session/load`, `session/resume`, `session/list`, `session/close`
    /// and `session/delete` wherever the agent leaves them at their default. Open the store
    /// first (`SqliteStore::open`) so that an unusable directory is an error at start.
    pub fn store(mut self, store: impl SessionStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// [`Builder::store`] with a store already shared.
    pub fn shared_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Serves on behalf of `identity`, the name of the remote caller's credential (`None`:
    /// the unnamed identity, the default): the agent reads it from
    /// [`crate::AgentContext::identity`], and with a store the sessions this connection
    /// creates are that identity's ([`crate::store::SessionMeta::owner`]), its
    /// `session/list` shows only those, and another identity's session is unknown to it.
    /// What a server (acp-remote) sets for each remote connection.
    pub fn identity(mut self, identity: Option<&str>) -> Self {
        self.identity = identity.map(Arc::from);
        self
    }

    /// How a legacy client is translated (the working directory a dialect without one
    /// falls back to, local files, the handshake).
    pub fn legacy(mut self, options: AdapterOptions) -> Self {
        self.legacy = options;
        self
    }

    fn map<T>(self, f: impl FnOnce(S) -> T) -> Builder<T> {
        Builder {
            speaks: f(self.speaks),
            config: self.config,
            store: self.store,
            identity: self.identity,
            legacy: self.legacy,
            dialects: self.dialects,
        }
    }
}

impl<A: Agent> Builder<Pinned<A>> {
    /// Serves the pinned dialect over stdin/stdout. `None` when this build lacks the
    /// dialect (or it is v1: use the builder without [`Builder::dialect`]).
    pub fn stdio(self) -> Option<Translation> {
        self.io(acp_rpc::stdio::stdin(), acp_rpc::stdio::stdout())
    }

    /// Serves the pinned dialect over a reader/writer pair; `None` as for
    /// [`Builder::stdio`].
    pub fn io(self, reader: impl Input, writer: impl Output) -> Option<Translation> {
        let Pinned(agent, dialect) = self.speaks;
        let legacy = self.legacy.with_config(self.config);
        crate::legacy::serve_translated(dialect, agent, reader, writer, legacy, self.store)
    }
}

impl<A: Agent> Builder<Negotiated<A>> {
    /// Serves over stdin/stdout in whatever accepted dialect the client speaks.
    pub async fn stdio(self) -> Result<NegotiatedConnection, NegotiationError> {
        self.io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Waits for the client's first message, detects its dialect, and serves the agent in
    /// the accepted dialect that fits (see [`crate::negotiate`]).
    pub async fn io(
        self,
        reader: impl Input,
        writer: impl Output,
    ) -> Result<NegotiatedConnection, NegotiationError> {
        let Negotiated(agent, v2) = self.speaks;
        #[cfg(not(feature = "v2"))]
        let _ = v2;
        let options = crate::negotiate::Accept {
            dialects: self.dialects,
            config: self.config,
            legacy: self.legacy,
            store: self.store,
            identity: self.identity,
            #[cfg(feature = "v2")]
            v2,
        };
        crate::negotiate::serve(agent, reader, writer, options).await
    }

    /// Serves on frames (one message each: acp-remote's in-process agents), in the protocol
    /// version the client's first message offers: v1, or v2 through the v1<->v2 translation
    /// when the options accept it (`NegotiateOptions::with_v2`). The legacy dialects are
    /// not detected here: the network transport carries v1 and v2 only (a legacy client's
    /// first message is answered by the v1 connection, as it answers any it cannot read).
    pub async fn over_frames(
        self,
        mut frames: acp_rpc::transport::FrameAdapter,
    ) -> Result<NegotiatedConnection, NegotiationError> {
        let first = frames
            .first_frame()
            .await
            .ok_or(NegotiationError::ClosedBeforeFirstMessage)?;
        let Negotiated(agent, v2) = self.speaks;
        let (config, store, identity) = (self.config, self.store, self.identity);
        #[cfg(feature = "v2")]
        if v2 && crate::v2::first_line_goes_to_v2(&first, true) {
            let options = self.legacy.with_config(config);
            let translation = crate::v2::serve_v1_over(agent, frames, options, store, identity);
            return Ok(NegotiatedConnection::translated_v2(
                translation.peer().clone(),
            ));
        }
        let _ = (v2, first);
        let conn = crate::connection::serve_inner(agent, frames, config, store, identity);
        Ok(NegotiatedConnection::served_v1(conn))
    }
}

#[cfg(feature = "v2")]
impl<A1: Agent, A2: crate::v2::Agent> Builder<Versions<A1, A2>> {
    /// Serves over stdin/stdout in the version the client offers.
    pub async fn stdio(self) -> Result<Served, VersionError> {
        self.io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Reads the client's `initialize` and serves the version it offers (see the table in
    /// [`crate::v2`]). A store and an identity apply to the v1 side.
    pub async fn io(self, reader: impl Input, writer: impl Output) -> Result<Served, VersionError> {
        let Versions(v1, v2) = self.speaks;
        let (config, store, identity) = (self.config, self.store, self.identity);
        crate::v2::versions::serve(v1, v2, reader, writer, config, store, identity).await
    }
}

/// The v2 side of [`Builder::v1_only`]: no v2 agent. Never served.
#[cfg(feature = "v2")]
#[derive(Debug)]
pub struct NoV2;

#[cfg(feature = "v2")]
impl crate::v2::Agent for NoV2 {}

/// The v1 side of [`Builder::v2_only`]: no v1 agent. Never served.
#[cfg(feature = "v2")]
#[derive(Debug)]
pub struct NoV1;

#[cfg(feature = "v2")]
#[async_trait::async_trait]
impl Agent for NoV1 {
    async fn initialize(
        &self,
        _: crate::types::InitializeRequest,
        _: &crate::AgentContext,
    ) -> Result<crate::types::InitializeResponse, crate::Error> {
        Err(crate::Error::method_not_found("initialize"))
    }
}
