//! Bad input on the wire: every case with its exact bytes and exact expected replies, and
//! the connection keeps serving after each.

mod common;

use acp_rpc::{Config, Framing};
use common::{RawPeer, TestHandler, legacy_0_0_9, threads};
use serde_json::{Value, json};

struct Case {
    name: &'static str,
    input: Vec<u8>,
    replies: Vec<Value>,
}

fn case(name: &'static str, input: &[u8], replies: Vec<Value>) -> Case {
    Case {
        name,
        input: input.to_vec(),
        replies,
    }
}

fn err(id: Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn err_data(id: Value, code: i32, message: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}})
}

fn cases() -> Vec<Case> {
    let null = Value::Null;
    let mut oversized = vec![b'{'; 5000];
    oversized.push(b'\n');
    vec![
        case(
            "truncated JSON",
            b"{\"jsonrpc\":\"2.0\",\n",
            vec![err(null.clone(), -32700, "parse error: EOF while parsing a value at line 1 column 17")],
        ),
        case(
            "not JSON at all",
            b"hello\n",
            vec![err(null.clone(), -32700, "parse error: expected value at line 1 column 1")],
        ),
        case(
            "syntax error after a shape error is still a parse error",
            b"{\"method\":5,\"id\":1,}\n",
            vec![err(null.clone(), -32700, "parse error: key must be a string at line 1 column 20")],
        ),
        case(
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n",
            vec![err(null.clone(), -32700, "line is not valid UTF-8")],
        ),
        case(
            "invalid UTF-8 in the params of a notification of the usual shape",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"text\":\"\xc3\x28\"}}\n",
            vec![err(null.clone(), -32700, "line is not valid UTF-8")],
        ),
        case(
            "invalid UTF-8 in the result of a response of the usual shape",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xe2\x82\"}\n",
            vec![err(null.clone(), -32700, "line is not valid UTF-8")],
        ),
        case(
            "a number is not a message",
            b"42\n",
            vec![err(null.clone(), -32600, "invalid message: invalid type: integer `42`, expected struct Envelope at line 1 column 2")],
        ),
        case(
            "an empty object is not a message",
            b"{}\n",
            vec![err(null.clone(), -32600, "missing \"jsonrpc\": \"2.0\"")],
        ),
        case(
            "jsonrpc only",
            b"{\"jsonrpc\":\"2.0\"}\n",
            vec![err(null.clone(), -32600, "message has neither \"method\" nor \"id\"")],
        ),
        case(
            "method of the wrong type",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}\n",
            vec![err(null.clone(), -32600, "invalid message: invalid type: integer `5`, expected a string at line 1 column 34")],
        ),
        case(
            "missing jsonrpc",
            b"{\"id\":1,\"method\":\"echo\"}\n",
            vec![err(null.clone(), -32600, "missing \"jsonrpc\": \"2.0\"")],
        ),
        case(
            "wrong jsonrpc version",
            b"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"echo\"}\n",
            vec![err(json!(1), -32600, "unsupported jsonrpc version \"1.0\"")],
        ),
        case(
            "a wrong jsonrpc version echoes a string id too",
            b"{\"jsonrpc\":\"1.0\",\"id\":\"a\\\"b\",\"method\":\"echo\"}\n",
            vec![err(json!("a\"b"), -32600, "unsupported jsonrpc version \"1.0\"")],
        ),
        case(
            "a wrong jsonrpc version on a response is not answered",
            b"{\"jsonrpc\":\"1.0\",\"id\":77,\"result\":1}\n",
            vec![],
        ),
        case(
            "an id of 2^70 is reported exactly, not as a float",
            b"{\"jsonrpc\":\"2.0\",\"id\":1180591620717411303424,\"method\":\"echo\"}\n",
            vec![err(null.clone(), -32600, "request id must be an integer or a string, got 1180591620717411303424")],
        ),
        case(
            "null request id",
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"echo\"}\n",
            vec![err(null.clone(), -32600, "request id must not be null")],
        ),
        case(
            "object request id",
            b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"echo\"}\n",
            vec![err(null.clone(), -32600, "request id must be an integer or a string, got {}")],
        ),
        case(
            "fractional request id",
            b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"echo\"}\n",
            vec![err(null.clone(), -32600, "request id must be an integer or a string, got 1.5")],
        ),
        case(
            "a batch",
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}]\n",
            vec![err(null.clone(), -32600, "batches are not supported")],
        ),
        case(
            "an empty batch",
            b"[]\n",
            vec![err(null.clone(), -32600, "batches are not supported")],
        ),
        case(
            "a malformed batch is a parse error",
            b"[{\"jsonrpc\":\n",
            vec![err(null.clone(), -32700, "parse error: EOF while parsing a value at line 1 column 12")],
        ),
        case(
            "unknown method, integer id",
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"nope\"}\n",
            vec![err_data(json!(7), -32601, "method not found: nope", json!({"method": "nope"}))],
        ),
        case(
            "unknown method, string id",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"nope\",\"params\":{}}\n",
            vec![err_data(json!("abc"), -32601, "method not found: nope", json!({"method": "nope"}))],
        ),
        case(
            "unknown notification is ignored",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"params\":{}}\n",
            vec![],
        ),
        case(
            "params missing a field",
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"add\",\"params\":{\"a\":1}}\n",
            vec![err_data(json!(2), -32602, "invalid params: missing field `b`", json!({"field": "b", "message": "missing field `b`"}))],
        ),
        case(
            "params with a field of the wrong type",
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"add\",\"params\":{\"a\":1,\"b\":\"x\"}}\n",
            vec![err_data(json!(3), -32602, "invalid params: invalid type: string \"x\", expected i64", json!({"field": "b", "message": "invalid type: string \"x\", expected i64"}))],
        ),
        case(
            "absent params where a struct is expected",
            b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"add\"}\n",
            vec![err_data(json!(4), -32602, "invalid params: invalid type: null, expected struct AddParams", json!({"field": null, "message": "invalid type: null, expected struct AddParams"}))],
        ),
        case(
            "a handler error is passed through",
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"fail\"}\n",
            vec![err_data(json!(5), -32002, "no such file", json!({"path": "/x"}))],
        ),
        case(
            "a handler panic fails only that request",
            b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"panic\"}\n",
            vec![err(json!(6), -32603, "handler panicked: boom")],
        ),
        case(
            "a response for an unknown id is ignored",
            b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":1}\n",
            vec![],
        ),
        case(
            "a response with a string id is ignored",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":1}\n",
            vec![],
        ),
        case(
            "an error reply with id null is ignored (no reply loop)",
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}\n",
            vec![],
        ),
        case(
            "a response with neither result nor error",
            b"{\"jsonrpc\":\"2.0\",\"id\":5}\n",
            vec![err(null.clone(), -32600, "response has neither \"result\" nor \"error\"")],
        ),
        case(
            "a response with both result and error (unknown id) is not answered",
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}\n",
            vec![],
        ),
        case("an empty line", b"\n", vec![]),
        case("a CRLF blank line", b"\r\n", vec![]),
        case("a whitespace line", b"  \t \n", vec![]),
        case(
            "a CRLF line end",
            b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"echo\",\"params\":[1]}\r\n",
            vec![json!({"jsonrpc": "2.0", "id": 8, "result": [1]})],
        ),
        case(
            "a UTF-8 BOM",
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"echo\",\"params\":{\"k\":\"\xC3\xA9\"}}\n",
            vec![json!({"jsonrpc": "2.0", "id": 9, "result": {"k": "\u{e9}"}})],
        ),
        case(
            "the largest integer id is echoed exactly",
            b"{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"echo\",\"params\":null}\n",
            vec![json!({"jsonrpc": "2.0", "id": i64::MAX, "result": null})],
        ),
        case(
            "an id larger than i64 is rejected",
            b"{\"jsonrpc\":\"2.0\",\"id\":9223372036854775808,\"method\":\"echo\"}\n",
            vec![err(null.clone(), -32600, "request id must be an integer or a string, got 9223372036854775808")],
        ),
        case(
            "a cancel for an unknown request is a no-op",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":12345}}\n",
            vec![],
        ),
        case(
            "an oversized line",
            &oversized,
            vec![err(null.clone(), -32600, "message of 5000 bytes exceeds the maximum of 1024 bytes")],
        ),
    ]
}

#[tokio::test]
async fn every_bad_input_gets_its_exact_reply_and_the_connection_keeps_serving() {
    let config = Config::default().with_max_message_size(1024);
    let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), config);
    let mut failures = Vec::new();
    for (n, case) in cases().into_iter().enumerate() {
        eprintln!("case: {}", case.name);
        raw.send(&case.input).await;
        let got = raw.until_probe(n).await;
        if got != case.replies {
            failures.push(format!(
                "{}:\n  sent     {:?}\n  expected {}\n  got      {}",
                case.name,
                String::from_utf8_lossy(&case.input),
                serde_json::to_string(&case.replies).unwrap(),
                serde_json::to_string(&got).unwrap()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn malformed_json_gets_parse_error_with_null_id_and_connection_keeps_serving() {
    let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    raw.send(b"{oops\n").await;
    let line = raw.line().await.unwrap();
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: key must be a string at line 1 column 2"}}"#
    );
    assert!(raw.until_probe(1).await.is_empty());
}

#[tokio::test]
async fn a_final_line_without_newline_is_served_before_eof() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    raw.send(br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":"last"}"#)
        .await;
    tokio::io::AsyncWriteExt::shutdown(&mut raw.writer)
        .await
        .unwrap();
    // The request is answered... unless shutdown cancelled it first; either way the
    // connection reports EOF and does not hang.
    let reason = conn.closed().await;
    assert_eq!(reason, acp_rpc::CloseReason::Eof);
}

#[tokio::test]
async fn a_duplicate_in_flight_id_is_rejected_and_the_first_request_still_answers() {
    let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sleep\",\"params\":100}\n")
        .await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":2}\n")
        .await;
    assert_eq!(
        raw.json().await,
        err(json!(1), -32600, "request id 1 is already in flight")
    );
    assert_eq!(
        raw.json().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": 100})
    );
    // Once finished, the id may be reused.
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":3}\n")
        .await;
    assert_eq!(
        raw.json().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": 3})
    );
}

#[tokio::test]
async fn a_response_missing_its_result_fails_the_waiting_call_instead_of_hanging() {
    let (conn, mut raw) = RawPeer::connect(TestHandler::new(), Config::default());
    let peer = conn.peer().clone();
    let call = tokio::spawn(async move { peer.request::<_, Value>("x", &json!({})).await });
    let sent = raw.json().await;
    assert_eq!(
        sent,
        json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {}})
    );
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1}\n").await;
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(e.code, acp_rpc::ErrorCode::INVALID_REQUEST);
    assert_eq!(
        raw.json().await,
        err(
            Value::Null,
            -32600,
            "response has neither \"result\" nor \"error\""
        )
    );
}

/// The table's expected replies as a legacy framing writes them: no `"jsonrpc"` member when
/// the dialect does not emit it, and the two cases about a missing `"jsonrpc"` accepted as
/// those dialects' peers sent them.
fn legacy_expectations(case: &Case, dialect: &Framing) -> Vec<Value> {
    let mut replies = match case.name {
        "missing jsonrpc" => vec![json!({"jsonrpc": "2.0", "id": 1, "result": null})],
        "an empty object is not a message" => vec![err(
            Value::Null,
            -32600,
            "message has neither \"method\" nor \"id\"",
        )],
        _ => case.replies.clone(),
    };
    if !dialect.emit_jsonrpc {
        for reply in &mut replies {
            reply.as_object_mut().unwrap().remove("jsonrpc");
        }
    }
    replies
}

#[tokio::test]
async fn every_bad_input_is_answered_in_each_legacy_framing_and_the_connection_keeps_serving() {
    for dialect in [legacy_0_0_9(), threads()] {
        let config = Config::default()
            .with_max_message_size(1024)
            .with_framing(dialect.clone());
        let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), config);
        let mut failures = Vec::new();
        for (n, case) in cases().into_iter().enumerate() {
            raw.send(&case.input).await;
            let got = raw.until_probe_framed(n, dialect.emit_jsonrpc).await;
            let expected = legacy_expectations(&case, &dialect);
            if got != expected {
                failures.push(format!(
                    "{dialect:?} {}:\n  expected {}\n  got      {}",
                    case.name,
                    serde_json::to_string(&expected).unwrap(),
                    serde_json::to_string(&got).unwrap()
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
