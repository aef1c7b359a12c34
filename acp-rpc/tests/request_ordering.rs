//! How request handlers are ordered: concurrently by default, one at a time in arrival order
//! with `Config::sequential_requests`, and after earlier notifications with
//! `RequestContext::notifications_handled`.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use acp_rpc::Config;
use common::{RawPeer, TestHandler};
use serde_json::Value;

async fn answers_in_arrival_order(raw: &mut RawPeer, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let answer: Value = raw.json().await;
        ids.push(answer["id"].as_i64().unwrap());
    }
    ids
}

const SLOW_THEN_FAST: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sleep\",\"params\":150}\n\
{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"sleep\",\"params\":\"not a number\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sleep\",\"params\":40}\n\
{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"echo\",\"params\":4}\n";

#[tokio::test]
async fn by_default_requests_run_concurrently_and_fast_ones_answer_first() {
    let handler = TestHandler::new();
    let (_conn, mut raw) = RawPeer::connect(handler.clone(), Config::default());
    raw.send(SLOW_THEN_FAST).await;
    let order = answers_in_arrival_order(&mut raw, 4).await;
    assert_eq!(
        order.last(),
        Some(&1),
        "the slow request answers last: {order:?}"
    );
    assert!(handler.max_running.load(Ordering::SeqCst) > 1);
}

#[tokio::test]
async fn sequential_requests_are_handled_one_at_a_time_in_arrival_order() {
    let handler = TestHandler::new();
    let config = Config::default().with_sequential_requests(true);
    let (_conn, mut raw) = RawPeer::connect(handler.clone(), config);
    raw.send(SLOW_THEN_FAST).await;
    // The request with bad params fails without holding up the ones behind it.
    assert_eq!(answers_in_arrival_order(&mut raw, 4).await, [1, 2, 3, 4]);
    assert_eq!(handler.max_running.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cancelled_sequential_request_releases_the_next_one() {
    let (handler, mut cancelled) = TestHandler::with_cancel_channel();
    let config = Config::default().with_sequential_requests(true);
    let (_conn, mut raw) = RawPeer::connect(handler, config);
    raw.send(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait_cancel\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":2}\n",
    )
    .await;
    // Request 2 waits behind request 1, which waits forever until cancelled.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), raw.line())
            .await
            .is_err(),
        "nothing is answered while the first request runs"
    );
    raw.send(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1}}\n",
    )
    .await;
    assert_eq!(cancelled.recv().await.as_deref(), Some("1"));
    let mut answers = [raw.json().await, raw.json().await];
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers[0]["error"]["code"], -32800);
    assert_eq!(answers[1]["result"], 2);
}

#[tokio::test]
async fn a_request_can_wait_for_the_notifications_sent_before_it() {
    let handler = Arc::new(TestHandler {
        // The note with seq 0 takes a while to handle.
        note_delay: Some(Duration::from_millis(150)),
        ..Default::default()
    });
    let (_conn, mut raw) = RawPeer::connect(handler, Config::default());
    raw.send(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"seq\":0}}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"seq\":1}}\n\
{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notes_seen\"}\n",
    )
    .await;
    let answer = raw.json().await;
    assert_eq!(answer["result"], 2, "{answer}");
}

#[tokio::test]
async fn received_requests_handled_waits_for_requests_that_arrived_before_a_response() {
    let handler = TestHandler::new();
    let config = Config::default().with_sequential_requests(true);
    let (conn, mut raw) = RawPeer::connect(handler.clone(), config);
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move {
        let answer: Value = peer.request("turn", &serde_json::json!({})).await.unwrap();
        peer.received_requests_handled().await;
        answer
    });
    let turn: Value = raw.json().await;
    assert_eq!(turn["method"], "turn");
    // Like a legacy agent: two slow requests sent without waiting, then the turn's answer.
    raw.send(
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sleep\",\"params\":120}}\n\
{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"sleep\",\"params\":60}}\n\
{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":\"over\"}}\n",
            turn["id"]
        )
        .as_bytes(),
    )
    .await;
    let answer = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the barrier resolves")
        .unwrap();
    assert_eq!(answer, "over");
    // Both requests were answered before the barrier let the caller go on.
    assert_eq!(answers_in_arrival_order(&mut raw, 2).await, [1, 2]);
    assert_eq!(handler.running.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn received_requests_handled_returns_at_once_when_nothing_runs_and_when_closed() {
    let (handler, _cancelled) = TestHandler::with_cancel_channel();
    let (conn, mut raw) = RawPeer::connect(handler, Config::default());
    tokio::time::timeout(
        Duration::from_secs(1),
        conn.peer().received_requests_handled(),
    )
    .await
    .expect("nothing to wait for");
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait_cancel\"}\n")
        .await;
    // Wait until the request is being handled, then close: the barrier must not hang.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let peer = conn.peer().clone();
    let waiting = tokio::spawn(async move { peer.received_requests_handled().await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "a running request holds the barrier"
    );
    conn.close();
    tokio::time::timeout(Duration::from_secs(1), waiting)
        .await
        .expect("closing the connection releases the barrier")
        .unwrap();
}
