//! Shared test helpers: a scriptable handler, connected pairs over `tokio::io::duplex`, and
//! a raw peer that speaks bytes.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::{
    Config, Connection, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    async_trait, to_raw,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

/// A handler with a fixed menu of methods used across the tests.
#[derive(Default)]
pub struct TestHandler {
    /// Every `note` notification's params, in handling order.
    pub notes: Mutex<Vec<Value>>,
    /// Sleep this long in every `note` whose `seq` is a multiple of 7.
    pub note_delay: Option<Duration>,
    /// Cancelled `wait_cancel` handlers report their id here.
    pub cancelled: Mutex<Option<mpsc::UnboundedSender<String>>>,
    /// Currently running handlers, and the maximum seen.
    pub running: AtomicUsize,
    pub max_running: AtomicUsize,
}

#[derive(Deserialize)]
struct AddParams {
    a: i64,
    b: i64,
}

struct OnDrop(Option<Box<dyn FnOnce() + Send>>);
impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

impl TestHandler {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn with_cancel_channel() -> (Arc<Self>, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let h = TestHandler {
            cancelled: Mutex::new(Some(tx)),
            ..Default::default()
        };
        (Arc::new(h), rx)
    }
}

#[async_trait]
impl Handler for TestHandler {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        let _running = RunningGuard(&self.running);
        match method {
            "echo" => to_raw(&params.parse::<Value>()?),
            "add" => {
                let p: AddParams = params.parse()?;
                to_raw(&(p.a + p.b))
            }
            "sleep" => {
                let ms: u64 = params.parse()?;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                to_raw(&ms)
            }
            "wait_cancel" => {
                let tx = self.cancelled.lock().unwrap().clone();
                let id = cx.id().to_string();
                let _guard = OnDrop(Some(Box::new(move || {
                    if let Some(tx) = tx {
                        let _ = tx.send(id);
                    }
                })));
                std::future::pending::<()>().await;
                unreachable!()
            }
            "fail" => {
                Err(Error::resource_not_found("no such file").with_data(json!({"path": "/x"})))
            }
            "panic" => panic!("boom"),
            // A result written by hand, with line breaks in its whitespace.
            "pretty" => Ok(RawValue::from_string("{\n  \"a\": [1,\r\n 2]\n}".to_owned()).unwrap()),
            // How many `note`s were handled once those sent before this request are.
            "notes_seen" => {
                cx.notifications_handled().await;
                to_raw(&self.notes.lock().unwrap().len())
            }
            // Calls the peer's `echo` with our params and returns what it answered.
            "call_peer" => {
                let v: Value = params.parse()?;
                let back: Value = cx.peer().request("echo", &v).await?;
                to_raw(&back)
            }
            // Sends `n` `note` notifications tagged with `tag`, then returns `n`.
            "stream" => {
                let p: Value = params.parse()?;
                let n = p["n"].as_u64().unwrap();
                for seq in 0..n {
                    cx.peer()
                        .notify("note", &json!({"tag": p["tag"], "seq": seq}))
                        .await?;
                }
                to_raw(&n)
            }
            // Sends `n` concurrent `echo` requests to the peer, checks every answer, returns `n`.
            "flood" => {
                let n: usize = params.parse()?;
                let mut set = tokio::task::JoinSet::new();
                for i in 0..n {
                    let peer = cx.peer().clone();
                    set.spawn(async move {
                        let back: Value = peer.request("echo", &json!({"i": i})).await?;
                        if back == json!({"i": i}) {
                            Ok(())
                        } else {
                            Err(Error::internal_error(format!("wrong answer {back}")))
                        }
                    });
                }
                while let Some(r) = set.join_next().await {
                    r.map_err(|e| Error::internal_error(e.to_string()))??;
                }
                to_raw(&n)
            }
            "big" => {
                let n: usize = params.parse()?;
                to_raw(&"x".repeat(n))
            }
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        match method {
            "note" => {
                let v: Value = params.parse()?;
                if let Some(delay) = self.note_delay
                    && v["seq"].as_u64().unwrap_or(0).is_multiple_of(7)
                {
                    tokio::time::sleep(delay).await;
                }
                self.notes.lock().unwrap().push(v);
                Ok(())
            }
            _ => Err(Error::method_not_found(method)),
        }
    }
}

struct RunningGuard<'a>(&'a AtomicUsize);
impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Forwards to a shared handler.
pub struct Shared<H>(pub Arc<H>);

#[async_trait]
impl<H: Handler> Handler for Shared<H> {
    fn waits_for_earlier_notifications(&self, method: &str) -> bool {
        self.0.waits_for_earlier_notifications(method)
    }

    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.0.handle_request(cx, method, params).await
    }
    async fn handle_notification(
        &self,
        cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.0.handle_notification(cx, method, params).await
    }
}

/// Two connections talking over an in-memory duplex pipe.
pub fn pair(
    a: Arc<TestHandler>,
    config_a: Config,
    b: Arc<TestHandler>,
    config_b: Config,
) -> (Connection, Connection) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (yr, yw) = tokio::io::split(y);
    (
        Connection::new(xr, xw, Shared(a), config_a),
        Connection::new(yr, yw, Shared(b), config_b),
    )
}

/// A peer that speaks raw bytes to a [`Connection`].
pub struct RawPeer {
    pub reader: BufReader<ReadHalf<DuplexStream>>,
    pub writer: WriteHalf<DuplexStream>,
}

impl RawPeer {
    /// A connection serving `handler` with `config`, and the raw peer talking to it.
    pub fn connect(handler: Arc<TestHandler>, config: Config) -> (Connection, RawPeer) {
        Self::connect_with_buffer(handler, config, 64 * 1024)
    }

    pub fn connect_with_buffer(
        handler: Arc<TestHandler>,
        config: Config,
        buffer: usize,
    ) -> (Connection, RawPeer) {
        let (x, y) = tokio::io::duplex(buffer);
        let (xr, xw) = tokio::io::split(x);
        let (yr, yw) = tokio::io::split(y);
        let conn = Connection::new(xr, xw, Shared(handler), config);
        (
            conn,
            RawPeer {
                reader: BufReader::new(yr),
                writer: yw,
            },
        )
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next line (without `\n`), or `None` at EOF; panics after 5 s.
    pub async fn line(&mut self) -> Option<String> {
        let mut s = String::new();
        let n = tokio::time::timeout(Duration::from_secs(5), self.reader.read_line(&mut s))
            .await
            .expect("timed out waiting for a line")
            .unwrap();
        if n == 0 {
            return None;
        }
        assert!(s.ends_with('\n'), "unterminated line {s:?}");
        s.pop();
        Some(s)
    }

    /// The next line parsed as JSON.
    pub async fn json(&mut self) -> Value {
        let line = self.line().await.expect("unexpected EOF");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
    }

    /// Sends a probe request with string id `probe-<n>` and returns every line received
    /// before its reply (parsed), asserting the reply is correct.
    pub async fn until_probe(&mut self, n: usize) -> Vec<Value> {
        self.until_probe_framed(n, true).await
    }

    /// [`RawPeer::until_probe`] for a connection that writes `"jsonrpc"` only when
    /// `emits_jsonrpc` (the probe itself is sent without it then, as such peers do).
    pub async fn until_probe_framed(&mut self, n: usize, emits_jsonrpc: bool) -> Vec<Value> {
        let id = format!("probe-{n}");
        let mut req = json!({"jsonrpc": "2.0", "id": id, "method": "echo", "params": [n]});
        let mut expected = json!({"jsonrpc": "2.0", "id": id, "result": [n]});
        if !emits_jsonrpc {
            req.as_object_mut().unwrap().remove("jsonrpc");
            expected.as_object_mut().unwrap().remove("jsonrpc");
        }
        self.send(format!("{req}\n").as_bytes()).await;
        let mut before = Vec::new();
        loop {
            let v = self.json().await;
            if v["id"] == json!(id) {
                assert_eq!(v, expected);
                return before;
            }
            before.push(v);
        }
    }
}

/// The 0.0.9 dialect's framing, built from the engine's knobs (acp-dialects holds the
/// preset the sides use).
pub fn legacy_0_0_9() -> acp_rpc::Framing {
    acp_rpc::Framing::default()
        .accept_missing_jsonrpc(true)
        .omit_null_params(true)
        .notifications(false)
        .first_request_id(0)
}

/// The threads dialect's framing.
pub fn threads() -> acp_rpc::Framing {
    acp_rpc::Framing::default()
        .accept_missing_jsonrpc(true)
        .emit_jsonrpc(false)
        .notifications(false)
        .first_request_id(0)
}
