//! `Handler::start_notification`: notifications of the usual shape are decoded in the reader (one pass over the line) and handled in arrival
//! order with every other notification; everything else (another key order, malformed
//! JSON, params the decoder refuses, a decoder that panics) takes the ordinary path with
//! its ordinary answers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::{
    Config, Connection, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    StartedNotification, async_trait, to_raw,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Debug, Deserialize)]
struct Note {
    n: u32,
}

/// Records how each notification arrived: `decoded <n>` or `raw <method> <params>`.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
}

impl Recorder {
    fn push(&self, event: String) {
        self.seen.lock().unwrap().push(event);
    }
}

#[async_trait]
impl Handler for Recorder {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        _params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            "seen" => {
                cx.notifications_handled().await;
                to_raw(&*self.seen.lock().unwrap())
            }
            m => Err(Error::method_not_found(m)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let text = params.raw().map_or("-", RawValue::get);
        self.push(format!("raw {method} {text}"));
        Ok(())
    }

    fn start_notification(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        match method {
            "note" => {
                let note: Note = serde_json::from_str(params).ok()?;
                Some(StartedNotification::new("note", async move {
                    self.push(format!("decoded {}", note.n));
                    Ok(())
                }))
            }
            "boom" => panic!("decoder bug"),
            _ => None,
        }
    }
}

/// Sends `lines` to a [`Recorder`], then asks for what it saw; returns that and every other
/// line the connection wrote back.
async fn exchange(lines: &[&str]) -> (Vec<String>, Vec<Value>) {
    exchange_with(Recorder::default(), lines).await
}

/// [`exchange`] with any handler that answers `seen`.
async fn exchange_with(handler: impl Handler, lines: &[&str]) -> (Vec<String>, Vec<Value>) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (yr, mut yw) = tokio::io::split(y);
    let _conn = Connection::new(xr, xw, handler, Config::default());
    for line in lines {
        yw.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    yw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"seen\",\"method\":\"seen\"}\n")
        .await
        .unwrap();
    let mut replies = BufReader::new(yr).lines();
    let mut other = Vec::new();
    loop {
        let line = replies.next_line().await.unwrap().expect("connection open");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == "seen" {
            let seen = serde_json::from_value(v["result"].clone()).unwrap();
            return (seen, other);
        }
        other.push(v);
    }
}

#[tokio::test]
async fn plain_notifications_are_decoded_in_arrival_order_with_raw_ones() {
    let (seen, other) = exchange(&[
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":1}}"#,
        r#"{"jsonrpc":"2.0","method":"other","params":{"n":2}}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":3}}  "#,
        r#"{"method":"note","params":{"n":4},"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":5}}"#,
    ])
    .await;
    assert_eq!(
        seen,
        [
            "decoded 1",
            r#"raw other {"n":2}"#,
            "decoded 3",
            // Another key order is not offered to the decoder.
            r#"raw note {"n":4}"#,
            "decoded 5",
        ]
    );
    assert!(
        other.is_empty(),
        "notifications are never answered: {other:?}"
    );
}

#[tokio::test]
async fn malformed_json_in_the_usual_shape_is_a_parse_error_not_a_notification() {
    let (seen, other) = exchange(&[
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":1"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":1}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":2}}"#,
    ])
    .await;
    assert_eq!(seen, ["decoded 2"]);
    assert_eq!(other.len(), 3, "{other:?}");
    for reply in &other {
        assert_eq!(reply["error"]["code"], -32700, "{reply}");
        assert_eq!(reply["id"], Value::Null);
    }
}

#[tokio::test]
async fn params_the_decoder_refuses_reach_handle_notification_raw() {
    let (seen, other) = exchange(&[
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":"one"}}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":null}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":6}}"#,
    ])
    .await;
    assert_eq!(seen, [r#"raw note {"n":"one"}"#, "raw note -", "decoded 6"]);
    assert!(other.is_empty(), "{other:?}");
}

#[tokio::test]
async fn text_after_the_params_makes_it_another_message() {
    // `"params":{...},"id":7` is no params value: the line is a request, answered as one.
    let (seen, other) = exchange(&[
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":1},"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":1},"params":{"n":2}}"#,
    ])
    .await;
    assert_eq!(other.len(), 2, "{other:?}");
    let request = other
        .iter()
        .find(|v| v["id"] == 7)
        .expect("the request is answered");
    assert_eq!(request["error"]["code"], -32601);
    // A repeated key is no notification either: the envelope parser rejects it.
    let duplicate = other.iter().find(|v| v["id"].is_null()).expect("answered");
    assert_eq!(duplicate["error"]["code"], -32600);
    assert!(seen.is_empty(), "{seen:?}");
}

#[tokio::test]
async fn a_panicking_decoder_leaves_the_line_to_the_ordinary_path_and_the_reader_alive() {
    let (seen, other) = exchange(&[
        r#"{"jsonrpc":"2.0","method":"boom","params":{"n":1}}"#,
        r#"{"jsonrpc":"2.0","method":"note","params":{"n":8}}"#,
    ])
    .await;
    assert_eq!(seen, [r#"raw boom {"n":1}"#, "decoded 8"]);
    assert!(other.is_empty(), "{other:?}");
}

#[tokio::test]
async fn cancel_requests_are_never_offered_to_the_decoder() {
    /// Records every method it is offered (and decodes none).
    #[derive(Default)]
    struct Offered(Mutex<Vec<String>>);
    #[async_trait]
    impl Handler for Offered {
        fn start_notification(
            self: Arc<Self>,
            _cx: NotificationContext,
            method: &str,
            _params: &str,
        ) -> Option<StartedNotification> {
            self.0.lock().unwrap().push(method.to_owned());
            None
        }
    }
    let offered = Arc::new(Offered::default());
    let (x, y) = tokio::io::duplex(4096);
    let (xr, xw) = tokio::io::split(x);
    let (yr, mut yw) = tokio::io::split(y);
    let _conn = Connection::new(xr, xw, Shared(offered.clone()), Config::default());
    yw.write_all(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1}}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"n\":1}}\n",
    )
    .await
    .unwrap();
    yw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\"}\n")
        .await
        .unwrap();
    let line = BufReader::new(yr)
        .lines()
        .next_line()
        .await
        .unwrap()
        .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["id"], 2);
    assert_eq!(v["error"]["code"], json!(-32601));
    // The ordinary notification after it was offered; the cancel request never was.
    assert_eq!(*offered.0.lock().unwrap(), ["note"]);
}

/// Forwards to a shared handler (the connection owns its handler; the test keeps a view).
struct Shared<H>(Arc<H>);

#[async_trait]
impl<H: Handler> Handler for Shared<H> {
    fn start_notification(
        self: Arc<Self>,
        cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        self.0.clone().start_notification(cx, method, params)
    }
}

/// A [`Recorder`] that starts its notifications itself ([`Handler::start_notification`]):
/// `tick` finishes at once, `slow` waits a while first, `fails` returns an error, `crash`
/// panics when polled and `boom` panics while starting.
#[derive(Default)]
struct Starter {
    recorder: Arc<Recorder>,
}

#[async_trait]
impl Handler for Starter {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.recorder.handle_request(cx, method, params).await
    }

    async fn handle_notification(
        &self,
        cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.recorder.handle_notification(cx, method, params).await
    }

    fn start_notification(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        let note: Note = serde_json::from_str(params).ok()?;
        let recorder = self.recorder.clone();
        let started = match method {
            "tick" => StartedNotification::new("tick", async move {
                recorder.push(format!("tick {}", note.n));
                Ok(())
            }),
            "slow" => StartedNotification::new("slow", async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                recorder.push(format!("slow {}", note.n));
                Ok(())
            }),
            "fails" => StartedNotification::new("fails", async move {
                recorder.push(format!("fails {}", note.n));
                Err(Error::internal_error("this one fails"))
            }),
            "crash" => StartedNotification::new("crash", async move {
                recorder.push(format!("crash {}", note.n));
                panic!("handler bug")
            }),
            "boom" => panic!("decoder bug"),
            _ => return None,
        };
        assert_eq!(started.method(), method);
        Some(started)
    }
}

/// What a [`Starter`] saw of `lines`; a notification is never answered, whatever its end.
async fn started(lines: &[&str]) -> Vec<String> {
    let (seen, other) = exchange_with(Starter::default(), lines).await;
    assert!(
        other.is_empty(),
        "notifications are never answered: {other:?}"
    );
    seen
}

#[tokio::test]
async fn started_notifications_keep_arrival_order_even_when_one_waits() {
    let seen = started(&[
        r#"{"jsonrpc":"2.0","method":"tick","params":{"n":1}}"#,
        r#"{"jsonrpc":"2.0","method":"slow","params":{"n":2}}"#,
        r#"{"jsonrpc":"2.0","method":"tick","params":{"n":3}}"#,
        r#"{"jsonrpc":"2.0","method":"other","params":{"n":4}}"#,
        r#"{"jsonrpc":"2.0","method":"slow","params":{"n":5}}"#,
        r#"{"jsonrpc":"2.0","method":"tick","params":{"n":6}}"#,
    ])
    .await;
    let expected = [
        "tick 1",
        "slow 2",
        "tick 3",
        r#"raw other {"n":4}"#,
        "slow 5",
        "tick 6",
    ];
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn a_started_notification_that_fails_or_panics_is_logged_and_the_next_one_runs() {
    let seen = started(&[
        r#"{"jsonrpc":"2.0","method":"fails","params":{"n":1}}"#,
        r#"{"jsonrpc":"2.0","method":"crash","params":{"n":2}}"#,
        r#"{"jsonrpc":"2.0","method":"slow","params":{"n":3}}"#,
        r#"{"jsonrpc":"2.0","method":"crash","params":{"n":4}}"#,
        r#"{"jsonrpc":"2.0","method":"tick","params":{"n":5}}"#,
    ])
    .await;
    assert_eq!(seen, ["fails 1", "crash 2", "slow 3", "crash 4", "tick 5"]);
}

#[tokio::test]
async fn a_panic_while_starting_leaves_the_line_to_the_ordinary_path() {
    let seen = started(&[
        r#"{"jsonrpc":"2.0","method":"boom","params":{"n":1}}"#,
        r#"{"jsonrpc":"2.0","method":"tick","params":{"n":2}}"#,
        r#"{"jsonrpc":"2.0","method":"tick","params":{"n":"two"}}"#,
    ])
    .await;
    assert_eq!(
        seen,
        [r#"raw boom {"n":1}"#, "tick 2", r#"raw tick {"n":"two"}"#]
    );
}
