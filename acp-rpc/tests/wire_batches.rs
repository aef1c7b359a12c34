//! JSON-RPC 2.0 batches over a real connection: answered as the specification says when
//! the framing turns them on (draft v2's), refused with one `-32600` when it does not (v1's,
//! as the official SDKs do); each element's own error in place; the connection serving on.

mod common;

use acp_rpc::{Config, Framing};
use common::{RawPeer, TestHandler};
use serde_json::{Value, json};

fn batches(max: usize) -> Config {
    Config::default().with_framing(Framing::default().answer_batches(max))
}

fn err(id: Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The elements of an answer array, sorted by their ids' text (the array's order is free).
fn sorted(answer: Value) -> Vec<Value> {
    let mut items = answer
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {answer}"))
        .clone();
    items.sort_by_key(|v| v["id"].to_string());
    items
}

#[tokio::test]
async fn without_batches_on_a_batch_is_refused_whole_as_the_official_sdks_do() {
    let handler = TestHandler::new();
    let (_conn, mut raw) = RawPeer::connect(handler.clone(), Config::default());
    raw.send(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":1},{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{}}]\n")
        .await;
    assert_eq!(
        raw.json().await,
        err(Value::Null, -32600, "batches are not supported")
    );
    assert!(raw.until_probe(1).await.is_empty());
    assert!(handler.notes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_mixed_batch_is_answered_with_one_array_of_its_requests_answers() {
    let handler = TestHandler::new();
    let (_conn, mut raw) = RawPeer::connect(handler.clone(), batches(16));
    raw.send(
        concat!(
            r#"[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},"#,
            r#"{"jsonrpc":"2.0","method":"note","params":{"seq":1}},"#,
            r#"{"jsonrpc":"2.0","id":"two","method":"add","params":{"a":1,"b":2}},"#,
            r#"{"foo":"boo"},"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"nope"},"#,
            r#"{"jsonrpc":"1.0","id":4,"method":"echo"}]"#,
            "\n"
        )
        .as_bytes(),
    )
    .await;
    let answer = raw.json().await;
    assert_eq!(
        sorted(answer),
        vec![
            json!({"jsonrpc": "2.0", "id": "two", "result": 3}),
            json!({"jsonrpc": "2.0", "id": 1, "result": [1]}),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "method not found: nope", "data": {"method": "nope"}}}),
            err(json!(4), -32600, "unsupported jsonrpc version \"1.0\""),
            err(Value::Null, -32600, "missing \"jsonrpc\": \"2.0\""),
        ]
    );
    assert!(raw.until_probe(1).await.is_empty(), "nothing more");
    assert_eq!(*handler.notes.lock().unwrap(), vec![json!({"seq": 1})]);
}

#[tokio::test]
async fn a_batch_of_notifications_only_is_answered_with_nothing() {
    let handler = TestHandler::new();
    let (_conn, mut raw) = RawPeer::connect(handler.clone(), batches(16));
    raw.send(
        b"[{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"seq\":1}},{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"seq\":2}},{\"jsonrpc\":\"2.0\",\"method\":\"unknown\"}]\n",
    )
    .await;
    assert!(
        raw.until_probe(1).await.is_empty(),
        "no empty array, nothing"
    );
    assert_eq!(
        *handler.notes.lock().unwrap(),
        vec![json!({"seq": 1}), json!({"seq": 2})],
        "handled in array order"
    );
}

#[tokio::test]
async fn an_empty_broken_or_too_long_batch_gets_one_error_and_none_of_it_is_handled() {
    let handler = TestHandler::new();
    let (_conn, mut raw) = RawPeer::connect(handler.clone(), batches(4));
    raw.send(b"[]\n").await;
    assert_eq!(raw.json().await, err(Value::Null, -32600, "empty batch"));
    raw.send(b" [ {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"},\n")
        .await;
    let parse = raw.json().await;
    assert_eq!(parse["id"], Value::Null);
    assert_eq!(parse["error"]["code"], -32700);
    let note = r#"{"jsonrpc":"2.0","method":"note","params":{"seq":0}}"#;
    let five = format!("[{}]\n", [note; 5].join(","));
    raw.send(five.as_bytes()).await;
    assert_eq!(
        raw.json().await,
        err(
            Value::Null,
            -32600,
            "batch of 5 messages exceeds the maximum of 4"
        )
    );
    assert!(raw.until_probe(1).await.is_empty());
    assert!(
        handler.notes.lock().unwrap().is_empty(),
        "nothing of a refused batch is handled"
    );
    // At the bound it is answered.
    let four = format!("[{}]\n", [note; 4].join(","));
    raw.send(four.as_bytes()).await;
    assert!(raw.until_probe(2).await.is_empty());
    assert_eq!(handler.notes.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn a_batch_of_garbage_elements_gets_each_elements_own_error() {
    let handler = TestHandler::new();
    let (_conn, mut raw) = RawPeer::connect(handler, batches(16));
    raw.send(b"[1,\"x\",null,true,{},[],[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"echo\"}],{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"echo\"},{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"echo\"}]\n")
        .await;
    let answer = raw.json().await;
    let items = answer.as_array().expect("an array");
    assert_eq!(items.len(), 9, "one error per element: {answer}");
    for item in items {
        assert_eq!(item["id"], Value::Null, "{item}");
        assert_eq!(item["error"]["code"], -32600, "{item}");
    }
    let messages: Vec<&str> = items
        .iter()
        .map(|v| v["error"]["message"].as_str().unwrap())
        .collect();
    assert!(messages.contains(&"a batch element must be one message"));
    assert!(messages.contains(&"request id must not be null"));
    assert!(raw.until_probe(1).await.is_empty());
}

#[tokio::test]
async fn the_array_leaves_once_the_slowest_request_of_the_batch_is_answered() {
    let handler = TestHandler::new();
    let (_conn, mut raw) = RawPeer::connect(handler, batches(16));
    raw.send(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sleep\",\"params\":300},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":2}]\n")
        .await;
    // A lone request sent after the batch is answered first: the batch waits for its sleep.
    let before = raw.until_probe(1).await;
    assert!(
        before.is_empty(),
        "the batch is not answered piecemeal: {before:?}"
    );
    assert_eq!(
        sorted(raw.json().await),
        vec![
            json!({"jsonrpc": "2.0", "id": 1, "result": 300}),
            json!({"jsonrpc": "2.0", "id": 2, "result": 2}),
        ]
    );
}

#[tokio::test]
async fn a_request_of_a_batch_can_be_cancelled_and_a_duplicate_id_in_it_is_refused() {
    let (handler, mut cancelled) = TestHandler::with_cancel_channel();
    let (_conn, mut raw) = RawPeer::connect(handler, batches(16));
    raw.send(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait_cancel\"},{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":1},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":2}]\n")
        .await;
    raw.send(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1}}\n",
    )
    .await;
    assert_eq!(cancelled.recv().await.as_deref(), Some("1"));
    let answer = raw.json().await;
    let items = answer.as_array().expect("an array");
    assert_eq!(items.len(), 3, "{answer}");
    let codes: Vec<Value> = items.iter().map(|v| v["error"]["code"].clone()).collect();
    assert!(
        codes.contains(&json!(-32800)),
        "the cancelled one: {answer}"
    );
    assert!(
        items.contains(&err(json!(1), -32600, "request id 1 is already in flight")),
        "{answer}"
    );
    assert!(items.contains(&json!({"jsonrpc": "2.0", "id": 2, "result": 2})));
    assert!(raw.until_probe(1).await.is_empty());
}

#[tokio::test]
async fn a_response_in_a_batch_reaches_its_caller_and_is_not_answered() {
    let handler = TestHandler::new();
    let (conn, mut raw) = RawPeer::connect(handler, batches(16));
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("ask", &json!({})).await });
    let request = raw.json().await;
    assert_eq!(request["method"], "ask");
    let batch = format!(
        "[{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":\"yes\"}}]\n",
        request["id"]
    );
    raw.send(batch.as_bytes()).await;
    assert_eq!(call.await.unwrap().unwrap(), json!("yes"));
    assert!(raw.until_probe(1).await.is_empty());
}
