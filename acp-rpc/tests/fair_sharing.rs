//! Fair sharing of the outgoing queue: senders streaming at once (an agent's sessions, each
//! sending updates in a loop) all make progress while the queue is full. Room the writer makes
//! goes first to the senders waiting for it; one that finds room while others wait takes no
//! more than its share of the queue before it lets them go, so no sender streams to its end
//! while the others' next messages wait.

mod common;

use acp_rpc::Config;
use common::{RawPeer, TestHandler};
use serde_json::json;

#[tokio::test]
async fn senders_streaming_at_once_all_progress_while_the_queue_is_full() {
    const SENDERS: u64 = 8;
    const EACH: u64 = 500;
    const QUEUE: usize = 64;
    let config = Config::default().with_outgoing_queue(QUEUE);
    let (conn, mut raw) = RawPeer::connect_with_buffer(TestHandler::new(), config, 4 * 1024);
    for sender in 0..SENDERS {
        let peer = conn.peer().clone();
        tokio::spawn(async move {
            for i in 0..EACH {
                peer.notify("chunk", &json!({"s": sender, "i": i}))
                    .await
                    .unwrap();
            }
        });
    }
    let mut delivered = vec![0u64; SENDERS as usize];
    let mut first_done: Option<Vec<u64>> = None;
    for _ in 0..SENDERS * EACH {
        let v = raw.json().await;
        let sender = v["params"]["s"].as_u64().unwrap() as usize;
        assert_eq!(
            v["params"]["i"], delivered[sender],
            "sender {sender} out of order"
        );
        delivered[sender] += 1;
        if delivered[sender] == EACH && first_done.is_none() {
            first_done = Some(delivered.clone());
        }
    }
    // When the first sender had all its messages out, every other one had a good part of its
    // own out too: perfectly even sharing would have them all near the end, and with one
    // sender taking all the room the writer makes they had 7 each.
    let at_first_end = first_done.unwrap();
    let least = *at_first_end.iter().min().unwrap();
    assert!(
        least >= EACH / 3,
        "when the first sender finished, the others had delivered only {at_first_end:?} of {EACH}"
    );
}
