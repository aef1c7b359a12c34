//! The WebSocket profile of the client: one socket, one text frame per message, both ways.

use std::sync::Arc;

use futures_util::{FutureExt, SinkExt, StreamExt};
use hyper::header::{AUTHORIZATION, COOKIE};
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::sync::CancellationToken;

use super::Remote;
use crate::Error;

/// Opens the socket (failing here on a refused upgrade: 401, 403, 503...) and starts moving
/// frames between it and `bridge`; the token is cancelled once the close frame went out (or
/// the socket failed).
pub(crate) async fn start(
    remote: Arc<Remote>,
    bridge: DuplexStream,
) -> Result<CancellationToken, Error> {
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
    let stream = super::stream::open(&remote).await?;
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
    let (mut sink, mut stream) = ws.split();
    let (read, mut write) = tokio::io::split(bridge);
    let max = remote.max;
    let over = CancellationToken::new();
    let done = over.clone().drop_guard();
    tokio::spawn(async move {
        let _done = done;
        let mut lines = FramedRead::new(read, LinesCodec::new_with_max_length(max));
        while let Some(Ok(line)) = lines.next().await {
            if sink.send(Message::text(line)).await.is_err() {
                return;
            }
        }
        let _ = sink.send(Message::Close(None)).await;
    });
    tokio::spawn(async move {
        // The frames that have arrived, as lines, handed to the connection in one write: a
        // burst of updates wakes its reader once, not once per frame.
        let mut lines = Vec::with_capacity(crate::server::WRITE_BATCH_BYTES);
        let mut next = stream.next().await;
        'frames: while let Some(Ok(frame)) = next {
            let mut ended = false;
            let mut frame = Some(frame);
            while let Some(current) = frame.take() {
                match current {
                    Message::Text(text) if text.contains('\n') => {
                        tracing::warn!("the server sent a frame with a raw newline; dropped");
                    }
                    Message::Text(text) => {
                        lines.extend_from_slice(text.as_bytes());
                        lines.push(b'\n');
                    }
                    Message::Close(_) => {
                        ended = true;
                        break;
                    }
                    _ => {}
                }
                if lines.len() < crate::server::WRITE_BATCH_BYTES {
                    frame = match stream.next().now_or_never() {
                        Some(Some(Ok(more))) => Some(more),
                        Some(_) => {
                            ended = true;
                            None
                        }
                        None => None,
                    };
                }
            }
            if write.write_all(&lines).await.is_err() {
                break 'frames;
            }
            lines.clear();
            if ended {
                break;
            }
            next = stream.next().await;
        }
        let _ = write.shutdown().await;
    });
    Ok(over)
}
