//! The wire fixtures of the raw tests: the token, the headers, the messages, a server, and
//! connections and sessions made by hand.

use std::net::SocketAddr;

use acp_remote::{BearerToken, Limits, RunningServer, Server};
use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::raw::{event_with, open, request, send};
use super::{TestAgent, within};

pub const TOKEN: &str = "test-token-0123456789";
pub const AUTH: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");
pub const JSON: (&str, &str) = ("Content-Type", "application/json");
pub const SSE: (&str, &str) = ("Accept", "text/event-stream");
pub const INIT: &str =
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
pub const NEW: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#;

pub async fn server(limits: Limits) -> RunningServer {
    Server::in_process(TestAgent::default)
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .allow_origin("https://editor.example")
        .limits(limits)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// POSTs `initialize`; the connection id.
pub async fn initialize(addr: SocketAddr, auth: (&str, &str)) -> String {
    let r = send(addr, &request("POST", "/acp", &[auth, JSON], INIT)).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("\"result\""), "{r:?}");
    r.header("acp-connection-id").expect("Acp-Connection-Id")
}

/// A connection with one session: its id, the session id and the open connection stream.
pub async fn with_session(addr: SocketAddr) -> (String, String, tokio::net::TcpStream) {
    let conn = initialize(addr, AUTH).await;
    let (r, mut stream) = open(
        addr,
        &request(
            "GET",
            "/acp",
            &[AUTH, SSE, ("Acp-Connection-Id", &conn)],
            "",
        ),
    )
    .await;
    assert_eq!(r.status, 200);
    let posted = send(
        addr,
        &request(
            "POST",
            "/acp",
            &[AUTH, JSON, ("Acp-Connection-Id", &conn)],
            NEW,
        ),
    )
    .await;
    assert_eq!(posted.status, 202, "{posted:?}");
    let answer = event_with(&mut stream, "sessionId").await;
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    (conn, session, stream)
}

/// Opens a WebSocket with the token; the socket and its `Acp-Connection-Id`.
pub async fn websocket(
    server: &RunningServer,
) -> (
    tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    String,
) {
    let url = format!("ws://{}/acp", server.local_addr());
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let (ws, response) = tokio_tungstenite::client_async(req, tcp).await.unwrap();
    let id = response.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (ws, id)
}

/// The next text frame whose JSON has this id.
pub async fn answer(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    id: impl Into<serde_json::Value>,
) -> serde_json::Value {
    let id = id.into();
    within(10, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                    if v["id"] == id {
                        return v;
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("socket ended: {other:?}"),
            }
        }
    })
    .await
}
