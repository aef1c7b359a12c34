//! A forked session (`session/fork`, feature `unstable_session_fork`) answered by an agent
//! served with an on-disk store: the connection records the new session with a copy of the
//! source's history, so after a restart (the store reopened from the same directory, a new
//! connection) it is listed, loads with that history and the fork's own turns, and resumes.
//! Another identity's session is not forked: `-32002`, as for one that does not exist.
//!
//! `cargo test -p acp-agent --features unstable --test unstable_session_fork_store`.
#![cfg(feature = "unstable_session_fork")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use acp_agent::store::{JsonlStore, MemoryStore, SessionStore};
use acp_agent::types::*;
use acp_agent::{Agent, AgentConnection, AgentContext, Config, Error, PromptContext};
use acp_rpc::Connection;
use common::Recorder;
use serde_json::{Value, json};

/// Creates `s<n>` sessions, forks into `<source>-fork`, and answers each prompt with
/// `echo: <text>`.
#[derive(Default)]
struct Forker {
    next: AtomicU64,
}

#[acp_agent::async_trait]
impl Agent for Forker {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(
            InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
                AgentCapabilities::new().session_capabilities(
                    SessionCapabilities::new().fork(SessionForkCapabilities::new()),
                ),
            ),
        )
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new(format!(
            "s{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        )))
    }

    async fn fork_session(
        &self,
        p: ForkSessionRequest,
        cx: &AgentContext,
    ) -> Result<ForkSessionResponse, Error> {
        if !p.session_id.0.starts_with('s') {
            return Err(Error::resource_not_found(format!(
                "session not found: {}",
                p.session_id.0
            )));
        }
        let id = format!("{}-fork", p.session_id.0);
        // Sent while the fork is being created: stored after the copied history.
        cx.client()
            .send_update(id.as_str(), SessionUpdate::agent_message_text("forked"))
            .await?;
        Ok(ForkSessionResponse::new(id).modes(SessionModeState::new(
            "review",
            [SessionMode::new("review", "Review")],
        )))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let text = match p.prompt.first() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        cx.session()
            .send(SessionUpdate::agent_message_text(format!("echo: {text}")))
            .await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// One agent process's worth: the store opened on `dir`, a connection, a raw client.
struct Host {
    _agent: AgentConnection,
    client: Connection,
    rec: Recorder,
}

impl Host {
    async fn open(dir: &Path) -> Host {
        let store = JsonlStore::open(dir).expect("the store opens");
        Host::serve(store, None).await
    }

    /// A connection on `store`, served on behalf of `identity`.
    async fn serve(store: impl SessionStore, identity: Option<&str>) -> Host {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let agent = acp_agent::Builder::new(Forker::default())
            .store(store)
            .identity(identity)
            .io(ar, aw);
        let rec = Recorder::default();
        let client = Connection::new(br, bw, rec.clone(), Config::default());
        let host = Host {
            _agent: agent,
            client,
            rec,
        };
        host.call("initialize", json!({"protocolVersion": 1}))
            .await
            .unwrap();
        host
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        tokio::time::timeout(
            Duration::from_secs(10),
            self.client.peer().request(method, &params),
        )
        .await
        .expect("no answer within 10 s")
    }

    async fn prompt(&self, session: &str, text: &str) {
        let answer = self
            .call(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
            )
            .await
            .unwrap();
        assert_eq!(answer["stopReason"], "end_turn");
    }

    /// The texts of the updates received for `session` (user and agent chunks).
    fn texts(&self, session: &str) -> Vec<String> {
        self.rec
            .updates
            .lock()
            .unwrap()
            .iter()
            .filter(|n| n["sessionId"] == session)
            .filter(|n| {
                let kind = &n["update"]["sessionUpdate"];
                kind == "user_message_chunk" || kind == "agent_message_chunk"
            })
            .filter_map(|n| n["update"]["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }
}

/// Runs one agent process's worth of work on its own runtime; dropping the runtime at the
/// end ends every task of it, as the process's exit would, and so releases the store.
fn process<F: std::future::Future<Output = ()>>(run: impl FnOnce() -> F) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-fork-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_forked_session_is_stored_with_its_sources_history_and_loads_after_a_restart() {
    let dir = temp_dir("restart");
    process(|| first_run(&dir));
    // A restart: the same directory, a new process and connection.
    process(|| second_run(&dir));
    process(|| third_run(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

async fn first_run(dir: &Path) {
    let first = Host::open(dir).await;
    let created = first
        .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(created["sessionId"], "s0");
    first.prompt("s0", "hello").await;
    let forked = first
        .call(
            "session/fork",
            json!({"sessionId": "s0", "cwd": "/forked", "additionalDirectories": ["/lib"]}),
        )
        .await
        .unwrap();
    assert_eq!(forked["sessionId"], "s0-fork");
    first.prompt("s0-fork", "more").await;
    // The source goes on apart: its later turn is not the fork's.
    first.prompt("s0", "after").await;
    // A fork the agent refuses is not recorded.
    let refused = first
        .call("session/fork", json!({"sessionId": "nope", "cwd": "/w"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, acp_agent::ErrorCode::RESOURCE_NOT_FOUND);
}

async fn second_run(dir: &Path) {
    let second = Host::open(dir).await;
    let listed = second.call("session/list", json!({})).await.unwrap();
    let mut rows: Vec<(String, String)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["sessionId"].as_str().unwrap().to_owned(),
                s["cwd"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            ("s0".to_owned(), "/w".to_owned()),
            ("s0-fork".to_owned(), "/forked".to_owned())
        ]
    );
    let fork_row = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == "s0-fork")
        .unwrap();
    assert_eq!(fork_row["additionalDirectories"], json!(["/lib"]));

    let loaded = second
        .call(
            "session/load",
            json!({"sessionId": "s0-fork", "cwd": "/forked", "mcpServers": []}),
        )
        .await
        .unwrap();
    // The fork's own modes, as the agent answered the fork.
    assert_eq!(loaded["modes"]["currentModeId"], "review");
    assert_eq!(
        second.texts("s0-fork"),
        ["hello", "echo: hello", "forked", "more", "echo: more"]
    );
    // The source is untouched by the fork.
    second
        .call(
            "session/load",
            json!({"sessionId": "s0", "cwd": "/w", "mcpServers": []}),
        )
        .await
        .unwrap();
    assert_eq!(
        second.texts("s0"),
        ["hello", "echo: hello", "after", "echo: after"]
    );
    // The fork goes on after the restart, and that is stored too.
    second.prompt("s0-fork", "again").await;
}

async fn third_run(dir: &Path) {
    let third = Host::open(dir).await;
    third
        .call(
            "session/resume",
            json!({"sessionId": "s0-fork", "cwd": "/forked"}),
        )
        .await
        .unwrap();
    third
        .call(
            "session/load",
            json!({"sessionId": "s0-fork", "cwd": "/forked", "mcpServers": []}),
        )
        .await
        .unwrap();
    assert_eq!(
        third.texts("s0-fork"),
        [
            "hello",
            "echo: hello",
            "forked",
            "more",
            "echo: more",
            "again",
            "echo: again"
        ]
    );
}

/// A fork of another identity's session is refused as unknown before the agent is asked,
/// and nothing is stored; its owner forks it, and the fork is the owner's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_identitys_session_is_not_forked() {
    let store = std::sync::Arc::new(MemoryStore::new());
    let alice = Host::serve(store.clone(), Some("alice")).await;
    let bob = Host::serve(store.clone(), Some("bob")).await;
    let made = alice
        .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let id = made["sessionId"].as_str().unwrap().to_owned();
    alice.prompt(&id, "mine").await;
    let fork = json!({"sessionId": id, "cwd": "/w", "mcpServers": []});
    let refused = bob.call("session/fork", fork.clone()).await.unwrap_err();
    assert_eq!(refused.code.0, -32002, "{refused:?}");
    let forked_id = SessionId(format!("{id}-fork"));
    assert!(store.meta(&forked_id).await.unwrap().is_none());
    let forked = alice.call("session/fork", fork).await.unwrap();
    assert_eq!(forked["sessionId"], forked_id.0.as_str());
    let meta = store.meta(&forked_id).await.unwrap().unwrap();
    assert_eq!(meta.owner.as_deref(), Some("alice"));
}
