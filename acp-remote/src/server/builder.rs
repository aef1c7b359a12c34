//! Building a server ([`Server`]'s constructors, one per kind of agent, and
//! [`ServerBuilder`]'s settings) and the handle of a listening one ([`RunningServer`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use acp_agent::Agent;
use acp_client::process::AgentCommand;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::backend::{self, Backend};
use super::{ReadinessCheck, Shared, accept, guard, ops, sweep};
use crate::Error;
use crate::live::LiveFeed;
use crate::metrics::Metrics;
use crate::security::{Authenticator, Identity, Limits, NoAuth, Origins};
use acp_rpc::observe::SharedObserver;
use acp_rpc::sync::lock;

/// Builds a server: what it serves, who may call, from where, and its limits.
pub struct ServerBuilder {
    backend: Backend,
    auth: Option<Arc<dyn Authenticator>>,
    origins: Vec<String>,
    limits: Limits,
    metrics: Option<Arc<Metrics>>,
    readiness: ops::Checks,
    dashboard: Option<Arc<dyn LiveFeed>>,
    observers: Option<ObserverFactory>,
    /// The session guard's settings (MCP policy, served root): see `guard.rs`.
    pub(super) guard: guard::Settings,
}

/// Makes the observer of one new connection.
pub(crate) type ObserverFactory = Arc<dyn Fn() -> SharedObserver + Send + Sync>;

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("backend", &self.backend)
            .field("auth", &self.auth.is_some())
            .field("origins", &self.origins)
            .field("limits", &self.limits)
            .field("metrics", &self.metrics.is_some())
            .field("readiness", &self.readiness.len())
            .field("dashboard", &self.dashboard.is_some())
            .field("observers", &self.observers.is_some())
            .field("guard", &self.guard)
            .finish()
    }
}

/// The entry point: [`Server::in_process`] or [`Server::gateway`], then [`ServerBuilder`].
#[derive(Debug)]
pub struct Server;

impl Server {
    /// Serves an agent in process: `make` builds one agent value per remote connection,
    /// served with [`acp_agent::Builder::identity`] (each connection has its own sessions; the agent
    /// reads the caller's [`Identity::session_owner`] from
    /// [`acp_agent::AgentContext::identity`]).
    pub fn in_process<A, F>(make: F) -> ServerBuilder
    where
        A: Agent,
        F: Fn() -> A + Send + Sync + 'static,
    {
        ServerBuilder::new(Backend::in_process(make))
    }

    /// Serves in process however `serve` says: it gets the agent's end of an in-memory
    /// message pair per remote connection (a [`acp_rpc::transport::Transport`]: the
    /// connection and the agent pass whole messages, no pipe and no line framing between)
    /// and the connection's [`Identity`], and starts a connection on it, for what [`Server::in_process`] does
    /// not cover (a session store shared by every connection, a [`acp_agent::Config`],
    /// dialect negotiation). Hand the identity on
    /// ([`acp_agent::Builder::identity`] with [`Identity::session_owner`], and
    /// [`acp_agent::Builder::store`]) so that each
    /// identity reaches only its own sessions of a shared store.
    pub fn in_process_with<F>(serve: F) -> ServerBuilder
    where
        F: Fn(acp_rpc::transport::MemoryEnd, &Identity) -> acp_agent::AgentConnection
            + Send
            + Sync
            + 'static,
    {
        ServerBuilder::new(Backend::InProcess(Arc::new(serve)))
    }

    /// Serves in process in the protocol version each client's first message offers:
    /// `serve` gets the agent's end of a frame adapter and the connection's [`Identity`] and
    /// returns the negotiation, typically
    /// `acp_agent::Builder::new(agent).identity(..).negotiate(options).over_frames(frames)`
    /// with `NegotiateOptions::with_v2(true)` (feature `v2` of acp-agent): a v1 agent served
    /// to v1 clients as it is and to v2 clients through the v1<->v2 translation. Otherwise
    /// as [`Server::in_process_with`]; the session guard reads the v2 session requests as it
    /// reads v1's (their `mcpServers` and `cwd` are where v1 has them).
    pub fn in_process_negotiated<F, Fut>(serve: F) -> ServerBuilder
    where
        F: Fn(acp_rpc::transport::FrameAdapter, &Identity) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<
                Output = Result<
                    acp_agent::negotiate::NegotiatedConnection,
                    acp_agent::negotiate::NegotiationError,
                >,
            > + Send
            + 'static,
    {
        ServerBuilder::new(Backend::Negotiated(Arc::new(
            move |frames, who: &Identity| Box::pin(serve(frames, who)) as backend::BoxFuture<_>,
        )))
    }

    /// The environment variable naming a gateway child's [`Identity`] (its `.0`): set in
    /// that child's environment only, never in this process's, so an agent can keep each
    /// identity's files apart.
    pub const IDENTITY_ENV: &'static str = "ACP_IDENTITY";

    /// Serves a stdio agent command: one child process per remote connection, started at
    /// `initialize` and ended (then reaped) with the connection. Its stderr goes to this
    /// process's log (`tracing`), never to the remote client. The child gets the
    /// connection's identity in [`Server::IDENTITY_ENV`].
    pub fn gateway(command: AgentCommand) -> ServerBuilder {
        Server::gateway_with(move |_: &Identity| command.clone())
    }

    /// Serves a stdio agent command made per connection from the connection's [`Identity`]
    /// (its own working directory, sandbox or environment), otherwise as
    /// [`Server::gateway`]: [`Server::IDENTITY_ENV`] is added to what `command` makes.
    pub fn gateway_with(
        command: impl Fn(&Identity) -> AgentCommand + Send + Sync + 'static,
    ) -> ServerBuilder {
        ServerBuilder::new(Backend::Gateway(Arc::new(command)))
    }
}

impl ServerBuilder {
    fn new(backend: Backend) -> Self {
        ServerBuilder {
            backend,
            auth: None,
            origins: Vec::new(),
            limits: Limits::default(),
            metrics: None,
            readiness: Vec::new(),
            dashboard: None,
            observers: None,
            guard: guard::Settings::default(),
        }
    }

    /// Serves a live page at `GET /` and its events at `GET /events` (behind the
    /// credential like `/acp`, which a browser may give as `?token=TOKEN`; without a
    /// credential, only to requests naming a loopback host; see [`crate::live`]). Feed it
    /// with [`ServerBuilder::observe`].
    pub fn dashboard(mut self, feed: Arc<dyn LiveFeed>) -> Self {
        self.dashboard = Some(feed);
        self
    }

    /// Tells an observer about every message routed between remote clients and agents
    /// (`Incoming`: from a client towards its agent) and every client request answered,
    /// the same events [`ServerBuilder::metrics`] counts. `make` is called once per new
    /// connection, so an observer can tell connections apart (request ids repeat across
    /// them). It runs on the routing task: keep it quick.
    pub fn observe(mut self, make: impl Fn() -> SharedObserver + Send + Sync + 'static) -> Self {
        self.observers = Some(Arc::new(make));
        self
    }

    /// Counts into `metrics` and serves them at `GET /metrics` (Prometheus text format,
    /// behind the credential like `/acp`; see [`crate::metrics`]). Off by default: without
    /// it nothing is counted and `/metrics` is 404.
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Adds a condition to `GET /readyz` (which is ready, 200, when the server is under its
    /// connection limit and every check passes, else 503): a session store being reachable,
    /// say. A closure `|| async { Ok(()) }` is one.
    pub fn readiness(mut self, check: impl ReadinessCheck) -> Self {
        self.readiness.push(Arc::new(check));
        self
    }

    /// Who may call (required unless the server listens on loopback only): a
    /// [`crate::BearerToken`] or your own [`Authenticator`].
    pub fn authenticator(mut self, auth: impl Authenticator) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// Lets browser pages of this origin (`https://editor.example.com`) call; without any,
    /// a request with an `Origin` header is refused (403).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.origins.push(origin.into());
        self
    }

    /// Replaces the [`Limits`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Listens on `addr` and serves until [`RunningServer::shutdown`]. Refuses to listen on
    /// anything but a loopback address without an authenticator.
    pub async fn bind(self, addr: SocketAddr) -> Result<RunningServer, Error> {
        let credential_free = self.auth.is_none();
        let auth = match self.auth {
            Some(auth) => auth,
            None if addr.ip().is_loopback() => Arc::new(NoAuth),
            None => {
                return Err(Error::Config(format!(
                    "refusing to listen on {addr} without a credential: give a bearer token \
                     (or listen on 127.0.0.1 / ::1)"
                )));
            }
        };
        let guard = self.guard.build()?;
        let listener = TcpListener::bind(addr).await.map_err(Error::Io)?;
        let local = listener.local_addr().map_err(Error::Io)?;
        let shared = Arc::new(Shared {
            backend: self.backend,
            auth,
            credential_free,
            origins: Origins(self.origins),
            limits: Arc::new(self.limits),
            metrics: self.metrics,
            readiness: self.readiness,
            dashboard: self.dashboard,
            viewers: crate::live::Viewers::default(),
            observers: self.observers,
            guard,
            conns: std::sync::Mutex::new(HashMap::new()),
            reserved: AtomicUsize::new(0),
            stop: CancellationToken::new(),
        });
        tokio::spawn(accept(listener, shared.clone()));
        tokio::spawn(sweep(shared.clone()));
        Ok(RunningServer { local, shared })
    }
}

/// A listening server. Dropping it does not stop it; call [`RunningServer::shutdown`].
#[derive(Debug)]
pub struct RunningServer {
    local: SocketAddr,
    shared: Arc<Shared>,
}

impl RunningServer {
    /// The address it listens on (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The endpoint's URL, `http://HOST:PORT/acp`.
    pub fn url(&self) -> String {
        format!("http://{}/acp", self.local)
    }

    /// Open ACP connections, over both profiles.
    pub fn connections(&self) -> usize {
        lock(&self.shared.conns).len()
    }

    /// Stops accepting, ends every connection and its agent.
    pub fn shutdown(&self) {
        self.shared.stop.cancel();
        let conns: Vec<_> = lock(&self.shared.conns).drain().map(|(_, c)| c).collect();
        for conn in conns {
            conn.close("server shutdown");
        }
    }

    /// Resolves once [`RunningServer::shutdown`] was called.
    pub async fn closed(&self) {
        self.shared.stop.cancelled().await;
    }
}
