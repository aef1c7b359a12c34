//! The raw-HTTP bad-input table: each bad request gets its status and the server keeps
//! serving; every limit answers clearly (413, 503, a JSON-RPC error, close code 1009), and
//! idle connections, clients that never read and WebSocket clients that stop answering pings
//! are closed.

mod slow_peers;
#[path = "../support/mod.rs"]
mod support;

use std::time::Duration;

use acp_remote::Limits;
use futures_util::{SinkExt, StreamExt};
use support::raw::{Raw, event_with, request, send};
use support::wire::*;
use support::within;
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn bad_requests_get_their_status_and_the_server_keeps_serving() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 64 * 1024;
    let server = server(limits).await;
    let addr = server.local_addr();
    let conn = initialize(addr, AUTH).await;
    let c = ("Acp-Connection-Id", conn.as_str());
    let unknown = ("Acp-Connection-Id", "00000000000000000000000000000000");
    let big = "x".repeat(64 * 1024 + 1);
    let chunked_big = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    // The headers alone: the server answers before any body byte.
    let declared_only = format!(
        "POST /acp HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAcp-Connection-Id: {conn}\r\n\
         Content-Length: 99999999\r\n\r\n"
    )
    .into_bytes();
    let table: Vec<(&str, Vec<u8>, u16)> = vec![
        ("no token", request("POST", "/acp", &[JSON], INIT), 401),
        (
            "wrong token",
            request(
                "POST",
                "/acp",
                &[("Authorization", "Bearer nope"), JSON],
                INIT,
            ),
            401,
        ),
        (
            "basic auth",
            request(
                "POST",
                "/acp",
                &[("Authorization", "Basic dGVzdA=="), JSON],
                INIT,
            ),
            401,
        ),
        (
            "no token on GET",
            request("GET", "/acp", &[SSE, c], ""),
            401,
        ),
        (
            "no token on DELETE",
            request("DELETE", "/acp", &[c], ""),
            401,
        ),
        (
            "wrong content type",
            request(
                "POST",
                "/acp",
                &[AUTH, ("Content-Type", "text/plain")],
                INIT,
            ),
            415,
        ),
        (
            "no content type",
            request("POST", "/acp", &[AUTH], INIT),
            415,
        ),
        (
            "batch",
            request("POST", "/acp", &[AUTH, JSON, c], &format!("[{NEW}]")),
            501,
        ),
        (
            "not JSON",
            request("POST", "/acp", &[AUTH, JSON, c], "{nope"),
            400,
        ),
        (
            "not an object",
            request("POST", "/acp", &[AUTH, JSON, c], "42"),
            400,
        ),
        (
            "no connection id",
            request("POST", "/acp", &[AUTH, JSON], NEW),
            400,
        ),
        (
            "unknown connection",
            request("POST", "/acp", &[AUTH, JSON, unknown], NEW),
            404,
        ),
        (
            "unknown session",
            request(
                "POST",
                "/acp",
                &[AUTH, JSON, c, ("Acp-Session-Id", "nope")],
                NEW,
            ),
            404,
        ),
        (
            "GET not accepting SSE",
            request("GET", "/acp", &[AUTH, c], ""),
            406,
        ),
        (
            "GET without connection",
            request("GET", "/acp", &[AUTH, SSE], ""),
            400,
        ),
        (
            "GET unknown connection",
            request("GET", "/acp", &[AUTH, SSE, unknown], ""),
            404,
        ),
        (
            "GET unknown session",
            request(
                "GET",
                "/acp",
                &[AUTH, SSE, c, ("Acp-Session-Id", "nope")],
                "",
            ),
            404,
        ),
        (
            "DELETE without connection",
            request("DELETE", "/acp", &[AUTH], ""),
            400,
        ),
        (
            "DELETE unknown connection",
            request("DELETE", "/acp", &[AUTH, unknown], ""),
            404,
        ),
        ("declared oversized body", declared_only, 413),
        (
            "chunked oversized body",
            request(
                "POST",
                "/acp",
                &[AUTH, JSON, c, ("Transfer-Encoding", "chunked")],
                &chunked_big,
            ),
            413,
        ),
        (
            "foreign origin",
            request(
                "POST",
                "/acp",
                &[AUTH, JSON, ("Origin", "https://evil.example")],
                INIT,
            ),
            403,
        ),
        (
            "other method",
            request("PUT", "/acp", &[AUTH, JSON], INIT),
            405,
        ),
        ("other path", request("GET", "/other", &[AUTH], ""), 404),
        (
            "broken upgrade",
            request("GET", "/acp", &[AUTH, ("Upgrade", "websocket")], ""),
            400,
        ),
    ];
    for (name, bytes, status) in table {
        let r = within(10, send(addr, &bytes)).await;
        assert_eq!(r.status, status, "{name}: {r:?}");
        if status == 401 {
            assert_eq!(
                r.header("www-authenticate").as_deref(),
                Some("bearer"),
                "{name}"
            );
        }
    }
    // The connection survived all of it, and so did the server.
    let fine = send(addr, &request("POST", "/acp", &[AUTH, JSON, c], NEW)).await;
    assert_eq!(fine.status, 202);
    let health = send(addr, &request("GET", "/healthz", &[], "")).await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"));
    // DELETE ends it: 202, then the id names nothing.
    assert_eq!(
        send(addr, &request("DELETE", "/acp", &[AUTH, c], ""))
            .await
            .status,
        202
    );
    assert_eq!(
        send(addr, &request("POST", "/acp", &[AUTH, JSON, c], NEW))
            .await
            .status,
        404
    );
    server.shutdown();
}

#[tokio::test]
async fn an_allowed_origin_gets_cors_headers() {
    let server = server(Limits::default()).await;
    let origin = ("Origin", "https://editor.example");
    let pre = send(
        server.local_addr(),
        &request("OPTIONS", "/acp", &[origin], ""),
    )
    .await;
    assert_eq!(pre.status, 204);
    assert_eq!(
        pre.header("access-control-allow-origin").as_deref(),
        Some("https://editor.example")
    );
    let r = send(
        server.local_addr(),
        &request("POST", "/acp", &[AUTH, JSON, origin], INIT),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("access-control-expose-headers")
            .unwrap()
            .contains("acp-connection-id")
    );
    server.shutdown();
}

#[tokio::test]
async fn limits_answer_clearly() {
    let mut limits = Limits::default();
    limits.max_sessions_per_connection = 1;
    limits.max_connections = 2;
    limits.max_message_bytes = 64 * 1024;
    let server = server(limits).await;
    let addr = server.local_addr();
    // Sessions: the second session/new gets a JSON-RPC error on the connection stream.
    let (conn, _session, mut stream) = with_session(addr).await;
    let second = NEW.replace("\"id\":1", "\"id\":9");
    let r = send(
        addr,
        &request(
            "POST",
            "/acp",
            &[AUTH, JSON, ("Acp-Connection-Id", &conn)],
            &second,
        ),
    )
    .await;
    assert_eq!(r.status, 202);
    let refused = event_with(&mut stream, "\"id\":9").await;
    assert!(
        refused.contains("-32000") && refused.contains("session limit"),
        "{refused}"
    );
    // Connections: the third gets 503, over either profile.
    let _second = initialize(addr, AUTH).await;
    let third = send(addr, &request("POST", "/acp", &[AUTH, JSON], INIT)).await;
    assert_eq!(third.status, 503);
    let url = format!("ws://{addr}/acp");
    let options = acp_remote::ConnectOptions::new().token(TOKEN);
    let refused = acp_remote::connect(&url, &options).await.unwrap_err();
    assert!(
        matches!(refused, acp_remote::Error::Refused { status: 503, .. }),
        "{refused:?}"
    );
    server.shutdown();
}

#[tokio::test]
async fn an_oversized_websocket_message_closes_with_1009() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 1024;
    let server = server(limits).await;
    let (mut ws, _) = websocket(&server).await;
    ws.send(Message::text("x".repeat(2048))).await.unwrap();
    let closed = within(5, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => {}
                _ => return None,
            }
        }
    })
    .await;
    assert_eq!(closed, Some(1009));
    server.shutdown();
}

/// An agent that refuses every `initialize`.
struct Refuser;

#[acp_agent::async_trait]
impl acp_agent::Agent for Refuser {
    async fn initialize(
        &self,
        _: acp_agent::types::InitializeRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::InitializeResponse, acp_agent::Error> {
        Err(acp_agent::Error::new(
            acp_agent::ErrorCode::INVALID_PARAMS,
            "no",
        ))
    }
}

#[tokio::test]
async fn a_refused_initialize_is_answered_and_leaves_no_connection() {
    let server = acp_remote::Server::in_process(|| Refuser)
        .authenticator(acp_remote::BearerToken::new(TOKEN).unwrap())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let r = send(
        server.local_addr(),
        &request("POST", "/acp", &[AUTH, JSON], INIT),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("\"error\""), "{r:?}");
    assert_eq!(r.header("acp-connection-id"), None);
    assert_eq!(server.connections(), 0);
    server.shutdown();
}
