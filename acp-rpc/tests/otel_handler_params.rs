//! What a handler reads when the engine records spans (feature `otel`): the trace context a
//! peer of ours writes first in the params (`{"_meta":{"traceparent":"…"},…}`) parents the
//! span that handles the message and is taken off the params, on every path a message
//! takes (a notification decoded in the reader, one handled the ordinary way, a request, an
//! element of a batch) and over lines and frames alike; anything else in `_meta` reaches the
//! handler whole, and the observer sees each line as it came.

mod otel_support;

use std::sync::{Arc, Mutex};

use otel_support::Spans;

use acp_rpc::transport::{Lines, frame_adapter};
use acp_rpc::{
    Config, Connection, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    StartedNotification, async_trait, to_raw,
};
use opentelemetry::trace::SpanId;
use opentelemetry_sdk::trace::{SimpleSpanProcessor, SpanProcessor as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const SPAN: &str = "00f067aa0ba902b7";
const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Records the params text each handler was given: `fast` notifications are decoded in the
/// reader, every other one the ordinary way; a request is answered with its params.
#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

#[async_trait]
impl Handler for Seen {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        cx.notifications_handled().await;
        match method {
            "seen" => to_raw(&*self.0.lock().unwrap()),
            _ => to_raw(&params.raw().map_or("-", RawValue::get)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let text = params.raw().map_or("-", RawValue::get);
        self.0.lock().unwrap().push(format!("{method} {text}"));
        Ok(())
    }

    fn start_notification(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        if method != "fast" {
            return None;
        }
        serde_json::from_str::<Value>(params).ok()?;
        let text = format!("fast {params}");
        Some(StartedNotification::new("fast", async move {
            self.0.lock().unwrap().push(text);
            Ok(())
        }))
    }
}

/// Our `_meta`, first, before `rest` (`""` for none).
fn ours(rest: &str) -> String {
    let sep = if rest.is_empty() { "" } else { "," };
    format!(r#"{{"_meta":{{"traceparent":"{GOOD}"}}{sep}{rest}}}"#)
}

fn lines() -> Vec<String> {
    vec![
        format!(
            r#"{{"jsonrpc":"2.0","method":"fast","params":{}}}"#,
            ours(r#""a":1"#)
        ),
        format!(
            r#"{{"jsonrpc":"2.0","method":"slow","params":{}}}"#,
            ours(r#""b":2"#)
        ),
        format!(
            r#"{{"jsonrpc":"2.0","method":"fast","params":{}}}"#,
            ours("")
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}}"#,
            ours(r#""c":3"#)
        ),
        format!(
            r#"[{{"jsonrpc":"2.0","id":2,"method":"echo","params":{}}}]"#,
            ours(r#""d":4"#)
        ),
        // Kept whole: more than the trace context in `_meta`.
        format!(
            r#"{{"jsonrpc":"2.0","method":"fast","params":{{"_meta":{{"traceparent":"{GOOD}","x":1}},"e":5}}}}"#
        ),
        r#"{"jsonrpc":"2.0","id":"seen","method":"seen"}"#.to_owned(),
    ]
}

/// What every handler should have been given for [`lines`], in order, and the answers.
fn expected() -> (Vec<String>, Vec<Value>) {
    let seen = vec![
        r#"fast {"a":1}"#.to_owned(),
        r#"slow {"b":2}"#.to_owned(),
        "fast {}".to_owned(),
        format!(r#"fast {{"_meta":{{"traceparent":"{GOOD}","x":1}},"e":5}}"#),
    ];
    let answers = vec![
        json!({"jsonrpc": "2.0", "id": 1, "result": r#"{"c":3}"#}),
        json!([{"jsonrpc": "2.0", "id": 2, "result": r#"{"d":4}"#}]),
    ];
    (seen, answers)
}

/// Records spans while it lives (the connections made meanwhile record theirs).
fn recording() -> (Spans, acp_rpc::otel::Recorder, acp_rpc::otel::DefaultGuard) {
    let spans = Spans::default();
    let recorder = acp_rpc::otel::Recorder::new(SimpleSpanProcessor::new(spans.clone()));
    let guard = recorder.set_default();
    (spans, recorder, guard)
}

/// A config whose observer keeps the lines read.
fn observed() -> (Config, Arc<Mutex<Vec<String>>>) {
    let read = Arc::new(Mutex::new(Vec::new()));
    let keep = read.clone();
    let config = Config::default()
        .with_framing(acp_rpc::Framing::default().answer_batches(8))
        .with_observer(acp_rpc::tap::on_line(move |event| {
            if let acp_rpc::TapEvent::Line(acp_rpc::Direction::Incoming, line) = event {
                keep.lock()
                    .unwrap()
                    .push(String::from_utf8(line.to_vec()).unwrap());
            }
        }));
    (config, read)
}

/// Checks what the handlers were given, the answers, the spans' parents and the lines the
/// observer saw.
fn check(seen: Vec<String>, answers: Vec<Value>, spans: &Spans, read: &[String]) {
    let (want_seen, want_answers) = expected();
    assert_eq!(seen, want_seen);
    assert_eq!(answers, want_answers);
    let spans = spans.all();
    let parented = spans
        .iter()
        .filter(|s| s.parent_span_id == SpanId::from_hex(SPAN).unwrap())
        .count();
    // Four notifications (each outside a turn: a span of its own) and two requests.
    assert_eq!(parented, 6, "{spans:#?}");
    assert_eq!(read, lines());
}

#[tokio::test]
async fn over_lines_the_handler_reads_the_params_less_the_context_the_engine_took() {
    let (spans, recorder, _guard) = recording();
    let (config, read) = observed();
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (yr, mut yw) = tokio::io::split(y);
    let _conn = Connection::over(Lines::new(xr, xw), Seen::default(), config);
    for line in lines() {
        yw.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    let mut replies = BufReader::new(yr).lines();
    let mut answers = Vec::new();
    let seen = loop {
        let line = replies.next_line().await.unwrap().expect("connection open");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == "seen" {
            break serde_json::from_value(v["result"].clone()).unwrap();
        }
        answers.push(v);
    };
    recorder.force_flush().unwrap();
    check(seen, answers, &spans, &read.lock().unwrap());
}

#[tokio::test]
async fn over_frames_shared_or_not_the_handler_reads_the_same() {
    let (spans, recorder, _guard) = recording();
    let (config, read) = observed();
    let (adapter, mut port) = frame_adapter(16);
    let _conn = Connection::over(adapter, Seen::default(), config);
    let mut kept = Vec::new();
    for (i, line) in lines().into_iter().enumerate() {
        let frame = bytes::Bytes::from(line);
        if i % 2 == 0 {
            // A frame its carrier still holds: the engine may not edit it in place.
            kept.push(frame.clone());
        }
        port.sender.send(frame).await.unwrap();
    }
    let mut answers = Vec::new();
    let seen = loop {
        let frame = port.receiver.recv().await.expect("connection open");
        let v: Value = serde_json::from_slice(&frame).unwrap();
        if v["id"] == "seen" {
            break serde_json::from_value(v["result"].clone()).unwrap();
        }
        answers.push(v);
    };
    recorder.force_flush().unwrap();
    check(seen, answers, &spans, &read.lock().unwrap());
    // What the carrier kept is as it sent it.
    let sent = lines();
    for (i, frame) in kept.iter().enumerate() {
        assert_eq!(frame, sent[2 * i].as_bytes());
    }
}

/// Writes the params of a `session/update` by hand, as a direct writer of acp-types does
/// (never a `_meta` of its own).
fn by_hand(params: &Value, out: &mut Vec<u8>) -> bool {
    let Some(session) = params["sessionId"].as_str() else {
        return false;
    };
    out.extend_from_slice(format!(r#"{{"sessionId":"{session}","by":"hand"}}"#).as_bytes());
    true
}

/// A notification whose params a direct writer wrote (`Peer::notify_value_with`) carries
/// its session's turn's context first, in front of the writer's bytes, exactly as one
/// serde wrote would: the engine puts it there without looking into what the writer wrote
/// (into the room it left for it). One with no context to carry is sent as written.
#[tokio::test]
async fn a_direct_writers_notification_in_a_turn_carries_the_turns_context_first() {
    let (_spans, _recorder, _guard) = recording();
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (yr, mut yw) = tokio::io::split(y);
    let conn = Connection::over(Lines::new(xr, xw), Seen::default(), Config::default());
    let peer = conn.peer().clone();
    let prompt = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request::<_, Value>("session/prompt", &json!({"sessionId": "s-1"}))
                .await
        }
    });
    let mut lines = BufReader::new(yr).lines();
    let request: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let turn = request["params"]["_meta"]["traceparent"]
        .as_str()
        .expect("the request carries its span's context")
        .to_owned();
    let fast: Option<fn(&Value, &mut Vec<u8>) -> bool> = Some(by_hand);
    let no_turn = json!({"sessionId": "s-2"});
    for params in [json!({"sessionId": "s-1"}), no_turn, json!({"other": 1})] {
        peer.notify_value_with("session/update", params, fast)
            .await
            .unwrap();
    }
    let by_hand = lines.next_line().await.unwrap().unwrap();
    assert_eq!(
        by_hand,
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"_meta":{{"traceparent":"{turn}"}},"sessionId":"s-1","by":"hand"}}}}"#
        )
    );
    // A session with no open turn, and no span current: no context, and none of the room
    // the engine left for one.
    assert_eq!(
        lines.next_line().await.unwrap().unwrap(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-2","by":"hand"}}"#
    );
    // What the writer declines, serde writes; no session named, so no turn's context.
    let by_serde: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(by_serde["params"]["other"], 1);
    let answer =
        json!({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": "end_turn"}});
    yw.write_all(format!("{answer}\n").as_bytes())
        .await
        .unwrap();
    let answered = prompt.await.unwrap().unwrap();
    assert_eq!(answered["stopReason"], "end_turn");
}
