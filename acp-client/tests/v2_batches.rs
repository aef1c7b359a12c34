//! JSON-RPC batches on each version of an agent that speaks both: once the client's
//! `initialize` has chosen v2, a batch is answered as JSON-RPC 2.0 says (one array of the
//! answers to its requests); on v1 it is refused with one `-32600`, as the official SDKs
//! refuse it. Either way the connection serves on.
#![cfg(feature = "v2")]

use acp_agent::v2 as agent2;
use acp_rpc::Error;
use acp_types::{v1, v2};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct V1Agent;

#[async_trait]
impl acp_agent::Agent for V1Agent {
    async fn initialize(
        &self,
        _p: v1::InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<v1::InitializeResponse, Error> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion::V1))
    }
}

struct V2Agent;

#[async_trait]
impl agent2::Agent for V2Agent {
    async fn initialize(
        &self,
        _p: v2::InitializeRequest,
        _cx: &agent2::Context,
    ) -> Result<v2::InitializeResponse, Error> {
        Ok(v2::InitializeResponse::new(
            2,
            v2::Implementation::new("both", "0.1.0"),
        ))
    }
}

/// Serves an agent of both versions and returns a function that sends one line and reads
/// the next.
async fn both_versions() -> impl AsyncFnMut(&str) -> Value {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, mut bw) = tokio::io::split(b);
    tokio::spawn(acp_agent::Builder::new(V1Agent).v2(V2Agent).io(ar, aw));
    let mut lines = BufReader::new(br).lines();
    async move |line: &str| -> Value {
        bw.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&answer).unwrap()
    }
}

const BATCH: &str = concat!(
    r#"[{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}},"#,
    r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}},"#,
    r#"{"jsonrpc":"2.0","id":11,"method":"no/such"},"#,
    r#"42]"#
);

#[tokio::test]
async fn a_v2_connection_answers_a_batch_with_one_array() {
    let mut ask = both_versions().await;
    let init = ask(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}"#).await;
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let answer = ask(BATCH).await;
    let mut items = answer.as_array().expect("an array").clone();
    items.sort_by_key(|v| v["id"].to_string());
    assert_eq!(items.len(), 3, "no answer for the notification: {answer}");
    assert_eq!(items[0]["id"], 10);
    assert_eq!(items[0]["result"]["protocolVersion"], 2);
    assert_eq!(items[1]["id"], 11);
    assert_eq!(items[1]["error"]["code"], -32601);
    assert_eq!(items[2]["id"], Value::Null);
    assert_eq!(items[2]["error"]["code"], -32600);
    let empty = ask("[]").await;
    assert_eq!(empty["error"]["code"], -32600, "{empty}");
    let next = ask(r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#).await;
    assert_eq!(next["id"], 2, "serving on: {next}");
}

#[tokio::test]
async fn a_v1_connection_refuses_a_batch_as_the_official_sdks_do() {
    let mut ask = both_versions().await;
    let init =
        ask(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#)
            .await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let answer = ask(BATCH).await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32600, "message": "batches are not supported"}})
    );
    let next = ask(r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#).await;
    assert_eq!(next["id"], 2, "serving on: {next}");
}
