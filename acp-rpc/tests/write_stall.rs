//! A peer that stops reading cannot stall us forever (`Config::write_stall_timeout`): real
//! child processes (`sh`) on the other end of real pipes, each flood bounded in count.
//!
//! * one that floods us with requests and never reads our answers (our side answering,
//!   as an agent served by a hostile editor, or an editor flooded by its agent);
//! * one that reads nothing while we send (our side calling and notifying);
//! * one that reads slowly but steadily, which must not be cut off.

use std::process::Stdio;
use std::time::{Duration, Instant};

use acp_rpc::{CloseReason, Config, Connection, ErrorCode};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const STALL: Duration = Duration::from_millis(300);

/// A child running `script` under `sh`, with our connection on its stdin and stdout.
fn connect(script: &str) -> (Child, Connection) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("sh runs");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let config = Config::default().with_write_stall_timeout(Some(STALL));
    let conn = Connection::new(stdout, stdin, (), config);
    (child, conn)
}

#[tokio::test]
async fn a_peer_that_floods_requests_and_never_reads_the_answers_is_cut_off() {
    // 100,000 requests (every one answered -32601, about 9 MB of answers) from a peer that
    // then sleeps with its stdin unread: the answers fill the pipe and stop.
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"never_read_the_answer"}"#;
    let (mut child, conn) = connect(&format!("yes '{request}' | head -n 100000; exec sleep 30"));
    let started = Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(20), conn.closed())
        .await
        .expect("the stalled connection ends by itself");
    assert_eq!(reason, CloseReason::WriteStalled(STALL));
    assert!(
        reason.to_string().contains("stopped reading"),
        "the reason names the stall: {reason}"
    );
    eprintln!("cut off after {:?}", started.elapsed());
    let _ = child.kill().await;
}

#[tokio::test]
async fn calls_to_a_peer_that_reads_nothing_fail_with_the_stall_named() {
    let (mut child, conn) = connect("exec sleep 30");
    let peer = conn.peer().clone();
    // A call waits for its answer; the notifications behind it fill the pipe.
    let call = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request::<Value, Value>("answer_me", &json!({})).await }
    });
    let chunk = "x".repeat(8 * 1024);
    let mut sent = 0;
    let mut refused = None;
    for _ in 0..10_000 {
        match peer.notify("chunk", &json!({ "text": chunk })).await {
            Ok(()) => sent += 1,
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let refused = refused.expect("a notification is refused once the connection ends");
    assert_eq!(refused.code, ErrorCode::CONNECTION_CLOSED, "{refused:?}");
    assert!(
        refused.message.contains("stopped reading"),
        "{}",
        refused.message
    );
    assert!(sent < 10_000, "the sends stopped ({sent} went out)");
    let answer = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the pending call ends")
        .unwrap();
    let error = answer.expect_err("never answered");
    assert_eq!(error.code, ErrorCode::CONNECTION_CLOSED);
    assert!(
        error.message.contains("stopped reading"),
        "{}",
        error.message
    );
    assert_eq!(conn.closed().await, CloseReason::WriteStalled(STALL));
    let _ = child.kill().await;
}

#[tokio::test]
async fn a_slow_but_steady_reader_is_not_cut_off() {
    // Reads 4 KiB every 100 ms (a little over the stall timeout's worth of bytes each time
    // the pipe is full), for at most 20 s.
    let (mut child, conn) =
        connect("for i in $(seq 1 200); do head -c 4096 > /dev/null; sleep 0.1; done");
    let peer = conn.peer().clone();
    let chunk = "y".repeat(1024);
    // About 160 KiB: more than the pipe holds, so the writes wait on the reader many times.
    for i in 0..150 {
        peer.notify("chunk", &json!({ "i": i, "text": chunk }))
            .await
            .unwrap_or_else(|e| panic!("notification {i} refused: {e:?}"));
    }
    // Everything was taken by the writer (queued or written) and the connection is alive.
    tokio::time::sleep(STALL * 2).await;
    peer.notify("last", &json!({}))
        .await
        .expect("the slow reader is still served");
    assert!(
        tokio::time::timeout(Duration::from_millis(10), conn.closed())
            .await
            .is_err(),
        "the connection is still open"
    );
    let _ = child.kill().await;
}
