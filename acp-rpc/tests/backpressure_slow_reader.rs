//! Backpressure: a peer that reads slowly makes `notify` wait; the outgoing queue stays
//! bounded and nothing is lost or reordered.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_rpc::Config;
use common::{RawPeer, TestHandler};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_waits_for_a_slow_reader_so_the_queue_stays_bounded() {
    const N: usize = 10_000;
    const QUEUE: usize = 16;
    let config = Config::default().with_outgoing_queue(QUEUE);
    // A 1 KiB pipe that nobody reads yet.
    let (conn, mut raw) = RawPeer::connect_with_buffer(TestHandler::new(), config, 1024);
    let sent = Arc::new(AtomicUsize::new(0));
    let peer = conn.peer().clone();
    let counter = sent.clone();
    let producer = tokio::spawn(async move {
        for i in 0..N {
            peer.notify("tick", &json!({"i": i})).await.unwrap();
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stalled_at = sent.load(Ordering::SeqCst);
    // Queue + one batch in the writer + what fits in the pipe (~30 lines of 40 bytes).
    assert!(
        stalled_at <= 2 * QUEUE + 40,
        "producer ran ahead: {stalled_at}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sent.load(Ordering::SeqCst), stalled_at, "still blocked");
    // Now read slowly-ish: everything arrives, in order.
    for i in 0..N {
        let v = raw.json().await;
        assert_eq!(v["params"]["i"], i);
    }
    producer.await.unwrap();
}
