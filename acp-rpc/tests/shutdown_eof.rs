//! Shutdown: EOF, write errors and local close fail pending calls at once, cancel
//! in-flight handlers, flush queued output and report why the connection ended.

mod common;

use std::time::{Duration, Instant};

use acp_rpc::{CloseReason, Config, ErrorCode};
use common::{RawPeer, TestHandler};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::task::JoinSet;

#[tokio::test]
async fn pending_calls_fail_at_once_when_the_peer_closes_the_pipe() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let mut calls = JoinSet::new();
    for i in 0..100 {
        let peer = conn.peer().clone();
        calls.spawn(async move { peer.request::<_, Value>("slow", &i).await });
    }
    for _ in 0..100 {
        raw.json().await; // every request is on the wire
    }
    let closed_at = Instant::now();
    drop(raw); // both halves: the pipe is gone
    let mut failed = 0;
    while let Some(r) = calls.join_next().await {
        let e = r.unwrap().unwrap_err();
        assert!(e.is_connection_closed(), "{e}");
        failed += 1;
    }
    let elapsed = closed_at.elapsed();
    assert_eq!(failed, 100);
    // "At once": no timeout is waited out (a call's own would be a minute). Typically under
    // 10 ms; the bound leaves room for a loaded two-core CI machine (it took 11.5 ms there).
    assert!(elapsed < Duration::from_millis(250), "took {elapsed:?}");
    assert_eq!(conn.closed().await, CloseReason::Eof);
    let e = conn
        .peer()
        .request::<_, Value>("late", &())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::CONNECTION_CLOSED);
    assert!(conn.peer().notify("late", &()).await.is_err());
}

#[tokio::test]
async fn in_flight_handlers_are_cancelled_when_the_peer_hangs_up() {
    let (server, mut cancelled) = TestHandler::with_cancel_channel();
    let (conn, mut raw) = RawPeer::connect(server, Config::default());
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait_cancel\"}\n")
        .await;
    assert!(raw.until_probe(0).await.is_empty());
    raw.writer.shutdown().await.unwrap();
    let id = tokio::time::timeout(Duration::from_secs(5), cancelled.recv()).await;
    assert_eq!(id.unwrap().unwrap(), "1");
    assert_eq!(conn.closed().await, CloseReason::Eof);
    // The cancelled handler is not answered; the writer shut down, so we read EOF.
    assert_eq!(raw.line().await, None);
}

/// A writer whose reader has gone away.
struct BrokenPipe;

impl tokio::io::AsyncWrite for BrokenPipe {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_write_error_ends_the_connection_and_fails_pending_calls() {
    // The input stays open: only the writer fails (the peer closed its stdin).
    let (input, _keep_open) = tokio::io::duplex(1024);
    let conn = acp_rpc::Connection::new(input, BrokenPipe, (), Config::default());
    let e = conn
        .peer()
        .request::<_, Value>("x", &json!({}))
        .await
        .unwrap_err();
    assert!(e.is_connection_closed(), "{e}");
    assert!(matches!(conn.closed().await, CloseReason::WriteError(_)));
}

#[tokio::test]
async fn close_flushes_queued_output_then_the_peer_sees_eof() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    for i in 0..100 {
        conn.peer().notify("n", &i).await.unwrap();
    }
    conn.close();
    for i in 0..100 {
        assert_eq!(
            raw.json().await,
            json!({"jsonrpc": "2.0", "method": "n", "params": i})
        );
    }
    assert_eq!(raw.line().await, None);
    assert_eq!(conn.closed().await, CloseReason::Local);
}

#[tokio::test]
async fn a_response_and_notifications_that_arrived_before_eof_are_still_delivered() {
    let client = TestHandler::new();
    let (conn, mut raw) = RawPeer::connect(client.clone(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("prompt", &()).await });
    assert_eq!(raw.json().await["id"], 1);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"seq\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"done\"}\n")
        .await;
    raw.writer.shutdown().await.unwrap();
    assert_eq!(call.await.unwrap().unwrap(), json!("done"));
    assert_eq!(client.notes.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn tied_connections_end_together() {
    use acp_rpc::memory::{pipe, tie};
    let connect = |(r, w): acp_rpc::memory::PipeEnd| {
        acp_rpc::Connection::new(r, w, common::Shared(TestHandler::new()), Config::default())
    };
    let (a_end, b_end) = pipe();
    let (a, _b) = (connect(a_end), connect(b_end));
    let (c_end, _far) = pipe();
    let c = connect(c_end);
    tie(a.peer(), c.peer());
    // a and b talk over the pipe.
    let echoed: Value = a.peer().request("echo", &[1]).await.unwrap();
    assert_eq!(echoed, json!([1]));
    c.close();
    tokio::time::timeout(Duration::from_secs(5), a.closed())
        .await
        .expect("closing c closes a");
}

#[tokio::test]
async fn notifications_read_before_the_end_are_handled_before_pending_calls_fail() {
    // The peer sends an update and exits at once (an agent crashing mid-prompt): the update
    // must reach the application before the prompt's call fails, even while its handler is
    // still busy when the pipe closes.
    let handler = std::sync::Arc::new(TestHandler {
        note_delay: Some(Duration::from_millis(300)),
        ..TestHandler::default()
    });
    let (conn, mut raw) = RawPeer::connect(handler.clone(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("prompt", &()).await });
    raw.json().await; // the request is on the wire
    raw.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"seq\":0}}\n")
        .await;
    drop(raw);
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_connection_closed(), "{e}");
    assert_eq!(
        handler.notes.lock().unwrap().as_slice(),
        &[json!({"seq": 0})],
        "the call failed before the notification read ahead of the end was handled"
    );
    assert_eq!(conn.closed().await, CloseReason::Eof);
}

/// `finished` is what a process awaits before it exits: once it resolves, every queued
/// message has been written, though the runtime (and with it the writer task) is dropped at
/// once. `closed` alone resolves as the end begins, before the writer has run.
#[test]
fn finished_means_the_queued_output_is_written_before_the_runtime_goes() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (conn, raw) = runtime.block_on(async {
        let (conn, raw) = RawPeer::connect(TestHandler::new(), Config::default());
        for i in 0..100 {
            conn.peer().notify("n", &i).await.unwrap();
        }
        conn.close();
        assert_eq!(conn.finished().await, CloseReason::Local);
        (conn, raw)
    });
    drop(runtime);
    drop(conn);
    let mut raw = raw;
    let lines = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut lines = 0;
            while raw.line().await.is_some() {
                lines += 1;
            }
            lines
        });
    assert_eq!(lines, 100);
}

/// `received_requests_handled` resolves once the answers are queued, not merely once the
/// handlers returned: closing the connection right then still sends every answer (a
/// conductor closes its client this way once a dying component's error is answered).
#[test]
fn closing_once_the_received_requests_are_handled_loses_no_answer() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for round in 0..300 {
            let handler = TestHandler::new();
            let (conn, mut raw) = RawPeer::connect(handler.clone(), Config::default());
            raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fail\"}\n")
                .await;
            // Once the handler has run (the request was read), wait for its answer, close.
            while handler
                .max_running
                .load(std::sync::atomic::Ordering::SeqCst)
                == 0
            {
                tokio::task::yield_now().await;
            }
            conn.peer().received_requests_handled().await;
            conn.close();
            let answer = raw.line().await;
            assert!(
                answer.as_deref().is_some_and(|a| a.contains("\"id\":1")),
                "round {round}: the answer was lost: {answer:?}"
            );
        }
    });
}

/// A writer task dropped with its runtime still frees `finished` waiters: they must not wait
/// for a flush that can no longer happen.
#[test]
fn finished_resolves_when_the_writer_task_is_dropped_with_its_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Closed before the writer task ever ran; then its runtime goes, dropping the task.
    let (conn, _raw) = runtime.block_on(async {
        let (conn, raw) = RawPeer::connect(TestHandler::new(), Config::default());
        conn.close();
        (conn, raw)
    });
    drop(runtime);
    let reason = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), conn.finished()).await });
    assert_eq!(reason.expect("finished resolved"), CloseReason::Local);
}
