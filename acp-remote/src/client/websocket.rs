//! The WebSocket profile of the client: one socket, one text frame per message, both ways.
//! An engine's messages go out as they come from its frame adapter; for the JSON lines of
//! a [`RemoteLink`](super::RemoteLink) the server's frames are read by the connection itself
//! ([`FrameLines`]) and the lines it writes arrive as messages, cut by acp-rpc's framer.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_util::stream::SplitStream;
use futures_util::{SinkExt, StreamExt};
use hyper::header::{AUTHORIZATION, COOKIE};
use tokio::io::{AsyncRead, BufReader, ReadBuf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use super::Remote;
use super::stream::Io;
use crate::Error;

/// What the client reads from its socket at most per system call. tungstenite reads into
/// the room left in its own buffer, which after the handshake starts as the handshake's
/// leftover bytes and grows a frame at a time: a streaming turn was read about 2 KiB per
/// `recvfrom` (120,000 a second, against the server's 3,700 `sendto`). A client holds few
/// sockets, so a buffer of its own in front of the socket is cheap.
const CLIENT_READ_BUFFER: usize = 64 * 1024;

/// The socket behind a [`CLIENT_READ_BUFFER`] (writes go straight through).
fn buffered(socket: Box<dyn Io>) -> Box<dyn Io> {
    Box::new(BufReader::with_capacity(CLIENT_READ_BUFFER, socket))
}

/// Opens the socket (failing here on a refused upgrade: 401, 403, 503...) and returns the
/// adapter for an engine that carries whole messages over it: the engine reads the socket's
/// text frames ([`SocketFrames`]) and writes each of its messages as one text frame
/// ([`SocketSink`]) itself, with no task or channel between and no line framing either way.
/// The token is cancelled once the close frame went out (or the engine's output ended
/// otherwise). The engine's [`max_message_size`](acp_rpc::Config::max_message_size)
/// applies to what it reads, and the socket's own limit (`remote.max`) to every frame.
pub(crate) async fn start_frames(
    remote: Arc<Remote>,
) -> Result<(CancellationToken, acp_rpc::transport::FrameAdapter), Error> {
    Ok(driven(open_socket(&remote).await?))
}

/// An open socket as an engine's transport (see [`start_frames`]).
fn driven(
    ws: WebSocketStream<Box<dyn Io>>,
) -> (CancellationToken, acp_rpc::transport::FrameAdapter) {
    let (sink, stream) = ws.split();
    let over = CancellationToken::new();
    let sink = SocketSink {
        sink,
        over: Some(over.clone().drop_guard()),
    };
    let adapter = acp_rpc::transport::FrameAdapter::driven(SocketFrames(stream), sink);
    (over, adapter)
}

/// The server's text frames, for an engine to read straight off the socket: ping, pong and
/// binary frames are not messages (tungstenite answers a ping itself); a close frame, the
/// end of the socket or a failed read is the end of input.
struct SocketFrames(SplitStream<WebSocketStream<Box<dyn Io>>>);

impl acp_rpc::transport::FrameSource for SocketFrames {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        loop {
            match ready!(self.0.poll_next_unpin(cx)) {
                Some(Ok(Message::Text(text))) => return Poll::Ready(Some(Bytes::from(text))),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Poll::Ready(None),
                Some(Ok(_)) => {}
            }
        }
    }
}

/// The engine's messages, each one text frame of the socket, flushed once per burst (the
/// frames its writer has ready at once); the end of its output sends the close frame.
/// Dropping the sink (the engine's writer ended) cancels the connection's token.
struct SocketSink {
    sink: futures_util::stream::SplitSink<WebSocketStream<Box<dyn Io>>, Message>,
    over: Option<tokio_util::sync::DropGuard>,
}

/// A socket error as the engine's writer reports it.
fn io_error(error: tungstenite::Error) -> std::io::Error {
    match error {
        tungstenite::Error::Io(error) => error,
        other => std::io::Error::new(std::io::ErrorKind::BrokenPipe, other),
    }
}

impl acp_rpc::transport::FrameSink for SocketSink {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.sink.poll_ready_unpin(cx).map_err(io_error)
    }

    fn send(&mut self, frame: Bytes) -> std::io::Result<()> {
        // A text frame carries UTF-8 only: anything else (raw bytes sent on purpose, as a
        // bad-input check does) cannot go out as a message and is dropped, as over a line
        // transport the peer would skip it.
        let Ok(text) = tungstenite::Utf8Bytes::try_from(frame) else {
            tracing::debug!("a message that is not UTF-8 was not sent over the WebSocket");
            return Ok(());
        };
        self.sink
            .start_send_unpin(Message::Text(text))
            .map_err(io_error)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.sink.poll_flush_unpin(cx).map_err(io_error)
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The close frame, then the socket's end; a socket already gone is closed enough.
        let _ = ready!(self.sink.poll_close_unpin(cx));
        self.over.take();
        Poll::Ready(Ok(()))
    }
}

/// Sends each message of `receiver` as a text frame, then the close frame once it ends;
/// the token is cancelled once the close frame went out (or the socket failed).
fn send_frames(
    sink: futures_util::stream::SplitSink<WebSocketStream<Box<dyn Io>>, Message>,
    mut receiver: acp_rpc::transport::FrameReceiver,
) -> CancellationToken {
    use acp_rpc::transport::FrameSink;
    use std::future::poll_fn;
    let over = CancellationToken::new();
    let mut sink = SocketSink {
        sink,
        over: Some(over.clone().drop_guard()),
    };
    tokio::spawn(async move {
        while let Some(frame) = receiver.recv().await {
            if poll_fn(|cx| sink.poll_ready(cx)).await.is_err() || sink.send(frame).is_err() {
                return;
            }
            // One flush per burst: the frames ready now go out together.
            if !receiver.has_more() && poll_fn(|cx| sink.poll_flush(cx)).await.is_err() {
                return;
            }
        }
        let _ = poll_fn(|cx| sink.poll_close(cx)).await;
    });
    over
}

/// Opens the socket (failing here on a refused upgrade: 401, 403, 503...), sends each
/// message of `messages` as a frame and returns the server's frames as lines; the token is
/// cancelled once the close frame went out (or the socket failed).
pub(crate) async fn start(
    remote: Arc<Remote>,
    messages: acp_rpc::transport::FrameReceiver,
) -> Result<(CancellationToken, FrameLines), Error> {
    let ws = open_socket(&remote).await?;
    let (sink, stream) = ws.split();
    let over = send_frames(sink, messages);
    Ok((over, FrameLines::new(stream)))
}

/// The WebSocket handshake with the server of `remote`.
async fn open_socket(remote: &Remote) -> Result<WebSocketStream<Box<dyn Io>>, Error> {
    let target = &remote.target;
    // The handshake's request line and `Host` (TLS, for `wss://`, is the stream's business).
    let url = format!("ws://{}{}", target.authority, target.path);
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| Error::Config(format!("`{url}`: {e}")))?;
    if let Some(auth) = remote.authorization() {
        request.headers_mut().insert(AUTHORIZATION, auth);
    }
    if let Some(cookies) = remote.cookie_header() {
        request.headers_mut().insert(COOKIE, cookies);
    }
    let stream = buffered(super::stream::open(remote).await?);
    let config = WebSocketConfig::default()
        .read_buffer_size(crate::server::READ_BUFFER)
        .max_message_size(Some(remote.max))
        .max_frame_size(Some(remote.max));
    let (ws, response) = tokio_tungstenite::client_async_with_config(request, stream, Some(config))
        .await
        .map_err(|e| match e {
            tungstenite::Error::Http(response) => Error::Refused {
                status: response.status().as_u16(),
                message: response
                    .body()
                    .as_deref()
                    .map(|b| {
                        String::from_utf8_lossy(&b[..b.len().min(200)])
                            .trim()
                            .to_owned()
                    })
                    .unwrap_or_default(),
            },
            other => Error::WebSocket(other.to_string()),
        })?;
    remote.keep_cookies(response.headers());
    Ok(ws)
}

/// The server's frames as the JSON lines a connection reads: each text frame is copied once,
/// straight into the connection's read buffer, with its newline. A frame with a raw newline
/// (which would read as two lines) is dropped; ping, pong and binary frames are not messages;
/// a close frame, the end of the socket or a failed read ends the lines.
pub(crate) struct FrameLines {
    frames: SplitStream<WebSocketStream<Box<dyn Io>>>,
    /// The frame being copied out, and how much of it has been.
    current: Bytes,
    copied: usize,
    /// The current frame's newline is still to be copied.
    newline_due: bool,
    ended: bool,
}

impl FrameLines {
    fn new(frames: SplitStream<WebSocketStream<Box<dyn Io>>>) -> Self {
        FrameLines {
            frames,
            current: Bytes::new(),
            copied: 0,
            newline_due: false,
            ended: false,
        }
    }
}

impl std::fmt::Debug for FrameLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameLines")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl AsyncRead for FrameLines {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        loop {
            let left = &this.current[this.copied..];
            let n = left.len().min(buf.remaining());
            buf.put_slice(&left[..n]);
            this.copied += n;
            if this.copied < this.current.len() {
                return Poll::Ready(Ok(()));
            }
            if this.newline_due {
                if buf.remaining() == 0 {
                    return Poll::Ready(Ok(()));
                }
                buf.put_slice(b"\n");
                this.newline_due = false;
            }
            // Nothing filled and nothing to come: the end of the lines.
            if this.ended || buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            let frame = match this.frames.poll_next_unpin(cx) {
                Poll::Pending if buf.filled().len() > before => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
                Poll::Ready(frame) => frame,
            };
            match frame {
                Some(Ok(Message::Text(text))) if text.contains('\n') => {
                    tracing::warn!("the server sent a frame with a raw newline; dropped");
                }
                Some(Ok(Message::Text(text))) => {
                    this.current = text.into();
                    this.copied = 0;
                    this.newline_due = true;
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => this.ended = true,
                Some(Ok(_)) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, BufReader, DuplexStream};
    use tokio_tungstenite::tungstenite::protocol::Role;

    use super::*;

    /// A server socket and the client's lines of the other end, over an in-memory pipe.
    async fn pair() -> (WebSocketStream<DuplexStream>, FrameLines) {
        let (server, client) = tokio::io::duplex(1 << 16);
        let server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let client: Box<dyn Io> = Box::new(client);
        let client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
        let (_, frames) = client.split();
        (server, FrameLines::new(frames))
    }

    #[tokio::test]
    async fn frames_become_lines_whatever_the_size_of_the_reads() {
        let (mut server, lines) = pair().await;
        let long = format!(r#"{{"b":"{}"}}"#, "x".repeat(1000));
        for frame in [
            Message::text(r#"{"a":1}"#),
            Message::Ping(Bytes::from_static(b"p")),
            Message::text(long.clone()),
            Message::Binary(Bytes::from_static(b"not a message")),
            Message::text("{\"split\":\n1}"),
            Message::text(r#"{"c":3}"#),
            Message::Close(None),
        ] {
            server.send(frame).await.unwrap();
        }
        // Reads of 7 bytes: frames and their newlines cut anywhere.
        let mut read = String::new();
        BufReader::with_capacity(7, lines)
            .read_to_string(&mut read)
            .await
            .unwrap();
        assert_eq!(read, format!("{{\"a\":1}}\n{long}\n{{\"c\":3}}\n"));
    }

    /// Counts the reads made of a stream.
    struct CountingReads<S> {
        inner: S,
        reads: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<S: AsyncRead + Unpin> AsyncRead for CountingReads<S> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.reads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for CountingReads<S> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut self.inner).poll_write(cx, data)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.inner).poll_flush(cx)
        }

        fn poll_shutdown(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    /// A burst of frames is read from the socket in a few large reads. After a handshake,
    /// tungstenite's own buffer starts from the handshake's leftover bytes and reads no
    /// more than the room left in it: 120,000 reads a second of about 2 KiB each while a
    /// turn streamed, where the server wrote 3,700 times.
    #[tokio::test]
    async fn a_burst_of_frames_is_read_in_a_few_reads_of_the_socket() {
        let (server, client) = tokio::io::duplex(1 << 20);
        let mut server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let socket: Box<dyn Io> = Box::new(CountingReads {
            inner: client,
            reads: reads.clone(),
        });
        // As the handshake leaves it (no bytes read past the response), with the client's
        // configuration: without the buffer, 2,015 reads (one a frame).
        let config = WebSocketConfig::default().read_buffer_size(crate::server::READ_BUFFER);
        let client = WebSocketStream::from_partially_read(
            buffered(socket),
            Vec::new(),
            Role::Client,
            Some(config),
        )
        .await;
        let (_, frames) = client.split();
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"n":1}}"#;
        let count = 2_000;
        for _ in 0..count {
            server.feed(Message::text(line)).await.unwrap();
        }
        server.send(Message::Close(None)).await.unwrap();
        let mut read = String::new();
        FrameLines::new(frames)
            .read_to_string(&mut read)
            .await
            .unwrap();
        assert_eq!(read.lines().count(), count);
        // About 130 KiB: two reads of the buffer and the end.
        let reads = reads.load(std::sync::atomic::Ordering::Relaxed);
        assert!(reads <= 8, "{reads} reads of the socket for {count} frames");
    }

    /// An engine driving the socket itself: its messages go out as text frames, the
    /// server's text frames reach its handler, and closing it sends the close frame and
    /// cancels the token.
    #[tokio::test]
    async fn an_engine_drives_the_socket_both_ways_and_closes_it() {
        use std::sync::Mutex;

        #[derive(Clone, Default)]
        struct Seen(Arc<Mutex<Vec<String>>>);

        #[acp_rpc::async_trait]
        impl acp_rpc::Handler for Seen {
            async fn handle_notification(
                &self,
                _cx: acp_rpc::NotificationContext,
                method: &str,
                _params: acp_rpc::Params,
            ) -> Result<(), acp_rpc::Error> {
                self.0.lock().unwrap().push(method.to_owned());
                Ok(())
            }
        }

        let (server, client) = tokio::io::duplex(1 << 16);
        let mut server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let client: Box<dyn Io> = Box::new(client);
        let client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
        let (over, adapter) = driven(client);
        let seen = Seen::default();
        let conn = acp_rpc::Connection::over(adapter, seen.clone(), acp_rpc::Config::default());

        conn.peer().notify("up", &1).await.unwrap();
        let Some(Ok(Message::Text(text))) = server.next().await else {
            panic!("a text frame")
        };
        assert_eq!(
            text.as_str(),
            r#"{"jsonrpc":"2.0","method":"up","params":1}"#
        );

        server
            .send(Message::text(r#"{"jsonrpc":"2.0","method":"down"}"#))
            .await
            .unwrap();
        let wait = Duration::from_secs(5);
        tokio::time::timeout(wait, async {
            while seen.0.lock().unwrap().is_empty() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the server's message reached the handler");
        assert_eq!(*seen.0.lock().unwrap(), ["down"]);

        conn.close();
        let closing = tokio::time::timeout(wait, server.next()).await.unwrap();
        assert!(
            matches!(closing, Some(Ok(Message::Close(_)))),
            "{closing:?}"
        );
        tokio::time::timeout(wait, over.cancelled())
            .await
            .expect("the token is cancelled once the close went out");
    }

    /// A server that stops reading holds the engine's writer back (the socket's buffer and
    /// tungstenite's are bounded), and the write stall timeout ends the connection: the
    /// client's memory does not grow with what it cannot send.
    #[tokio::test]
    async fn a_server_that_stops_reading_stalls_the_engine_and_is_cut_off() {
        let (server, client) = tokio::io::duplex(1 << 16);
        // The server's end is held and never read.
        let _server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let client: Box<dyn Io> = Box::new(client);
        let client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
        let (_over, adapter) = driven(client);
        let stall = Duration::from_millis(200);
        let config = acp_rpc::Config::default().with_write_stall_timeout(Some(stall));
        let conn = acp_rpc::Connection::over(adapter, (), config);
        let peer = conn.peer().clone();
        let flood = tokio::spawn(async move {
            let chunk = "x".repeat(1024);
            for i in 0..100_000 {
                if peer.notify("flood", &chunk).await.is_err() {
                    return i;
                }
            }
            panic!("a server that reads nothing took 100 MiB");
        });
        let why = tokio::time::timeout(Duration::from_secs(10), conn.closed())
            .await
            .expect("cut off in time");
        assert!(
            matches!(why, acp_rpc::CloseReason::WriteStalled(d) if d == stall),
            "{why}"
        );
        // What was taken before the stall: the engine's queue, tungstenite's write buffer
        // and the pipe (about 1,300 of these here), not all that was offered.
        let sent = flood.await.unwrap();
        assert!(
            sent < 5_000,
            "{sent} messages of 1 KiB taken by a socket nobody reads"
        );
    }

    #[tokio::test]
    async fn the_lines_end_when_the_socket_does() {
        let (server, mut lines) = pair().await;
        drop(server);
        let mut read = Vec::new();
        lines.read_to_end(&mut read).await.unwrap();
        assert!(read.is_empty());
    }
}
