//! Cancellation in both directions: dropping an outgoing call, timeouts, incoming
//! `$/cancel_request`, and cancelling finished requests.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::observe::SharedObserver;
use acp_rpc::{CallOptions, Config, Direction, ErrorCode, TapEvent};
use common::{RawPeer, TestHandler, pair};
use serde_json::{Value, json};

type Lines = Arc<Mutex<Vec<(Direction, Value)>>>;

fn line_tap() -> (SharedObserver, Lines) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let tap = acp_rpc::tap::on_line(move |e: TapEvent<'_>| {
        if let TapEvent::Line(dir, line) = e {
            l.lock()
                .unwrap()
                .push((dir, serde_json::from_slice(line).unwrap()));
        }
    });
    (tap, lines)
}

#[tokio::test]
async fn dropping_an_outgoing_request_cancels_the_peer_handler_which_answers_minus_32800() {
    let (tap, lines) = line_tap();
    let (server, mut cancelled) = TestHandler::with_cancel_channel();
    let (a, _b) = pair(
        TestHandler::new(),
        Config::default().with_observer(tap),
        server,
        Config::default(),
    );
    let params = json!({});
    let call = a.peer().request::<_, Value>("wait_cancel", &params);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), call)
            .await
            .is_err()
    );
    let id = tokio::time::timeout(Duration::from_secs(5), cancelled.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(id, "1");
    // The cancel went out, and the peer answered the cancelled request with -32800.
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let done = lines.lock().unwrap().iter().any(|(d, v)| {
                *d == Direction::Incoming && v["id"] == 1 && v["error"]["code"] == -32800
            });
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let expected =
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}});
    let lines = lines.lock().unwrap();
    assert!(
        lines
            .iter()
            .any(|(d, v)| *d == Direction::Outgoing && *v == expected)
    );
    assert_eq!(a.peer().pending_requests(), 0);
}

#[tokio::test]
async fn incoming_cancel_request_drops_the_handler_and_answers_minus_32800_with_the_same_id() {
    let (server, mut cancelled) = TestHandler::with_cancel_channel();
    let (_conn, mut raw) = RawPeer::connect(server, Config::default());
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"method\":\"wait_cancel\"}\n")
        .await;
    // Once a later request has been answered, the handler is running.
    assert!(raw.until_probe(0).await.is_empty());
    raw.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"req-1\"}}\n")
        .await;
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":"req-1","error":{"code":-32800,"message":"request cancelled"}}"#
    );
    let id = tokio::time::timeout(Duration::from_secs(5), cancelled.recv()).await;
    assert_eq!(id.unwrap().unwrap(), "\"req-1\"");
    assert!(raw.until_probe(1).await.is_empty());
}

/// A peer that withdraws a request, sends another and hangs up once that one is answered
/// (an editor moving on) must still get the `-32800`: the withdrawn request is answered
/// before anything read after the withdrawal, even a request answered at once in the
/// reader itself.
#[tokio::test]
async fn a_withdrawn_request_is_answered_before_any_request_read_after_the_withdrawal() {
    for round in 0..50 {
        let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
        raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait_cancel\"}\n")
            .await;
        assert!(raw.until_probe(0).await.is_empty());
        // The withdrawal and the next request in one write: the reader sees them together.
        raw.send(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":2}\n",
        )
        .await;
        assert_eq!(
            raw.json().await,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "request cancelled"}}),
            "round {round}: the withdrawn request was not answered first"
        );
        assert_eq!(
            raw.json().await,
            json!({"jsonrpc": "2.0", "id": 2, "result": 2})
        );
    }
}

/// Withdrawing a request twice answers it once.
#[tokio::test]
async fn a_request_withdrawn_twice_is_answered_once() {
    let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait_cancel\"}\n")
        .await;
    assert!(raw.until_probe(0).await.is_empty());
    let cancel =
        b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1}}\n";
    raw.send(&[&cancel[..], &cancel[..]].concat()).await;
    assert_eq!(raw.json().await["error"]["code"], -32800);
    assert!(raw.until_probe(1).await.is_empty());
}

#[tokio::test]
async fn cancelling_an_already_finished_request_is_a_no_op() {
    let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\",\"params\":1}\n")
        .await;
    assert_eq!(
        raw.json().await,
        json!({"jsonrpc": "2.0", "id": 3, "result": 1})
    );
    raw.send(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":3}}\n",
    )
    .await;
    assert!(raw.until_probe(1).await.is_empty());
}

#[tokio::test]
async fn a_request_cancelled_while_queued_for_a_slot_is_answered_minus_32800() {
    let config = Config::default().with_max_concurrent_handlers(1);
    let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), config);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sleep\",\"params\":200}\n")
        .await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":2}\n")
        .await;
    raw.send(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":2}}\n",
    )
    .await;
    assert_eq!(
        raw.json().await,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "request cancelled"}})
    );
    assert_eq!(
        raw.json().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": 200})
    );
}

#[tokio::test]
async fn cancel_on_drop_can_be_turned_off_per_call() {
    let (tap, lines) = line_tap();
    let (a, _b) = pair(
        TestHandler::new(),
        Config::default().with_observer(tap),
        TestHandler::new(),
        Config::default(),
    );
    let call = a.peer().request_with::<_, Value>(
        "sleep",
        &30,
        CallOptions::default().cancel_on_drop(false),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(5), call)
            .await
            .is_err()
    );
    // The handler runs to completion; its response arrives for an abandoned id.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let lines = lines.lock().unwrap();
    assert!(!lines.iter().any(|(_, v)| v["method"] == "$/cancel_request"));
    assert!(
        lines
            .iter()
            .any(|(d, v)| *d == Direction::Incoming && v["result"] == 30)
    );
}

#[tokio::test]
async fn a_timed_out_call_fails_with_the_timeout_code_and_cancels_the_peer_handler() {
    let (server, mut cancelled) = TestHandler::with_cancel_channel();
    let (a, _b) = pair(
        TestHandler::new(),
        Config::default().with_default_timeout(Some(Duration::from_secs(30))),
        server,
        Config::default(),
    );
    let e = a
        .peer()
        .request_with::<_, Value>(
            "wait_cancel",
            &json!({}),
            CallOptions::default().timeout(Duration::from_millis(20)),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::REQUEST_TIMED_OUT);
    let id = tokio::time::timeout(Duration::from_secs(5), cancelled.recv()).await;
    assert_eq!(id.unwrap().unwrap(), "1");
}
