//! The server: one `/acp` endpoint speaking both profiles of the RFD (Streamable HTTP and
//! WebSocket) in front of an in-process [`acp_agent::Agent`] or a stdio agent command, plus
//! `GET /healthz`, `GET /readyz` and `GET /metrics` (see `ops.rs`).
//!
//! ```no_run
//! use acp_remote::{BearerToken, Server};
//! # use acp_agent::{Agent, AgentContext, Error, types::*};
//! # struct Echo;
//! # #[acp_agent::async_trait]
//! # impl Agent for Echo {
//! #     async fn initialize(&self, _p: InitializeRequest, _cx: &AgentContext)
//! #         -> Result<InitializeResponse, Error> { Ok(InitializeResponse::new(ProtocolVersion::V1)) }
//! # }
//! # async fn run() -> Result<(), acp_remote::Error> {
//! let server = Server::in_process(|| Echo)
//!     .authenticator(BearerToken::new("a long random secret")?)
//!     .bind("127.0.0.1:0".parse().unwrap())
//!     .await?;
//! println!("serving on {}", server.url());
//! server.closed().await;
//! # Ok(()) }
//! ```

mod backend;
mod connection;
mod guard;
mod ops;
mod outbox;
mod streamable_http;
mod websocket;
mod write_timeout;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_agent::Agent;
use acp_client::process::AgentCommand;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub(crate) use crate::http::{Body, SseBody, text};
use crate::live::LiveFeed;
use crate::metrics::Metrics;
use crate::security::{Authenticator, Identity, Limits, NoAuth, Origins};
use crate::{Error, HEADER_CONNECTION_ID, HEADER_SESSION_ID};
use acp_rpc::observe::SharedObserver;
use acp_rpc::sync::lock;
use backend::{Backend, Guard};
use connection::Conn;
pub use ops::ReadinessCheck;

/// A WebSocket's read buffer (tungstenite's default, 128 KiB, is allocated up front for
/// every socket: an idle connection cost 250 KiB with both ends in one process).
pub(crate) const READ_BUFFER: usize = 8 * 1024;

/// The most of a connection's queued output a stream's writer takes at once (one flush of
/// WebSocket frames, one chunk of SSE events): a burst of updates leaves in few writes, and
/// the first of a burst never waits for more.
pub(crate) const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// How often idle connections are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

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
    guard: guard::Settings,
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

/// What every request handler reads.
pub(crate) struct Shared {
    backend: Backend,
    auth: Arc<dyn Authenticator>,
    /// No credential was configured (a loopback server): the dashboard then answers only
    /// requests that name a loopback host, as [`crate::live::serve_live`] does.
    credential_free: bool,
    origins: Origins,
    pub(crate) limits: Arc<Limits>,
    pub(crate) metrics: Option<Arc<Metrics>>,
    readiness: ops::Checks,
    dashboard: Option<Arc<dyn LiveFeed>>,
    /// The dashboard's open event streams ([`crate::live::MAX_EVENT_STREAMS`]).
    viewers: crate::live::Viewers,
    observers: Option<ObserverFactory>,
    guard: Option<Arc<guard::SessionGuard>>,
    conns: std::sync::Mutex<HashMap<String, Arc<Conn>>>,
    /// Connections open or being opened (for the connection limit).
    reserved: AtomicUsize,
    stop: CancellationToken,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("backend", &self.backend)
            .finish()
    }
}

impl Shared {
    /// The Streamable HTTP connection `id` if it exists and belongs to `who` (a WebSocket
    /// connection is reachable through its socket only).
    pub(crate) fn conn(&self, id: &str, who: &Identity) -> Option<Arc<Conn>> {
        lock(&self.conns)
            .get(id)
            .filter(|c| &c.identity == who && !c.websocket && !c.closed.is_cancelled())
            .cloned()
    }

    /// Starts a new connection's agent, within the connection limit. The error is the
    /// status to answer.
    pub(crate) fn open(&self, who: Identity, websocket: bool) -> Result<Arc<Conn>, StatusCode> {
        // A socket accepted just before `shutdown` is still served: it gets no connection
        // on a server that has stopped (a reconnecting client would land on it, not on the
        // server that took the address over).
        if self.stop.is_cancelled() {
            return Err(StatusCode::SERVICE_UNAVAILABLE);
        }
        if self.reserved.fetch_add(1, Ordering::SeqCst) >= self.limits.max_connections {
            self.reserved.fetch_sub(1, Ordering::SeqCst);
            if let Some(metrics) = &self.metrics {
                metrics.connection_refused("limit");
            }
            return Err(StatusCode::SERVICE_UNAVAILABLE);
        }
        let Some(id) = crate::new_id() else {
            self.reserved.fetch_sub(1, Ordering::SeqCst);
            tracing::error!("no OS randomness for a connection id");
            return Err(StatusCode::SERVICE_UNAVAILABLE);
        };
        let agent = match self.backend.start(&who) {
            Ok(agent) => agent,
            Err(error) => {
                self.reserved.fetch_sub(1, Ordering::SeqCst);
                tracing::error!(%error, "could not start the agent");
                if let Some(metrics) = &self.metrics {
                    metrics.connection_refused("agent_start");
                }
                return Err(StatusCode::BAD_GATEWAY);
            }
        };
        if let Some(metrics) = &self.metrics {
            metrics.connection_opened();
            if matches!(agent.guard, Some(Guard::Gateway(_))) {
                metrics.agent_started();
            }
        }
        let observers = connection::Observers {
            metrics: self.metrics.clone(),
            other: self.observers.as_ref().map(|make| make()),
        };
        let conn = Conn::start(id, who, websocket, agent, self.limits.clone(), observers);
        conn.set_guard(self.guard.clone());
        Ok(conn)
    }

    /// Makes a started connection reachable by its id.
    pub(crate) fn register(self: &Arc<Self>, conn: &Arc<Conn>) {
        lock(&self.conns).insert(conn.id.clone(), conn.clone());
        // `shutdown` stops, then ends what is registered: a connection registered after
        // that ends here (one registered before, there).
        if self.stop.is_cancelled() {
            conn.close("server shutdown");
        }
        let shared = self.clone();
        let watched = conn.clone();
        tokio::spawn(async move {
            watched.closed.cancelled().await;
            shared.forget(&watched.id);
        });
    }

    /// Releases a connection's slot (after [`Shared::open`], whether or not registered).
    pub(crate) fn release(&self) {
        self.reserved.fetch_sub(1, Ordering::SeqCst);
    }

    fn forget(&self, id: &str) {
        if lock(&self.conns).remove(id).is_some() {
            self.release();
        }
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let sockets = Arc::new(tokio::sync::Semaphore::new(shared.limits.max_sockets));
    loop {
        let accepted = tokio::select! {
            biased;
            () = shared.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, peer)) = accepted else {
            // Out of file descriptors and the like: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = sockets.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "socket limit reached; connection dropped");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let header_timeout = shared.limits.header_timeout;
        let stream = write_timeout::WriteTimeout::new(stream, shared.limits.write_timeout);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(shared, req).await) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
            if let Err(error) = served {
                tracing::debug!(%peer, %error, "http connection ended");
            }
            drop(permit);
        });
    }
}

/// Closes connections idle past the limit.
async fn sweep(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(SWEEP_EVERY) => {}
            () = shared.stop.cancelled() => return,
        }
        let idle: Vec<_> = lock(&shared.conns)
            .values()
            .filter(|c| c.is_idle())
            .cloned()
            .collect();
        for conn in idle {
            conn.close("idle timeout");
        }
    }
}

/// Every request: `/healthz`, then origin and credential checks, then the profile.
async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() == "/healthz" && req.method() == Method::GET {
        return text(StatusCode::OK, "ok\n");
    }
    if req.uri().path() == "/readyz" && req.method() == Method::GET {
        return ops::readyz(&shared).await;
    }
    let metrics = req.uri().path() == "/metrics" && req.method() == Method::GET;
    let live = shared
        .dashboard
        .as_ref()
        .filter(|_| crate::live::is_live_path(req.uri().path()));
    if let Some(feed) = live {
        if shared.origins.allows(req.headers()).is_err() {
            return text(StatusCode::FORBIDDEN, "cross-origin request refused\n");
        }
        // Without a credential, a page of another site whose name resolves to 127.0.0.1 (DNS
        // rebinding) could read the dashboard as its own origin: browsers send no `Origin` on
        // a same-origin GET, but the `Host` it names is not a loopback one.
        let allowed = if shared.credential_free {
            crate::live::loopback_host(req.headers())
        } else {
            crate::live::authenticate(shared.auth.as_ref(), &req).is_some()
        };
        if !allowed {
            return crate::live::refused();
        }
        return crate::live::respond(feed, &shared.viewers, &req)
            .unwrap_or_else(|| text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"));
    }
    // As the dashboard: without a credential, a page of another site rebound to 127.0.0.1
    // must not read the traffic counts as its own origin.
    if metrics && shared.credential_free && !crate::live::loopback_host(req.headers()) {
        return text(
            StatusCode::FORBIDDEN,
            "a server without a credential answers only requests naming a loopback host\n",
        );
    }
    if req.uri().path() != "/acp" && !metrics {
        return text(StatusCode::NOT_FOUND, "not found\n");
    }
    let origin = match shared.origins.allows(req.headers()) {
        Ok(origin) => origin,
        Err(()) => return text(StatusCode::FORBIDDEN, "cross-origin request refused\n"),
    };
    if req.method() == Method::OPTIONS {
        let mut response = text(StatusCode::NO_CONTENT, "");
        cors(&mut response, origin.as_deref(), true);
        return response;
    }
    let Some(who) = shared.auth.authenticate(req.headers()) else {
        let mut response = text(StatusCode::UNAUTHORIZED, "a credential is required\n");
        response
            .headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        cors(&mut response, origin.as_deref(), false);
        return response;
    };
    let mut response = match *req.method() {
        _ if metrics => ops::metrics(&shared, header(&req, "accept")),
        Method::POST => streamable_http::post(&shared, who, req).await,
        Method::GET if websocket::is_upgrade(req.headers()) => {
            websocket::upgrade(&shared, who, req)
        }
        Method::GET => streamable_http::get(&shared, who, req),
        Method::DELETE => streamable_http::delete(&shared, who, req),
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
    };
    cors(&mut response, origin.as_deref(), false);
    response
}

/// CORS headers for an allowed origin.
fn cors(response: &mut Response<Body>, origin: Option<&str>, preflight: bool) {
    let Some(origin) = origin.and_then(|o| HeaderValue::from_str(o).ok()) else {
        return;
    };
    let headers = response.headers_mut();
    headers.insert("access-control-allow-origin", origin);
    headers.insert("vary", HeaderValue::from_static("Origin"));
    headers.insert(
        "access-control-expose-headers",
        HeaderValue::from_static("Acp-Connection-Id, Acp-Session-Id"),
    );
    if preflight {
        headers.insert(
            "access-control-allow-methods",
            HeaderValue::from_static("GET, POST, DELETE"),
        );
        headers.insert(
            "access-control-allow-headers",
            HeaderValue::from_static(
                "Authorization, Content-Type, Accept, Acp-Connection-Id, Acp-Session-Id",
            ),
        );
    }
}

/// A header's value as text, if present and printable.
pub(crate) fn header<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers().get(name)?.to_str().ok()
}

/// The `Acp-Connection-Id` and `Acp-Session-Id` of a request.
pub(crate) fn ids(req: &Request<Incoming>) -> (Option<&str>, Option<&str>) {
    (
        header(req, HEADER_CONNECTION_ID),
        header(req, HEADER_SESSION_ID),
    )
}
