//! One observer slot, several observers (issue 46, "`tap`/`observe`/`flow` one observer"): a
//! connection given a wire recorder and a counting observer tells each of them every raw
//! line and every message and request event, the same as a lone observer is told.

mod common;

use std::sync::{Arc, Mutex};

use acp_rpc::observe::{MessageEvent, Observer, RequestEvent};
use acp_rpc::record::{AGENT_TO_CLIENT, CLIENT_TO_AGENT, Role};
use acp_rpc::{Config, Direction, TapEvent};
use common::{TestHandler, pair};
use serde_json::{Value, json};

/// Counts what it is told: each line with its text, each message with its size, each
/// finished request.
#[derive(Default)]
struct Counter {
    lines: Mutex<Vec<(Direction, String)>>,
    messages: Mutex<Vec<(Direction, usize)>>,
    requests: Mutex<Vec<(Direction, String)>>,
}

impl Observer for Counter {
    fn line(&self, event: TapEvent<'_>) {
        if let TapEvent::Line(direction, line) = event {
            let line = String::from_utf8_lossy(line).into_owned();
            self.lines.lock().unwrap().push((direction, line));
        }
    }
    fn message(&self, event: &MessageEvent<'_>) {
        let seen = (event.direction, event.size);
        self.messages.lock().unwrap().push(seen);
    }
    fn request(&self, event: &RequestEvent<'_>) {
        let seen = (event.direction, event.method.to_owned());
        self.requests.lock().unwrap().push(seen);
    }
}

impl Counter {
    fn lines(&self, direction: Direction) -> Vec<String> {
        let lines = self.lines.lock().unwrap();
        let this_way = lines.iter().filter(|(d, _)| *d == direction);
        this_way.map(|(_, line)| line.clone()).collect()
    }
    fn messages(&self, direction: Direction) -> Vec<usize> {
        let messages = self.messages.lock().unwrap();
        let this_way = messages.iter().filter(|(d, _)| *d == direction);
        this_way.map(|(_, size)| *size).collect()
    }
}

#[tokio::test]
async fn a_recorder_and_a_counter_on_one_connection_each_get_every_line_and_every_event() {
    use Direction::{Incoming, Outgoing};

    let (recorder, mut records) = acp_rpc::tap::recorder(Role::Client);
    let counter = Arc::new(Counter::default());
    // The other side's lone tap: what crossed the wire, to compare with.
    let (tap, mut theirs) = acp_rpc::tap::channel();
    let config = Config::default()
        .with_observer(recorder)
        .with_observer(counter.clone());
    assert!(
        format!("{config:?}").contains("observer: true"),
        "{config:?}"
    );
    let (a, b) = pair(
        TestHandler::new(),
        config,
        TestHandler::new(),
        Config::default().with_observer(tap),
    );

    let sum: i64 = a
        .peer()
        .request("add", &json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(sum, 5);
    let note = json!({"sessionId": "s-1", "seq": 0});
    a.peer().notify("note", &note).await.unwrap();
    let back: Value = b
        .peer()
        .request("echo", &json!({"sessionId": "s-2"}))
        .await
        .unwrap();
    assert_eq!(back["sessionId"], "s-2");
    // A line that is no message: told as a line only (b answers it with -32700).
    a.peer().send_raw(&b"not json"[..]).await.unwrap();
    // Answered after everything above was read and written on both sides.
    let notes: usize = a.peer().request("notes_seen", &json!({})).await.unwrap();
    assert_eq!(notes, 1);

    let mut their_lines = Vec::new();
    while let Ok((direction, line)) = theirs.try_recv() {
        their_lines.push((direction, String::from_utf8(line.to_vec()).unwrap()));
    }
    let their = |direction: Direction| -> Vec<String> {
        let this_way = their_lines.iter().filter(|(d, _)| *d == direction);
        this_way.map(|(_, line)| line.clone()).collect()
    };

    // The counter: every line both ways, the same lines the other side tapped.
    let (sent, read) = (counter.lines(Outgoing), counter.lines(Incoming));
    assert_eq!(
        sent.len(),
        5,
        "add, note, echo's answer, the raw line, notes_seen: {sent:?}"
    );
    assert_eq!(
        read.len(),
        4,
        "add's and notes_seen's answers, echo, -32700: {read:?}"
    );
    assert_eq!(sent, their(Incoming));
    assert_eq!(read, their(Outgoing));
    assert!(read.iter().any(|line| line.contains("-32700")), "{read:?}");
    assert_eq!(sent[3], "not json");

    // Every message but the raw line, with the sizes of their lines.
    let sizes = |lines: &[String]| -> Vec<usize> {
        let messages = lines.iter().filter(|line| line.starts_with('{'));
        messages.map(String::len).collect()
    };
    assert_eq!(counter.messages(Outgoing), sizes(&sent));
    assert_eq!(counter.messages(Incoming), sizes(&read));
    let mut requests = counter.requests.lock().unwrap().clone();
    requests.sort_by(|x, y| x.1.cmp(&y.1));
    assert_eq!(
        requests,
        [
            (Outgoing, "add".to_owned()),
            (Incoming, "echo".to_owned()),
            (Outgoing, "notes_seen".to_owned()),
        ]
    );

    // The recorder: the same lines in the same order, numbered, named by role.
    let mut recorded = Vec::new();
    while let Ok(record) = records.try_recv() {
        recorded.push(record);
    }
    let all = counter.lines.lock().unwrap().clone();
    assert_eq!(recorded.len(), all.len());
    for (seq, (record, (direction, line))) in recorded.iter().zip(&all).enumerate() {
        assert_eq!(record.seq, Some(seq as u64));
        let dir = match direction {
            Outgoing => CLIENT_TO_AGENT,
            Incoming => AGENT_TO_CLIENT,
        };
        assert_eq!(
            (record.dir.as_str(), record.line.as_deref()),
            (dir, Some(&line[..]))
        );
    }
}
