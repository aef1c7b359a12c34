use std::time::Duration;

use acp_types::{RequestMethod, Side};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

use crate::write::outgoing::raw::tests::Nothing;
use crate::{CallOptions, Config, Connection, Error, ErrorCode};

/// `echo`: a request whose answer is a number.
#[derive(Serialize, Deserialize)]
struct Echo(u32);

impl RequestMethod for Echo {
    const METHOD: &'static str = "echo";
    const SERVED_BY: Side = Side::Agent;
    const PARAMS_NULL_AS_DEFAULT: bool = false;
    const RESULT_NULL_AS_DEFAULT: bool = false;
    type Response = u32;
}

/// Our engine on one end of a byte pipe, the test's hand on the other.
fn connected() -> (
    Connection,
    Lines<BufReader<ReadHalf<DuplexStream>>>,
    WriteHalf<DuplexStream>,
) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let conn = Connection::new(read, write, Nothing, Config::default());
    let (their_read, their_write) = tokio::io::split(theirs);
    (conn, BufReader::new(their_read).lines(), their_write)
}

async fn next_json(lines: &mut Lines<BufReader<ReadHalf<DuplexStream>>>) -> Value {
    let line = lines.next_line().await.unwrap().expect("a line");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn requests_sent_ahead_leave_in_order_and_each_gets_its_own_answer() {
    let (conn, mut lines, mut answers) = connected();
    let mut pending = Vec::new();
    for n in 0..4 {
        pending.push(conn.peer().send_typed_request(&Echo(n)).await.unwrap());
    }
    // All four are on the wire before any answer: nobody waited a round trip.
    let mut ids = Vec::new();
    for n in 0..4 {
        let request = next_json(&mut lines).await;
        assert_eq!(request["method"], "echo");
        assert_eq!(request["params"], n);
        ids.push(request["id"].clone());
    }
    assert_eq!(conn.peer().pending_requests(), 4);
    // Answered out of order: a number, an error, a result of the wrong type, a number.
    let replies = [
        serde_json::json!({"jsonrpc": "2.0", "id": ids[3], "result": 30}),
        serde_json::json!({"jsonrpc": "2.0", "id": ids[1], "error": {"code": -32000, "message": "no"}}),
        serde_json::json!({"jsonrpc": "2.0", "id": ids[2], "result": "twenty"}),
        serde_json::json!({"jsonrpc": "2.0", "id": ids[0], "result": 0}),
    ];
    for reply in replies {
        answers
            .write_all(format!("{reply}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut results = Vec::new();
    for p in pending {
        results.push(p.await);
    }
    assert_eq!(results[0].as_ref().ok(), Some(&0));
    assert_eq!(results[1].as_ref().unwrap_err().code, ErrorCode(-32000));
    let wrong = results[2].as_ref().unwrap_err();
    assert_eq!(wrong.code, ErrorCode::INTERNAL_ERROR);
    assert!(
        wrong
            .message
            .contains("response to echo did not deserialize"),
        "{wrong:?}"
    );
    assert_eq!(results[3].as_ref().ok(), Some(&30));
    assert_eq!(conn.peer().pending_requests(), 0);
}

#[tokio::test]
async fn dropping_a_pending_response_cancels_the_call() {
    let (conn, mut lines, _answers) = connected();
    let pending = conn.peer().send_typed_request(&Echo(7)).await.unwrap();
    let request = next_json(&mut lines).await;
    drop(pending);
    let cancel = next_json(&mut lines).await;
    assert_eq!(cancel["method"], crate::CANCEL_METHOD);
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    assert_eq!(conn.peer().pending_requests(), 0);
}

#[tokio::test]
async fn the_timeout_counts_from_when_the_request_was_sent() {
    let (conn, mut lines, _answers) = connected();
    let options = CallOptions::default().timeout(Duration::from_millis(100));
    let pending = conn
        .peer()
        .send_typed_request_with(&Echo(1), options)
        .await
        .unwrap();
    next_json(&mut lines).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let awaited_at = std::time::Instant::now();
    let error = pending.await.unwrap_err();
    assert_eq!(
        error.code,
        Error::timed_out(Duration::from_millis(100)).code
    );
    // Counted from the await, it would have taken the whole 100 ms more.
    assert!(
        awaited_at.elapsed() < Duration::from_millis(100),
        "the deadline had passed while nobody awaited the answer: {:?}",
        awaited_at.elapsed()
    );
}

#[tokio::test]
async fn a_request_that_cannot_be_sent_fails_at_once() {
    let (conn, _lines, _answers) = connected();
    conn.close();
    let refused = conn.peer().send_typed_request(&Echo(1)).await.unwrap_err();
    assert_eq!(
        refused.code,
        Error::connection_closed(&crate::CloseReason::Local).code
    );
}
