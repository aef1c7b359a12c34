//! Shared test helpers: a raw acp-rpc connection playing the agent over a duplex pipe.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use acp_client::{Client, ClientConnection};
use acp_rpc::{Config, Connection, Error, Handler, Params, RawValue, RequestContext, to_raw};
use serde_json::{Value, json};

/// Every request the fake agent received, as (method, params).
pub type Log = Arc<Mutex<Vec<(String, Value)>>>;

/// Answers each agent method with a canned result and records what it got.
pub struct FakeAgent {
    pub log: Log,
}

pub fn canned_result(method: &str) -> Value {
    match method {
        "initialize" => json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}),
        "session/new" => json!({"sessionId": "s1"}),
        "session/list" => json!({"sessions": [{"sessionId": "s1", "cwd": "/tmp"}]}),
        "session/set_config_option" => json!({"configOptions": []}),
        "session/prompt" => json!({"stopReason": "end_turn"}),
        "_vendor/echo" => json!({"echo": true}),
        "authenticate" | "session/load" | "session/resume" => Value::Null,
        _ => json!({}),
    }
}

#[acp_rpc::async_trait]
impl Handler for FakeAgent {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let value: Value = params.parse()?;
        self.log.lock().unwrap().push((method.to_owned(), value));
        to_raw(&canned_result(method))
    }

    async fn handle_notification(
        &self,
        _cx: acp_rpc::NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let value: Value = params.parse()?;
        self.log.lock().unwrap().push((method.to_owned(), value));
        Ok(())
    }
}

/// A client connection and the agent side (raw connection) over an in-memory pipe.
pub fn pair<C: Client, H: Handler>(client: C, agent: H) -> (ClientConnection, Connection) {
    let (c_side, a_side) = tokio::io::duplex(64 * 1024);
    let (cr, cw) = tokio::io::split(c_side);
    let (ar, aw) = tokio::io::split(a_side);
    let client = acp_client::Builder::new(client).io(cr, cw);
    let agent = Connection::new(ar, aw, agent, Config::default());
    (client, agent)
}

pub fn fake_agent() -> (FakeAgent, Log) {
    let log: Log = Arc::default();
    (FakeAgent { log: log.clone() }, log)
}
