//! The gateway: a stdio agent command behind the server, one child per connection. Runs
//! itself as that agent (`ACP_REMOTE_TEST_AGENT=1`), which writes a secret to its stderr.
//! Checks: whole conversations over both profiles, each connection its own child; nothing of
//! the agent's stderr or of the server's paths reaches a client; a client killed mid-stream
//! leaves the other connections going and its child is reaped; an agent that writes junk
//! (a line that is not UTF-8, one that is not JSON, an answer to nothing) has it skipped, as
//! a client over stdio skips it, and the turn completes (a line over the message limit ends
//! the connection instead: tests/hardening/); a command made per identity
//! (`Server::gateway_with`) gets that identity in `ACP_IDENTITY`.

mod support;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use acp_client::process::AgentCommand;
use acp_remote::{BearerToken, ConnectOptions, Limits, RunningServer, Server, connect_client};
use support::raw::{event_with, open, request, send};
use support::{TestAgent, TestClient, converse, reaped, within};

const TOKEN: &str = "test-token-0123456789";
const AUTH: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");
const JSON: (&str, &str) = ("Content-Type", "application/json");
const SSE: (&str, &str) = ("Accept", "text/event-stream");
const SECRET: &str = "SECRET-STDERR /home/secret/keys";
const INIT: &str =
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;

/// The gateway's message limit in the junk test.
const SMALL_LIMIT: usize = 64 * 1024;

fn main() {
    if let Ok(mode) = std::env::var("ACP_REMOTE_TEST_AGENT") {
        eprintln!("{SECRET}");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        if mode == "junk" {
            runtime.block_on(junk_agent());
        } else {
            runtime.block_on(async {
                acp_agent::Builder::new(TestAgent::default())
                    .stdio()
                    .closed()
                    .await
            });
        }
        return;
    }
    type Test = fn() -> Pin<Box<dyn Future<Output = ()>>>;
    let tests: [(&str, Test); 5] = [
        (
            "gateway_round_trips_over_both_profiles_one_child_each",
            || Box::pin(round_trips()),
        ),
        (
            "nothing_of_the_agent_stderr_or_paths_reaches_a_client",
            || Box::pin(no_leaks()),
        ),
        (
            "a_client_killed_mid_stream_leaves_others_going_and_its_child_is_reaped",
            || Box::pin(killed()),
        ),
        (
            "an_agent_writing_junk_has_it_skipped_and_the_turn_completes_over_both_profiles",
            || Box::pin(junk()),
        ),
        (
            "a_command_made_per_identity_gets_that_identity_in_its_environment",
            || Box::pin(per_identity()),
        ),
    ];
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(test())));
        runtime.shutdown_timeout(Duration::from_secs(5));
        if outcome.is_ok() {
            println!("test {name} ... ok");
            passed += 1;
        } else {
            println!("test {name} ... FAILED");
            failed += 1;
        }
    }
    println!("\n{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}

fn command() -> AgentCommand {
    AgentCommand::new(std::env::current_exe().unwrap()).env("ACP_REMOTE_TEST_AGENT", "1")
}

/// The test agent, with junk written before each answer that ends a turn: a line that is
/// not UTF-8, one that is not JSON, and an answer to a request nobody sent.
async fn junk_agent() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    // The agent writes into one end of the pipe; the relay reads the other and adds junk.
    let (agent_out, relay_in) = tokio::io::duplex(1 << 20);
    let conn = acp_agent::Builder::new(TestAgent::default()).io(tokio::io::stdin(), agent_out);
    let mut lines = BufReader::new(relay_in).lines();
    let mut stdout = tokio::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains("\"stopReason\"") {
            let mut junk = Vec::new();
            junk.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}\n");
            junk.extend_from_slice(b"not json at all\n");
            junk.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":424242,\"result\":{}}\n");
            if stdout.write_all(&junk).await.is_err() {
                break;
            }
        }
        let written = async {
            stdout.write_all(line.as_bytes()).await?;
            stdout.write_all(b"\n").await?;
            stdout.flush().await
        };
        if written.await.is_err() {
            break;
        }
    }
    conn.close();
}

async fn gateway(limits: Limits) -> RunningServer {
    Server::gateway(command())
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .limits(limits)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// Waits (bounded) until process `pid` is gone: reaped, not a zombie.
async fn round_trips() {
    let server = gateway(Limits::default()).await;
    let options = ConnectOptions::new().token(TOKEN);
    let mut pids = Vec::new();
    for url in [server.url(), server.url().replace("http://", "ws://")] {
        let conn = connect_client(TestClient::default(), &url, &options, Default::default())
            .await
            .unwrap();
        let (pid, text) = within(20, converse(&conn)).await;
        assert_eq!(text, "alpha\nbeta\ngamma\n");
        assert_ne!(pid, std::process::id().to_string(), "the agent is a child");
        conn.close();
        pids.push(pid);
    }
    assert_ne!(pids[0], pids[1], "one child per connection");
    for pid in &pids {
        assert!(
            reaped(pid).await,
            "child {pid} reaped after its connection closed"
        );
    }
    server.shutdown();
}

async fn no_leaks() {
    let server = gateway(Limits::default()).await;
    let r = send(
        server.local_addr(),
        &request("POST", "/acp", &[AUTH, JSON], INIT),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(
        !r.body.contains("SECRET") && !r.headers.contains("secret"),
        "{r:?}"
    );
    server.shutdown();
    // An agent that cannot start: a plain 502, without the path tried.
    let missing = Server::gateway(AgentCommand::new("/nonexistent/secret-dir/agent"))
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let r = send(
        missing.local_addr(),
        &request("POST", "/acp", &[AUTH, JSON], INIT),
    )
    .await;
    assert_eq!(r.status, 502);
    assert!(
        !r.body.contains("secret-dir") && !r.body.contains("nonexistent"),
        "{r:?}"
    );
    missing.shutdown();
}

async fn killed() {
    let mut limits = Limits::default();
    limits.idle_timeout = Duration::from_secs(1);
    let server = gateway(limits).await;
    let addr = server.local_addr();
    // Client A, raw: a session and a slow turn it reads one event of, then it dies.
    let init = send(addr, &request("POST", "/acp", &[AUTH, JSON], INIT)).await;
    let answer: serde_json::Value = serde_json::from_str(&init.body).unwrap();
    let pid = answer["result"]["agentInfo"]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    let conn = init.header("acp-connection-id").unwrap();
    let c = ("Acp-Connection-Id", conn.as_str());
    let (_, mut main) = open(addr, &request("GET", "/acp", &[AUTH, SSE, c], "")).await;
    let new =
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#;
    assert_eq!(
        send(addr, &request("POST", "/acp", &[AUTH, JSON, c], new))
            .await
            .status,
        202
    );
    let created: serde_json::Value =
        serde_json::from_str(&event_with(&mut main, "sessionId").await).unwrap();
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let s = ("Acp-Session-Id", session.as_str());
    let (_, mut stream) = open(addr, &request("GET", "/acp", &[AUTH, SSE, c, s], "")).await;
    let slow = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"slow"}}]}}}}"#
    );
    assert_eq!(
        send(addr, &request("POST", "/acp", &[AUTH, JSON, c, s], &slow))
            .await
            .status,
        202
    );
    event_with(&mut stream, "tick 0").await;
    // Client B, over WebSocket, starts while A is mid-stream.
    let options = ConnectOptions::new().token(TOKEN);
    let ws = server.url().replace("http://", "ws://");
    let b = connect_client(TestClient::default(), &ws, &options, Default::default())
        .await
        .unwrap();
    drop((main, stream));
    let (b_pid, text) = within(20, converse(&b)).await;
    assert_eq!(text, "alpha\nbeta\ngamma\n");
    assert!(reaped(&pid).await, "A's child {pid} reaped after A died");
    // B's child lives on until B goes; then it is reaped too.
    assert!(Path::new(&format!("/proc/{b_pid}")).exists());
    b.close();
    assert!(reaped(&b_pid).await, "B's child {b_pid} reaped");
    server.shutdown();
}

async fn junk() {
    let mut limits = Limits::default();
    limits.max_message_bytes = SMALL_LIMIT;
    let server = Server::gateway(command().env("ACP_REMOTE_TEST_AGENT", "junk"))
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .limits(limits)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let options = ConnectOptions::new().token(TOKEN);
    for url in [server.url(), server.url().replace("http://", "ws://")] {
        let conn = connect_client(TestClient::default(), &url, &options, Default::default())
            .await
            .unwrap();
        let (_, text) = within(20, converse(&conn)).await;
        assert_eq!(text, "alpha\nbeta\ngamma\n", "{url}");
        conn.close();
    }
    server.shutdown();
}

/// Two tokens, two identities: `alice-token` is `alice`, `bob-token` is `bob`.
struct TwoUsers;

impl acp_remote::Authenticator for TwoUsers {
    fn authenticate(&self, headers: &hyper::HeaderMap) -> Option<acp_remote::Identity> {
        let value = headers.get("authorization")?.to_str().ok()?;
        let name = value.strip_prefix("Bearer ")?.strip_suffix("-token")?;
        ["alice", "bob"]
            .contains(&name)
            .then(|| acp_remote::Identity(name.to_owned()))
    }
}

async fn per_identity() {
    let dir = std::env::temp_dir().join(format!("acp-remote-identity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let reports = dir.clone();
    // Each child writes `ACP_IDENTITY` and what its command was made for, then is the agent.
    let server = Server::gateway_with(move |who| {
        let report = reports.join(format!("{}.txt", who.0));
        AgentCommand::new("/bin/sh")
            .arg("-c")
            .arg(r#"printf '%s %s' "$ACP_IDENTITY" "$MADE_FOR" > "$0" && exec "$1""#)
            .arg(report)
            .arg(std::env::current_exe().unwrap())
            .env("ACP_REMOTE_TEST_AGENT", "1")
            .env("MADE_FOR", &who.0)
            // The server's value wins over one the command set.
            .env(Server::IDENTITY_ENV, "forged")
    })
    .authenticator(TwoUsers)
    .bind("127.0.0.1:0".parse().unwrap())
    .await
    .unwrap();
    for name in ["alice", "bob"] {
        let options = ConnectOptions::new().token(format!("{name}-token"));
        let conn = connect_client(
            TestClient::default(),
            &server.url(),
            &options,
            Default::default(),
        )
        .await
        .unwrap();
        let (_, text) = within(20, converse(&conn)).await;
        assert_eq!(text, "alpha\nbeta\ngamma\n");
        conn.close();
        let report = std::fs::read_to_string(dir.join(format!("{name}.txt"))).unwrap();
        assert_eq!(report, format!("{name} {name}"));
    }
    assert!(
        std::env::var_os(Server::IDENTITY_ENV).is_none(),
        "set in the children only"
    );
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
