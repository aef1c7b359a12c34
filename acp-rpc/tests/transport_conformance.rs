//! The three transports of `acp_rpc::transport` keep the engine's guarantees alike: each test
//! runs against newline-delimited JSON over a byte pipe, the in-memory pair and the frame
//! adapter (issue 46), the last also with a carrier the engine drives itself on either side
//! (a [`FrameSource`] it reads, a [`FrameSink`] it writes to). The other side is a raw peer
//! that writes and reads messages by hand.

use std::io;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use acp_rpc::codec::{Frame, LineReader, write_line};
use acp_rpc::transport::{
    FrameAdapter, FrameReceiver, FrameSender, FrameSink, FrameSource, Lines, frame_adapter,
    memory_pair,
};
use acp_rpc::{
    CloseReason, Config, Connection, Error, Handler, NotificationContext, Params, RawValue,
    RequestContext, to_raw,
};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

const MAX: usize = 4096;
const WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug)]
enum Kind {
    Lines,
    Memory,
    Frames,
    /// Frames the engine reads from a [`FrameSource`] it polls itself.
    Source,
    /// Frames the engine hands to a [`FrameSink`] itself.
    Sink,
    /// Both: the engine drives the carrier's source and sink.
    Driven,
}

const ALL: [Kind; 6] = [
    Kind::Lines,
    Kind::Memory,
    Kind::Frames,
    Kind::Source,
    Kind::Sink,
    Kind::Driven,
];

/// A carrier's frames from a channel, for the engine to poll.
struct ChannelSource(mpsc::Receiver<Bytes>);

impl FrameSource for ChannelSource {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.0.poll_recv(cx)
    }
}

/// A carrier taking the engine's frames into a bounded channel: full, it holds the engine
/// back.
struct ChannelSink(PollSender<Bytes>);

impl FrameSink for ChannelSink {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0
            .poll_reserve(cx)
            .map_err(|_| io::ErrorKind::BrokenPipe.into())
    }

    fn send(&mut self, frame: Bytes) -> io::Result<()> {
        self.0
            .send_item(frame)
            .map_err(|_| io::ErrorKind::BrokenPipe.into())
    }

    fn poll_close(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.close();
        Poll::Ready(Ok(()))
    }
}

/// How the raw side hands the engine a frame.
enum ToEngine {
    Port(FrameSender),
    Channel(mpsc::Sender<Bytes>),
}

/// Where the raw side reads the engine's frames.
enum FromEngine {
    Port(FrameReceiver),
    Channel(mpsc::Receiver<Bytes>),
}

/// The other side, written and read message by message.
enum Raw {
    Lines(
        LineReader<ReadHalf<DuplexStream>>,
        Option<WriteHalf<DuplexStream>>,
    ),
    Frames(Option<ToEngine>, FromEngine),
}

impl Raw {
    async fn send(&mut self, message: &str) {
        match self {
            Raw::Lines(_, w) => {
                let w = w.as_mut().unwrap();
                write_line(w, message.as_bytes()).await.unwrap();
                w.flush().await.unwrap();
            }
            Raw::Frames(Some(ToEngine::Port(sender)), _) => {
                sender.send(message.to_owned()).await.unwrap()
            }
            Raw::Frames(Some(ToEngine::Channel(sender)), _) => {
                sender.send(Bytes::from(message.to_owned())).await.unwrap()
            }
            Raw::Frames(None, _) => panic!("the engine's input has ended"),
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
                Raw::Frames(_, FromEngine::Port(receiver)) => receiver.recv().await,
                Raw::Frames(_, FromEngine::Channel(receiver)) => receiver.recv().await,
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
            // Only the engine's input ends: the receiver stays.
            Raw::Frames(sender, _) => drop(sender.take()),
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
            let port = theirs.into_port();
            let raw = Raw::Frames(
                Some(ToEngine::Port(port.sender)),
                FromEngine::Port(port.receiver),
            );
            (conn, raw)
        }
        Kind::Frames => {
            let (adapter, port) = frame_adapter(capacity);
            let conn = Connection::over(adapter, handler, config);
            let raw = Raw::Frames(
                Some(ToEngine::Port(port.sender)),
                FromEngine::Port(port.receiver),
            );
            (conn, raw)
        }
        Kind::Source => {
            let (to_engine, incoming) = mpsc::channel(capacity);
            let (adapter, receiver) = FrameAdapter::reading(ChannelSource(incoming), capacity);
            let conn = Connection::over(adapter, handler, config);
            let raw = Raw::Frames(
                Some(ToEngine::Channel(to_engine)),
                FromEngine::Port(receiver),
            );
            (conn, raw)
        }
        Kind::Driven => {
            let (to_engine, incoming) = mpsc::channel(capacity);
            let (outgoing, from_engine) = mpsc::channel(capacity);
            let sink = ChannelSink(PollSender::new(outgoing));
            let adapter = FrameAdapter::driven(ChannelSource(incoming), sink);
            let conn = Connection::over(adapter, handler, config);
            let raw = Raw::Frames(
                Some(ToEngine::Channel(to_engine)),
                FromEngine::Channel(from_engine),
            );
            (conn, raw)
        }
        Kind::Sink => {
            let (outgoing, from_engine) = mpsc::channel(capacity);
            let sink = ChannelSink(PollSender::new(outgoing));
            let (adapter, sender) = FrameAdapter::writing(sink, capacity);
            let conn = Connection::over(adapter, handler, config);
            let raw = Raw::Frames(
                Some(ToEngine::Port(sender)),
                FromEngine::Channel(from_engine),
            );
            (conn, raw)
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

// Two engines back to back: on the in-memory pair they hand each other message values
// (no text between them), and must keep the same guarantees as engines joined by a byte
// pipe or by two frame adapters and a carrier.

/// Two connections joined by a transport of `kind`.
fn engines<A: Handler, B: Handler>(
    kind: Kind,
    (a, a_config): (A, Config),
    (b, b_config): (B, Config),
) -> (Connection, Connection) {
    match kind {
        Kind::Lines => {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            let (r, w) = tokio::io::split(ours);
            let (tr, tw) = tokio::io::split(theirs);
            (
                Connection::over(Lines::new(r, w), a, a_config),
                Connection::over(Lines::new(tr, tw), b, b_config),
            )
        }
        Kind::Memory => {
            let (ours, theirs) = memory_pair(8);
            (
                Connection::over(ours, a, a_config),
                Connection::over(theirs, b, b_config),
            )
        }
        Kind::Frames => {
            // A carrier moving each frame from one adapter to the other.
            let (a_end, a_port) = frame_adapter(8);
            let (b_end, b_port) = frame_adapter(8);
            let carry = |mut from: acp_rpc::transport::FrameReceiver,
                         to: acp_rpc::transport::FrameSender| async move {
                while let Some(frame) = from.recv().await {
                    if to.send(frame).await.is_err() {
                        break;
                    }
                }
            };
            tokio::spawn(carry(a_port.receiver, b_port.sender));
            tokio::spawn(carry(b_port.receiver, a_port.sender));
            (
                Connection::over(a_end, a, a_config),
                Connection::over(b_end, b, b_config),
            )
        }
        // Both engines drive the carrier: each one's sink fills the other's source.
        Kind::Driven => {
            let (a_to_b, b_incoming) = mpsc::channel(8);
            let (b_to_a, a_incoming) = mpsc::channel(8);
            let a_end = FrameAdapter::driven(
                ChannelSource(a_incoming),
                ChannelSink(PollSender::new(a_to_b)),
            );
            let b_end = FrameAdapter::driven(
                ChannelSource(b_incoming),
                ChannelSink(PollSender::new(b_to_a)),
            );
            (
                Connection::over(a_end, a, a_config),
                Connection::over(b_end, b, b_config),
            )
        }
        // One engine reads a source that the other's sink fills: no carrier task that way.
        // The other way, a carrier moves each frame.
        Kind::Source | Kind::Sink => {
            let (b_to_a, a_incoming) = mpsc::channel(8);
            let (a_end, a_receiver) = FrameAdapter::reading(ChannelSource(a_incoming), 8);
            let (b_end, b_sender) = FrameAdapter::writing(ChannelSink(PollSender::new(b_to_a)), 8);
            tokio::spawn(async move {
                let mut from = a_receiver;
                while let Some(frame) = from.recv().await {
                    if b_sender.send(frame).await.is_err() {
                        break;
                    }
                }
            });
            (
                Connection::over(a_end, a, a_config),
                Connection::over(b_end, b, b_config),
            )
        }
    }
}

#[tokio::test]
async fn two_engines_keep_order_and_answers_on_every_transport() {
    for kind in ALL {
        let recorder = Recorder::default();
        let (a, _b) = engines(
            kind,
            (Recorder::default(), Config::default()),
            (recorder.clone(), Config::default()),
        );
        let peer = a.peer();
        for i in 0..200 {
            peer.notify("n", &json!({"i": i, "text": "a\nb \"quoted\""}))
                .await
                .unwrap();
        }
        let seen: Vec<Value> = peer.request("seen", &()).await.unwrap();
        let expected: Vec<Value> = (0..200)
            .map(|i| json!({"i": i, "text": "a\nb \"quoted\""}))
            .collect();
        assert_eq!(seen, expected, "{kind:?}");
        let echoed: Value = peer
            .request("echo", &json!([1, {"x": null}]))
            .await
            .unwrap();
        assert_eq!(echoed, json!([1, {"x": null}]), "{kind:?}");
        let echoed: Value = peer.request("echo", &()).await.unwrap();
        assert_eq!(echoed, Value::Null, "{kind:?}: absent params are null");
        let error = peer
            .request::<_, Value>("nope", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(error.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND, "{kind:?}");
        assert_eq!(recorder.0.lock().unwrap().len(), 200, "{kind:?}");
    }
}

#[tokio::test]
async fn a_message_over_the_readers_limit_is_refused_between_two_engines() {
    for kind in ALL {
        let (a, b) = engines(
            kind,
            (Recorder::default(), Config::default()),
            (
                Recorder::default(),
                Config::default().with_max_message_size(MAX),
            ),
        );
        let options = acp_rpc::CallOptions::default().timeout(Duration::from_millis(300));
        let big = "x".repeat(MAX);
        let refused = a
            .peer()
            .request_with::<_, Value>("echo", &big, options)
            .await
            .unwrap_err();
        // The reader answers an over-long message with `id: null`, so the call is not
        // answered: it times out, and both ends serve on.
        assert_eq!(
            refused.code,
            acp_rpc::ErrorCode::REQUEST_TIMED_OUT,
            "{kind:?}"
        );
        let small: Value = a.peer().request("echo", &[1]).await.unwrap();
        assert_eq!(small, json!([1]), "{kind:?}");
        // Just under the limit passes: the limit is the message's text's length.
        let head = r#"{"jsonrpc":"2.0","id":3,"method":"echo","params":""}"#.len();
        let fits = "y".repeat(MAX - head);
        let echoed: String = a.peer().request("echo", &fits).await.unwrap();
        assert_eq!(echoed.len(), fits.len(), "{kind:?}");
        assert!(!b.peer().is_closed(), "{kind:?}");
    }
}

#[tokio::test]
async fn the_tap_and_the_observer_see_the_same_text_on_every_transport() {
    use acp_rpc::observe::{MessageEvent, Observer};
    use acp_rpc::{Direction, TapEvent};

    #[derive(Default)]
    struct Sizes(Mutex<Vec<(Direction, usize, Option<String>)>>);
    impl Observer for Sizes {
        fn message(&self, event: &MessageEvent<'_>) {
            let session = event.session_id().map(str::to_owned);
            self.0
                .lock()
                .unwrap()
                .push((event.direction, event.size, session));
        }
    }

    let mut per_kind = Vec::new();
    for kind in ALL {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let tapped = lines.clone();
        let tap = acp_rpc::tap::on_line(move |event: TapEvent<'_>| {
            if let TapEvent::Line(direction, line) = event {
                tapped.lock().unwrap().push((direction, line.to_vec()));
            }
        });
        let sizes = Arc::new(Sizes::default());
        let (a, _b) = engines(
            kind,
            (Recorder::default(), Config::default().with_observer(tap)),
            (
                Recorder::default(),
                Config::default().with_observer(sizes.clone()),
            ),
        );
        a.peer()
            .notify("n", &json!({"sessionId": "s-1"}))
            .await
            .unwrap();
        let _: Value = a
            .peer()
            .request("echo", &json!({"sessionId": "s-2"}))
            .await
            .unwrap();
        let lines = lines.lock().unwrap().clone();
        assert_eq!(lines.len(), 3, "{kind:?}: {lines:?}");
        let sizes = sizes.0.lock().unwrap().clone();
        assert_eq!(sizes.len(), 3, "{kind:?}: {sizes:?}");
        for ((direction, line), (seen_as, size, _)) in lines.iter().zip(&sizes) {
            // What one engine wrote, the other read: the same text, the same length.
            assert_ne!(direction, seen_as, "{kind:?}");
            assert_eq!(line.len(), *size, "{kind:?}");
            serde_json::from_slice::<Value>(line).expect("the tap sees JSON");
        }
        let sessions: Vec<_> = sizes.iter().map(|s| s.2.clone()).collect();
        assert_eq!(
            sessions,
            [Some("s-1".into()), Some("s-2".into()), Some("s-2".into())],
            "{kind:?}"
        );
        per_kind.push(lines);
    }
    assert!(
        per_kind.windows(2).all(|w| w[0] == w[1]),
        "every transport shows the same text: {per_kind:?}"
    );
}
