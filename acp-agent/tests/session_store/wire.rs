//! A raw JSON-lines client of an agent served with a store, shared by the session store
//! tests (`session_store.rs`, `session_store_identities.rs`).
#![allow(dead_code)]

use std::time::Duration;

use acp_agent::store::SessionStore;
use acp_agent::{Agent, AgentConnection};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

pub fn v<T: DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}
/// A raw JSON-lines client of one served connection.
pub struct Wire {
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
    _agent: AgentConnection,
    next_id: i64,
}

impl Wire {
    pub fn serve(agent: impl Agent, store: impl SessionStore) -> Wire {
        Wire::serve_as(agent, store, None)
    }

    /// Served on behalf of `identity` (as acp-remote serves a remote caller).
    pub fn serve_as(agent: impl Agent, store: impl SessionStore, identity: Option<&str>) -> Wire {
        let (a, b) = tokio::io::duplex(4096);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let agent = acp_agent::Builder::new(agent)
            .store(store)
            .identity(identity)
            .io(ar, aw);
        Wire {
            lines: BufReader::new(br).lines(),
            write: bw,
            _agent: agent,
            next_id: 1,
        }
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s")
            .unwrap()
            .expect("not EOF");
        serde_json::from_str(&line).unwrap()
    }

    /// The next message if one arrives within `wait`.
    pub async fn within(&mut self, wait: Duration) -> Option<Value> {
        let line = tokio::time::timeout(wait, self.lines.next_line())
            .await
            .ok()?;
        Some(serde_json::from_str(&line.unwrap().expect("not EOF")).unwrap())
    }

    /// Sends a request without waiting for its response; returns its id.
    pub async fn send(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut line = serde_json::to_vec(&msg).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
        id
    }

    /// Sends a request; returns the messages read before its response, and the response.
    pub async fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.send(method, params).await;
        let mut before = Vec::new();
        loop {
            let msg = self.next().await;
            if msg["id"] == id && msg.get("method").is_none() {
                return (before, msg);
            }
            before.push(msg);
        }
    }

    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let (_, response) = self.call(method, params).await;
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    pub async fn init(&mut self) -> Value {
        self.ok("initialize", json!({"protocolVersion": 1})).await
    }

    pub async fn new_session(&mut self, cwd: &str) -> String {
        let r = self
            .ok("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        r["sessionId"].as_str().unwrap().to_owned()
    }
}

pub fn updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}
