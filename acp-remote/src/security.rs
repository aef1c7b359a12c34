//! Security: who may call ([`Authenticator`], [`BearerToken`]), from which browser origins,
//! and how much ([`Limits`]). The server is secure by default: every request on `/acp` needs
//! a credential, cross-origin browser requests are refused unless their origin is listed, and
//! every resource a remote peer can make the server hold has a bound.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hyper::HeaderMap;
use hyper::header::AUTHORIZATION;

/// Who a request comes from, as an [`Authenticator`] names it.
///
/// A connection belongs to the identity that created it: a request naming the connection
/// with another identity is answered 404, as if the connection did not exist.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity(pub String);

impl Identity {
    /// The identity's name as one directory name (for a root per identity), or `None` when
    /// it cannot be one safely: empty, over 128 bytes, starting with `.`, or holding anything
    /// but ASCII letters, digits, `.`, `_` and `-`.
    pub fn dir_name(&self) -> Option<&str> {
        let name = &self.0;
        let safe = !name.is_empty()
            && name.len() <= 128
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        safe.then_some(name.as_str())
    }
}

/// Decides whether a request may reach the agent, from its headers.
///
/// Implement it for anything the bearer token does not cover (mTLS identities forwarded by a
/// proxy, signed cookies, an SSO header). It runs on every request to `/acp` (POST, GET, the
/// WebSocket upgrade and DELETE); `None` answers 401.
pub trait Authenticator: Send + Sync + 'static {
    /// The caller's identity, or `None` to refuse the request (401).
    fn authenticate(&self, headers: &HeaderMap) -> Option<Identity>;
}

/// The default authenticator: one shared secret sent as `Authorization: Bearer <token>`.
///
/// Compared in constant time. Every holder of the token is the same [`Identity`]
/// (`"bearer"`), so connections still cannot reach each other's sessions (those are keyed by
/// connection), but a token holder who learns another connection's id may end it. Give
/// different users different credentials with your own [`Authenticator`].
#[derive(Clone)]
pub struct BearerToken {
    token: Arc<str>,
}

impl BearerToken {
    /// A bearer token authenticator. Surrounding whitespace (a token file's trailing newline)
    /// is trimmed. Fails on an empty token, which would let everyone in.
    pub fn new(token: impl AsRef<str>) -> Result<Self, crate::Error> {
        let token = token.as_ref().trim();
        if token.is_empty() {
            return Err(crate::Error::Config("the bearer token is empty".into()));
        }
        Ok(BearerToken {
            token: token.into(),
        })
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl Authenticator for BearerToken {
    fn authenticate(&self, headers: &HeaderMap) -> Option<Identity> {
        let value = headers.get(AUTHORIZATION)?.as_bytes();
        let presented = value
            .strip_prefix(b"Bearer ")
            .or_else(|| value.strip_prefix(b"bearer "))?;
        constant_time_eq(presented, self.token.as_bytes()).then(|| Identity("bearer".into()))
    }
}

/// No credential at all: allowed only on a loopback address (the server refuses to start
/// otherwise), for local development and tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAuth;

impl Authenticator for NoAuth {
    fn authenticate(&self, _headers: &HeaderMap) -> Option<Identity> {
        Some(Identity("anonymous".into()))
    }
}

/// Equal lengths and equal bytes, in a time that depends only on the lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The bounds on what one remote peer, and all of them, can make the server hold.
///
/// Each bound, when hit, gets a clear answer: an HTTP status (413, 503, 408), a JSON-RPC
/// error on the connection's stream, or a WebSocket close code. Nothing is dropped silently.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Limits {
    /// Largest POST body or WebSocket message, in bytes (413 over HTTP, close code 1009 over
    /// WebSocket). Also the longest line an agent may write: a longer one ends the connection
    /// (each of the client's requests waiting for an answer gets a JSON-RPC error `-32000`
    /// naming the limit, and the agent is ended), since the answer it carried is lost.
    pub max_message_bytes: usize,
    /// ACP connections open at once, over both profiles (503 for the next `initialize` or
    /// upgrade).
    pub max_connections: usize,
    /// Sessions one connection may create or load (a JSON-RPC error `-32000` answers the
    /// next `session/new`, `session/load` or `session/resume`).
    pub max_sessions_per_connection: usize,
    /// A connection with no request and no open stream for this long is closed (its agent
    /// ended).
    pub idle_timeout: Duration,
    /// Bytes of agent output one connection may hold for its client. At it the server stops
    /// reading the agent's output until the client takes some (backpressure: the agent's
    /// writes wait, nothing is dropped and the connection stays).
    pub max_buffered_bytes: usize,
    /// How long a connection held at [`Limits::max_buffered_bytes`] waits for its client to
    /// take any output: a client that takes none for this long has stopped reading (or never
    /// opened the stream the output is for), and its connection is closed.
    pub max_output_stall: Duration,
    /// TCP connections open at once; past it new sockets are closed at once.
    pub max_sockets: usize,
    /// Time a client has to send a request's headers (slow-loris guard).
    pub header_timeout: Duration,
    /// Time a client has to send a POST body once its headers arrived (408 after).
    pub body_timeout: Duration,
    /// Time the agent has to answer `initialize` (504 after, the connection is dropped).
    pub initialize_timeout: Duration,
    /// Over WebSocket: after this long without a frame from the client the server sends a
    /// ping, and a client that sends nothing (not even the pong every WebSocket library
    /// answers with) for another such interval is gone: its connection is closed (1001) and
    /// its agent ended, instead of a half-open TCP connection holding them until the idle
    /// timeout.
    pub websocket_ping_interval: Duration,
    /// Requests and notifications one connection may send per second, with bursts of up to
    /// as many: past it a POST is answered `429` (with `Retry-After`) and a WebSocket
    /// message with a JSON-RPC error, and the message is not forwarded, so one client cannot
    /// flood its agent (or a gateway's child) faster than it can work. Answers to the
    /// agent's requests are never held back.
    pub max_messages_per_second: u32,
    /// How long one write to a client's socket may wait (its kernel buffers full: a client
    /// that stopped reading its WebSocket or SSE stream). Past it the socket is closed, and
    /// the task and memory writing to it released: a WebSocket's connection ends (its agent
    /// with it); an SSE stream ends, and its connection stays for the client to reopen it
    /// (within [`Limits::max_output_stall`] if output is waiting for it). The clock runs only
    /// while a write waits, so a slow but steady reader is never cut off.
    pub write_timeout: Duration,
    /// Bytes of a connection's messages waiting for its agent to read them (the queue between
    /// the client's requests and the agent's input). A message that does not fit while others
    /// wait is refused: a request or notification with `429` (and `Retry-After: 1`) over
    /// HTTP, or a JSON-RPC error `-32000` over WebSocket, and not forwarded; an answer to the
    /// agent's own request waits for room instead (the agent is waiting for it). One message
    /// always fits in an empty queue, whatever its size (up to
    /// [`Limits::max_message_bytes`]).
    pub max_inbound_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 * 1024 * 1024,
            max_connections: 256,
            max_sessions_per_connection: 64,
            idle_timeout: Duration::from_secs(600),
            max_buffered_bytes: 16 * 1024 * 1024,
            max_output_stall: Duration::from_secs(60),
            max_sockets: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            initialize_timeout: Duration::from_secs(30),
            websocket_ping_interval: Duration::from_secs(30),
            max_messages_per_second: 1000,
            write_timeout: Duration::from_secs(30),
            max_inbound_bytes: 8 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The defaults: 4 MiB messages, 256 connections, 64 sessions per connection, 10 minutes
    /// idle, 16 MiB buffered per connection (then the agent waits, for up to 60 s of a
    /// client taking nothing), 1024 sockets, 10 s for headers, 30 s for a body
    /// and for `initialize`, a WebSocket ping after 30 s of silence, 1000 messages a second
    /// per connection, 30 s for a write to a client's socket, 8 MiB of a connection's messages
    /// waiting for its agent.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A token bucket: `rate` tokens a second, at most `rate` held (a second's burst).
#[derive(Debug)]
pub(crate) struct RateBucket {
    rate: f64,
    tokens: f64,
    last: std::time::Instant,
}

impl RateBucket {
    pub(crate) fn new(per_second: u32) -> Self {
        let rate = f64::from(per_second.max(1));
        RateBucket {
            rate,
            tokens: rate,
            last: std::time::Instant::now(),
        }
    }

    /// Takes one token if there is one.
    pub(crate) fn take(&mut self) -> bool {
        let now = std::time::Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The browser origins allowed to call (CORS). Empty: any request carrying an `Origin`
/// header is refused with 403, so a web page the user visits cannot drive their agent.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins(pub(crate) Vec<String>);

impl Origins {
    /// Whether a request with these headers may go on: no `Origin` (not a browser, or a
    /// same-origin navigation), or a listed one.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> Result<Option<String>, ()> {
        let Some(origin) = headers.get(hyper::header::ORIGIN) else {
            return Ok(None);
        };
        let origin = origin.to_str().map_err(|_| ())?;
        if self.0.iter().any(|o| o == origin) {
            Ok(Some(origin.to_owned()))
        } else {
            Err(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn with_auth(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn bearer_token_accepts_only_the_exact_token() {
        let auth = BearerToken::new("s3cret\n").unwrap();
        assert!(auth.authenticate(&with_auth("Bearer s3cret")).is_some());
        assert!(auth.authenticate(&with_auth("Bearer s3cre")).is_none());
        assert!(auth.authenticate(&with_auth("Bearer s3cret2")).is_none());
        assert!(auth.authenticate(&with_auth("Basic s3cret")).is_none());
        assert!(auth.authenticate(&HeaderMap::new()).is_none());
    }

    #[test]
    fn an_empty_token_is_refused() {
        assert!(BearerToken::new("  \n").is_err());
    }

    #[test]
    fn the_token_is_not_printed() {
        let auth = BearerToken::new("s3cret").unwrap();
        assert!(!format!("{auth:?}").contains("s3cret"));
    }
}
