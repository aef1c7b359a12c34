//! Responses written the usual way (`{"jsonrpc":"2.0","id":N,"result":...}`) are decoded by
//! their caller straight from the line, without the envelope pass. Everything the ordinary
//! path guarantees still holds: malformed JSON is a parse error (`-32700`), a line that also
//! carries an error is refused and the caller told, a result of the wrong shape reaches the
//! caller as `-32603`, and every caller gets exactly one outcome.

mod common;

use std::time::Duration;

use acp_rpc::{CallOptions, Config, ErrorCode};
use common::{RawPeer, TestHandler};
use serde_json::{Value, json};

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Content {
    content: String,
}

#[tokio::test]
async fn a_plain_response_reaches_its_caller_typed_and_raw() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let typed = tokio::spawn(async move { peer.request::<_, Content>("read", &json!({})).await });
    assert_eq!(raw.json().await["id"], 1);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":\"a\\nb\"}}  \n")
        .await;
    assert_eq!(
        typed.await.unwrap().unwrap(),
        Content {
            content: "a\nb".into()
        }
    );
    let peer = conn.peer().clone();
    let copied = tokio::spawn(async move {
        peer.request_raw("read", &json!({}), CallOptions::default())
            .await
    });
    assert_eq!(raw.json().await["id"], 2);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":[1, {\"x\":null}]}\n")
        .await;
    assert_eq!(copied.await.unwrap().unwrap().get(), r#"[1, {"x":null}]"#);
    assert_eq!(conn.peer().pending_requests(), 0);
}

#[tokio::test]
async fn malformed_json_in_the_usual_shape_is_a_parse_error_and_the_caller_keeps_waiting() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("read", &json!({})).await });
    assert_eq!(raw.json().await["id"], 1);
    // Unbalanced, and then a trailing brace too many: neither line is a response.
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}\n")
        .await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}}\n")
        .await;
    for _ in 0..2 {
        let reply = raw.json().await;
        assert_eq!(reply["error"]["code"], -32700, "{reply}");
        assert_eq!(reply["id"], Value::Null);
    }
    assert_eq!(conn.peer().pending_requests(), 1);
    // The real answer still gets through, once.
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":2}}\n")
        .await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"a": 2}));
    assert_eq!(conn.peer().pending_requests(), 0);
}

#[tokio::test]
async fn a_result_followed_by_an_error_is_refused_and_the_caller_told() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("read", &json!({})).await });
    assert_eq!(raw.json().await["id"], 1);
    raw.send(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1,\"message\":\"x\"}}\n",
    )
    .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(raw.json().await["error"]["code"], -32600);
}

#[tokio::test]
async fn a_result_of_the_wrong_shape_is_an_internal_error_for_the_caller() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Content>("read", &json!({})).await });
    assert_eq!(raw.json().await["id"], 1);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":3}}\n")
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
    assert!(
        err.message.contains("did not deserialize"),
        "{}",
        err.message
    );
    // Nothing was sent back: the line was a well-formed response.
    assert!(raw.until_probe(0).await.is_empty());
}

#[tokio::test]
async fn a_response_for_a_caller_that_gave_up_is_dropped_quietly() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let options = CallOptions::default()
        .timeout(Duration::from_millis(20))
        .cancel_on_drop(false);
    let err = conn
        .peer()
        .request_with::<_, Value>("read", &json!({}), options)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::REQUEST_TIMED_OUT);
    assert_eq!(raw.json().await["id"], 1);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
        .await;
    assert!(raw.until_probe(0).await.is_empty());
    assert_eq!(conn.peer().pending_requests(), 0);
}
