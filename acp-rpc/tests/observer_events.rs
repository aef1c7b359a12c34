//! The observer (`acp_rpc::observe`) sees every message both ways and every finished request
//! both ways, with sizes that add up to the bytes on the wire, latencies that cover the
//! handler's time, outcomes with the error code, and the session id on demand.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::observe::{MessageEvent, MessageKind, Observer, RequestEvent};
use acp_rpc::{Config, Direction, ErrorCode, RequestId};
use common::{RawPeer, TestHandler, pair};
use serde_json::{Value, json};

#[derive(Clone, Debug, PartialEq)]
struct Message {
    direction: Direction,
    kind: MessageKind,
    method: Option<String>,
    id: Option<RequestId>,
    size: usize,
    session: Option<String>,
}

#[derive(Clone, Debug)]
struct Finished {
    direction: Direction,
    method: String,
    id: RequestId,
    latency: Duration,
    outcome: Result<(), ErrorCode>,
}

#[derive(Default)]
struct Recorder {
    messages: Mutex<Vec<Message>>,
    requests: Mutex<Vec<Finished>>,
}

impl Observer for Recorder {
    fn message(&self, e: &MessageEvent<'_>) {
        self.messages.lock().unwrap().push(Message {
            direction: e.direction,
            kind: e.kind,
            method: e.method.map(str::to_owned),
            id: e.id.cloned(),
            size: e.size,
            session: e.session_id().map(str::to_owned),
        });
    }
    fn request(&self, e: &RequestEvent<'_>) {
        self.requests.lock().unwrap().push(Finished {
            direction: e.direction,
            method: e.method.to_owned(),
            id: e.id.clone(),
            latency: e.latency,
            outcome: e.outcome,
        });
    }
}

impl Recorder {
    fn count(&self, direction: Direction, kind: MessageKind) -> usize {
        let messages = self.messages.lock().unwrap();
        messages
            .iter()
            .filter(|m| m.direction == direction && m.kind == kind)
            .count()
    }
    fn bytes(&self, direction: Direction) -> usize {
        let messages = self.messages.lock().unwrap();
        messages
            .iter()
            .filter(|m| m.direction == direction)
            .map(|m| m.size)
            .sum()
    }
}

#[tokio::test]
async fn a_scripted_exchange_is_counted_both_ways_with_latencies_and_outcomes() {
    let (a_seen, b_seen) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let (a, b) = pair(
        TestHandler::new(),
        Config::default().with_observer(a_seen.clone()),
        TestHandler::new(),
        Config::default().with_observer(b_seen.clone()),
    );
    let sum: i64 = a
        .peer()
        .request("add", &json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(sum, 5);
    let failed = a.peer().request::<_, Value>("fail", &json!({})).await;
    assert_eq!(failed.unwrap_err().code, ErrorCode::RESOURCE_NOT_FOUND);
    for seq in 0..2 {
        let note = json!({"sessionId": "s-1", "seq": seq});
        a.peer().notify("note", &note).await.unwrap();
    }
    let slept: u64 = a.peer().request("sleep", &60).await.unwrap();
    assert_eq!(slept, 60);
    let back: Value = b
        .peer()
        .request("echo", &json!({"sessionId": "s-2"}))
        .await
        .unwrap();
    assert_eq!(back["sessionId"], "s-2");

    use Direction::{Incoming, Outgoing};
    use MessageKind::{Notification, Request, Response};
    assert_eq!(a_seen.count(Outgoing, Request), 3);
    assert_eq!(a_seen.count(Outgoing, Notification), 2);
    assert_eq!(a_seen.count(Incoming, Response), 3);
    assert_eq!(a_seen.count(Incoming, Request), 1);
    assert_eq!(a_seen.count(Outgoing, Response), 1);
    // What one side wrote, the other read: the sizes agree to the byte (b's last answer is
    // written before b's call returns, so it is counted by now).
    assert_eq!(a_seen.bytes(Outgoing), b_seen.bytes(Incoming));
    assert_eq!(b_seen.bytes(Outgoing), a_seen.bytes(Incoming));
    assert!(a_seen.bytes(Outgoing) > 0);

    let messages = a_seen.messages.lock().unwrap().clone();
    let notes: Vec<_> = messages
        .iter()
        .filter(|m| m.method.as_deref() == Some("note"))
        .collect();
    assert_eq!(notes.len(), 2);
    assert!(notes.iter().all(|m| m.session.as_deref() == Some("s-1")));
    let echo = messages
        .iter()
        .find(|m| m.method.as_deref() == Some("echo"))
        .unwrap();
    assert_eq!(echo.direction, Incoming);
    assert_eq!(echo.id, Some(RequestId::Int(1)));
    assert_eq!(echo.session.as_deref(), Some("s-2"));

    let requests = a_seen.requests.lock().unwrap().clone();
    let outcome = |direction: Direction, method: &str| {
        let r = requests
            .iter()
            .find(|r| r.direction == direction && r.method == method)
            .unwrap_or_else(|| panic!("no {method} in {requests:?}"));
        (r.outcome, r.latency, r.id.clone())
    };
    assert_eq!(outcome(Outgoing, "add").0, Ok(()));
    assert_eq!(outcome(Outgoing, "add").2, RequestId::Int(1));
    assert_eq!(
        outcome(Outgoing, "fail").0,
        Err(ErrorCode::RESOURCE_NOT_FOUND)
    );
    let (ok, latency, _) = outcome(Outgoing, "sleep");
    assert_eq!(ok, Ok(()));
    assert!(latency >= Duration::from_millis(60), "{latency:?}");
    assert_eq!(outcome(Incoming, "echo").0, Ok(()));
    assert_eq!(requests.len(), 4);
    // b handled what a sent: the same methods and outcomes, seen from the other side.
    let b_requests = b_seen.requests.lock().unwrap().clone();
    let handled: Vec<_> = b_requests
        .iter()
        .filter(|r| r.direction == Incoming)
        .map(|r| (r.method.as_str(), r.outcome))
        .collect();
    assert_eq!(
        handled,
        [
            ("add", Ok(())),
            ("fail", Err(ErrorCode::RESOURCE_NOT_FOUND)),
            ("sleep", Ok(()))
        ]
    );
    let b_sleep = b_requests.iter().find(|r| r.method == "sleep").unwrap();
    assert!(b_sleep.latency >= Duration::from_millis(60));
}

#[tokio::test]
async fn bad_input_is_seen_as_invalid_and_its_error_answer_as_a_response() {
    let seen = Arc::new(Recorder::default());
    let (conn, mut raw) = RawPeer::connect(
        TestHandler::new(),
        Config::default().with_observer(seen.clone()),
    );
    raw.send(b"{not json\n").await;
    let reply = raw.json().await;
    assert_eq!(reply["error"]["code"], -32700);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"nope\"}\n")
        .await;
    let reply = raw.json().await;
    assert_eq!(reply["error"]["code"], -32601);
    let messages = seen.messages.lock().unwrap().clone();
    let invalid = messages
        .iter()
        .find(|m| m.kind == MessageKind::Invalid)
        .unwrap();
    assert_eq!(invalid.size, "{not json".len());
    assert_eq!(seen.count(Direction::Outgoing, MessageKind::Response), 2);
    let requests = seen.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].outcome, Err(ErrorCode::METHOD_NOT_FOUND));
    assert_eq!(requests[0].id, RequestId::Str("x".into()));
    conn.close();
}

/// A panicking observer is logged and the connection keeps serving.
#[tokio::test]
async fn a_panicking_observer_does_not_break_the_connection() {
    struct Boom;
    impl Observer for Boom {
        fn message(&self, _: &MessageEvent<'_>) {
            panic!("observer bug");
        }
        fn request(&self, _: &RequestEvent<'_>) {
            panic!("observer bug");
        }
    }
    let (a, _b) = pair(
        TestHandler::new(),
        Config::default().with_observer(Arc::new(Boom)),
        TestHandler::new(),
        Config::default().with_observer(Arc::new(Boom)),
    );
    for _ in 0..3 {
        let sum: i64 = a
            .peer()
            .request("add", &json!({"a": 1, "b": 1}))
            .await
            .unwrap();
        assert_eq!(sum, 2);
    }
}
