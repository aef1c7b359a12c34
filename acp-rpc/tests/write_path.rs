//! The write path: requests and responses written straight through by their senders when the
//! writer is idle, everything else through the writer task. Over a transport that takes a few
//! bytes at a time and often is not ready, every message must still arrive whole, and nothing
//! may pass a message sent before it.

mod common;

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use acp_rpc::{Config, Connection};
use common::{Shared, TestHandler};
use serde_json::{Value, json};
use tokio::io::AsyncWrite;

/// Takes at most 5 bytes per write and refuses every other call (`Pending`, waking the
/// caller's waker at once, as a transport whose buffer drains quickly does).
struct Trickle<W> {
    inner: W,
    refuse: bool,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Trickle<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.refuse = !self.refuse;
        if self.refuse {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let n = buf.len().min(5);
        Pin::new(&mut self.inner).poll_write(cx, &buf[..n])
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// `ours` writes through a [`Trickle`]; `theirs` is an ordinary connection.
fn trickling_pair(ours: Arc<TestHandler>, theirs: Arc<TestHandler>) -> (Connection, Connection) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (yr, yw) = tokio::io::split(y);
    let trickle = Trickle {
        inner: xw,
        refuse: false,
    };
    (
        Connection::new(xr, trickle, Shared(ours), Config::default()),
        Connection::new(yr, yw, Shared(theirs), Config::default()),
    )
}

#[tokio::test]
async fn a_request_never_passes_the_notifications_sent_before_it() {
    let theirs = TestHandler::new();
    let (ours, _theirs_conn) = trickling_pair(TestHandler::new(), theirs.clone());
    let peer = ours.peer();
    let mut sent = 0u64;
    for round in 0..120u64 {
        // 0 to 4 notifications, then a lone request (the kind written straight through).
        for _ in 0..round % 5 {
            peer.notify("note", &json!({"tag": "t", "seq": sent}))
                .await
                .unwrap();
            sent += 1;
        }
        let seen: u64 = peer.request("notes_seen", &json!(null)).await.unwrap();
        assert_eq!(
            seen, sent,
            "round {round}: the request overtook a notification"
        );
    }
    let notes = theirs.notes.lock().unwrap();
    let seqs: Vec<u64> = notes.iter().map(|n| n["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (0..sent).collect::<Vec<_>>(),
        "notifications arrive whole, in order"
    );
}

#[tokio::test]
async fn a_response_never_passes_the_notifications_its_handler_sent() {
    let theirs = TestHandler::new();
    let (_ours, theirs_conn) = trickling_pair(TestHandler::new(), theirs.clone());
    let peer = theirs_conn.peer();
    let mut total = 0usize;
    for n in [0u64, 1, 3, 17, 2, 40] {
        // Our handler streams `n` notes and then answers (straight through, when it can).
        let answered: u64 = peer
            .request("stream", &json!({"n": n, "tag": n}))
            .await
            .unwrap();
        assert_eq!(answered, n);
        total += n as usize;
        assert_eq!(
            theirs.notes.lock().unwrap().len(),
            total,
            "after streaming {n}: the answer arrived before notifications sent ahead of it"
        );
    }
}

#[tokio::test]
async fn many_lone_calls_from_many_tasks_each_get_their_own_answer() {
    let (ours, _theirs_conn) = trickling_pair(TestHandler::new(), TestHandler::new());
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..16 {
        let peer = ours.peer().clone();
        tasks.spawn(async move {
            for i in 0..50 {
                let params = json!({"task": task, "i": i, "pad": "x".repeat(i * 7)});
                let back: Value = peer.request("echo", &params).await.unwrap();
                assert_eq!(back, params);
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    assert_eq!(ours.peer().pending_requests(), 0);
}
