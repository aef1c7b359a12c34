//! Results handed over unserialized ([`Reply::new`]) are serialized by the writer: check
//! the wire, the tap, and that a value that fails to serialize (or panics doing so) still
//! gets exactly one answer, `-32603`, with the connection serving on.

use acp_rpc::{
    Config, Connection, Direction, Error, Handler, Params, RawValue, Reply, RequestContext,
    async_trait,
};
use serde::{Serialize, Serializer};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Fails;
impl Serialize for Fails {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("not today"))
    }
}

struct Panics;
impl Serialize for Panics {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("boom in serialize")
    }
}

struct Deferred;

#[async_trait]
impl Handler for Deferred {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.handle_request_reply(cx, method, params)
            .await?
            .into_raw()
    }

    async fn handle_request_reply(
        &self,
        _cx: RequestContext,
        method: &str,
        _params: Params,
    ) -> Result<Reply, Error> {
        match method {
            "value" => Ok(Reply::new(json!(["a\nb", {"n": [1, 2]}]))),
            "raw" => Ok(Reply::raw(
                RawValue::from_string("{\n\"a\": 1}".to_owned()).unwrap(),
            )),
            "fails" => Ok(Reply::new(Fails)),
            "panics" => Ok(Reply::new(Panics)),
            m => Err(Error::method_not_found(m)),
        }
    }
}

#[tokio::test]
async fn deferred_results_are_written_once_each_and_failures_answer_32603() {
    let (tap, mut tapped) = acp_rpc::tap::channel();
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (yr, mut yw) = tokio::io::split(y);
    let _conn = Connection::new(xr, xw, Deferred, Config::default().with_observer(tap));
    let mut lines = BufReader::new(yr).lines();
    for (id, method) in ["value", "raw", "fails", "panics", "value"]
        .iter()
        .enumerate()
    {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\"}}\n");
        yw.write_all(line.as_bytes()).await.unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(lines.next_line().await.unwrap().unwrap());
    }
    got.sort(); // handlers run concurrently; ids tell the answers apart
    let value = r#"["a\nb",{"n":[1,2]}]"#;
    assert_eq!(
        got,
        vec![
            format!(r#"{{"jsonrpc":"2.0","id":0,"result":{value}}}"#),
            r#"{"jsonrpc":"2.0","id":1,"result":{ "a": 1}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"result failed to serialize: not today"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"result failed to serialize: it panicked: boom in serialize"}}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","id":4,"result":{value}}}"#),
        ]
    );
    // The tap saw exactly what went out.
    let mut out = Vec::new();
    while out.len() < 5 {
        let (direction, line) = tapped.recv().await.unwrap();
        if direction == Direction::Outgoing {
            out.push(String::from_utf8(line.to_vec()).unwrap());
        }
    }
    out.sort();
    assert_eq!(out, got);
    // Nothing more: exactly one answer per request.
    yw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"raw\"}\n")
        .await
        .unwrap();
    assert_eq!(
        lines.next_line().await.unwrap().unwrap(),
        r#"{"jsonrpc":"2.0","id":9,"result":{ "a": 1}}"#
    );
}

#[test]
fn into_raw_serializes_or_answers_32603() {
    let raw = Reply::new(json!([1, "x"])).into_raw().unwrap();
    assert_eq!(raw.get(), r#"[1,"x"]"#);
    let e = Reply::new(Fails).into_raw().unwrap_err();
    assert_eq!(e.code, acp_rpc::ErrorCode::INTERNAL_ERROR);
    assert_eq!(e.message, "result failed to serialize: not today");
}
