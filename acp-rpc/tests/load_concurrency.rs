//! Load and concurrency: 10,000 concurrent requests each way, the ordering guarantee under
//! load, mutually calling handlers without deadlock, and the handler concurrency cap.

mod common;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::observe::SharedObserver;
use acp_rpc::{Config, Direction, Peer, TapEvent};
use common::{TestHandler, pair};
use serde_json::{Value, json};
use tokio::task::JoinSet;

/// A tap recording the id of every response written, to prove "exactly once".
fn response_tap() -> (SharedObserver, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let tap = acp_rpc::tap::on_line(move |e: TapEvent<'_>| {
        if let TapEvent::Line(Direction::Outgoing, line) = e {
            let v: Value = serde_json::from_slice(line).unwrap();
            if v.get("method").is_none() {
                s.lock().unwrap().push(v["id"].clone());
            }
        }
    });
    (tap, seen)
}

fn flood(peer: Peer, n: usize, tag: &'static str) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for i in 0..n {
        let peer = peer.clone();
        set.spawn(async move {
            let params = json!({"tag": tag, "i": i});
            let got: Value = peer.request("echo", &params).await.unwrap();
            assert_eq!(got, params);
        });
    }
    set
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_requests_each_way_are_each_answered_once_with_the_right_result() {
    const N: usize = 10_000;
    let (tap_a, responses_a) = response_tap();
    let (tap_b, responses_b) = response_tap();
    let (a, b) = pair(
        TestHandler::new(),
        Config::default().with_observer(tap_a),
        TestHandler::new(),
        Config::default().with_observer(tap_b),
    );
    let mut from_a = flood(a.peer().clone(), N, "a");
    let mut from_b = flood(b.peer().clone(), N, "b");
    let mut done = 0;
    while let Some(r) = from_a.join_next().await {
        r.unwrap();
        done += 1;
    }
    while let Some(r) = from_b.join_next().await {
        r.unwrap();
        done += 1;
    }
    assert_eq!(done, 2 * N);
    for responses in [responses_a, responses_b] {
        let responses = responses.lock().unwrap();
        assert_eq!(responses.len(), N, "exactly one response per request");
        let unique: HashSet<i64> = responses.iter().map(|v| v.as_i64().unwrap()).collect();
        assert_eq!(unique.len(), N);
    }
    assert_eq!(a.peer().pending_requests(), 0);
    assert_eq!(b.peer().pending_requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_wait_for_every_notification_that_arrived_before_them_under_load() {
    const PROMPTS: usize = 64;
    const UPDATES: u64 = 40;
    let client = Arc::new(TestHandler {
        note_delay: Some(Duration::from_micros(300)),
        ..Default::default()
    });
    let (a, _b) = pair(
        client.clone(),
        Config::default(),
        TestHandler::new(),
        Config::default(),
    );
    let mut set = JoinSet::new();
    for p in 0..PROMPTS {
        let peer = a.peer().clone();
        let client = client.clone();
        set.spawn(async move {
            let n: u64 = peer
                .request("stream", &json!({"n": UPDATES, "tag": p}))
                .await
                .unwrap();
            assert_eq!(n, UPDATES);
            // Every update of this prompt was handled before its result came back, in order.
            let notes = client.notes.lock().unwrap();
            let seqs: Vec<u64> = notes
                .iter()
                .filter(|v| v["tag"] == json!(p))
                .map(|v| v["seq"].as_u64().unwrap())
                .collect();
            assert_eq!(seqs, (0..UPDATES).collect::<Vec<_>>(), "prompt {p}");
        });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
    assert_eq!(
        client.notes.lock().unwrap().len(),
        PROMPTS * UPDATES as usize
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_that_await_requests_to_each_other_do_not_deadlock_even_with_a_tiny_cap() {
    const N: usize = 500;
    let config = Config::default().with_max_concurrent_handlers(2);
    let (a, b) = pair(
        TestHandler::new(),
        config.clone(),
        TestHandler::new(),
        config,
    );
    let mut set = JoinSet::new();
    for i in 0..N {
        for (peer, side) in [(a.peer().clone(), "a"), (b.peer().clone(), "b")] {
            set.spawn(async move {
                let params = json!({"from": side, "i": i});
                let got: Value = peer.request("call_peer", &params).await.unwrap();
                assert_eq!(got, params);
            });
        }
    }
    let all = async {
        while let Some(r) = set.join_next().await {
            r.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), all)
        .await
        .expect("deadlock: mutual requests did not complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_handlers_never_exceed_the_configured_cap_and_the_rest_queue() {
    let server = TestHandler::new();
    let (a, _b) = pair(
        TestHandler::new(),
        Config::default(),
        server.clone(),
        Config::default().with_max_concurrent_handlers(4),
    );
    let mut set = JoinSet::new();
    for _ in 0..40 {
        let peer = a.peer().clone();
        set.spawn(async move {
            let ms: u64 = peer.request("sleep", &10).await.unwrap();
            assert_eq!(ms, 10);
        });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
    assert_eq!(server.max_running.load(Ordering::SeqCst), 4);
}
