//! The three transports of `acp_rpc::transport` keep the engine's guarantees alike: each test
//! runs against newline-delimited JSON over a byte pipe, the in-memory pair and the frame
//! adapter (issue 46). The other side is a raw peer that writes and reads messages by hand.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::codec::{Frame, LineReader, write_line};
use acp_rpc::transport::{FramePort, Lines, frame_adapter, memory_pair};
use acp_rpc::{
    CloseReason, Config, Connection, Error, Handler, NotificationContext, Params, RawValue,
    RequestContext, to_raw,
};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

const MAX: usize = 4096;
const WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug)]
enum Kind {
    Lines,
    Memory,
    Frames,
}

const ALL: [Kind; 3] = [Kind::Lines, Kind::Memory, Kind::Frames];

/// The other side, written and read message by message.
enum Raw {
    Lines(
        LineReader<ReadHalf<DuplexStream>>,
        Option<WriteHalf<DuplexStream>>,
    ),
    Frames(Option<FramePort>),
}

impl Raw {
    async fn send(&mut self, message: &str) {
        match self {
            Raw::Lines(_, w) => {
                let w = w.as_mut().unwrap();
                write_line(w, message.as_bytes()).await.unwrap();
                w.flush().await.unwrap();
            }
            Raw::Frames(port) => port
                .as_ref()
                .unwrap()
                .sender
                .send(message.to_owned())
                .await
                .unwrap(),
        }
    }

    /// The next message, `None` at the end of the engine's output.
    async fn recv(&mut self) -> Option<Value> {
        let text = tokio::time::timeout(WAIT, async {
            match self {
                Raw::Lines(r, _) => match r.next_frame().await.unwrap()? {
                    Frame::Line(line) => Some(line),
                    other => panic!("unexpected frame {other:?}"),
                },
                Raw::Frames(port) => port.as_mut().unwrap().receiver.recv().await,
            }
        })
        .await
        .expect("a message or the end in time")?;
        Some(serde_json::from_slice(&text).expect("the engine writes JSON"))
    }

    /// Ends the input of the engine.
    async fn close(&mut self) {
        match self {
            Raw::Lines(_, w) => w.as_mut().unwrap().shutdown().await.unwrap(),
            Raw::Frames(port) => {
                // Keep the receiver: only the engine's input ends.
                let FramePort { sender, receiver } = port.take().unwrap();
                drop(sender);
                *port = Some(FramePort {
                    sender: frame_adapter(1).1.sender,
                    receiver,
                });
            }
        }
    }
}

/// Starts the engine with `handler` on a transport of `kind`; `capacity` bounds the pipe
/// (bytes for lines, frames otherwise).
fn start<H: Handler>(kind: Kind, handler: H, config: Config, capacity: usize) -> (Connection, Raw) {
    match kind {
        Kind::Lines => {
            let (ours, theirs) = tokio::io::duplex(capacity * 64);
            let (r, w) = tokio::io::split(ours);
            let conn = Connection::over(Lines::new(r, w), handler, config);
            let (tr, tw) = tokio::io::split(theirs);
            (conn, Raw::Lines(LineReader::new(tr, 1 << 20), Some(tw)))
        }
        Kind::Memory => {
            let (ours, theirs) = memory_pair(capacity);
            let conn = Connection::over(ours, handler, config);
            (conn, Raw::Frames(Some(theirs.into_port())))
        }
        Kind::Frames => {
            let (adapter, port) = frame_adapter(capacity);
            let conn = Connection::over(adapter, handler, config);
            (conn, Raw::Frames(Some(port)))
        }
    }
}

/// Records the notifications it is given; answers `echo` with its params.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Value>>>);

#[acp_rpc::async_trait]
impl Handler for Recorder {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            "seen" => to_raw(&self.0.lock().unwrap().clone()),
            "echo" => to_raw(&params.parse::<Value>()?),
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.0.lock().unwrap().push(params.parse::<Value>()?);
        Ok(())
    }
}

#[tokio::test]
async fn messages_arrive_and_leave_in_the_order_written_on_every_transport() {
    for kind in ALL {
        let recorder = Recorder::default();
        let (conn, mut raw) = start(kind, recorder.clone(), Config::default(), 8);
        for i in 0..200 {
            raw.send(&json!({"jsonrpc":"2.0","method":"n","params":i}).to_string())
                .await;
        }
        raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"seen"}"#)
            .await;
        let answer = raw.recv().await.unwrap();
        let expected: Vec<Value> = (0..200).map(Value::from).collect();
        assert_eq!(answer["id"], 1, "{kind:?}");
        assert_eq!(answer["result"], Value::from(expected), "{kind:?}");

        let peer = conn.peer().clone();
        let sender = tokio::spawn(async move {
            for i in 0..200 {
                peer.notify("out", &i).await.unwrap();
            }
        });
        for i in 0..200 {
            let n = raw.recv().await.unwrap();
            assert_eq!(
                (n["method"].as_str(), &n["params"]),
                (Some("out"), &json!(i)),
                "{kind:?}"
            );
        }
        sender.await.unwrap();
    }
}

#[tokio::test]
async fn a_message_over_the_limit_is_answered_and_the_connection_keeps_serving() {
    for kind in ALL {
        let config = Config::default().with_max_message_size(MAX);
        let (conn, mut raw) = start(kind, Recorder::default(), config, 8);
        let big = json!({"jsonrpc":"2.0","id":1,"method":"echo","params":"x".repeat(MAX)});
        raw.send(&big.to_string()).await;
        let error = raw.recv().await.unwrap();
        assert_eq!(error["id"], Value::Null, "{kind:?}");
        assert_eq!(error["error"]["code"], -32600, "{kind:?}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("exceeds the maximum of 4096 bytes"),
            "{kind:?}: {message}"
        );
        raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"echo","params":[1]}"#)
            .await;
        let answer = raw.recv().await.unwrap();
        assert_eq!(
            (&answer["id"], &answer["result"]),
            (&json!(2), &json!([1])),
            "{kind:?}"
        );
        assert!(!conn.peer().is_closed(), "{kind:?}");
    }
}

#[tokio::test]
async fn the_end_of_input_closes_and_a_local_close_ends_the_output() {
    for kind in ALL {
        let (conn, mut raw) = start(kind, Recorder::default(), Config::default(), 8);
        raw.close().await;
        let why = tokio::time::timeout(WAIT, conn.closed())
            .await
            .expect("closes");
        assert!(matches!(why, CloseReason::Eof), "{kind:?}: {why}");

        let (conn, mut raw) = start(kind, Recorder::default(), Config::default(), 8);
        conn.peer().notify("last", &1).await.unwrap();
        conn.close();
        let last = raw.recv().await.expect("queued output is flushed first");
        assert_eq!(last["method"], "last", "{kind:?}");
        assert_eq!(raw.recv().await, None, "{kind:?}: then the output ends");
        assert!(
            matches!(conn.finished().await, CloseReason::Local),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_peer_that_stops_reading_is_cut_off_by_the_write_stall_timeout() {
    for kind in ALL {
        let stall = Duration::from_millis(200);
        let config = Config::default().with_write_stall_timeout(Some(stall));
        let (conn, raw) = start(kind, Recorder::default(), config, 4);
        let peer = conn.peer().clone();
        // The raw side never reads: the pipe fills, then nothing moves.
        let flood = tokio::spawn(async move {
            for i in 0..100_000 {
                if peer.notify("flood", &vec![i; 64]).await.is_err() {
                    return i;
                }
            }
            panic!("a peer that reads nothing took 100,000 notifications");
        });
        let why = tokio::time::timeout(WAIT, conn.closed())
            .await
            .expect("cut off");
        assert!(
            matches!(why, CloseReason::WriteStalled(d) if d == stall),
            "{kind:?}: {why}"
        );
        let sent = flood.await.unwrap();
        assert!(sent < 100_000, "{kind:?}");
        drop(raw);
    }
}
