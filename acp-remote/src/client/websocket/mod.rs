//! The WebSocket profile of the client: one socket, one text frame per message, both ways.
//! tungstenite makes the upgrade ([`upgrade`]); the frames are ours ([`crate::frames`]): the
//! server's are parsed where they were read, the engine's written masked into one buffer
//! ([`socket`]). An engine's messages go out as they come from its frame adapter; for the
//! JSON lines of a [`RemoteLink`](super::RemoteLink) the server's frames are read by the
//! connection itself ([`FrameLines`]) and the lines it writes arrive as messages, cut by
//! acp-rpc's framer.

use std::sync::Arc;
use std::time::Duration;

use hyper::header::{AUTHORIZATION, COOKIE};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_util::sync::CancellationToken;

use super::Remote;
use crate::Error;

mod socket;
mod upgrade;

pub(crate) use socket::SocketFrames;
use socket::{SocketSink, Upgraded};

use super::pipe::FrameLines;

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
    let (frames, sink, over) = socket::carrier(open_socket(&remote).await?, remote.max);
    Ok((over, acp_rpc::transport::FrameAdapter::driven(frames, sink)))
}

/// Sends each message of `receiver` as a text frame, then the close frame once it ends.
fn send_frames(mut sink: SocketSink, mut receiver: acp_rpc::transport::FrameReceiver) {
    use acp_rpc::transport::FrameSink;
    use std::future::poll_fn;
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
}

/// Opens the socket (failing here on a refused upgrade: 401, 403, 503...), sends each
/// message of `messages` as a frame and returns the server's frames as lines; the token is
/// cancelled once the close frame went out (or the socket failed).
pub(crate) async fn start(
    remote: Arc<Remote>,
    messages: acp_rpc::transport::FrameReceiver,
) -> Result<(CancellationToken, FrameLines<SocketFrames>), Error> {
    let (frames, sink, over) = socket::carrier(open_socket(&remote).await?, remote.max);
    send_frames(sink, messages);
    Ok((over, FrameLines::new(frames)))
}

/// How long opening the socket may take, from the TCP connection to the upgrade's answer:
/// a server that takes the connection and never answers fails the connect instead of
/// holding it (shorter in this crate's own tests, which wait it out).
const OPEN_TIMEOUT: Duration = if cfg!(test) {
    Duration::from_secs(2)
} else {
    Duration::from_secs(30)
};

/// The WebSocket handshake with the server of `remote`, within [`OPEN_TIMEOUT`].
async fn open_socket(remote: &Remote) -> Result<Upgraded, Error> {
    tokio::time::timeout(OPEN_TIMEOUT, upgrade(remote))
        .await
        .map_err(|_| {
            Error::WebSocket(format!(
                "the server did not answer the WebSocket upgrade within {} s",
                OPEN_TIMEOUT.as_secs()
            ))
        })?
}

/// Connects to the server of `remote` and upgrades the connection.
async fn upgrade(remote: &Remote) -> Result<Upgraded, Error> {
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
    // tungstenite reads the response's head only: the frames behind it are ours.
    let stream = upgrade::HeadersFirst::new(super::stream::open(remote).await?);
    let (ws, response) = tokio_tungstenite::client_async(request, stream)
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
    Ok(ws.into_inner().into_upgraded())
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use futures_util::{SinkExt, StreamExt};
    use tokio::io::{AsyncRead, AsyncReadExt, BufReader, DuplexStream, ReadBuf};
    use tokio_tungstenite::WebSocketStream;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::Role;

    use super::*;
    use crate::client::stream::Io;

    /// The client's limit on a message in these tests.
    const MAX: usize = 1 << 20;

    /// A handler that keeps the methods of the notifications it is given, in order.
    #[derive(Clone, Default)]
    pub(super) struct Seen(pub(super) Arc<std::sync::Mutex<Vec<String>>>);

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

    /// The client's carrier over `io`, as the upgrade leaves it (nothing read past it).
    fn carrier(io: impl Io) -> (SocketFrames, SocketSink, CancellationToken) {
        let io: Box<dyn Io> = Box::new(io);
        socket::carrier(
            Upgraded {
                io,
                leftover: bytes::BytesMut::new(),
            },
            MAX,
        )
    }

    /// The client's carrier over `io` for an engine.
    fn driven(io: impl Io) -> (CancellationToken, acp_rpc::transport::FrameAdapter) {
        let (frames, sink, over) = carrier(io);
        (over, acp_rpc::transport::FrameAdapter::driven(frames, sink))
    }

    /// A server socket (tungstenite's) and the client's lines of the other end, over an
    /// in-memory pipe.
    async fn pair() -> (WebSocketStream<DuplexStream>, FrameLines<SocketFrames>) {
        let (server, client) = tokio::io::duplex(1 << 16);
        let server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let (frames, _sink, _over) = carrier(client);
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

    /// A burst of frames is read from the socket in a few large reads (tungstenite's reader
    /// read no more than the room left in its buffer: 120,000 reads a second of about 2 KiB
    /// each while a turn streamed, where the server wrote 3,700 times).
    #[tokio::test]
    async fn a_burst_of_frames_is_read_in_a_few_reads_of_the_socket() {
        let (server, client) = tokio::io::duplex(1 << 20);
        let mut server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (frames, _sink, _over) = carrier(CountingReads {
            inner: client,
            reads: reads.clone(),
        });
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
        // About 130 KiB: a read or two of the reader's buffer and the end.
        let reads = reads.load(std::sync::atomic::Ordering::Relaxed);
        assert!(reads <= 8, "{reads} reads of the socket for {count} frames");
    }

    /// An engine driving the socket itself: its messages go out as text frames, the
    /// server's text frames reach its handler, and closing it sends the close frame and
    /// cancels the token.
    #[tokio::test]
    async fn an_engine_drives_the_socket_both_ways_and_closes_it() {
        let (server, client) = tokio::io::duplex(1 << 16);
        let mut server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
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
    /// the sink's are bounded), and the write stall timeout ends the connection: the
    /// client's memory does not grow with what it cannot send.
    #[tokio::test]
    async fn a_server_that_stops_reading_stalls_the_engine_and_is_cut_off() {
        let (server, client) = tokio::io::duplex(1 << 16);
        // The server's end is held and never read.
        let _server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
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
        // What was taken before the stall: the engine's queue, the sink's 64 KiB and the
        // pipe (about 1,300 of these here), not all that was offered.
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
