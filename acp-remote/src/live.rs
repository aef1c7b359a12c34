//! A live page over HTTP: `GET /` answers a self-contained HTML page, `GET /events` a stream
//! of server-sent events carrying the page's data each time it changes. The page and the
//! data come from a [`LiveFeed`]; this module only serves them, either on a [`Server`]'s own
//! address ([`ServerBuilder::dashboard`]) or on an address of its own ([`serve_live`], for
//! `acp trace --serve`).
//!
//! Who may look: the same rule as `/acp`. With an [`Authenticator`] every request needs its
//! credential; a browser cannot set an `Authorization` header on a page load or an
//! `EventSource`, so the token may also come as `?token=TOKEN` (the page passes it on to
//! `/events`). Without one, both [`serve_live`] and a [`Server`] listen on loopback only and
//! the page answers only requests whose `Host` is a loopback name (a page of another site,
//! resolved to 127.0.0.1 by DNS rebinding, is refused).
//!
//! Memory and time stay bounded: the feed holds its own bounded state, each stream sends at
//! most one event per [`MIN_INTERVAL`] (the latest state; states in between are skipped),
//! [`serve_live`] takes at most [`MAX_VIEWERS`] sockets at once, and at most
//! [`MAX_EVENT_STREAMS`] event streams are open at once on either (past it `GET /events` is
//! answered `503`).
//!
//! [`Server`]: crate::Server
//! [`ServerBuilder::dashboard`]: crate::ServerBuilder::dashboard

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::http::{Body, SseBody, text};
use crate::security::{Authenticator, Identity};

/// The shortest time between two events of one stream.
pub const MIN_INTERVAL: Duration = Duration::from_millis(200);

/// Sockets [`serve_live`] serves at once (page loads and event streams together).
pub const MAX_VIEWERS: usize = 32;

/// Event streams (`GET /events`) open at once on one server, a [`crate::Server`]'s dashboard
/// or [`serve_live`]: each costs an analysis of the feed per update, so the next one past it
/// is answered `503` ("too many viewers") rather than slowing every viewer and the server.
pub const MAX_EVENT_STREAMS: usize = 16;

/// The open event streams of one server, against [`MAX_EVENT_STREAMS`].
#[derive(Clone, Debug)]
pub(crate) struct Viewers(Arc<tokio::sync::Semaphore>);

impl Default for Viewers {
    fn default() -> Self {
        Viewers(Arc::new(tokio::sync::Semaphore::new(MAX_EVENT_STREAMS)))
    }
}

/// A comment sent on a quiet stream, so dead viewers are noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The page's content security policy: nothing from the network, inline style and script.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
                   connect-src 'self'; img-src data:";

/// What a live page shows: the page itself and its data as it changes.
pub trait LiveFeed: Send + Sync + 'static {
    /// The page served at `GET /`: a self-contained HTML document that opens `events`
    /// (relative, with the page's own query string) as an `EventSource`.
    fn page(&self) -> String;

    /// The state after version `seen`: waits until there is one, then returns its version
    /// and its data as one line (JSON, say; no newline in it).
    fn next(&self, seen: u64) -> Pin<Box<dyn Future<Output = (u64, String)> + Send + '_>>;
}

/// A listening live page ([`serve_live`]). Dropping it does not stop it; call
/// [`LiveServer::shutdown`].
#[derive(Debug)]
pub struct LiveServer {
    local: SocketAddr,
    stop: CancellationToken,
}

impl LiveServer {
    /// The address it listens on (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The page's URL, `http://HOST:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.local)
    }

    /// Stops accepting; open streams end with their sockets.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }
}

/// Serves `feed` on `addr`: `GET /` the page, `GET /events` its events. Without `auth`,
/// refuses any address but loopback.
pub async fn serve_live(
    addr: SocketAddr,
    feed: Arc<dyn LiveFeed>,
    auth: Option<Arc<dyn Authenticator>>,
) -> Result<LiveServer, Error> {
    if auth.is_none() && !addr.ip().is_loopback() {
        return Err(Error::Config(format!(
            "refusing to serve the live page on {addr} without a token: give one (or listen \
             on 127.0.0.1 / ::1)"
        )));
    }
    let listener = TcpListener::bind(addr).await.map_err(Error::Io)?;
    let local = listener.local_addr().map_err(Error::Io)?;
    let stop = CancellationToken::new();
    tokio::spawn(accept(listener, feed, auth, stop.clone()));
    Ok(LiveServer { local, stop })
}

async fn accept(
    listener: TcpListener,
    feed: Arc<dyn LiveFeed>,
    auth: Option<Arc<dyn Authenticator>>,
    stop: CancellationToken,
) {
    let sockets = Arc::new(tokio::sync::Semaphore::new(MAX_VIEWERS));
    let viewers = Viewers::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = stop.cancelled() => return,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = sockets.clone().try_acquire_owned() else {
            continue;
        };
        let (feed, auth, viewers) = (feed.clone(), auth.clone(), viewers.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (feed, auth, viewers) = (feed.clone(), auth.clone(), viewers.clone());
                async move {
                    let allowed = match &auth {
                        Some(auth) => authenticate(auth.as_ref(), &req).is_some(),
                        None => loopback_host(req.headers()),
                    };
                    let response = if !allowed {
                        refused()
                    } else {
                        respond(&feed, &viewers, &req)
                            .unwrap_or_else(|| text(StatusCode::NOT_FOUND, "not found\n"))
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(permit);
        });
    }
}

/// 401 with the hint a browser user needs.
pub(crate) fn refused() -> Response<Body> {
    let mut response = text(
        StatusCode::UNAUTHORIZED,
        "a credential is required: open the page as /?token=TOKEN\n",
    );
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer"),
    );
    response
}

/// Whether `path` is one of the live page's.
pub(crate) fn is_live_path(path: &str) -> bool {
    path == "/" || path == "/events"
}

/// The caller's identity from its headers, else from a `?token=` in the query (as an
/// `Authorization: Bearer` header for `auth`).
pub(crate) fn authenticate(auth: &dyn Authenticator, req: &Request<Incoming>) -> Option<Identity> {
    if let Some(who) = auth.authenticate(req.headers()) {
        return Some(who);
    }
    let token = query_param(req.uri().query()?, "token")?;
    let mut headers = HeaderMap::new();
    let value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    headers.insert(AUTHORIZATION, value);
    auth.authenticate(&headers)
}

/// Whether the request names a loopback host (`localhost`, `127.x`, `[::1]`).
pub(crate) fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The percent-decoded value of `name` in a query string.
fn query_param(query: &str, name: &str) -> Option<String> {
    let raw = query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The answer to `GET /` or `GET /events`, after the credential check; `None` for any
/// other request. An event stream past [`MAX_EVENT_STREAMS`] of `viewers` is answered `503`.
pub(crate) fn respond(
    feed: &Arc<dyn LiveFeed>,
    viewers: &Viewers,
    req: &Request<Incoming>,
) -> Option<Response<Body>> {
    if req.method() != Method::GET {
        return None;
    }
    match req.uri().path() {
        "/" => {
            let mut response = Response::new(Full::new(Bytes::from(feed.page())).boxed());
            let headers = response.headers_mut();
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            headers.insert("content-security-policy", HeaderValue::from_static(CSP));
            headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
            Some(response)
        }
        "/events" => {
            let Ok(viewer) = viewers.0.clone().try_acquire_owned() else {
                return Some(text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many viewers of this dashboard: close another one and reload\n",
                ));
            };
            let (tx, rx) = mpsc::channel(2);
            let feed = feed.clone();
            tokio::spawn(async move {
                stream(feed, tx).await;
                drop(viewer);
            });
            let mut response = Response::new(SseBody(rx).boxed());
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
            Some(response)
        }
        _ => None,
    }
}

/// Sends the feed's states as `data:` events, at most one per [`MIN_INTERVAL`], until the
/// viewer goes away.
async fn stream(feed: Arc<dyn LiveFeed>, tx: mpsc::Sender<Bytes>) {
    let mut seen = 0;
    loop {
        let next = tokio::select! {
            n = feed.next(seen) => n,
            () = tx.closed() => return,
            () = tokio::time::sleep(KEEPALIVE) => {
                if tx.send(Bytes::from_static(b": keepalive\n\n")).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let (version, data) = next;
        seen = version;
        let mut event = Vec::with_capacity(data.len() + 8);
        event.extend_from_slice(b"data: ");
        // One line per event: a newline in the data would split it.
        event.extend(data.bytes().filter(|&b| b != b'\n' && b != b'\r'));
        event.extend_from_slice(b"\n\n");
        if tx.send(Bytes::from(event)).await.is_err() {
            return;
        }
        tokio::time::sleep(MIN_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_tokens_are_decoded_and_hosts_checked() {
        assert_eq!(
            query_param("a=1&token=ab%2Fc+d", "token").as_deref(),
            Some("ab/c d")
        );
        assert_eq!(query_param("tokenx=1", "token"), None);
        assert_eq!(query_param("token=%zz", "token"), None);
        assert_eq!(query_param("token=%4", "token").as_deref(), Some("%4"));
        let host = |h: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(HOST, HeaderValue::from_str(h).unwrap());
            loopback_host(&headers)
        };
        assert!(host("127.0.0.1:8080") && host("localhost:1") && host("[::1]:9"));
        assert!(!host("evil.example:8080") && !host("10.0.0.1:80"));
        assert!(!loopback_host(&HeaderMap::new()));
    }
}
