//! `Peer::notify_value` and `Handler::start_notification_value`: between the engines of a
//! memory pair a notification crosses as the sender's value, and a handler that takes that
//! type gets it without JSON; anything else (a handler that gives it back, an observer, a
//! transport of text, a hand-driven end) sees the same notification as text, in order.

use std::sync::{Arc, Mutex};

use acp_rpc::observe::Observer;
use acp_rpc::transport::memory_pair;
use acp_rpc::{
    Config, Connection, Direction, Error, Handler, NotificationContext, Params, ParamsValue,
    RawValue, RequestContext, StartedNotification, TapEvent, async_trait, to_raw,
};
use serde::Serialize;

#[derive(Debug, Serialize, PartialEq)]
struct Chunk {
    n: u32,
    text: String,
}

fn chunk(n: u32) -> Chunk {
    Chunk {
        n,
        text: format!("part \"{n}\""),
    }
}

/// Records each notification as `value <n>` (taken as a value) or `text <method> <params>`.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
    /// Gives every value back, to be read as text.
    declines: bool,
}

#[async_trait]
impl Handler for Recorder {
    async fn handle_request(
        &self,
        cx: RequestContext,
        _method: &str,
        _params: Params,
    ) -> Result<Box<RawValue>, Error> {
        cx.notifications_handled().await;
        to_raw(&*self.seen.lock().unwrap())
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let text = params.raw().map_or("-", RawValue::get);
        self.seen
            .lock()
            .unwrap()
            .push(format!("text {method} {text}"));
        Ok(())
    }

    fn start_notification_value(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: ParamsValue,
    ) -> Result<StartedNotification, ParamsValue> {
        if self.declines || method != "chunk" {
            return Err(params);
        }
        let chunk = params.downcast::<Chunk>()?;
        Ok(StartedNotification::new("chunk", async move {
            assert_eq!(chunk.text, format!("part \"{}\"", chunk.n));
            self.seen.lock().unwrap().push(format!("value {}", chunk.n));
            Ok(())
        }))
    }
}

async fn seen(client: &Connection) -> Vec<String> {
    client.peer().request("seen", &()).await.unwrap()
}

#[tokio::test]
async fn a_value_reaches_a_handler_that_takes_it_without_json_in_order_with_text() {
    let (a, b) = memory_pair(8);
    let _server = Connection::over(a, Recorder::default(), Config::default());
    let client = Connection::over(b, (), Config::default());
    let peer = client.peer();
    peer.notify_value("chunk", chunk(1)).await.unwrap();
    peer.notify("chunk", &chunk(2)).await.unwrap();
    // Another type than the handler's: given back, read as text.
    peer.notify_value("chunk", "just text".to_string())
        .await
        .unwrap();
    peer.notify_value("other", chunk(3)).await.unwrap();
    peer.notify_value("chunk", chunk(4)).await.unwrap();
    assert_eq!(
        seen(&client).await,
        [
            "value 1",
            r#"text chunk {"n":2,"text":"part \"2\""}"#,
            r#"text chunk "just text""#,
            r#"text other {"n":3,"text":"part \"3\""}"#,
            "value 4",
        ]
    );
}

#[tokio::test]
async fn a_handler_that_gives_the_value_back_reads_the_same_notification_as_text() {
    let (a, b) = memory_pair(8);
    let recorder = Recorder {
        declines: true,
        ..Recorder::default()
    };
    let _server = Connection::over(a, recorder, Config::default());
    let client = Connection::over(b, (), Config::default());
    client.peer().notify_value("chunk", chunk(7)).await.unwrap();
    assert_eq!(
        seen(&client).await,
        [r#"text chunk {"n":7,"text":"part \"7\""}"#]
    );
}

/// Collects the lines an observer is told.
#[derive(Default)]
struct Lines(Mutex<Vec<(Direction, String)>>);

impl Observer for Lines {
    fn line(&self, event: TapEvent<'_>) {
        if let TapEvent::Line(direction, line) = event {
            let text = String::from_utf8_lossy(line).into_owned();
            self.0.lock().unwrap().push((direction, text));
        }
    }
}

#[tokio::test]
async fn an_observer_on_either_side_sees_the_text_and_the_handler_reads_it() {
    let line = r#"{"jsonrpc":"2.0","method":"chunk","params":{"n":5,"text":"part \"5\""}}"#;
    for watched_side in ["sender", "receiver"] {
        let lines = Arc::new(Lines::default());
        let watched = Config::default().with_observer(lines.clone());
        let (server_config, client_config) = match watched_side {
            "sender" => (Config::default(), watched),
            _ => (watched, Config::default()),
        };
        let (a, b) = memory_pair(8);
        let _server = Connection::over(a, Recorder::default(), server_config);
        let client = Connection::over(b, (), client_config);
        client.peer().notify_value("chunk", chunk(5)).await.unwrap();
        assert_eq!(
            seen(&client).await,
            [r#"text chunk {"n":5,"text":"part \"5\""}"#],
            "{watched_side} watched"
        );
        let told = lines.0.lock().unwrap();
        assert!(
            told.iter().any(|(_, text)| text == line),
            "{watched_side} watched: {told:?}"
        );
    }
}

#[tokio::test]
async fn a_hand_driven_end_and_a_line_transport_get_the_text() {
    let (a, b) = memory_pair(8);
    let client = Connection::over(a, (), Config::default());
    let mut port = b.into_port();
    client.peer().notify_value("chunk", chunk(6)).await.unwrap();
    let frame = port.receiver.recv().await.unwrap();
    assert_eq!(
        &frame[..],
        br#"{"jsonrpc":"2.0","method":"chunk","params":{"n":6,"text":"part \"6\""}}"#
    );

    let (ours, theirs) = tokio::io::duplex(1 << 12);
    let (r, w) = tokio::io::split(ours);
    let _server = Connection::new(r, w, Recorder::default(), Config::default());
    let (r, w) = tokio::io::split(theirs);
    let client = Connection::new(r, w, (), Config::default());
    client.peer().notify_value("chunk", chunk(8)).await.unwrap();
    assert_eq!(
        seen(&client).await,
        [r#"text chunk {"n":8,"text":"part \"8\""}"#]
    );
}

/// A value whose handler panics while taking it is dropped, and the connection serves on.
#[tokio::test]
async fn a_panicking_value_handler_drops_the_notification_and_the_connection_serves_on() {
    struct Panics;
    #[async_trait]
    impl Handler for Panics {
        async fn handle_request(
            &self,
            _cx: RequestContext,
            _method: &str,
            _params: Params,
        ) -> Result<Box<RawValue>, Error> {
            to_raw(&"still here")
        }

        fn start_notification_value(
            self: Arc<Self>,
            _cx: NotificationContext,
            _method: &str,
            _params: ParamsValue,
        ) -> Result<StartedNotification, ParamsValue> {
            panic!("value handler bug")
        }
    }
    let (a, b) = memory_pair(8);
    let _server = Connection::over(a, Panics, Config::default());
    let client = Connection::over(b, (), Config::default());
    client.peer().notify_value("chunk", chunk(9)).await.unwrap();
    let answer: String = client.peer().request("ping", &()).await.unwrap();
    assert_eq!(answer, "still here");
}

/// Writes an even-numbered chunk's params by hand (marked, so the test can tell), and
/// leaves odd ones to serde.
fn even_by_hand(chunk: &Chunk, out: &mut Vec<u8>) -> bool {
    if chunk.n % 2 == 1 {
        return false;
    }
    out.extend_from_slice(format!(r#"{{"n":{},"by":"hand"}}"#, chunk.n).as_bytes());
    true
}

#[tokio::test]
async fn a_fast_writer_writes_the_text_of_what_it_covers_and_values_stay_values() {
    let fast: Option<fn(&Chunk, &mut Vec<u8>) -> bool> = Some(even_by_hand);
    // A transport of text: the fast writer's text for what it covers, serde's for the rest.
    let (ours, theirs) = tokio::io::duplex(1 << 12);
    let (r, w) = tokio::io::split(ours);
    let _server = Connection::new(r, w, Recorder::default(), Config::default());
    let (r, w) = tokio::io::split(theirs);
    let client = Connection::new(r, w, (), Config::default());
    for n in [2, 3] {
        let sent = client.peer().notify_value_with("chunk", chunk(n), fast);
        sent.await.unwrap();
    }
    assert_eq!(
        seen(&client).await,
        [
            r#"text chunk {"n":2,"by":"hand"}"#,
            r#"text chunk {"n":3,"text":"part \"3\""}"#,
        ]
    );
    // A memory pair: the value itself, never written.
    let (a, b) = memory_pair(8);
    let _server = Connection::over(a, Recorder::default(), Config::default());
    let client = Connection::over(b, (), Config::default());
    let sent = client.peer().notify_value_with("chunk", chunk(4), fast);
    sent.await.unwrap();
    assert_eq!(seen(&client).await, ["value 4"]);
}
