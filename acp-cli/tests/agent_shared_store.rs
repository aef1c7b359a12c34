//! Several `acp agent --store DIR` processes (real child processes of the built `acp`) on one
//! store directory, the embedded SQLite store: concurrent turns in different sessions,
//! `session/list` from another process while they run, a `kill -9` mid-turn, and every
//! session complete afterwards; a second writer of one session refused while its turn runs;
//! a JSON Lines store imported on first open.

mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use acp_agent::Error;
use acp_rpc::{Config, Connection};
use serde_json::{Value, json};
use support::{Scratch, UpdateLog as Log, acp};
use tokio::process::{Child, Command};

/// Steps of each turn (`/count N`: one chunk every 200 ms).
const STEPS: usize = 6;

struct Agent {
    child: Child,
    conn: Connection,
    log: Log,
}

impl Agent {
    async fn start(store: &str) -> Agent {
        let mut child = Command::new(acp())
            .args(["agent", "--store", store])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let log = Log::default();
        let conn = Connection::new(
            child.stdout.take().unwrap(),
            child.stdin.take().unwrap(),
            log.clone(),
            Config::default().with_default_timeout(Some(Duration::from_secs(30))),
        );
        let agent = Agent { child, conn, log };
        agent
            .call("initialize", json!({"protocolVersion": 1}))
            .await
            .expect("initialize");
        agent
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.conn.peer().request(method, &params).await
    }

    async fn new_session(&self) -> String {
        let created = self
            .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
            .await
            .expect("session/new");
        created["sessionId"].as_str().unwrap().to_owned()
    }

    /// Starts a `/count` turn on `id`, answered in the returned task.
    fn count(&self, id: &str, steps: usize) -> tokio::task::JoinHandle<Result<Value, Error>> {
        let peer = self.conn.peer().clone();
        let params = json!({"sessionId": id, "prompt": [{"type": "text", "text": format!("/count {steps}")}]});
        tokio::spawn(async move { peer.request::<_, Value>("session/prompt", &params).await })
    }

    /// Waits until the agent streamed at least `n` chunks.
    async fn streamed(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.log.texts().len() < n {
            assert!(tokio::time::Instant::now() < deadline, "the turn streams");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The ids `session/list` answers, every page.
    async fn listed(&self) -> Vec<String> {
        let list = self
            .call("session/list", json!({}))
            .await
            .expect("session/list");
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The updates `session/load` replays for `id`.
    async fn load(&self, id: &str) -> Vec<Value> {
        self.log.0.lock().unwrap().clear();
        self.call(
            "session/load",
            json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
        )
        .await
        .expect("session/load");
        std::mem::take(&mut *self.log.0.lock().unwrap())
    }
}

fn chunks(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
        .collect()
}

fn interrupted(updates: &[Value]) -> bool {
    updates
        .iter()
        .any(|u| u["_meta"]["acp-rs/turnInterrupted"] == true)
}

/// `n` agent processes on one directory, one session and one turn each, all at once; a
/// further process lists them all mid-turn; the first is killed mid-turn. Afterwards a fresh
/// process lists every session and loads each complete (the killed one: every chunk its
/// client saw, marked interrupted), and takes the killed one's stale lease over.
async fn agents_share_one_store(n: usize, dir: &Path) {
    let store = dir.to_str().unwrap();
    let mut agents = Vec::new();
    for _ in 0..n {
        agents.push(Agent::start(store).await);
    }
    let mut ids = Vec::new();
    for agent in &agents {
        ids.push(agent.new_session().await);
    }
    let turns: Vec<_> = agents
        .iter()
        .zip(&ids)
        .map(|(agent, id)| agent.count(id, STEPS))
        .collect();
    for agent in &agents {
        agent.streamed(2).await;
    }
    let lister = Agent::start(store).await;
    let mut listed = lister.listed().await;
    listed.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(
        listed, expected,
        "a third process lists every session mid-turn"
    );

    let killed = &mut agents[0];
    killed.child.start_kill().unwrap();
    killed.child.wait().await.unwrap();
    let seen_by_killed = killed.log.texts();
    let mut turns = turns.into_iter();
    let _ = turns.next().unwrap().await;
    for turn in turns {
        let done = turn.await.unwrap().expect("the other turns end");
        assert_eq!(done["stopReason"], "end_turn");
    }

    let after = Agent::start(store).await;
    let mut listed = after.listed().await;
    listed.sort();
    assert_eq!(listed, expected, "every session listed afterwards");
    for (i, id) in ids.iter().enumerate() {
        let replayed = after.load(id).await;
        let said = chunks(&replayed);
        if i == 0 {
            assert!(interrupted(&replayed), "{replayed:?}");
            assert_eq!(
                said[..seen_by_killed.len()],
                seen_by_killed[..],
                "every chunk the killed agent's client saw"
            );
        } else {
            assert!(!interrupted(&replayed), "{id}: {replayed:?}");
            assert_eq!(said, agents[i].log.texts(), "{id}: the whole turn");
            assert_eq!(said.len(), STEPS + 1, "{id}: {said:?}");
        }
    }
    // The killed process's lease is stale: this process writes its session now.
    let done = after.count(&ids[0], 1).await.unwrap().expect("taken over");
    assert_eq!(done["stopReason"], "end_turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_share_one_store_directory() {
    let scratch = Scratch::new("shared-store-2");
    agents_share_one_store(2, &scratch.0.join("store")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_agents_share_one_store_directory() {
    let scratch = Scratch::new("shared-store-8");
    agents_share_one_store(8, &scratch.0.join("store")).await;
}

/// A session is written by one process at a time: a second process prompting it while the
/// first one's turn runs gets an error naming why; once that turn ends, it may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_of_a_session_is_refused_until_the_turn_ends() {
    let scratch = Scratch::new("shared-store-lease");
    let store = scratch.0.join("store");
    let store = store.to_str().unwrap();
    let first = Agent::start(store).await;
    let id = first.new_session().await;
    let turn = first.count(&id, 4);
    first.streamed(1).await;
    let second = Agent::start(store).await;
    second.load(&id).await;
    let err = second
        .count(&id, 1)
        .await
        .unwrap()
        .expect_err("refused while the first turn runs");
    assert!(
        err.message.contains("being written by another process"),
        "{}",
        err.message
    );
    let done = turn.await.unwrap().expect("the first turn ends");
    assert_eq!(done["stopReason"], "end_turn");
    let done = second.count(&id, 1).await.unwrap().expect("free again");
    assert_eq!(done["stopReason"], "end_turn");
    let replayed = Agent::start(store).await.load(&id).await;
    assert_eq!(
        chunks(&replayed),
        ["1 ", "2 ", "3 ", "4 ", "\n", "1 ", "\n"]
    );
}

/// A directory of the JSON Lines store (`--store jsonl:DIR`) opened as the default store:
/// its sessions are imported, listed and loaded with their whole history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jsonl_store_is_imported_on_first_open() {
    let scratch = Scratch::new("shared-store-import");
    let dir = scratch.0.join("store");
    let jsonl = format!("jsonl:{}", dir.display());
    let old = Agent::start(&jsonl).await;
    let id = old.new_session().await;
    old.count(&id, 3).await.unwrap().expect("a turn");
    let seen = old.log.texts();
    let mut old = old;
    old.child.start_kill().unwrap();
    old.child.wait().await.unwrap();
    let new = Agent::start(dir.to_str().unwrap()).await;
    assert_eq!(new.listed().await, std::slice::from_ref(&id));
    assert_eq!(chunks(&new.load(&id).await), seen);
    assert!(dir.join("index.jsonl.imported").exists());
}
