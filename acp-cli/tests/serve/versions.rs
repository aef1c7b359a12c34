//! `acp serve` with the built-in agent in process carries v2 as well as v1: a client whose
//! `initialize` offers 2 is served v2 (the built-in v1 agent through the v1<->v2
//! translation), over WebSocket and Streamable HTTP, and the session guard reads v2's
//! session requests as it reads v1's: a stdio MCP server asked for in a v2 `session/new` is
//! refused before the agent sees it.

use serde_json::{Value, json};

use super::*;

/// A v2 client's connection to `url`, initialized: the answer's `protocolVersion`.
async fn v2_client(url: &str, log: &support::UpdateLog) -> (acp_rpc::Connection, Value) {
    let options = acp_remote::ConnectOptions::new().token("s3cret-token");
    let link = acp_remote::connect(url, &options).await.unwrap();
    let config = acp_rpc::Config::default().with_default_timeout(Some(Duration::from_secs(30)));
    let conn = acp_rpc::Connection::new(link.reader, link.writer, log.clone(), config);
    let offer = json!({"protocolVersion": 2, "info": {"name": "a v2 client", "version": "1"}});
    let answer: Value = conn.peer().request("initialize", &offer).await.unwrap();
    (conn, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_agent_is_served_v2_to_a_v2_client_and_guarded_as_v1() {
    let scratch = Scratch::new("serve-v2");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let server = Serve::start(&scratch, &token_file, &[]);
    let cwd = scratch.0.to_str().unwrap().to_owned();
    let ws = server.url.replace("http://", "ws://");
    for url in [server.url.as_str(), ws.as_str()] {
        let log = support::UpdateLog::default();
        let (conn, init) = v2_client(url, &log).await;
        assert_eq!(init["protocolVersion"], 2, "{url}: {init}");
        assert!(
            init["info"]["name"].is_string(),
            "{url}: v2's `info`: {init}"
        );
        let peer = conn.peer();
        let made: Value = peer
            .request("session/new", &json!({"cwd": cwd}))
            .await
            .unwrap();
        let session = made["sessionId"].as_str().expect("a session id").to_owned();
        // v2's prompt is answered once inserted; the turn ends with `state_update` idle.
        let prompt =
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/echo over v2"}]});
        let inserted: Value = peer.request("session/prompt", &prompt).await.unwrap();
        assert!(inserted["messageId"].is_string(), "{url}: {inserted}");
        let deadline = Instant::now() + Duration::from_secs(20);
        let idle = loop {
            let ended = log.0.lock().unwrap().iter().find_map(|u| {
                (u["sessionUpdate"] == "state_update" && u["state"] == "idle").then(|| u.clone())
            });
            if let Some(idle) = ended {
                break idle;
            }
            assert!(
                Instant::now() < deadline,
                "{url}: no idle state: {:?}",
                log.0
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(idle["stopReason"], "end_turn", "{url}: {idle}");
        assert!(
            log.texts().concat().contains("over v2"),
            "{url}: {:?}",
            log.0
        );

        // A stdio MCP server, in v2's shape, is refused by the session guard.
        let asks_for_a_process = json!({"cwd": cwd, "mcpServers": [
            {"type": "stdio", "name": "x", "command": "/bin/sh", "args": ["-c", "touch owned"], "env": []}
        ]});
        let refused = peer
            .request::<_, Value>("session/new", &asks_for_a_process)
            .await
            .unwrap_err();
        assert_eq!(
            refused.code,
            acp_rpc::ErrorCode(-32602),
            "{url}: {refused:?}"
        );
        assert!(!scratch.0.join("owned").exists());
        conn.peer().close();
    }
}
