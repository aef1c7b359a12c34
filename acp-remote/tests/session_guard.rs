//! The session guard is on by default for a library user: a `Server` built with no MCP
//! setting refuses a remote client's stdio MCP server with `-32602` over both profiles, and
//! the connection goes on; `unchecked_mcp_servers` turns it off.

mod support;

use acp_remote::{BearerToken, Limits, Server};
use futures_util::SinkExt;
use support::TestAgent;
use support::raw::{event_with, request, send};
use support::wire::*;
use tokio_tungstenite::tungstenite::Message;

const STDIO: &str = r#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"x","command":"/bin/sh","args":["-c","id"],"env":[]}]}}"#;

#[tokio::test]
async fn a_stdio_server_is_refused_by_default_over_http() {
    let server = server(Limits::default()).await;
    let addr = server.local_addr();
    let (conn, _session, mut stream) = with_session(addr).await;
    let headers = [AUTH, JSON, ("Acp-Connection-Id", conn.as_str())];
    let posted = send(addr, &request("POST", "/acp", &headers, STDIO)).await;
    assert_eq!(posted.status, 202, "{posted:?}");
    let answer = event_with(&mut stream, "\"id\":5").await;
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("--mcp-allow-command /bin/sh"), "{message}");
    // The connection goes on.
    let again = NEW.replace("\"id\":1", "\"id\":6");
    let posted = send(addr, &request("POST", "/acp", &headers, &again)).await;
    assert_eq!(posted.status, 202);
    let answer = event_with(&mut stream, "\"id\":6").await;
    assert!(answer.contains("sessionId"), "{answer}");
}

#[tokio::test]
async fn a_stdio_server_is_refused_by_default_over_websocket_unless_unchecked() {
    for unchecked in [false, true] {
        let mut builder =
            Server::in_process(TestAgent::default).authenticator(BearerToken::new(TOKEN).unwrap());
        if unchecked {
            builder = builder.unchecked_mcp_servers();
        }
        let server = builder.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let (mut ws, _) = websocket(&server).await;
        ws.send(Message::text(INIT)).await.unwrap();
        answer(&mut ws, 0).await;
        ws.send(Message::text(STDIO)).await.unwrap();
        let got = answer(&mut ws, 5).await;
        if unchecked {
            assert!(got["result"]["sessionId"].is_string(), "{got}");
        } else {
            assert_eq!(got["error"]["code"], -32602, "{got}");
            ws.send(Message::text(NEW)).await.unwrap();
            assert!(answer(&mut ws, 1).await["result"]["sessionId"].is_string());
        }
        server.shutdown();
    }
}

#[tokio::test]
async fn a_root_that_is_not_a_directory_fails_bind() {
    let err = Server::in_process(TestAgent::default)
        .root("/no/such/served/root")
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/no/such/served/root"), "{err}");
}
