//! The client: reach a remote agent at `http://HOST/acp` (Streamable HTTP) or `ws://HOST/acp`
//! (WebSocket) and get a transport of whole messages for an engine ([`connect_transport`]),
//! or JSON lines, the same thing a stdio agent gives ([`connect`]), so
//! [`acp_client::ClientConnection`] runs over either unchanged. Each profile's carrier takes
//! and gives one message per frame (acp-rpc's [`FramePort`](acp_rpc::transport::FramePort));
//! the lines of [`connect`] are cut by acp-rpc's framer ([`LinkWriter`]). Cookies the server sets are sent
//! back (sticky sessions behind a load balancer). `https://` and `wss://` go over TLS
//! (rustls, feature `tls`, on by default), trusting the OS's root certificates and any the
//! application adds ([`ConnectOptions::root_certificates_pem`]).

mod pipe;
mod reconnect;
mod stream;
mod streamable_http;
mod websocket;

pub use pipe::LinkWriter;
pub use reconnect::RemoteConnector;

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use acp_client::{Client, ClientConnection, Config};
use acp_rpc::transport::{frame_adapter, memory_pair};
use bytes::Bytes;
use hyper::HeaderMap;
use hyper::header::{HeaderValue, SET_COOKIE};
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

use crate::Error;
use acp_rpc::ErrorCode;
use acp_rpc::sync::lock;

/// Messages each way between the application and the carrier, not yet taken.
const FRAMES: usize = 256;

/// Which profile of the RFD to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// POST for the client's messages, SSE streams for the agent's.
    StreamableHttp,
    /// One WebSocket, a text frame per message.
    WebSocket,
}

/// How to reach the server: the credential and the profile.
#[derive(Clone, Default)]
pub struct ConnectOptions {
    token: Option<String>,
    profile: Option<Profile>,
    max_message_bytes: Option<usize>,
    root_certificates: Vec<Vec<u8>>,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("profile", &self.profile)
            .field("root_certificates", &self.root_certificates.len())
            .finish()
    }
}

impl ConnectOptions {
    /// No credential, the profile the URL's scheme names.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends `Authorization: Bearer <token>` on every request (trimmed).
    pub fn token(mut self, token: impl AsRef<str>) -> Self {
        self.token = Some(token.as_ref().trim().to_owned());
        self
    }

    /// Speaks this profile whatever the URL's scheme (`http://` or `ws://`) says.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// The largest message accepted from the server (default 64 MiB): an SSE event, a
    /// WebSocket message, or the answer to `initialize` (over it, `initialize` fails with an
    /// error naming the limit).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = Some(bytes);
        self
    }

    /// Also trusts the certificates in `pem` (PEM, one or more) for `https://` and `wss://`:
    /// a private certificate authority, or a server's self-signed certificate. The OS's
    /// root certificates stay trusted.
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(pem.into());
        self
    }

    fn max(&self) -> usize {
        self.max_message_bytes.unwrap_or(64 * 1024 * 1024)
    }
}

/// A connected transport: JSON lines from the agent on `reader`, to the agent on `writer`.
///
/// Hand both to [`acp_client::Builder::io`]. Closing the writer (closing that connection) ends
/// the remote connection (a `DELETE` over HTTP, a close frame over WebSocket); the reader ends
/// when the server ends the connection.
#[derive(Debug)]
pub struct RemoteLink {
    /// The agent's messages, one JSON object per line.
    pub reader: LinkReader,
    /// The client's messages, one JSON object per line.
    pub writer: LinkWriter,
    /// The profile in use.
    pub profile: Profile,
    /// Resolves once the connection is over after the writer closed: a program about to exit
    /// waits for it (with a bound) so that its goodbye (`DELETE`, a close frame) reaches the
    /// server, which otherwise keeps the connection and its agent until the idle timeout.
    pub finished: Finished,
}

/// The agent's messages as JSON lines ([`RemoteLink::reader`]). Over WebSocket the
/// connection reading it reads the socket's frames itself, each copied once into its buffer;
/// over Streamable HTTP the streams' events come as the carrier's frames.
#[derive(Debug)]
pub struct LinkReader(Lines);

#[derive(Debug)]
enum Lines {
    Frames(pipe::FrameLines<websocket::SocketFrames>),
    Port(pipe::FrameLines<acp_rpc::transport::FrameReceiver>),
}

impl AsyncRead for LinkReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().0 {
            Lines::Frames(frames) => Pin::new(frames).poll_read(cx, buf),
            Lines::Port(port) => Pin::new(port).poll_read(cx, buf),
        }
    }
}

/// The end of a [`RemoteLink`]: see [`RemoteLink::finished`].
#[derive(Clone, Debug)]
pub struct Finished(tokio_util::sync::CancellationToken);

impl Finished {
    /// Waits until the goodbye went out (or was given up on: it takes at most two seconds),
    /// or the server ended the connection.
    pub async fn wait(&self) {
        self.0.cancelled().await;
    }
}

/// Connects to `url` (`http://HOST:PORT/acp` or `ws://HOST:PORT/acp`, `https://` and
/// `wss://` over TLS). Over WebSocket the socket is open when this returns (a server that
/// does not answer the upgrade within 30 seconds fails it); over HTTP the
/// server is reached (TCP, and TLS) and the connection is created by the first message,
/// `initialize`.
pub async fn connect(url: &str, options: &ConnectOptions) -> Result<RemoteLink, Error> {
    let target = Target::parse(url)?;
    let profile = options.profile.unwrap_or(if target.websocket {
        Profile::WebSocket
    } else {
        Profile::StreamableHttp
    });
    let shared = remote(target, options)?;
    // The application's side and the carrier's, joined back to back.
    let (app, carrier) = memory_pair(FRAMES);
    let (app, carrier) = (app.into_port(), carrier.into_port());
    let writer = LinkWriter::new(app.sender, shared.max);
    let (over, reader) = match profile {
        Profile::WebSocket => {
            let (over, frames) = websocket::start(shared, carrier.receiver).await?;
            (over, LinkReader(Lines::Frames(frames)))
        }
        Profile::StreamableHttp => {
            let over = streamable_http::start(shared, carrier).await?;
            let lines = pipe::FrameLines::new(app.receiver);
            (over, LinkReader(Lines::Port(lines)))
        }
    };
    Ok(RemoteLink {
        reader,
        writer,
        profile,
        finished: Finished(over),
    })
}

/// The state a profile's carrier shares: where, the credential, the cookies, the limit.
fn remote(target: Target, options: &ConnectOptions) -> Result<Arc<Remote>, Error> {
    #[cfg(feature = "tls")]
    let tls = match target.secure {
        true => Some(stream::tls::config(&options.root_certificates)?),
        false => None,
    };
    Ok(Arc::new(Remote {
        target,
        #[cfg(feature = "tls")]
        tls,
        token: options.token.clone(),
        cookies: Mutex::new(Vec::new()),
        max: options.max(),
    }))
}

/// Connects to `url` and runs `client` over it: the same [`ClientConnection`] (and
/// [`acp_client::AgentHandle`]) as over stdio. `initialize` is yours to send.
pub async fn connect_client<C: Client>(
    client: C,
    url: &str,
    options: &ConnectOptions,
    config: Config,
) -> Result<ClientConnection, Error> {
    let transport = connect_transport(url, options).await?;
    Ok(acp_client::Builder::new(client)
        .config(config)
        .over(transport))
}

/// Connects to `url` as [`connect`] does, for an acp-rpc engine: the returned
/// [`RemoteTransport`] goes where a [`acp_rpc::transport::Transport`] goes
/// ([`acp_client::Builder::over`], [`acp_rpc::Connection::over`]). The engine exchanges whole
/// messages with the carrier, no line framing and no pipe between: over WebSocket one text
/// frame per message, over Streamable HTTP one POST per message of the engine and one SSE
/// event per message of the agent.
pub async fn connect_transport(
    url: &str,
    options: &ConnectOptions,
) -> Result<RemoteTransport, Error> {
    let target = Target::parse(url)?;
    let websocket = options
        .profile
        .map_or(target.websocket, |p| p == Profile::WebSocket);
    let shared = remote(target, options)?;
    let (profile, over, adapter) = if websocket {
        let (over, adapter) = websocket::start_frames(shared).await?;
        (Profile::WebSocket, over, adapter)
    } else {
        let (adapter, port) = frame_adapter(FRAMES);
        let over = streamable_http::start(shared, port).await?;
        (Profile::StreamableHttp, over, adapter)
    };
    Ok(RemoteTransport {
        profile,
        finished: Finished(over),
        carrier: adapter,
    })
}

/// A connection to a remote agent for an acp-rpc engine (see [`connect_transport`]).
#[derive(Debug)]
pub struct RemoteTransport {
    profile: Profile,
    finished: Finished,
    carrier: acp_rpc::transport::FrameAdapter,
}

impl RemoteTransport {
    /// The profile in use.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Resolves once the connection is over after the engine ended it (see
    /// [`RemoteLink::finished`]); take it before handing the transport to the engine.
    pub fn finished(&self) -> Finished {
        self.finished.clone()
    }
}

impl acp_rpc::transport::Transport for RemoteTransport {
    fn into_halves(self) -> acp_rpc::transport::Halves {
        self.carrier.into_halves()
    }
}

/// Where the endpoint is.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    websocket: bool,
    /// `https://` or `wss://`: TLS over the TCP connection.
    secure: bool,
    /// The host as the URL names it (for the certificate check).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    host: String,
    /// `host:port`, for the `Host` header and for connecting.
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, Error> {
        let schemes = [
            ("http://", false, false),
            ("ws://", true, false),
            ("https://", false, true),
            ("wss://", true, true),
        ];
        let Some((websocket, secure, rest)) = schemes
            .iter()
            .find_map(|&(scheme, ws, tls)| Some((ws, tls, url.strip_prefix(scheme)?)))
        else {
            return Err(Error::Config(format!(
                "`{url}` is not an http://, https://, ws:// or wss:// URL"
            )));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/acp"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(Error::Config(format!("`{url}` has no usable host")));
        }
        let port_at = match authority.rfind(']') {
            Some(end) => authority[end..].rfind(':').map(|i| end + i),
            None => authority.rfind(':'),
        };
        let (host, authority) = match port_at {
            Some(i) => (authority[..i].to_owned(), authority.to_owned()),
            None => {
                let port = if secure { 443 } else { 80 };
                (authority.to_owned(), format!("{authority}:{port}"))
            }
        };
        Ok(Target {
            websocket,
            secure,
            host,
            authority,
            path: path.to_owned(),
        })
    }
}

/// Cookies kept per connection at most: a load balancer's stickiness needs one or two; past
/// it a new cookie is not kept (one already kept may still be replaced).
pub(crate) const MAX_COOKIES: usize = 32;

/// Bytes of cookies (names and values) kept per connection at most, under the 8 KiB a
/// server's request headers commonly allow; a cookie that would go past it is not kept.
pub(crate) const MAX_COOKIE_BYTES: usize = 8 * 1024;

/// What both profiles share: the target, the credential and the cookie jar.
#[derive(Debug)]
pub(crate) struct Remote {
    target: Target,
    /// The TLS configuration, for a secure URL.
    #[cfg(feature = "tls")]
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    token: Option<String>,
    cookies: Mutex<Vec<(String, String)>>,
    max: usize,
}

impl Remote {
    /// Keeps the cookies a response sets (name and value; attributes are not needed to send
    /// them back to the one server this client talks to), within [`MAX_COOKIES`] and
    /// [`MAX_COOKIE_BYTES`]: a server setting thousands cannot grow the client's memory, nor
    /// the `Cookie` header it sends.
    fn keep_cookies(&self, headers: &HeaderMap) {
        let mut jar = lock(&self.cookies);
        let mut dropped = 0usize;
        for set in headers.get_all(SET_COOKIE) {
            let Ok(set) = set.to_str() else { continue };
            let pair = set.split(';').next().unwrap_or_default();
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            let kept: usize = jar
                .iter()
                .filter(|(n, _)| n != name)
                .map(|(n, v)| n.len() + v.len())
                .sum();
            let others = jar.iter().filter(|(n, _)| n != name).count();
            if !value.is_empty()
                && (others >= MAX_COOKIES || kept + name.len() + value.len() > MAX_COOKIE_BYTES)
            {
                dropped += 1;
                continue;
            }
            jar.retain(|(n, _)| n != name);
            if !value.is_empty() {
                jar.push((name.to_owned(), value.to_owned()));
            }
        }
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "the server set more cookies than this client keeps ({MAX_COOKIES}, \
                 {MAX_COOKIE_BYTES} bytes); those were not kept"
            );
        }
    }

    /// The `Cookie` header to send, if any cookie was set.
    fn cookie_header(&self) -> Option<HeaderValue> {
        let jar = lock(&self.cookies);
        if jar.is_empty() {
            return None;
        }
        let line: Vec<String> = jar.iter().map(|(n, v)| format!("{n}={v}")).collect();
        HeaderValue::from_str(&line.join("; ")).ok()
    }

    /// The `Authorization` header to send, if a token was given.
    fn authorization(&self) -> Option<HeaderValue> {
        let token = self.token.as_ref()?;
        HeaderValue::from_str(&format!("Bearer {token}")).ok()
    }
}

/// A JSON-RPC error answering `id`, made on this side for a request the transport could not
/// deliver (the server unreachable, or the connection gone), so the caller's pending call
/// resolves with the reason; the code is the local "connection closed" one, which a
/// supervisor treats as an unreachable agent (retried).
pub(crate) fn local_error(id: &Value, message: &str) -> Bytes {
    error_with_code(id, ErrorCode::CONNECTION_CLOSED.0.into(), message)
}

/// The JSON-RPC code for a request the server refused with `status`: a refused credential
/// is ACP's "authentication required" (not worth retrying), a message the server will not
/// take is an invalid request, an overloaded or restarting server (5xx, or 404 for a
/// connection it no longer knows) is the connection being gone (worth retrying).
pub(crate) fn code_for_status(status: u16) -> ErrorCode {
    match status {
        401 | 403 => ErrorCode::AUTH_REQUIRED,
        400 | 406 | 413 | 415 | 501 => ErrorCode::INVALID_REQUEST,
        404 | 500..=599 => ErrorCode::CONNECTION_CLOSED,
        _ => ErrorCode::INTERNAL_ERROR,
    }
}

/// A JSON-RPC error answer with its code.
pub(crate) fn error_with_code(id: &Value, code: i64, message: &str) -> Bytes {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    Bytes::from(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_profile_the_host_and_the_path() {
        let t = Target::parse("http://127.0.0.1:8080/acp").unwrap();
        assert!(!t.websocket);
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/acp");
        let t = Target::parse("ws://[::1]").unwrap();
        assert!(t.websocket);
        assert_eq!(t.authority, "[::1]:80");
        assert_eq!(t.path, "/acp");
        let t = Target::parse("https://agents.example.com/acp").unwrap();
        assert!(t.secure && !t.websocket);
        assert_eq!(t.host, "agents.example.com");
        assert_eq!(t.authority, "agents.example.com:443");
        let t = Target::parse("wss://[::1]:8443/x").unwrap();
        assert!(t.secure && t.websocket);
        assert_eq!((t.host.as_str(), t.path.as_str()), ("[::1]", "/x"));
        assert!(Target::parse("ftp://example.com").is_err());
        assert!(Target::parse("http://user@example.com/").is_err());
    }

    #[test]
    fn cookies_are_kept_and_replaced_by_name() {
        let remote = Remote {
            target: Target::parse("http://127.0.0.1:1/acp").unwrap(),
            #[cfg(feature = "tls")]
            tls: None,
            token: None,
            cookies: Mutex::new(Vec::new()),
            max: 1,
        };
        let mut headers = HeaderMap::new();
        headers.append(
            SET_COOKIE,
            HeaderValue::from_static("lb=a; Path=/; HttpOnly"),
        );
        headers.append(SET_COOKIE, HeaderValue::from_static("other=1"));
        remote.keep_cookies(&headers);
        let mut again = HeaderMap::new();
        again.append(SET_COOKIE, HeaderValue::from_static("lb=b"));
        remote.keep_cookies(&again);
        assert_eq!(remote.cookie_header().unwrap(), "other=1; lb=b");
    }

    /// A server setting thousands of cookies, or huge ones, gets the first few kept (the
    /// stickiness cookie among them, still replaceable) and no more.
    #[test]
    fn the_cookie_jar_is_bounded_in_count_and_bytes() {
        let remote = Remote {
            target: Target::parse("http://127.0.0.1:1/acp").unwrap(),
            #[cfg(feature = "tls")]
            tls: None,
            token: None,
            cookies: Mutex::new(Vec::new()),
            max: 1,
        };
        let mut headers = HeaderMap::new();
        headers.append(SET_COOKIE, HeaderValue::from_static("lb=first"));
        for i in 0..5000 {
            let set = format!("c{i}=v; Path=/");
            headers.append(SET_COOKIE, HeaderValue::from_str(&set).unwrap());
        }
        remote.keep_cookies(&headers);
        let big = format!("huge={}", "x".repeat(MAX_COOKIE_BYTES));
        let mut more = HeaderMap::new();
        more.append(SET_COOKIE, HeaderValue::from_str(&big).unwrap());
        more.append(SET_COOKIE, HeaderValue::from_static("lb=second"));
        remote.keep_cookies(&more);
        let jar = lock(&remote.cookies).clone();
        assert_eq!(jar.len(), MAX_COOKIES);
        assert!(jar.iter().map(|(n, v)| n.len() + v.len()).sum::<usize>() <= MAX_COOKIE_BYTES);
        assert!(jar.contains(&("lb".to_owned(), "second".to_owned())));
        assert!(!jar.iter().any(|(n, _)| n == "huge"));
    }
}
