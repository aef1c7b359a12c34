//! The engine's ordering guarantees (`concepts`, *Ordering*), each shown by a case that
//! fails without it:
//!
//! 1. a request whose method the handler orders (`Handler::waits_for_earlier_notifications`)
//!    reaches the handler only after every notification read before it was handled;
//! 2. a handler learns when its response is on the wire (`RequestContext::response_written`);
//! 3. nothing sent after that overtakes the response.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::{
    Config, Connection, Error, ErrorCode, Handler, NotificationContext, Params, RawValue,
    RequestContext, async_trait, to_raw,
};
use common::Shared;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

#[derive(Default)]
struct Ordered {
    /// Notes handled so far (each takes a while).
    notes: AtomicUsize,
    /// A request context kept past its handler's end.
    kept: Mutex<Option<RequestContext>>,
}

#[async_trait]
impl Handler for Ordered {
    fn waits_for_earlier_notifications(&self, method: &str) -> bool {
        method == "ordered_count"
    }

    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            // Both answer how many notes were handled when they started.
            "count" | "ordered_count" => to_raw(&self.notes.load(Ordering::SeqCst)),
            // Announces the answer once it is written: `after` then must follow it on the
            // wire. The handler dawdles after asking, so an early signal would show.
            "create" => {
                let id: u64 = params.parse()?;
                let written = cx.response_written();
                let peer = cx.peer().clone();
                tokio::spawn(async move {
                    if written.await.is_ok() {
                        let _ = peer.notify("after", &id).await;
                    }
                });
                tokio::time::sleep(Duration::from_millis(2)).await;
                if id.is_multiple_of(3) {
                    Err(Error::invalid_params(
                        "ids divisible by 3 fail (on purpose)",
                    ))
                } else {
                    to_raw(&id)
                }
            }
            "keep" => {
                *self.kept.lock().unwrap() = Some(cx);
                to_raw(&"kept")
            }
            m => Err(Error::method_not_found(m)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        if method == "note" {
            tokio::time::sleep(Duration::from_millis(40)).await;
            self.notes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

struct Raw {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
}

impl Raw {
    fn connect(handler: Arc<Ordered>, buffer: usize) -> (Connection, Raw) {
        let (x, y) = tokio::io::duplex(buffer);
        let (xr, xw) = tokio::io::split(x);
        let (yr, yw) = tokio::io::split(y);
        let conn = Connection::new(xr, xw, Shared(handler), Config::default());
        let raw = Raw {
            reader: BufReader::new(yr),
            writer: yw,
        };
        (conn, raw)
    }

    async fn send(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn json(&mut self) -> Value {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(10), self.reader.read_line(&mut line))
            .await
            .expect("timed out waiting for a line")
            .unwrap();
        assert!(n > 0, "unexpected end of stream");
        serde_json::from_str(&line).unwrap()
    }
}

#[tokio::test]
async fn an_ordered_request_starts_after_the_notifications_read_before_it() {
    let (_conn, mut raw) = Raw::connect(Arc::default(), 64 * 1024);
    raw.send(
        "{\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n\
         {\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n\
         {\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n\
         {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"count\"}\n\
         {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ordered_count\"}\n",
    )
    .await;
    let mut answers = [raw.json().await, raw.json().await];
    answers.sort_by_key(|a| a["id"].as_i64());
    // The unordered request ran at once, while the first note was still being handled: the
    // race the guarantee closes.
    assert_eq!(answers[0]["result"], 0, "{answers:?}");
    // The ordered one waited (no timeout, no line counting) for all three.
    assert_eq!(answers[1]["result"], 3, "{answers:?}");
}

#[tokio::test]
async fn an_ordered_request_waits_only_for_notifications_read_before_it() {
    let (_conn, mut raw) = Raw::connect(Arc::default(), 64 * 1024);
    raw.send(
        "{\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n\
         {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ordered_count\"}\n\
         {\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n\
         {\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n",
    )
    .await;
    let answer = raw.json().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"], 1, "{answer}");
}

#[tokio::test]
async fn what_is_sent_once_a_response_is_written_follows_it_on_the_wire() {
    // A small pipe: responses are written in parts, so "queued" and "written" differ.
    let (_conn, mut raw) = Raw::connect(Arc::default(), 256);
    const N: u64 = 300;
    let mut batch = String::new();
    for id in 1..=N {
        batch.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"create\",\"params\":{id}}}\n"
        ));
    }
    let send = tokio::spawn(async move {
        raw.send(&batch).await;
        raw
    });
    let mut raw = send.await.unwrap();
    let mut answered = std::collections::HashSet::new();
    let mut announced = 0;
    while announced < N {
        let message = raw.json().await;
        if message["method"] == "after" {
            let id = message["params"].as_u64().unwrap();
            assert!(
                answered.contains(&id),
                "`after {id}` overtook the response to request {id}"
            );
            announced += 1;
        } else {
            let id = message["id"].as_u64().unwrap();
            // Failures are signalled too.
            if id.is_multiple_of(3) {
                assert_eq!(message["error"]["code"], -32602, "{message}");
            } else {
                assert_eq!(message["result"], id, "{message}");
            }
            assert!(answered.insert(id), "request {id} answered twice");
        }
    }
    assert_eq!(answered.len() as u64, N);
}

#[tokio::test]
async fn response_written_reports_a_closed_connection_as_such() {
    // A handler that never answers, on a connection the peer then closes: the wait must
    // end (not hang) with the connection-closed error.
    struct Hangs(tokio::sync::mpsc::UnboundedSender<Result<(), Error>>);
    #[async_trait]
    impl Handler for Hangs {
        async fn handle_request(
            &self,
            cx: RequestContext,
            _method: &str,
            _params: Params,
        ) -> Result<Box<RawValue>, Error> {
            let written = cx.response_written();
            let tx = self.0.clone();
            tokio::spawn(async move {
                let _ = tx.send(written.await);
            });
            std::future::pending().await
        }
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (_yr, mut yw) = tokio::io::split(y);
    let conn = Connection::new(xr, xw, Hangs(tx), Config::default());
    yw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"anything\"}\n")
        .await
        .unwrap();
    // The peer hangs up (its write side: the other half of the pipe stays open).
    yw.shutdown().await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("the wait for the write ended")
        .expect("an outcome");
    let error = outcome.expect_err("the response was never written");
    assert_eq!(error.code, ErrorCode::CONNECTION_CLOSED, "{error:?}");
    let _ = conn.closed().await;
}

#[tokio::test]
async fn response_written_asked_after_the_handler_returned_fails_at_once() {
    let handler = Arc::new(Ordered::default());
    let (_conn, mut raw) = Raw::connect(handler.clone(), 64 * 1024);
    raw.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"keep\"}\n")
        .await;
    assert_eq!(raw.json().await["result"], "kept");
    let cx = handler.kept.lock().unwrap().take().expect("kept");
    let outcome = tokio::time::timeout(Duration::from_secs(1), cx.response_written())
        .await
        .expect("resolves at once");
    let error = outcome.expect_err("too late to ask");
    assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
    assert!(error.message.contains("after"), "{}", error.message);
}

#[tokio::test]
async fn response_written_waits_for_the_bytes_to_leave_not_for_the_handler_to_return() {
    // The handler returns at once, but the pipe takes 16 bytes at a time and the peer does
    // not read yet: the response is queued, not written, so the wait must not end.
    struct Tells(tokio::sync::mpsc::UnboundedSender<Result<(), Error>>);
    #[async_trait]
    impl Handler for Tells {
        async fn handle_request(
            &self,
            cx: RequestContext,
            _method: &str,
            _params: Params,
        ) -> Result<Box<RawValue>, Error> {
            let written = cx.response_written();
            let tx = self.0.clone();
            tokio::spawn(async move {
                let _ = tx.send(written.await);
            });
            to_raw(&"a result long enough not to fit in the pipe at once")
        }
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (x, y) = tokio::io::duplex(16);
    let (xr, xw) = tokio::io::split(x);
    let (yr, mut yw) = tokio::io::split(y);
    let _conn = Connection::new(xr, xw, Tells(tx), Config::default());
    yw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"go\"}\n")
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(200), rx.recv())
            .await
            .is_err(),
        "the wait ended while the response was still in the writer's buffer"
    );
    // The peer reads: the response leaves, and only now is it written.
    let mut reader = BufReader::new(yr);
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    let outcome = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("the wait ends once the bytes are out")
        .expect("an outcome");
    assert!(outcome.is_ok(), "{outcome:?}");
}
