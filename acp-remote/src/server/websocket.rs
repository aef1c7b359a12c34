//! The WebSocket profile of the server: `GET /acp` with `Upgrade: websocket` starts a
//! connection (the 101 carries `Acp-Connection-Id`); each text frame is one JSON-RPC message
//! both ways, `initialize` first. A binary frame closes with 1003, a message over the size
//! limit with 1009, a batch is answered with a JSON-RPC error. A client silent for a
//! [`Limits::websocket_ping_interval`] is pinged, and closed with 1001 if it stays silent
//! for another.

use std::time::Duration;

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderMap, HeaderValue, SEC_WEBSOCKET_ACCEPT, UPGRADE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::connection::{Conn, Refused};
use super::{Body, READ_BUFFER, Shared, text};
use crate::HEADER_CONNECTION_ID;
use crate::security::{Identity, Limits};

/// Whether a GET asks for the WebSocket profile.
pub(crate) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The frame and message limits of a socket.
pub(crate) fn config(limits: &Limits) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .max_message_size(Some(limits.max_message_bytes))
        .max_frame_size(Some(limits.max_message_bytes))
}

/// `GET /acp` with `Upgrade: websocket`.
pub(crate) fn upgrade(
    shared: &Arc<Shared>,
    who: Identity,
    mut req: Request<Incoming>,
) -> Response<Body> {
    let headers = req.headers();
    let key = headers
        .get("sec-websocket-key")
        .map(|k| k.as_bytes().to_vec());
    let version_ok = headers
        .get("sec-websocket-version")
        .is_some_and(|v| v.as_bytes() == b"13");
    let upgrade_ok = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        });
    let (Some(key), true, true) = (key, version_ok, upgrade_ok) else {
        return text(StatusCode::BAD_REQUEST, "not a WebSocket upgrade\n");
    };
    let conn = match shared.open(who, true) {
        Ok(conn) => conn,
        Err(status) => return text(status, "no agent available\n"),
    };
    shared.register(&conn);
    let Ok(id) = HeaderValue::from_str(&conn.id) else {
        conn.close("bad id");
        return text(StatusCode::INTERNAL_SERVER_ERROR, "\n");
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    let config = config(&shared.limits);
    let ping_interval = shared.limits.websocket_ping_interval;
    let running = conn.clone();
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                let io = TokioIo::new(upgraded);
                let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
                serve(&running, ws, ping_interval).await;
            }
            Err(error) => tracing::debug!(%error, "websocket upgrade failed"),
        }
        running.close("websocket closed");
    });
    let mut response = text(StatusCode::SWITCHING_PROTOCOLS, "");
    let headers = response.headers_mut();
    headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(&key)) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    headers.insert(HEADER_CONNECTION_ID, id);
    response
}

/// Moves frames both ways until either side ends, pinging a silent client.
async fn serve<S>(conn: &Arc<Conn>, mut ws: WebSocketStream<S>, ping_interval: Duration)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let _reading = conn.reader();
    let generation = conn.main.attach();
    // When the client has been silent long enough; `pinged`: the ping went out already.
    let silence = tokio::time::sleep(ping_interval);
    tokio::pin!(silence);
    let mut pinged = false;
    let mut out = Vec::new();
    // The agent's messages as frames, written in one go (see below).
    let mut frames = Vec::new();
    // A ping of the client's was read: tungstenite queued its pong, which must be written
    // whole before our own frames go out.
    let mut pong_queued = false;
    loop {
        tokio::select! {
            () = &mut silence => {
                if pinged {
                    tracing::debug!(connection = %conn.id, "no answer to a ping; closing");
                    let _ = ws.send(close(CloseCode::Away, "no answer to ping")).await;
                    return;
                }
                if ws.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
                pinged = true;
                silence.as_mut().reset(tokio::time::Instant::now() + ping_interval);
            }
            frame = ws.next() => {
                if let Some(Ok(_)) = &frame {
                    pinged = false;
                    silence.as_mut().reset(tokio::time::Instant::now() + ping_interval);
                }
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        let _ = ws.send(close(CloseCode::Unsupported, "text frames only")).await;
                        return;
                    }
                    Some(Ok(Message::Close(_))) | None => return,
                    Some(Ok(Message::Ping(_))) => {
                        pong_queued = true;
                        continue;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(_))) => {
                        let _ = ws.send(close(CloseCode::Size, "message too large")).await;
                        return;
                    }
                    Some(Err(_)) => return,
                };
                conn.touch();
                match serde_json::from_str::<Value>(&text) {
                    Ok(message @ Value::Object(_)) => {
                        // The error answers a request; anything else gets a null id.
                        let id = match message.get("method") {
                            Some(_) => message.get("id").cloned().unwrap_or(Value::Null),
                            None => Value::Null,
                        };
                        match conn.forward_to_agent(message, None).await {
                            Ok(()) => {}
                            Err(why @ (Refused::RateLimited | Refused::Backlog)) => {
                                let message = match why {
                                    Refused::Backlog => "the agent has not yet read this connection's earlier messages; retry later",
                                    _ => "too many messages on this connection; slow down",
                                };
                                let refused = super::connection::refusal(&id, message);
                                let Ok(refused) = Utf8Bytes::try_from(refused) else { continue };
                                if ws.send(Message::Text(refused)).await.is_err() {
                                    return;
                                }
                            }
                            Err(_) => return,
                        }
                    }
                    Ok(Value::Array(_)) => {
                        let error = invalid(-32600, "JSON-RPC batches are not supported");
                        if ws.send(error).await.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {
                        if ws.send(invalid(-32600, "not one JSON-RPC message")).await.is_err() {
                            return;
                        }
                    }
                    Err(_) => {
                        if ws.send(invalid(-32700, "parse error")).await.is_err() {
                            return;
                        }
                    }
                }
            }
            more = conn.main.next_batch(generation, super::WRITE_BATCH_BYTES, &mut out) => {
                if !more {
                    let _ = ws.send(close(CloseCode::Away, "connection ended")).await;
                    return;
                }
                // tungstenite's own frames (a pong) go out whole first: nothing of ours may
                // land inside one.
                if pong_queued {
                    if ws.flush().await.is_err() {
                        return;
                    }
                    pong_queued = false;
                }
                // A frame each, written straight to the socket in one write: tungstenite
                // copied each message into a frame of its own and locked, buffered and
                // flushed per message (the server's largest cost per streamed chunk).
                // Each is text already (`Conn::push`): a text message as it is.
                frames.clear();
                for message in out.drain(..) {
                    crate::frames::encode(crate::frames::TEXT, &message, None, &mut frames);
                }
                let socket = ws.get_mut();
                if socket.write_all(&frames).await.is_err() || socket.flush().await.is_err() {
                    return;
                }
                conn.touch();
            }
        }
    }
}

fn close(code: CloseCode, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

/// A JSON-RPC error with a null id (-32700 parse error, -32600 invalid request).
fn invalid(code: i64, message: &str) -> Message {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    Message::text(error.to_string())
}
