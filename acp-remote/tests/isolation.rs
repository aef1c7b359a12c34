//! Connections are isolated: forged and swapped `Acp-Connection-Id` / `Acp-Session-Id` reach
//! nothing over either profile, and another identity cannot name a connection.

mod support;

use std::time::Duration;

use acp_remote::{Authenticator, Identity, Limits, Server};
use futures_util::SinkExt;
use support::TestAgent;
use support::raw::{open, request, send};
use support::wire::*;
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn forged_and_swapped_ids_reach_nothing_over_http() {
    let server = server(Limits::default()).await;
    let addr = server.local_addr();
    let (a, a_session, _a_stream) = with_session(addr).await;
    let (b, b_session, _b_stream) = with_session(addr).await;
    let prompt = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{{"sessionId":"{a_session}","prompt":[]}}}}"#
    );
    // B's connection id with A's session: both sessions are called s-0 by their own agents,
    // so use an id only A knows by asking A for a second session first.
    let posted = send(
        addr,
        &request(
            "POST",
            "/acp",
            &[AUTH, JSON, ("Acp-Connection-Id", &a)],
            &NEW.replace("\"id\":1", "\"id\":2"),
        ),
    )
    .await;
    assert_eq!(posted.status, 202);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let only_a = "s-1";
    for (conn, session) in [(&b, only_a), (&a, "forged"), (&b, "forged")] {
        let ids = [
            AUTH,
            SSE,
            ("Acp-Connection-Id", conn.as_str()),
            ("Acp-Session-Id", session),
        ];
        assert_eq!(
            send(addr, &request("GET", "/acp", &ids, "")).await.status,
            404,
            "GET {conn} {session}"
        );
        let ids = [
            AUTH,
            JSON,
            ("Acp-Connection-Id", conn.as_str()),
            ("Acp-Session-Id", session),
        ];
        assert_eq!(
            send(addr, &request("POST", "/acp", &ids, &prompt))
                .await
                .status,
            404,
            "POST {conn} {session}"
        );
    }
    // Their own sessions are theirs.
    for (conn, session) in [(&a, &a_session), (&b, &b_session), (&a, &only_a.to_owned())] {
        let ids = [
            AUTH,
            SSE,
            ("Acp-Connection-Id", conn.as_str()),
            ("Acp-Session-Id", session.as_str()),
        ];
        let (r, _stream) = open(addr, &request("GET", "/acp", &ids, "")).await;
        assert_eq!(r.status, 200);
    }
    server.shutdown();
}

/// Two users with two tokens: neither can name the other's connection.
struct TwoUsers;

impl Authenticator for TwoUsers {
    fn authenticate(&self, headers: &hyper::HeaderMap) -> Option<Identity> {
        match headers.get("authorization")?.to_str().ok()? {
            "Bearer alice" => Some(Identity("alice".into())),
            "Bearer bob" => Some(Identity("bob".into())),
            _ => None,
        }
    }
}

#[tokio::test]
async fn another_identity_cannot_use_a_connection_id() {
    let server = Server::in_process(TestAgent::default)
        .authenticator(TwoUsers)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    let alice = initialize(addr, ("Authorization", "Bearer alice")).await;
    let bob = ("Authorization", "Bearer bob");
    let ids = ("Acp-Connection-Id", alice.as_str());
    assert_eq!(
        send(addr, &request("POST", "/acp", &[bob, JSON, ids], NEW))
            .await
            .status,
        404
    );
    assert_eq!(
        send(addr, &request("GET", "/acp", &[bob, SSE, ids], ""))
            .await
            .status,
        404
    );
    assert_eq!(
        send(addr, &request("DELETE", "/acp", &[bob, ids], ""))
            .await
            .status,
        404
    );
    let alice_auth = ("Authorization", "Bearer alice");
    assert_eq!(
        send(
            addr,
            &request("POST", "/acp", &[alice_auth, JSON, ids], NEW)
        )
        .await
        .status,
        202
    );
    server.shutdown();
}

#[tokio::test]
async fn forged_ids_reach_nothing_over_websocket() {
    let server = server(Limits::default()).await;
    let addr = server.local_addr();
    let (mut a, a_id) = websocket(&server).await;
    a.send(Message::text(INIT)).await.unwrap();
    assert!(answer(&mut a, 0).await.get("result").is_some());
    a.send(Message::text(NEW)).await.unwrap();
    a.send(Message::text(NEW.replace("\"id\":1", "\"id\":2")))
        .await
        .unwrap();
    answer(&mut a, 1).await;
    assert_eq!(answer(&mut a, 2).await["result"]["sessionId"], "s-1");
    // The WebSocket connection's id is not an HTTP connection: POST and GET with it fail.
    let ids = ("Acp-Connection-Id", a_id.as_str());
    assert_eq!(
        send(addr, &request("POST", "/acp", &[AUTH, JSON, ids], NEW))
            .await
            .status,
        404
    );
    assert_eq!(
        send(addr, &request("GET", "/acp", &[AUTH, SSE, ids], ""))
            .await
            .status,
        404
    );
    // Another socket naming A's session reaches its own agent, which has no such session.
    let (mut b, b_id) = websocket(&server).await;
    assert_ne!(a_id, b_id);
    b.send(Message::text(INIT)).await.unwrap();
    answer(&mut b, 0).await;
    let prompt = r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}"#;
    b.send(Message::text(prompt)).await.unwrap();
    let refused = answer(&mut b, 5).await;
    assert!(refused.get("error").is_some(), "{refused}");
    // A batch is answered with a JSON-RPC error; the socket goes on.
    b.send(Message::text(format!("[{NEW}]"))).await.unwrap();
    let batch = answer(&mut b, serde_json::Value::Null).await;
    assert_eq!(batch["error"]["code"], -32600, "{batch}");
    server.shutdown();
}
