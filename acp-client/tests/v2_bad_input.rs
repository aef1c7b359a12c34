//! Bad input to a v2 agent: a v1-shaped `initialize`, a v1-only method and a v2 request
//! with a wrongly typed field each get a clear JSON-RPC error, and the connection serves the
//! next message.
#![cfg(feature = "v2")]

use acp_agent::v2 as agent2;
use acp_rpc::Error;
use acp_types::v2::*;
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct V2Agent;

#[async_trait]
impl agent2::Agent for V2Agent {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &agent2::Context,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(2, Implementation::new("a", "1")))
    }
}

#[tokio::test]
async fn bad_v2_input_gets_clear_errors_and_the_connection_serves_on() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, mut bw) = tokio::io::split(b);
    let _conn = agent2::serve(V2Agent, ar, aw);
    let mut lines = BufReader::new(br).lines();
    let mut ask = async |message: Value| -> Value {
        bw.write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        let line = lines.next_line().await.unwrap().expect("an answer");
        serde_json::from_str(&line).unwrap()
    };
    // v1's initialize: no `info` (v1 says `clientInfo`, optional there).
    let v1_shape = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}}))
    .await;
    assert_eq!(v1_shape["error"]["code"], -32602, "{v1_shape}");
    assert!(
        v1_shape["error"]["message"]
            .as_str()
            .unwrap()
            .contains("info"),
        "{v1_shape}"
    );
    // A v1-only method.
    let v1_method = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "session/load",
        "params": {"sessionId": "s", "cwd": "/", "mcpServers": []}}))
    .await;
    assert_eq!(v1_method["error"]["code"], -32601, "{v1_method}");
    // A wrongly typed field of a v2 request.
    let wrong_type = ask(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "s", "prompt": "not a list"}}),
    )
    .await;
    assert_eq!(wrong_type["error"]["code"], -32602, "{wrong_type}");
    // And the connection still serves.
    let ok = ask(json!({"jsonrpc": "2.0", "id": 4, "method": "initialize",
        "params": {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}}))
    .await;
    assert_eq!(ok["result"]["protocolVersion"], 2, "{ok}");
}
