//! Bad input across the v1/v2 line, beyond `v2_bad_input`: v1-only methods on a v2 agent and
//! v2-only methods on a v1 agent (each `-32601`); on a v2 client, an update of v1's shape and
//! a patch field of the wrong type (not delivered: a warning naming the field is logged, the
//! notification is never silently dropped) and an update kind this schema does not know
//! (delivered as `SessionUpdate::Unknown` with its JSON intact, which the reducer reports it
//! did not apply). The connection serves on after each.
//!
//! Not here: `idempotencyKey` of 0 or 256 characters, a number or another non-string
//! (`-32602`, the connection serving on): acp-agent's `tests/v2_prompt_keys.rs`.
#![cfg(feature = "v2")]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::v2 as agent2;
use acp_client::v2::{self as client2, SessionState};
use acp_rpc::Error;
use acp_types::{v1, v2};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

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

/// The log, as text (what a user running with `RUST_LOG=warn` sees).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
    /// Collects this thread's WARN events while the guard lives (the connections of a
    /// current-thread test run on this thread).
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let log = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || log.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }
}

/// Serves an agent of both versions, negotiates `version` and returns a function that
/// sends lines and reads the next answer.
async fn negotiated(version: u8) -> impl AsyncFnMut(&[Value]) -> Value {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, mut bw) = tokio::io::split(b);
    tokio::spawn(acp_agent::Builder::new(V1Agent).v2(V2Agent).io(ar, aw));
    let mut lines = BufReader::new(br).lines();
    let mut ask = async move |messages: &[Value]| -> Value {
        for message in messages {
            bw.write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
        }
        let answer = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&answer).unwrap()
    };
    let init = ask(&[json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": version, "info": {"name": "c", "version": "1"}}})])
    .await;
    assert_eq!(init["result"]["protocolVersion"], version, "{init}");
    ask
}

#[tokio::test]
async fn v1_only_methods_on_v2_and_v2_only_methods_on_v1_are_method_not_found() {
    let mut v2 = negotiated(2).await;
    for (id, method, params) in [
        (1, "authenticate", json!({"methodId": "x"})),
        (
            2,
            "session/set_mode",
            json!({"sessionId": "s", "modeId": "m"}),
        ),
        (
            3,
            "fs/read_text_file",
            json!({"sessionId": "s", "path": "/x"}),
        ),
    ] {
        let answer =
            v2(&[json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})]).await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{method} on v2: {answer}");
    }
    let mut v1 = negotiated(1).await;
    for (id, method, params) in [
        (1, "auth/login", json!({"methodId": "x"})),
        (
            2,
            "tool_call/cancel",
            json!({"sessionId": "s", "toolCallId": "t"}),
        ),
        (3, "auth/logout", json!({})),
    ] {
        let answer =
            v1(&[json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})]).await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{method} on v1: {answer}");
    }
}

#[tokio::test]
async fn a_v2_agent_logs_a_wrongly_typed_notification_and_serves_on() {
    let log = Log::default();
    let _guard = log.capture();
    let mut v2 = negotiated(2).await;
    // `session/cancel` with a number for its session id: nothing to answer, but not silent;
    // the request after it is answered.
    let next = v2(&[
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}}),
        json!({"jsonrpc": "2.0", "id": 9, "method": "no/such"}),
    ])
    .await;
    assert_eq!(next["id"], 9, "serving on: {next}");
    let text = log.text();
    assert!(
        text.contains("notification handler failed") && text.contains("sessionId"),
        "{text}"
    );
}

/// A v2 client on one end of a pipe whose other end the test writes as the agent.
struct Updates(mpsc::UnboundedSender<v2::SessionUpdate>);

#[async_trait]
impl client2::Client for Updates {
    async fn session_update(&self, params: v2::UpdateSessionNotification) -> Result<(), Error> {
        let _ = self.0.send(params.update);
        Ok(())
    }
}

#[tokio::test]
async fn a_v2_client_surfaces_bad_updates_and_keeps_unknown_kinds_intact() {
    let log = Log::default();
    let _guard = log.capture();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (_br, mut bw) = tokio::io::split(b);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _conn = client2::connect(Updates(tx), ar, aw);
    let update = |update: Value| {
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "s", "update": update}})
        )
    };
    let good = json!({"sessionUpdate": "agent_message_chunk", "messageId": "m",
        "content": {"type": "text", "text": "hi"}});
    let unknown = json!({"sessionUpdate": "hologram", "depth": [1, 2], "_x": null});
    for line in [
        // v1's shape: a chunk without v2's `messageId`.
        update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "v1"}})),
        // A patch field of the wrong type.
        update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": 5})),
        update(unknown.clone()),
        update(good.clone()),
    ] {
        bw.write_all(line.as_bytes()).await.unwrap();
    }
    let first = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let v2::SessionUpdate::Unknown(raw) = &first else {
        panic!("the unknown kind comes first, as it is: {first:?}");
    };
    assert_eq!(*raw, unknown, "byte for byte as JSON");
    let mut state = SessionState::default();
    assert!(!state.apply(&first), "the reducer says it did not apply it");
    let second = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(state.apply(&second), "serving on: {second:?}");
    assert_eq!(state.messages[0].text(), "hi");
    let text = log.text();
    assert!(
        text.matches("notification handler failed").count() >= 2,
        "each bad update logged: {text}"
    );
    assert!(
        text.contains("messageId"),
        "names the missing field: {text}"
    );
    assert!(text.contains("title"), "names the wrong field: {text}");
}
