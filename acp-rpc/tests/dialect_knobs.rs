//! Framing knobs, id spaces per direction, the wire tap and typed helpers.

mod common;

use acp_rpc::{Config, Direction, ErrorCode, Framing};
use common::{RawPeer, TestHandler, legacy_0_0_9, threads};
use serde_json::{Value, json};

#[tokio::test]
async fn messages_without_jsonrpc_are_accepted_and_replies_can_omit_it() {
    let dialect = Framing::default()
        .accept_missing_jsonrpc(true)
        .emit_jsonrpc(false);
    let (_conn, mut raw) =
        RawPeer::connect(TestHandler::new(), Config::default().with_framing(dialect));
    raw.send(b"{\"id\":1,\"method\":\"echo\",\"params\":[1]}\n")
        .await;
    assert_eq!(raw.line().await.unwrap(), r#"{"id":1,"result":[1]}"#);
    // A present but wrong version is still rejected, its id echoed.
    raw.send(b"{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"echo\"}\n")
        .await;
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"id":2,"error":{"code":-32600,"message":"unsupported jsonrpc version \"1.0\""}}"#
    );
}

#[tokio::test]
async fn null_params_can_be_omitted_on_output() {
    let dialect = Framing::default().omit_null_params(true);
    let (conn, mut raw) =
        RawPeer::connect(TestHandler::new(), Config::default().with_framing(dialect));
    conn.peer().notify("a", &()).await.unwrap();
    conn.peer().notify("b", &Option::<u8>::None).await.unwrap();
    conn.peer().notify("c", &json!({})).await.unwrap();
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","method":"a"}"#
    );
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","method":"b"}"#
    );
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","method":"c","params":{}}"#
    );
}

#[tokio::test]
async fn without_notifications_notify_sends_a_request_and_ignores_its_response() {
    let dialect = Framing::default().notifications(false);
    let (conn, mut raw) =
        RawPeer::connect(TestHandler::new(), Config::default().with_framing(dialect));
    conn.peer().notify("log", &"hi").await.unwrap();
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":1,"method":"log","params":"hi"}"#
    );
    assert_eq!(conn.peer().pending_requests(), 1);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n")
        .await;
    assert!(raw.until_probe(0).await.is_empty());
    assert_eq!(conn.peer().pending_requests(), 0);
}

#[tokio::test]
async fn the_same_id_in_both_directions_is_two_different_requests() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let ours = tokio::spawn(async move { peer.request::<_, Value>("theirs", &"q").await });
    assert_eq!(
        raw.json().await,
        json!({"jsonrpc": "2.0", "id": 1, "method": "theirs", "params": "q"})
    );
    // The peer sends its own request with id 1 before answering ours.
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":\"mine\"}\n")
        .await;
    assert_eq!(
        raw.json().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": "mine"})
    );
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"yours\"}\n")
        .await;
    assert_eq!(ours.await.unwrap().unwrap(), json!("yours"));
}

#[tokio::test]
async fn the_wire_tap_sees_every_line_in_both_directions() {
    let (tap, mut lines) = acp_rpc::tap::channel();
    let (_conn, mut raw) =
        RawPeer::connect(TestHandler::new(), Config::default().with_observer(tap));
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":1}\r\n")
        .await;
    raw.line().await.unwrap();
    let (d, l) = lines.recv().await.unwrap();
    assert_eq!(d, Direction::Incoming);
    assert_eq!(
        &l[..],
        br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":1}"#
    );
    let (d, l) = lines.recv().await.unwrap();
    assert_eq!(d, Direction::Outgoing);
    assert_eq!(&l[..], br#"{"jsonrpc":"2.0","id":1,"result":1}"#);
}

#[tokio::test]
async fn a_result_that_does_not_match_the_callers_type_names_the_field() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Reply {
        session_id: String,
    }
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Reply>("new", &json!({})).await });
    raw.json().await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"session_id\":5}}\n")
        .await;
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
    assert_eq!(e.data.unwrap()["field"], "session_id");
}

#[tokio::test]
async fn an_error_response_reaches_the_caller_as_the_same_error() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("auth", &()).await });
    raw.json().await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000,\"message\":\"auth required\",\"data\":[1]}}\n")
        .await;
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(
        e,
        acp_rpc::Error::auth_required("auth required").with_data(json!([1]))
    );
    assert_eq!(e.to_string(), "JSON-RPC error -32000: auth required ([1])");
}

#[tokio::test]
async fn the_legacy_presets_frame_requests_as_their_peers_did() {
    let (conn, mut raw) = RawPeer::connect(
        TestHandler::new(),
        Config::default().with_framing(legacy_0_0_9()),
    );
    conn.peer().notify("cancelSendMessage", &()).await.unwrap();
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":0,"method":"cancelSendMessage"}"#
    );
    // Incoming messages without "jsonrpc" are fine.
    raw.send(b"{\"id\":0,\"method\":\"echo\",\"params\":7}\n")
        .await;
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":0,"result":7}"#
    );

    let (conn, mut raw) = RawPeer::connect(
        TestHandler::new(),
        Config::default().with_framing(threads()),
    );
    let peer = conn.peer().clone();
    tokio::spawn(async move { peer.request::<_, Value>("getThreads", &()).await });
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"id":0,"method":"getThreads","params":null}"#
    );
    raw.send(b"{\"id\":0,\"method\":\"echo\",\"params\":null}\n")
        .await;
    assert_eq!(raw.line().await.unwrap(), r#"{"id":0,"result":null}"#);
}

#[tokio::test]
async fn line_breaks_in_a_raw_result_do_not_break_framing() {
    let (tap, mut lines) = acp_rpc::tap::channel();
    let (_conn, mut raw) =
        RawPeer::connect(TestHandler::new(), Config::default().with_observer(tap));
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pretty\"}\n")
        .await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":2}\n")
        .await;
    let expected = r#"{"jsonrpc":"2.0","id":1,"result":{   "a": [1,   2] }}"#;
    assert_eq!(raw.line().await.unwrap(), expected);
    assert_eq!(
        raw.line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":2,"result":2}"#
    );
    // The tap sees the line as written.
    let mut outgoing = Vec::new();
    while outgoing.len() < 2 {
        let (direction, line) = lines.recv().await.unwrap();
        if direction == Direction::Outgoing {
            outgoing.push(line);
        }
    }
    assert_eq!(&outgoing[0][..], expected.as_bytes());
}

#[tokio::test]
async fn a_panic_while_reading_a_result_reaches_the_caller_and_spares_the_connection() {
    // The reader reads a result into the caller's type in place; a panicking
    // `Deserialize` must panic the caller, not the reader.
    #[derive(Debug)]
    struct Panicky;
    impl<'de> serde::Deserialize<'de> for Panicky {
        fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            panic!("no thanks")
        }
    }
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Panicky>("new", &json!({})).await });
    raw.json().await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
        .await;
    let e = call.await.unwrap_err();
    assert!(e.is_panic());
    // The connection still reads responses.
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("new", &json!({})).await });
    assert_eq!(raw.json().await["id"], 2);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"ok\":true}}\n")
        .await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"ok": true}));
}
