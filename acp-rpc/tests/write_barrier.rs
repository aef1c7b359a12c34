//! The write barrier (`Config::write_barrier`): work noted before a message is queued is done
//! before that message reaches the transport, once per batch rather than once per message;
//! while it runs nothing is written (answers written straight through wait too); the last
//! flush of an ending connection runs it as well; two barriers both run.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use acp_rpc::barrier::BarrierFuture;
use acp_rpc::{Config, WriteBarrier};
use common::{RawPeer, TestHandler};
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;

/// Stands in for a store: `note()` records work to do (an event to append) before its
/// message is queued; a flush does all of it, once the gate is open.
struct Gate(Arc<State>);

struct State {
    pending: AtomicBool,
    /// Work noted so far, and done so far (a flush catches `done` up with `noted`).
    noted: AtomicU64,
    done: AtomicU64,
    flushes: AtomicUsize,
    open: watch::Sender<bool>,
}

impl Gate {
    fn new(open: bool) -> Arc<Gate> {
        Arc::new(Gate(Arc::new(State {
            pending: AtomicBool::new(false),
            noted: AtomicU64::new(0),
            done: AtomicU64::new(0),
            flushes: AtomicUsize::new(0),
            open: watch::channel(open).0,
        })))
    }

    fn note(&self) {
        self.0.noted.fetch_add(1, Ordering::SeqCst);
        self.0.pending.store(true, Ordering::SeqCst);
    }

    fn open(&self) {
        self.0.open.send_replace(true);
    }

    fn done(&self) -> u64 {
        self.0.done.load(Ordering::SeqCst)
    }

    fn flushes(&self) -> usize {
        self.0.flushes.load(Ordering::SeqCst)
    }
}

impl WriteBarrier for Gate {
    fn pending(&self) -> bool {
        self.0.pending.load(Ordering::SeqCst)
    }

    fn flush(&self) -> BarrierFuture {
        self.0.pending.store(false, Ordering::SeqCst);
        let noted = self.0.noted.load(Ordering::SeqCst);
        let state = self.0.clone();
        Box::pin(async move {
            let _ = state.open.subscribe().wait_for(|open| *open).await;
            state.done.fetch_max(noted, Ordering::SeqCst);
            state.flushes.fetch_add(1, Ordering::SeqCst);
        })
    }
}

async fn no_line_within(peer: &mut RawPeer, wait: Duration) {
    let mut line = String::new();
    let read = tokio::time::timeout(wait, peer.reader.read_line(&mut line)).await;
    assert!(read.is_err(), "a line passed the barrier: {line:?}");
}

/// Nothing of a burst reaches the peer while the barrier's work waits; then every message
/// arrives after its work was done, in fewer flushes than messages.
#[tokio::test]
async fn a_queued_message_never_passes_the_work_noted_before_it() {
    let gate = Gate::new(false);
    let config = Config::default().with_write_barrier(gate.clone());
    let (conn, mut peer) = RawPeer::connect(TestHandler::new(), config);
    let sender = conn.peer().clone();
    let burst = tokio::spawn({
        let gate = gate.clone();
        async move {
            for seq in 0..200u64 {
                gate.note();
                sender.notify("note", &json!({"seq": seq})).await.unwrap();
            }
        }
    });
    no_line_within(&mut peer, Duration::from_millis(300)).await;
    assert_eq!(gate.done(), 0);
    gate.open();
    for seq in 0..200u64 {
        let msg = peer.json().await;
        assert_eq!(msg["params"]["seq"], seq);
        assert!(
            gate.done() > seq,
            "note {seq} reached the peer before its work was done"
        );
    }
    burst.await.unwrap();
    let flushes = gate.flushes();
    assert!(
        (1..200).contains(&flushes),
        "{flushes} flushes for 200 messages"
    );
}

/// An answer the connection would write straight through (nothing queued) waits for the
/// pending work like any message.
#[tokio::test]
async fn an_answer_written_straight_through_waits_for_pending_work() {
    let gate = Gate::new(false);
    let config = Config::default().with_write_barrier(gate.clone());
    let (_conn, mut peer) = RawPeer::connect(TestHandler::new(), config);
    gate.note();
    peer.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[1]}\n")
        .await;
    no_line_within(&mut peer, Duration::from_millis(300)).await;
    gate.open();
    let answer = peer.json().await;
    assert_eq!(answer["result"], json!([1]));
    assert_eq!(gate.done(), 1);
    // With nothing pending the barrier is not run at all.
    peer.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":[2]}\n")
        .await;
    assert_eq!(peer.json().await["result"], json!([2]));
    assert_eq!(gate.flushes(), 1);
}

/// A connection that ends with queued messages runs the barrier before its last flush.
#[tokio::test]
async fn the_last_flush_of_an_ending_connection_runs_the_barrier() {
    let gate = Gate::new(false);
    let config = Config::default().with_write_barrier(gate.clone());
    let (conn, mut peer) = RawPeer::connect(TestHandler::new(), config);
    gate.note();
    conn.peer()
        .notify("note", &json!({"seq": 0}))
        .await
        .unwrap();
    conn.close();
    tokio::time::sleep(Duration::from_millis(50)).await;
    gate.open();
    let msg = peer.json().await;
    assert_eq!(msg["params"]["seq"], 0);
    assert_eq!(gate.done(), 1);
}

/// A barrier added to a config that has one keeps the first: both run, the first first.
#[tokio::test]
async fn a_second_barrier_runs_after_the_first() {
    let first = Gate::new(true);
    let second = Gate::new(true);
    let config = Config::default()
        .with_write_barrier(first.clone())
        .with_write_barrier(second.clone());
    let (conn, mut peer) = RawPeer::connect(TestHandler::new(), config);
    first.note();
    second.note();
    conn.peer()
        .notify("note", &json!({"seq": 0}))
        .await
        .unwrap();
    peer.json().await;
    assert_eq!(first.done(), 1);
    assert_eq!(second.done(), 1);
}
