//! The Streamable HTTP profile of the server: POST carries the client's messages, GET opens
//! an SSE stream (connection-scoped, or session-scoped with `Acp-Session-Id`), DELETE ends the
//! connection.
//!
//! Statuses, as the RFD lists them: 200 with the JSON answer and `Acp-Connection-Id` for
//! `initialize`; 202 for every other POST (its answer arrives on a stream) and for DELETE;
//! 400 for a missing header or a body that is not one JSON object; 404 for an unknown
//! connection or session; 406 for a GET not accepting `text/event-stream`; 415 for a POST
//! that is not `application/json`; 501 for a batch. Our own on top: 401 without a credential,
//! 403 for a refused origin, 408 for a body too slow, 413 for a body too large, 429 over the
//! message rate or with too much still waiting for the agent, 502 when the
//! agent cannot start, 503 at the connection limit, 504 when the agent does not answer
//! `initialize` in time.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

use super::connection::{Conn, Refused};
use super::outbox::Outbox;
use super::{Body, Shared, SseBody, ids, text};
use crate::HEADER_CONNECTION_ID;
use crate::security::Identity;

/// A comment line sent on an idle SSE stream, so proxies and dead peers are noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// `POST /acp`.
pub(crate) async fn post(
    shared: &Arc<Shared>,
    who: Identity,
    req: Request<Incoming>,
) -> Response<Body> {
    let json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json\n",
        );
    }
    let limit = shared.limits.max_message_bytes;
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return text(StatusCode::PAYLOAD_TOO_LARGE, "body too large\n");
    }
    let (connection, session) = ids(&req);
    let (connection, session) = (connection.map(str::to_owned), session.map(str::to_owned));
    let body = Limited::new(req.into_body(), limit).collect();
    let body = match tokio::time::timeout(shared.limits.body_timeout, body).await {
        Err(_) => return text(StatusCode::REQUEST_TIMEOUT, "body too slow\n"),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            return text(StatusCode::PAYLOAD_TOO_LARGE, "body too large\n");
        }
        Ok(Err(_)) => return text(StatusCode::BAD_REQUEST, "body unreadable\n"),
        Ok(Ok(body)) => body.to_bytes(),
    };
    let message = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(_)) => {
            return text(
                StatusCode::NOT_IMPLEMENTED,
                "JSON-RPC batches are not supported\n",
            );
        }
        Ok(message @ Value::Object(_)) => message,
        _ => {
            return text(
                StatusCode::BAD_REQUEST,
                "the body is not one JSON-RPC message\n",
            );
        }
    };
    let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize")
        && message.get("id").is_some();
    let Some(connection) = connection else {
        if is_initialize {
            return initialize(shared, who, message).await;
        }
        return text(
            StatusCode::BAD_REQUEST,
            "Acp-Connection-Id header required\n",
        );
    };
    let Some(conn) = shared.conn(&connection, &who) else {
        return text(StatusCode::NOT_FOUND, "unknown connection\n");
    };
    match conn.forward_to_agent(message, session.as_deref()).await {
        Ok(()) => text(StatusCode::ACCEPTED, ""),
        Err(Refused::UnknownSession) => text(StatusCode::NOT_FOUND, "unknown session\n"),
        Err(Refused::Closed) => text(StatusCode::NOT_FOUND, "unknown connection\n"),
        Err(Refused::RateLimited) => {
            let mut response = text(
                StatusCode::TOO_MANY_REQUESTS,
                "too many messages on this connection; slow down\n",
            );
            response.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                hyper::header::HeaderValue::from_static("1"),
            );
            response
        }
        Err(Refused::Backlog) => {
            let mut response = text(
                StatusCode::TOO_MANY_REQUESTS,
                "the agent has not yet read this connection's earlier messages; retry later\n",
            );
            response.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                hyper::header::HeaderValue::from_static("1"),
            );
            response
        }
    }
}

/// `initialize` without a connection: starts one, answers 200 with the agent's answer.
async fn initialize(shared: &Arc<Shared>, who: Identity, message: Value) -> Response<Body> {
    let conn = match shared.open(who, false) {
        Ok(conn) => conn,
        Err(status) => return text(status, "no agent available\n"),
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let answer = conn.expect_initialize(&id);
    if conn.forward_to_agent(message, None).await.is_err() {
        conn.close("agent gone before initialize");
        shared.release();
        return text(StatusCode::BAD_GATEWAY, "no agent available\n");
    }
    let answer = tokio::select! {
        a = tokio::time::timeout(shared.limits.initialize_timeout, answer) => match a {
            Ok(Ok(answer)) => Some(Ok(answer)),
            Ok(Err(_)) => None,
            Err(_) => Some(Err(())),
        },
        () = conn.closed.cancelled() => None,
    };
    let answer = match answer {
        Some(Ok(answer)) => answer,
        None => {
            conn.close("agent gone before initialize");
            shared.release();
            return text(
                StatusCode::BAD_GATEWAY,
                "the agent ended before answering\n",
            );
        }
        Some(Err(())) => {
            conn.close("initialize timeout");
            shared.release();
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                "the agent did not answer in time\n",
            );
        }
    };
    let failed = serde_json::from_slice::<Value>(&answer)
        .map(|v| v.get("error").is_some())
        .unwrap_or(true);
    let mut response = Response::new(Full::new(answer).boxed());
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    match (failed, HeaderValue::from_str(&conn.id)) {
        (false, Ok(value)) => {
            shared.register(&conn);
            response.headers_mut().insert(HEADER_CONNECTION_ID, value);
        }
        _ => {
            conn.close("initialize refused");
            shared.release();
        }
    }
    response
}

/// `GET /acp` with `Accept: text/event-stream`: the connection stream, or a session's.
pub(crate) fn get(shared: &Arc<Shared>, who: Identity, req: Request<Incoming>) -> Response<Body> {
    let accepts = req
        .headers()
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"));
    if !accepts {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include text/event-stream\n",
        );
    }
    let (connection, session) = ids(&req);
    let Some(connection) = connection else {
        return text(
            StatusCode::BAD_REQUEST,
            "Acp-Connection-Id header required\n",
        );
    };
    let Some(conn) = shared.conn(connection, &who) else {
        return text(StatusCode::NOT_FOUND, "unknown connection\n");
    };
    let outbox = match session {
        None => conn.main.clone(),
        Some(session) => match conn.session(session) {
            Some(outbox) => outbox,
            None => return text(StatusCode::NOT_FOUND, "unknown session\n"),
        },
    };
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(pump(conn, outbox, tx));
    let mut response = Response::new(SseBody(rx).boxed());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Moves an outbox's messages to one SSE response, as `data:` events, until the client goes
/// away, another reader replaces it, or the connection ends.
async fn pump(conn: Arc<Conn>, outbox: Arc<Outbox>, tx: mpsc::Sender<Bytes>) {
    let _reading = conn.reader();
    let generation = outbox.attach();
    let keepalive = tokio::time::sleep(KEEPALIVE);
    tokio::pin!(keepalive);
    let mut batch = Vec::new();
    loop {
        let more = tokio::select! {
            more = outbox.next_batch(generation, super::WRITE_BATCH_BYTES, &mut batch) => more,
            () = tx.closed() => return,
            () = &mut keepalive => {
                if tx.send(Bytes::from_static(b": keepalive\n\n")).await.is_err() {
                    return;
                }
                keepalive.as_mut().reset(tokio::time::Instant::now() + KEEPALIVE);
                continue;
            }
        };
        if !more {
            return;
        }
        // Every message taken, as one chunk of `data:` events.
        let size: usize = batch.iter().map(|m| m.len() + 8).sum();
        let mut events = Vec::with_capacity(size);
        for message in &batch {
            events.extend_from_slice(b"data: ");
            events.extend_from_slice(message);
            events.extend_from_slice(b"\n\n");
        }
        if tx.send(Bytes::from(events)).await.is_err() {
            for message in batch.drain(..).rev() {
                outbox.unpop(message);
            }
            return;
        }
        batch.clear();
        keepalive
            .as_mut()
            .reset(tokio::time::Instant::now() + KEEPALIVE);
        conn.touch();
    }
}

/// `DELETE /acp`: ends the connection and its agent.
pub(crate) fn delete(
    shared: &Arc<Shared>,
    who: Identity,
    req: Request<Incoming>,
) -> Response<Body> {
    let (connection, _) = ids(&req);
    let Some(connection) = connection else {
        return text(
            StatusCode::BAD_REQUEST,
            "Acp-Connection-Id header required\n",
        );
    };
    let Some(conn) = shared.conn(connection, &who) else {
        return text(StatusCode::NOT_FOUND, "unknown connection\n");
    };
    conn.close("deleted by the client");
    text(StatusCode::ACCEPTED, "")
}
