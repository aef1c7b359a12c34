//! The Streamable HTTP profile of the client: each message the connection writes is POSTed
//! (`initialize` first, whose 200 answer names the connection), and the agent's messages are
//! read from SSE streams: the connection stream, opened after `initialize`, and one stream per
//! session, opened when `session/new` (or `session/fork`) answers with its id or when a
//! `session/load`/`session/resume` is sent. A message about a session is POSTed with its
//! `Acp-Session-Id` (a request's `params.sessionId`; for an answer to the agent, the session
//! whose stream carried the agent's request).
//!
//! # Order across streams
//!
//! The RFD sends the answer to `session/load` (and `session/resume`) on the connection stream
//! and the history the agent replays before it on the session stream: two TCP connections, so
//! nothing on the wire says which came first. Two things keep the agent's order here:
//! - the session stream is opened, and accepted by the server, *before* the reattach request
//!   is POSTed (as the TypeScript SDK's client does), so the replay is never parked on the
//!   server waiting for a stream;
//! - the reattach answer is held until the session stream has been quiet for
//!   [`REATTACH_QUIET`] (at most [`REATTACH_HOLD_MAX`]): updates written before the answer
//!   but still in flight on the other socket are delivered first.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, COOKIE, HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Remote, code_for_status, error_with_code, local_error};
use crate::{Error, HEADER_CONNECTION_ID, HEADER_SESSION_ID};
use acp_rpc::ErrorCode;
use acp_rpc::envelope::Envelope;
use acp_rpc::sync::lock;

/// Time the goodbye `DELETE` may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a session stream must have carried nothing before the answer to a
/// `session/load`/`session/resume` of that session is delivered (see the module docs).
pub const REATTACH_QUIET: Duration = Duration::from_millis(50);

/// The longest a reattach answer is held for a session stream that keeps talking.
pub const REATTACH_HOLD_MAX: Duration = Duration::from_secs(2);

/// How long a reattach request waits for its session stream to be accepted before it is
/// POSTed anyway (the stream then opens after the POST, as for other requests).
const STREAM_OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// The state the POST loop and the stream readers share.
struct Link {
    remote: Arc<Remote>,
    connection: Mutex<Option<String>>,
    /// Sessions whose stream is open (or opening).
    streams: Mutex<HashSet<String>>,
    /// The agent's pending requests: id -> the session whose stream carried it.
    agent_requests: Mutex<HashMap<String, String>>,
    /// Ids of `session/new`/`session/fork` sent and not answered.
    creating: Mutex<HashSet<String>>,
    /// Ids of `session/load`/`session/resume` sent and not answered -> their session.
    reattaching: Mutex<HashMap<String, String>>,
    /// When each session stream last carried an event.
    last_event: Mutex<HashMap<String, Instant>>,
    /// To the connection: the agent's messages, one per line.
    inbound: mpsc::Sender<Bytes>,
    stop: CancellationToken,
}

/// Checks the server is reachable, then starts the POST loop: each message of the port's
/// receiver is POSTed, each message of the agent's streams goes to its sender. The token is
/// cancelled once the connection is over (the goodbye `DELETE` sent or given up on, or the
/// server gone).
pub(crate) async fn start(
    remote: Arc<Remote>,
    port: acp_rpc::transport::FramePort,
) -> Result<CancellationToken, Error> {
    let sender = open(&remote).await?;
    let acp_rpc::transport::FramePort {
        sender: to_engine,
        receiver: from_engine,
    } = port;
    let (inbound, mut rx) = mpsc::channel::<Bytes>(64);
    let link = Arc::new(Link {
        remote,
        connection: Mutex::new(None),
        streams: Mutex::new(HashSet::new()),
        agent_requests: Mutex::new(HashMap::new()),
        creating: Mutex::new(HashSet::new()),
        reattaching: Mutex::new(HashMap::new()),
        last_event: Mutex::new(HashMap::new()),
        inbound,
        stop: CancellationToken::new(),
    });
    let stop = link.stop.clone();
    tokio::spawn(async move {
        loop {
            // What the streams delivered before the link stopped goes first (the server's
            // last words, such as errors answering the requests it cut off).
            let message = tokio::select! {
                biased;
                m = rx.recv() => m,
                () = stop.cancelled() => None,
            };
            let Some(message) = message else { break };
            if to_engine.send(message).await.is_err() {
                break;
            }
        }
        // Dropping `to_engine` is the end of the engine's input.
    });
    let over = link.stop.clone();
    tokio::spawn(posts(link, sender, from_engine));
    Ok(over)
}

/// A fresh HTTP/1.1 connection to the server.
async fn open(remote: &Remote) -> Result<SendRequest<Full<Bytes>>, Error> {
    let stream = super::stream::open(remote).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

impl Link {
    /// A request to the endpoint with the credential, the cookies and the ids.
    fn request(&self, method: Method, session: Option<&str>, body: Bytes) -> Request<Full<Bytes>> {
        let remote = &self.remote;
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method.clone();
        *req.uri_mut() = remote.target.path.parse().unwrap_or_default();
        let headers = req.headers_mut();
        if let Ok(host) = HeaderValue::from_str(&remote.target.authority) {
            headers.insert(HOST, host);
        }
        if let Some(auth) = remote.authorization() {
            headers.insert(AUTHORIZATION, auth);
        }
        if let Some(cookies) = remote.cookie_header() {
            headers.insert(COOKIE, cookies);
        }
        if method == Method::POST {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        } else if method == Method::GET {
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        }
        let connection = lock(&self.connection).clone();
        if let Some(id) = connection.and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.insert(HEADER_CONNECTION_ID, id);
        }
        if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
            headers.insert(HEADER_SESSION_ID, id);
        }
        req
    }

    /// Sends on `sender`, reopening it once if the server closed it.
    async fn send(
        &self,
        sender: &mut SendRequest<Full<Bytes>>,
        req: impl Fn() -> Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, String> {
        if sender.ready().await.is_err() {
            *sender = open(&self.remote).await.map_err(|e| e.to_string())?;
        }
        let response = sender
            .send_request(req())
            .await
            .map_err(|e| e.to_string())?;
        self.remote.keep_cookies(response.headers());
        Ok(response)
    }

    /// Opens the SSE stream of `session` (or the connection's) unless it is open. The receiver
    /// (`None` when the stream was open already) hears `true` once the server has accepted the
    /// GET, `false` if it refused it or could not be reached.
    fn open_stream(self: &Arc<Self>, session: Option<String>) -> Option<oneshot::Receiver<bool>> {
        if let Some(s) = &session
            && !lock(&self.streams).insert(s.clone())
        {
            return None;
        }
        let (opened, accepted) = oneshot::channel();
        tokio::spawn(self.clone().read_stream(session, opened));
        Some(accepted)
    }

    /// Reads one SSE stream into the connection until it ends. The connection stream's end
    /// ends the link (the server has ended the connection).
    async fn read_stream(self: Arc<Self>, session: Option<String>, opened: oneshot::Sender<bool>) {
        let stop = self.stop.clone();
        let mut opened = Some(opened);
        tokio::select! {
            () = self.read_events(session.as_deref(), &mut opened) => {}
            () = stop.cancelled() => {}
        }
        match session {
            None => self.stop.cancel(),
            Some(s) => {
                lock(&self.streams).remove(&s);
                lock(&self.last_event).remove(&s);
            }
        }
        // Told only now, so that a caller reopening after a refusal finds the stream closed.
        if let Some(opened) = opened {
            let _ = opened.send(false);
        }
    }

    async fn read_events(
        self: &Arc<Self>,
        session: Option<&str>,
        opened: &mut Option<oneshot::Sender<bool>>,
    ) {
        let Ok(mut sender) = open(&self.remote).await else {
            return;
        };
        let Ok(response) = self
            .send(&mut sender, || {
                self.request(Method::GET, session, Bytes::new())
            })
            .await
        else {
            return;
        };
        if response.status() != StatusCode::OK {
            tracing::warn!(status = %response.status(), ?session, "stream refused");
            return;
        }
        if let Some(opened) = opened.take() {
            let _ = opened.send(true);
        }
        let mut body = response.into_body().into_data_stream();
        let mut buffer = BytesMut::new();
        while let Some(Ok(chunk)) = body.next().await {
            buffer.extend_from_slice(&chunk);
            while let Some(end) = find_event_end(&buffer) {
                let event = buffer.split_to(end.0);
                let _ = buffer.split_to(end.1);
                if let Some(data) = event_data(&event)
                    && !self.deliver(data, session).await
                {
                    return;
                }
            }
            if buffer.len() > self.remote.max {
                tracing::warn!("an SSE event over the size limit; stream dropped");
                return;
            }
        }
    }

    /// Waits, for the answer to a reattach of `session`, until that session's stream has
    /// carried nothing for [`REATTACH_QUIET`] (at most [`REATTACH_HOLD_MAX`]).
    async fn settle(&self, session: &str) {
        let start = Instant::now();
        let deadline = start + REATTACH_HOLD_MAX;
        loop {
            let last = lock(&self.last_event).get(session).copied();
            let quiet_since = last.map_or(start, |l| l.max(start));
            let now = Instant::now();
            let quiet = now.saturating_duration_since(quiet_since);
            if quiet >= REATTACH_QUIET || now >= deadline {
                return;
            }
            let wait = (REATTACH_QUIET - quiet).min(deadline - now);
            tokio::time::sleep(wait).await;
        }
    }

    /// Hands one of the agent's messages to the connection, noting what later POSTs need.
    async fn deliver(self: &Arc<Self>, data: String, session: Option<&str>) -> bool {
        if let Some(s) = session {
            // Every event of a session stream passes here: stamp in place, allocate a key
            // only for a stream's first event.
            let now = Instant::now();
            let mut last = lock(&self.last_event);
            match last.get_mut(s) {
                Some(at) => *at = now,
                None => {
                    last.insert(s.to_owned(), now);
                }
            }
        }
        if let Some(message) = Envelope::read(&data) {
            let id = message.id_key();
            if message.method.is_some() {
                if let (Some(id), Some(s)) = (id, session) {
                    lock(&self.agent_requests).insert(id, s.to_owned());
                }
            } else if let Some(id) = id {
                if lock(&self.creating).remove(&id)
                    && let Some(s) = message.result_session.as_deref()
                {
                    self.open_stream(Some(s.to_owned()));
                }
                let reattached = lock(&self.reattaching).remove(&id);
                if let Some(s) = reattached
                    && session.is_none()
                {
                    self.settle(&s).await;
                }
            }
        }
        self.inbound.send(Bytes::from(data)).await.is_ok()
    }
}

/// The POST loop: each line the connection writes, in order, one POST each.
async fn posts(
    link: Arc<Link>,
    mut sender: SendRequest<Full<Bytes>>,
    mut messages: acp_rpc::transport::FrameReceiver,
) {
    loop {
        let line = tokio::select! {
            l = messages.recv() => l,
            () = link.stop.cancelled() => None,
        };
        let Some(line) = line else { break };
        if line.len() > link.remote.max {
            // As a line over the limit did: the link ends.
            tracing::warn!(len = line.len(), "a message over the connection's limit");
            break;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            // What a stdio agent answers to a line that is not JSON (the server would only
            // say 400).
            let error = error_with_code(&Value::Null, -32700, "parse error");
            if link.inbound.send(error).await.is_err() {
                break;
            }
            continue;
        };
        if !post(&link, &mut sender, message, line).await {
            break;
        }
    }
    if lock(&link.connection).is_some() && !link.stop.is_cancelled() {
        let goodbye = link.send(&mut sender, || {
            link.request(Method::DELETE, None, Bytes::new())
        });
        let _ = tokio::time::timeout(DELETE_TIMEOUT, goodbye).await;
    }
    link.stop.cancel();
}

/// POSTs one message; `false` when the connection is gone.
async fn post(
    link: &Arc<Link>,
    sender: &mut SendRequest<Full<Bytes>>,
    message: Value,
    body: Bytes,
) -> bool {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|_| method.is_some()).cloned();
    let connected = lock(&link.connection).is_some();
    if !connected {
        let Some(id) = id.clone().filter(|_| method == Some("initialize")) else {
            if let Some(id) = &id {
                let error = local_error(id, "not connected: send initialize first");
                return link.inbound.send(error).await.is_ok();
            }
            return true;
        };
        return initialize(link, sender, &id, body).await;
    }
    let session = match method {
        Some(_) => message
            .get("params")
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        None => message
            .get("id")
            .and_then(|id| lock(&link.agent_requests).remove(&id.to_string())),
    };
    if let (Some(id), Some("session/new" | "session/fork")) = (&id, method) {
        lock(&link.creating).insert(id.to_string());
    }
    if let (Some(id), Some("session/load" | "session/resume"), Some(s)) = (&id, method, &session) {
        lock(&link.reattaching).insert(id.to_string(), s.clone());
        // The replay must find its stream open (see the module docs). A server that refuses
        // a stream for a session it has not loaded yet gets it again after the POST.
        if let Some(accepted) = link.open_stream(Some(s.clone())) {
            let _ = tokio::time::timeout(STREAM_OPEN_TIMEOUT, accepted).await;
        }
    }
    let result = link
        .send(sender, || {
            link.request(Method::POST, session.as_deref(), body.clone())
        })
        .await;
    let (failure, code) = match result {
        Ok(response) if response.status() == StatusCode::ACCEPTED => (None, 0),
        // A session this connection does not have: what an agent answers for one (-32002).
        Ok(response) if response.status() == StatusCode::NOT_FOUND && session.is_some() => {
            (Some(status_message(response).await), -32002)
        }
        Ok(response) => {
            let code = i64::from(code_for_status(response.status().as_u16()).0);
            (Some(status_message(response).await), code)
        }
        Err(error) => (
            Some(format!("the server could not be reached: {error}")),
            i64::from(ErrorCode::CONNECTION_CLOSED.0),
        ),
    };
    match failure {
        None => {
            if let Some(s) = session {
                link.open_stream(Some(s));
            }
            true
        }
        Some(why) => {
            tracing::warn!(%why, ?method, "message not delivered");
            if let Some(id) = id {
                lock(&link.reattaching).remove(&id.to_string());
                let error = error_with_code(&id, code, &why);
                return link.inbound.send(error).await.is_ok();
            }
            true
        }
    }
}

/// POSTs `initialize`: its 200 answer names the connection, then the connection stream opens.
async fn initialize(
    link: &Arc<Link>,
    sender: &mut SendRequest<Full<Bytes>>,
    id: &Value,
    body: Bytes,
) -> bool {
    let result = link
        .send(sender, || link.request(Method::POST, None, body.clone()))
        .await;
    let response = match result {
        Ok(response) => response,
        Err(error) => {
            let why = format!("the server could not be reached: {error}");
            return link.inbound.send(local_error(id, &why)).await.is_ok();
        }
    };
    if response.status() != StatusCode::OK {
        let code = i64::from(code_for_status(response.status().as_u16()).0);
        let why = status_message(response).await;
        return link
            .inbound
            .send(error_with_code(id, code, &why))
            .await
            .is_ok();
    }
    let connection = response
        .headers()
        .get(HEADER_CONNECTION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // One message, bounded like every other the server sends.
    let max = link.remote.max;
    let answer = match Limited::new(response.into_body(), max).collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) if error.is::<LengthLimitError>() => {
            let why = format!(
                "the answer to initialize is over this client's limit of {max} bytes \
                 (ConnectOptions::max_message_bytes)"
            );
            let code = i64::from(ErrorCode::INTERNAL_ERROR.0);
            return link
                .inbound
                .send(error_with_code(id, code, &why))
                .await
                .is_ok();
        }
        Err(error) => {
            let why = format!("the answer to initialize was cut: {error}");
            return link.inbound.send(local_error(id, &why)).await.is_ok();
        }
    };
    if let Some(connection) = connection {
        *lock(&link.connection) = Some(connection);
        link.open_stream(None);
    }
    link.inbound.send(answer).await.is_ok()
}

/// The most of a refused request's body read for its message (the rest is not read: a
/// server cannot make the client hold a large error page).
const STATUS_TEXT_BYTES: usize = 200;

/// "the server answered 404 Not Found: unknown session", from a refused POST.
async fn status_message(response: Response<Incoming>) -> String {
    let status = response.status();
    let mut body = response.into_body();
    let mut head = Vec::new();
    let read = async {
        while head.len() < STATUS_TEXT_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        head.extend_from_slice(&data[..data.len().min(STATUS_TEXT_BYTES)]);
                    }
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
    let text = String::from_utf8_lossy(&head[..head.len().min(STATUS_TEXT_BYTES)])
        .trim()
        .to_owned();
    format!("the server answered {status}: {text}")
}

/// Where the first event of `buffer` ends (a blank line, `\n\n` or `\r\n\r\n`): (its
/// length, the separator's length). One pass over the line ends, so a chunk of many events
/// is split in time linear in its size.
fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    for i in memchr::memchr_iter(b'\n', buffer) {
        let next = &buffer[i + 1..];
        if next.starts_with(b"\n") {
            return Some((i, 2));
        }
        if i > 0 && buffer[i - 1] == b'\r' && next.starts_with(b"\r\n") {
            return Some((i - 1, 4));
        }
    }
    None
}

/// The `data:` lines of one SSE event, joined by newlines (`None` for a comment only).
fn event_data(event: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(event).ok()?;
    let mut data: Option<String> = None;
    for line in text.lines() {
        let Some(value) = line.strip_prefix("data:") else {
            continue;
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut data {
            Some(d) => {
                d.push('\n');
                d.push_str(value);
            }
            None => data = Some(value.to_owned()),
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_split_and_their_data_joined() {
        let stream =
            b": keepalive\n\ndata: {\"a\":1}\n\nevent: message\r\ndata: x\r\ndata: y\r\n\r\n";
        let (end, sep) = find_event_end(stream).unwrap();
        assert_eq!(event_data(&stream[..end]), None);
        let rest = &stream[end + sep..];
        let (end, sep) = find_event_end(rest).unwrap();
        assert_eq!(event_data(&rest[..end]).unwrap(), "{\"a\":1}");
        let rest = &rest[end + sep..];
        let (end, _) = find_event_end(rest).unwrap();
        assert_eq!(event_data(&rest[..end]).unwrap(), "x\ny");
        // An event not yet ended waits for more; the earliest separator of either kind wins.
        assert_eq!(find_event_end(b"data: x\r\n\r"), None);
        assert_eq!(find_event_end(b"data: x\n"), None);
        assert_eq!(find_event_end(b"data: a\r\n\r\ndata: b\n\n"), Some((7, 4)));
        assert_eq!(find_event_end(b"data: a\n\ndata: b\r\n\r\n"), Some((7, 2)));
    }
}
