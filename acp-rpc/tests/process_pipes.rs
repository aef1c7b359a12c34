//! Real OS pipes between two processes: this test binary re-executes itself as the peer
//! (`ACP_RPC_TEST_PEER=1`), serving on its stdin/stdout through `acp_rpc::stdio` (which must
//! take the non-blocking path for pipes and sockets: the peer exits with status 3 if it
//! does not). Runs without the libtest harness so the peer's stdout carries nothing but
//! JSON-RPC.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use acp_rpc::{CloseReason, Config, Connection};
use common::{Shared, TestHandler};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::task::JoinSet;

const PEER_ENV: &str = "ACP_RPC_TEST_PEER";
/// Makes the re-executed binary print which path `acp_rpc::stdio` took, then exit.
const REPORT_ENV: &str = "ACP_RPC_TEST_STDIO_REPORT";

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if std::env::var_os(REPORT_ENV).is_some() {
        rt.block_on(report_stdio_paths());
        return;
    }
    if std::env::var_os(PEER_ENV).is_some() {
        rt.block_on(serve_as_peer());
        return;
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let tests: [(&str, fn() -> _); 4] = [
        (
            "ten_thousand_concurrent_requests_each_way_over_os_pipes_are_each_answered_once",
            || {
                Box::pin(
                    ten_thousand_concurrent_requests_each_way_over_os_pipes_are_each_answered_once(
                    ),
                ) as std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>
            },
        ),
        (
            "killing_the_peer_mid_request_fails_pending_calls_within_10ms_of_eof",
            || Box::pin(killing_the_peer_mid_request_fails_pending_calls_within_10ms_of_eof()),
        ),
        (
            "a_peer_whose_stdio_are_unix_sockets_serves_through_them",
            || Box::pin(a_peer_whose_stdio_are_unix_sockets_serves_through_them()),
        ),
        (
            "stdio_shared_with_stderr_stays_blocking_so_stderr_writes_never_fail",
            || Box::pin(stdio_shared_with_stderr_stays_blocking_so_stderr_writes_never_fail()),
        ),
    ];
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let start = Instant::now();
        rt.block_on(test());
        println!("test {name} ... ok ({:?})", start.elapsed());
    }
}

async fn serve_as_peer() {
    let (stdin, stdout) = (acp_rpc::stdio::stdin(), acp_rpc::stdio::stdout());
    if stdin.is_blocking() || stdout.is_blocking() {
        eprintln!("acp_rpc::stdio fell back to the blocking thread pool on pipes or sockets");
        std::process::exit(3);
    }
    let conn = Connection::new(stdin, stdout, Shared(TestHandler::new()), Config::default());
    conn.closed().await;
}

async fn report_stdio_paths() {
    use tokio::io::AsyncWriteExt;
    let path = |blocking: bool| if blocking { "blocking" } else { "reactor" };
    let stdin = acp_rpc::stdio::stdin();
    let mut stdout = acp_rpc::stdio::stdout();
    let line = format!(
        "stdin={} stdout={}\n",
        path(stdin.is_blocking()),
        path(stdout.is_blocking())
    );
    stdout.write_all(line.as_bytes()).await.unwrap();
    stdout.flush().await.unwrap();
}

fn spawn_peer() -> (Child, Connection) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(PEER_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let conn = Connection::new(stdout, stdin, Shared(TestHandler::new()), Config::default());
    (child, conn)
}

async fn ten_thousand_concurrent_requests_each_way_over_os_pipes_are_each_answered_once() {
    const N: usize = 10_000;
    let (mut child, conn) = spawn_peer();
    // The peer floods us with N requests while we flood it with N.
    let peer = conn.peer().clone();
    let theirs = tokio::spawn(async move { peer.request::<_, usize>("flood", &N).await });
    let mut ours = JoinSet::new();
    for i in 0..N {
        let peer = conn.peer().clone();
        ours.spawn(async move {
            let params = json!({"i": i, "pad": "x".repeat(i % 50)});
            let got: Value = peer.request("echo", &params).await.unwrap();
            assert_eq!(got, params);
        });
    }
    let mut answered = 0;
    while let Some(r) = ours.join_next().await {
        r.unwrap();
        answered += 1;
    }
    assert_eq!(answered, N);
    assert_eq!(theirs.await.unwrap().unwrap(), N);
    assert_eq!(conn.peer().pending_requests(), 0);
    conn.close();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "peer exited with {status}");
}

async fn killing_the_peer_mid_request_fails_pending_calls_within_10ms_of_eof() {
    let (mut child, conn) = spawn_peer();
    let ping: Value = conn.peer().request("echo", &"up").await.unwrap();
    assert_eq!(ping, json!("up"));
    let mut calls = JoinSet::new();
    for _ in 0..50 {
        let peer = conn.peer().clone();
        calls.spawn(async move {
            let r = peer.request::<_, Value>("wait_cancel", &()).await;
            (r, Instant::now())
        });
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let killed_at = Instant::now();
    child.start_kill().unwrap();
    let reason = conn.closed().await;
    let eof_at = Instant::now();
    assert_eq!(reason, CloseReason::Eof);
    while let Some(r) = calls.join_next().await {
        let (result, at) = r.unwrap();
        assert!(result.unwrap_err().is_connection_closed());
        let after_eof = at.saturating_duration_since(eof_at);
        assert!(
            after_eof < Duration::from_millis(10),
            "{after_eof:?} after EOF"
        );
        let after_kill = at - killed_at;
        assert!(
            after_kill < Duration::from_millis(500),
            "{after_kill:?} after kill"
        );
    }
    child.wait().await.unwrap();
}

async fn a_peer_whose_stdio_are_unix_sockets_serves_through_them() {
    // Node.js gives its children Unix sockets, not pipes, for stdio.
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let stdin = std::os::fd::OwnedFd::from(theirs.try_clone().unwrap());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(PEER_ENV, "1")
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    ours.set_nonblocking(true).unwrap();
    let (read, write) = tokio::net::UnixStream::from_std(ours).unwrap().into_split();
    let conn = Connection::new(read, write, Shared(TestHandler::new()), Config::default());
    for i in 0..100 {
        let got: Value = conn.peer().request("echo", &json!({"i": i})).await.unwrap();
        assert_eq!(got, json!({"i": i}));
    }
    conn.close();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "peer exited with {status}");
}

/// Runs the binary in report mode with the given stdio and returns what it printed.
async fn stdio_paths(
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
    output: impl std::io::Read + Send + 'static,
) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(REPORT_ENV, "1")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The command (and its copies of the descriptors) is gone: EOF comes when the child exits.
    let read = tokio::task::spawn_blocking(move || {
        let mut output = output;
        let mut text = String::new();
        output.read_to_string(&mut text).map(|_| text)
    });
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "reporter exited with {status}");
    read.await.unwrap().unwrap()
}

async fn stdio_shared_with_stderr_stays_blocking_so_stderr_writes_never_fail() {
    // Its own pipes for each: both on the reactor.
    let (out_read, out_write) = std::io::pipe().unwrap();
    let got = stdio_paths(Stdio::piped(), out_write.into(), Stdio::inherit(), out_read).await;
    assert_eq!(got, "stdin=reactor stdout=reactor\n");

    // `2>&1`: stdout stays blocking (stderr shares its pipe); stdin has its own pipe.
    let (out_read, out_write) = std::io::pipe().unwrap();
    let err_write = out_write.try_clone().unwrap();
    let got = stdio_paths(Stdio::piped(), out_write.into(), err_write.into(), out_read).await;
    assert_eq!(got, "stdin=reactor stdout=blocking\n");

    // One socket for all three (inetd style): nothing may become non-blocking.
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let fd = |s: &std::os::unix::net::UnixStream| {
        Stdio::from(std::os::fd::OwnedFd::from(s.try_clone().unwrap()))
    };
    let (stdin, stdout, stderr) = (fd(&theirs), fd(&theirs), fd(&theirs));
    drop(theirs);
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    let got = stdio_paths(stdin, stdout, stderr, ours).await;
    assert_eq!(got, "stdin=blocking stdout=blocking\n");
}
