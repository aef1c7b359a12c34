//! The `echo_agent` example with `--store DIR` as real child processes: sessions survive a
//! restart, a `kill -9` under load loses no completed turn and duplicates nothing (a torn
//! record is ignored), a second process on the same directory is refused clearly, and an
//! unusable directory fails at start.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::Error;
use acp_rpc::{Config, Connection, Handler, NotificationContext, Params, RawValue, RequestContext};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// A client that answers nothing and logs every `session/update` by session.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<HashMap<String, Vec<Value>>>>);

impl Log {
    fn take(&self, session: &str) -> Vec<Value> {
        self.0.lock().unwrap().remove(session).unwrap_or_default()
    }

    /// The updates received so far for `session` (kept).
    fn peek(&self, session: &str) -> Vec<Value> {
        self.0
            .lock()
            .unwrap()
            .get(session)
            .cloned()
            .unwrap_or_default()
    }
}

#[acp_rpc::async_trait]
impl Handler for Log {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        _params: Params,
    ) -> Result<Box<RawValue>, Error> {
        Err(Error::method_not_found(method))
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let p: Value = params.parse()?;
        let session = p["sessionId"].as_str().unwrap_or_default().to_owned();
        self.0
            .lock()
            .unwrap()
            .entry(session)
            .or_default()
            .push(p["update"].clone());
        Ok(())
    }
}

fn example_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().unwrap().parent().unwrap();
    let path = debug
        .join("examples")
        .join(format!("echo_agent{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "cargo test builds examples: {path:?} is missing"
    );
    path
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-store-proc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

struct Agent {
    child: Child,
    conn: Connection,
    log: Log,
}

impl Agent {
    async fn start(store: &Path) -> Agent {
        Self::start_with(store, json!({"protocolVersion": 1})).await
    }

    async fn start_with(store: &Path, initialize: Value) -> Agent {
        Self::start_args(store, initialize, &[]).await
    }

    async fn start_args(store: &Path, initialize: Value, args: &[&str]) -> Agent {
        let mut child = Command::new(example_path())
            .arg("--store")
            .arg(store)
            .args(args)
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
        let init: Value = conn
            .peer()
            .request("initialize", &initialize)
            .await
            .unwrap();
        assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
        Agent { child, conn, log }
    }

    /// Ends the connection and waits for the process to exit (it lets go of the store's
    /// lock only then; the next agent on the directory would be refused before).
    async fn stop(mut self) {
        self.conn.close();
        tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("the agent exits on EOF")
            .unwrap();
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.conn.peer().request(method, &params).await
    }

    async fn new_session(&self) -> String {
        let r = self
            .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
            .await
            .unwrap();
        r["sessionId"].as_str().unwrap().to_owned()
    }

    async fn prompt(&self, session: &str, text: &str) -> Result<Value, Error> {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// `session/load`: the updates replayed before the answer (the client's ordering
    /// guarantee: they were all handled before the response is delivered).
    async fn load(&self, session: &str) -> Vec<Value> {
        self.log.take(session);
        self.call(
            "session/load",
            json!({"sessionId": session, "cwd": "/w", "mcpServers": []}),
        )
        .await
        .unwrap();
        self.log.take(session)
    }
}

fn texts_of(updates: &[Value], kind: &str) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A conversation had with one agent process is listed and replayed by the next one.
#[tokio::test]
async fn sessions_survive_an_agent_restart() {
    let dir = temp_dir("restart");
    let first = Agent::start(&dir).await;
    let session = first.new_session().await;
    first.prompt(&session, "hello world").await.unwrap();
    first
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "code"}),
        )
        .await
        .unwrap();
    first.stop().await;

    let second = Agent::start(&dir).await;
    let list = second
        .call("session/list", json!({"cwd": "/w"}))
        .await
        .unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], session.as_str(), "{list}");
    let replay = second.load(&session).await;
    assert_eq!(texts_of(&replay, "user_message_chunk"), ["hello world"]);
    let said = texts_of(&replay, "agent_message_chunk").concat();
    assert!(said.ends_with("hello world "), "{said:?}");
    assert!(replay.iter().any(|u| u["sessionUpdate"] == "plan"));
    // The loaded session goes on, and the next restart sees both turns.
    second.prompt(&session, "again").await.unwrap();
    second.stop().await;
    let third = Agent::start(&dir).await;
    let replay = third.load(&session).await;
    assert_eq!(
        texts_of(&replay, "user_message_chunk"),
        ["hello world", "again"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session the store loaded (or resumed) for the echo agent has its working directory
/// after the restart: the agent finds it in the store when the session is prompted.
#[tokio::test]
async fn a_loaded_or_resumed_session_keeps_its_working_directory() {
    let dir = temp_dir("cwd");
    let first = Agent::start(&dir).await;
    let session = first.new_session().await;
    first.prompt(&session, "hello").await.unwrap();
    first.stop().await;
    let reads = json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}});
    for method in ["session/load", "session/resume"] {
        let agent = Agent::start_with(&dir, reads.clone()).await;
        agent
            .call(
                method,
                json!({"sessionId": session, "cwd": "/w", "mcpServers": []}),
            )
            .await
            .unwrap();
        agent.log.take(&session);
        agent.prompt(&session, "again").await.unwrap();
        let updates = agent.log.take(&session);
        let titles: Vec<&str> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "tool_call")
            .filter_map(|u| u["title"].as_str())
            .collect();
        assert_eq!(titles, ["Read /w/hello.txt"], "after {method}");
        agent.stop().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kill -9` while four sessions append turn after turn: after a restart every turn whose
/// answer arrived is in its session's history exactly once, whole and in order, at most the
/// turn in flight is there besides, and a torn record left at the end of a file is ignored.
#[tokio::test]
async fn kill_9_under_load_loses_no_completed_turn() {
    let dir = temp_dir("kill9");
    let mut agent = Agent::start(&dir).await;
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(agent.new_session().await);
    }
    let done: Arc<Mutex<HashMap<String, Vec<usize>>>> = Arc::default();
    let peer = agent.conn.peer().clone();
    let mut loops = Vec::new();
    for session in sessions.clone() {
        let (peer, done) = (peer.clone(), done.clone());
        loops.push(tokio::spawn(async move {
            for n in 0.. {
                let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": format!("turn-{n}")}]});
                if peer.request::<_, Value>("session/prompt", &params).await.is_err() {
                    return;
                }
                done.lock().unwrap().entry(session.clone()).or_default().push(n);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    agent.child.start_kill().unwrap();
    agent.child.wait().await.unwrap();
    for l in loops {
        l.await.unwrap();
    }
    let done = done.lock().unwrap().clone();
    assert!(
        done.values().map(Vec::len).sum::<usize>() >= 8,
        "the load ran: {done:?}"
    );

    // A torn record, as a kill in the middle of a write leaves one.
    let file = std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(br#"{"prompt":[{"type":"te"#)
        .unwrap();

    let after = Agent::start(&dir).await;
    for session in &sessions {
        let replay = after.load(session).await;
        let prompts = texts_of(&replay, "user_message_chunk");
        let completed: Vec<String> = done
            .get(session)
            .map(|v| v.iter().map(|n| format!("turn-{n}")).collect())
            .unwrap_or_default();
        assert!(
            prompts.len() == completed.len() || prompts.len() == completed.len() + 1,
            "{session}: stored {prompts:?}, completed {completed:?}"
        );
        assert_eq!(prompts[..completed.len()], completed[..], "{session}");
        if let Some(extra) = prompts.get(completed.len()) {
            assert_eq!(*extra, format!("turn-{}", completed.len()), "{session}");
        }
        // Each completed turn is whole: its echo follows its prompt. (The turn in flight
        // is kept as far as it streamed, and replays as interrupted.)
        let said = texts_of(&replay, "agent_message_chunk").concat();
        for p in &prompts[..completed.len()] {
            assert!(
                said.contains(&format!("{p} ")),
                "{session}: {p} not echoed in {said:?}"
            );
        }
    }
    // New turns append after the torn record was cut off.
    after.prompt(&sessions[0], "after-restart").await.unwrap();
    after.stop().await;
    let last = Agent::start(&dir).await;
    for session in &sessions {
        let prompts = texts_of(&last.load(session).await, "user_message_chunk");
        if session == &sessions[0] {
            assert_eq!(prompts.last().unwrap(), "after-restart");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two agent processes on one store directory: the second exits at once with a message
/// saying why, and the first keeps working.
#[tokio::test]
async fn a_second_agent_on_the_same_store_is_refused() {
    let dir = temp_dir("two");
    let first = Agent::start(&dir).await;
    let second = Command::new(example_path())
        .arg("--store")
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(20), second)
        .await
        .expect("the second agent exits by itself")
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another process"), "{err}");
    let session = first.new_session().await;
    first.prompt(&session, "still here").await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store directory that cannot be created is an error at start, naming the path.
#[tokio::test]
async fn an_unusable_store_directory_fails_at_start() {
    let dir = temp_dir("unusable");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("file"), b"").unwrap();
    let out = Command::new(example_path())
        .arg("--store")
        .arg(dir.join("file").join("store"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot create directory") && err.contains("file"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kill -9` in the middle of a streamed turn, with each durability that records as it
/// streams: after a restart, `session/load` replays every chunk the client had received of
/// that turn, then a chunk marked interrupted; the turn that finished before it is whole and
/// not marked. The store may hold a little more than the client saw: the updates of the
/// transport write under way at the kill, appended just before it (the echo agent streams a
/// word every 20 ms, so one, or two when the writer fell behind).
#[tokio::test]
async fn kill_9_mid_turn_keeps_every_event_the_client_saw() {
    for durability in ["event", "event-sync-turn"] {
        let dir = temp_dir(&format!("midturn-{durability}"));
        let init = json!({"protocolVersion": 1});
        let mut agent = Agent::start_args(&dir, init.clone(), &["--durability", durability]).await;
        let session = agent.new_session().await;
        agent.prompt(&session, "first turn").await.unwrap();
        agent.log.take(&session);
        let words: Vec<String> = (0..400).map(|i| format!("w{i}")).collect();
        let peer = agent.conn.peer().clone();
        let params =
            json!({"sessionId": session, "prompt": [{"type": "text", "text": words.join(" ")}]});
        let running = tokio::spawn(async move {
            let _ = peer.request::<_, Value>("session/prompt", &params).await;
        });
        let streamed = |log: &Log| {
            texts_of(&log.peek(&session), "agent_message_chunk")
                .into_iter()
                .filter(|t| t.starts_with('w'))
                .collect::<Vec<_>>()
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while streamed(&agent.log).len() < 30 {
            assert!(tokio::time::Instant::now() < deadline, "the turn streams");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        agent.child.start_kill().unwrap();
        agent.child.wait().await.unwrap();
        let seen = streamed(&agent.log);
        running.await.unwrap();
        assert!(seen.len() < words.len(), "killed mid-turn");

        let after = Agent::start_args(&dir, init, &["--durability", durability]).await;
        let replay = after.load(&session).await;
        let prompts = texts_of(&replay, "user_message_chunk");
        assert_eq!(prompts.len(), 2, "{durability}: {prompts:?}");
        let stored: Vec<String> = texts_of(&replay, "agent_message_chunk")
            .into_iter()
            .filter(|t| t.starts_with('w'))
            .collect();
        assert!(
            (seen.len()..=seen.len() + 2).contains(&stored.len()),
            "{durability}: saw {}, stored {}",
            seen.len(),
            stored.len()
        );
        assert_eq!(stored[..seen.len()], seen[..], "{durability}");
        let marks: Vec<usize> = replay
            .iter()
            .enumerate()
            .filter(|(_, u)| u["_meta"]["acp-rs/turnInterrupted"] == true)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            marks,
            [replay.len() - 1],
            "{durability}: one mark, at the end"
        );
        after.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
