//! `acp agent --store postgres://...` (and `ACP_STORE`) as real child processes on a real
//! PostgreSQL (acp-store-postgres's test server: initdb + pg_ctl in a temp directory):
//! an unreachable database fails at start with a clear message; a `kill -9` mid-turn keeps
//! every chunk the client saw, which another agent process loads, marked interrupted; the
//! database stopped mid-session is a JSON-RPC error, not a hang or a crash, and its return
//! recovers.

#[path = "../../acp-store-postgres/tests/support/mod.rs"]
mod pg;
mod support;

use std::process::Stdio;
use std::time::Duration;

use acp_agent::Error;
use acp_rpc::{Config, Connection};
use serde_json::{Value, json};
use support::{UpdateLog as Log, acp};
use tokio::process::{Child, Command};

struct Agent {
    child: Child,
    conn: Connection,
    log: Log,
}

impl Agent {
    async fn start(url: &str) -> Agent {
        let mut child = Command::new(acp())
            .args(["agent", "--store", url])
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
            .unwrap();
        agent
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.conn.peer().request(method, &params).await
    }
}

/// An unreachable database stops `acp agent` at start (exit 1) with a message naming it,
/// through `--store` and through `ACP_STORE` alike.
#[tokio::test]
async fn an_unreachable_database_fails_at_start() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://acp@127.0.0.1:{port}/acp");
    for by_env in [false, true] {
        let mut cmd = Command::new(acp());
        cmd.arg("agent");
        if by_env {
            cmd.env("ACP_STORE", &url);
        } else {
            cmd.args(["--store", &url]).env_remove("ACP_STORE");
        }
        let out = tokio::time::timeout(
            Duration::from_secs(30),
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output(),
        )
        .await
        .expect("exits by itself")
        .unwrap();
        assert_eq!(out.status.code(), Some(1), "by env: {by_env}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "cannot reach PostgreSQL at postgres://127.0.0.1:{port}/acp"
            )),
            "{err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_turn_then_another_process_loads_it_and_the_database_restarts() {
    let Some(server) = pg::Server::start() else {
        return;
    };
    let url = server.fresh_db();
    let mut first = Agent::start(&url).await;
    let created = first
        .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let peer = first.conn.peer().clone();
    let params = json!({"sessionId": id, "prompt": [{"type": "text", "text": "/count 200"}]});
    let running = tokio::spawn(async move {
        let _ = peer.request::<_, Value>("session/prompt", &params).await;
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while first.log.texts().len() < 5 {
        assert!(tokio::time::Instant::now() < deadline, "the turn streams");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.child.start_kill().unwrap();
    first.child.wait().await.unwrap();
    let seen = first.log.texts();
    running.await.unwrap();

    // Another agent process on the same database.
    let second = Agent::start(&url).await;
    let list = second
        .call("session/list", json!({"cwd": "/w"}))
        .await
        .unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str(), "{list}");
    second.log.0.lock().unwrap().clear();
    second
        .call(
            "session/load",
            json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
        )
        .await
        .unwrap();
    let replayed = second.log.texts();
    assert!(
        replayed.len() > seen.len(),
        "saw {seen:?}, replayed {replayed:?}"
    );
    assert_eq!(
        replayed[..seen.len()],
        seen[..],
        "every chunk the client saw"
    );
    let last = second.log.0.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last["_meta"]["acp-rs/turnInterrupted"], true, "{last}");

    // The database goes away: an error answer, not a hang; the agent process lives on.
    server.stop();
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        second.call("session/list", json!({})),
    )
    .await
    .expect("answered, not hung")
    .unwrap_err();
    assert!(err.message.contains("PostgreSQL"), "{}", err.message);
    server.restart();
    let list = second
        .call("session/list", json!({}))
        .await
        .expect("recovers");
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str());
    let done = second
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "/count 2"}]}),
        )
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
}

/// `--durability` and `ACP_STORE_DURABILITY` take `event`, `event-sync-turn`, `turn` or
/// `<N>ms`; anything else stops `acp agent` before it serves, saying what is expected.
#[tokio::test]
async fn a_bad_durability_is_refused_at_start() {
    let flag = Command::new(acp())
        .args(["agent", "--durability", "sometimes"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(flag.status.code(), Some(2));
    let err = String::from_utf8_lossy(&flag.stderr);
    assert!(
        err.contains("expected event, event-sync-turn, turn or <N>ms"),
        "{err}"
    );
    let env = Command::new(acp())
        .arg("agent")
        .env("ACP_STORE_DURABILITY", "5s")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(env.status.code(), Some(1));
    let err = String::from_utf8_lossy(&env.stderr);
    assert!(err.contains("ACP_STORE_DURABILITY"), "{err}");
}

/// A database password shows nowhere `acp` writes, in any of its forms (in the URL, as a
/// query parameter, in `PGPASSWORD`), and an unknown `sslmode` stops it at start.
#[tokio::test]
async fn a_password_never_shows_and_an_unknown_sslmode_is_refused_at_start() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let secrets = ["url-s3cret", "param-s3cret", "env-s3cret"];
    for (query, expected) in [
        ("password=param-s3cret", "cannot reach PostgreSQL"),
        (
            "sslmode=verify-fully&password=param-s3cret",
            "unknown sslmode \"verify-fully\"",
        ),
    ] {
        let url = format!("postgres://acp:url-s3cret@127.0.0.1:{port}/acp?{query}");
        let out = tokio::time::timeout(
            Duration::from_secs(30),
            Command::new(acp())
                .args(["agent", "--store", &url])
                .env("PGPASSWORD", "env-s3cret")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output(),
        )
        .await
        .expect("exits by itself")
        .unwrap();
        assert_eq!(out.status.code(), Some(1), "{query}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{err}");
        for secret in secrets {
            assert!(!err.contains(secret), "{secret} in {err}");
        }
    }
}

/// `acp serve` names its store at start with the password hidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_serve_shows_its_store_without_the_password() {
    use tokio::io::AsyncBufReadExt;
    let Some(server) = pg::Server::start() else {
        return;
    };
    // Trust authentication: the password is sent and ignored.
    let url = server
        .fresh_db()
        .replace("postgres://acp@", "postgres://acp:serve-s3cret@");
    let mut child = Command::new(acp())
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &url])
        .env_remove("ACP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("acp serve starts")
        .unwrap()
        .expect("a line");
    assert!(first.contains("postgres://acp:***@127.0.0.1:"), "{first}");
    assert!(!first.contains("serve-s3cret"), "{first}");
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}
