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
mod builder;
mod connection;
mod guard;
mod ops;
mod outbox;
mod streamable_http;
mod websocket;
mod write_timeout;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub(crate) use crate::http::{Body, SseBody, text};
use crate::live::LiveFeed;
use crate::metrics::Metrics;
use crate::security::{Authenticator, Identity, Limits, Origins};
use crate::{HEADER_CONNECTION_ID, HEADER_SESSION_ID};
use acp_rpc::sync::lock;
use backend::Backend;
pub(crate) use builder::ObserverFactory;
pub use builder::{RunningServer, Server, ServerBuilder};
use connection::Conn;
use connection::Guard;
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
