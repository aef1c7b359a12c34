//! Bounded admission: a peer that floods requests and reads none of our answers is pushed
//! back by its own full pipe (the reader stops at `max_unanswered_requests`), every request
//! is still answered exactly once when it reads again, and two peers whose handlers call
//! each other far past the cap do not deadlock.

mod common;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use acp_rpc::Config;
use common::{RawPeer, TestHandler, pair};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const CAP: usize = 16;
const QUEUE: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_is_pushed_back_and_every_request_is_answered_once() {
    let handler = TestHandler::new();
    let config = Config::default()
        .with_max_unanswered_requests(CAP)
        .with_outgoing_queue(QUEUE)
        .with_max_concurrent_handlers(4);
    // A small pipe, so the answers nobody reads fill it quickly.
    let (_conn, raw) = RawPeer::connect_with_buffer(handler.clone(), config, 4096);
    let RawPeer { reader, mut writer } = raw;
    const N: usize = 20_000;
    let flood = tokio::spawn(async move {
        for i in 0..N {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"echo","params":[{i}]}}"#);
            writer.write_all(line.as_bytes()).await.unwrap();
            writer.write_all(b"\n").await.unwrap();
        }
        writer.flush().await.unwrap();
        writer
    });
    // Nobody reads: the flood must stall well short of N (the reader stopped reading).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!flood.is_finished(), "the reader kept admitting requests");
    // Now read: every id comes back exactly once, and the flood completes.
    let mut reader = reader;
    let mut seen = HashSet::new();
    let mut line = String::new();
    while seen.len() < N {
        line.clear();
        let n = tokio::time::timeout(
            Duration::from_secs(30),
            tokio::io::AsyncBufReadExt::read_line(&mut reader, &mut line),
        )
        .await
        .expect("an answer went missing")
        .unwrap();
        assert!(n > 0, "EOF after {} answers", seen.len());
        let v: Value = serde_json::from_str(&line).unwrap();
        let id = v["id"].as_u64().unwrap() as usize;
        assert_eq!(v["result"], json!([id]));
        assert!(seen.insert(id), "id {id} answered twice");
    }
    let _writer = tokio::time::timeout(Duration::from_secs(10), flood)
        .await
        .expect("the flood never finished")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reader_admits_no_more_than_the_cap_while_answers_cannot_be_written() {
    let handler = TestHandler::new();
    let config = Config::default()
        .with_max_unanswered_requests(CAP)
        .with_outgoing_queue(QUEUE);
    let (_conn, raw) = RawPeer::connect_with_buffer(handler.clone(), config, 1024);
    let RawPeer { reader, mut writer } = raw;
    // Requests that block in their handler until told: none is answered, so none leaves.
    let flood = tokio::spawn(async move {
        for i in 0..10_000 {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"wait_cancel\"}}\n");
            if writer.write_all(line.as_bytes()).await.is_err() {
                return i;
            }
        }
        10_000
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!flood.is_finished(), "the reader kept admitting requests");
    let running = handler.running.load(Ordering::SeqCst);
    assert!(
        running <= CAP,
        "{running} handlers admitted past a cap of {CAP}"
    );
    drop(reader);
    flood.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_peers_whose_handlers_call_each_other_far_past_the_cap_do_not_deadlock() {
    let config = || {
        Config::default()
            .with_max_unanswered_requests(4)
            .with_max_concurrent_handlers(2)
            .with_outgoing_queue(4)
    };
    let (a, b) = pair(TestHandler::new(), config(), TestHandler::new(), config());
    let run = async {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..200 {
            for (from, _) in [(a.peer().clone(), 0), (b.peer().clone(), 1)] {
                set.spawn(async move {
                    // Each request makes the other side call us back before it answers.
                    let back: Value = from.request("call_peer", &json!({"i": i})).await?;
                    assert_eq!(back, json!({"i": i}));
                    Ok::<_, acp_rpc::Error>(())
                });
            }
        }
        while let Some(r) = set.join_next().await {
            r.unwrap().unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("deadlock between two capped peers");
}
