//! Tests of the window module: skeletons, bounds and the analysis of a window.

use super::*;

fn line(ts: f64, dir: &str, seq: u64, text: &str) -> Record {
    let mut r = Record::new(ts, dir);
    r.seq = Some(seq);
    r.line = Some(text.to_owned());
    r
}

#[test]
fn a_skeleton_keeps_what_the_analysis_reads_and_nothing_big() {
    let big = "x".repeat(100_000);
    let text = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"text":"{big}"}}}}}}}}"#
    );
    let kept = skeleton(&text);
    assert_eq!(
        kept,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk"}}}"#
    );
    let error =
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown mode","data":[1,2]}}"#;
    let kept: Value = serde_json::from_str(&skeleton(error)).unwrap();
    assert_eq!(
        kept,
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "unknown mode"}})
    );
    // Strings are cut, escapes and all, and an entry stays under its bound.
    let nasty = "\u{1}".repeat(10_000);
    let text = format!(
        r#"{{"method":"{nasty}","id":"{nasty}","params":{{"sessionId":"{nasty}","update":{{"sessionUpdate":"{nasty}","state":"{nasty}","stopReason":"{nasty}"}}}},"result":{{"sessionId":"{nasty}","stopReason":"{nasty}"}},"error":{{"code":"{nasty}","message":"{nasty}"}}}}"#
    )
    .replace("\u{1}", "\\u0001");
    let kept = skeleton(&text);
    assert!(kept.len() <= ENTRY_BYTES, "{}", kept.len());
    assert!(kept.contains("\"sessionId\""));
    // Not an object: kept as the start of the line (the analysis calls it invalid).
    assert_eq!(skeleton(&"[1,2,3]".repeat(1000)).len(), FIELD_BYTES);
    assert_eq!(skeleton("é".repeat(500).as_str()).len(), FIELD_BYTES);
}

/// The one-pass reading gives what the full parse gives, on every shape a field can
/// take (and falls back to it on what it cannot read, such as a duplicate key).
#[test]
fn the_one_pass_skeleton_equals_the_full_parse() {
    let lines = [
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\"1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"sessionId":"s2","modes":[1,{"a":2}]}}"#,
        r#"{"jsonrpc":"2.0","id":"x","result":{"stopReason":"end_turn"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":{"odd":[1,2]},"method":3,"params":[1,"s"]}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"error":{"code":-32602,"message":"bad \u00e9","data":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"error":"not an object"}"#,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":"x","message":5}}"#,
        r#"{"method":"m","params":{"sessionId":5,"update":[1]}}"#,
        r#"{"method":"m","params":{"update":{"sessionUpdate":null}},"result":[]}"#,
        r#"{"id":1,"id":2,"method":"dup"}"#,
        r#"{"method":"m","params":{"sessionId":"a","sessionId":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientInfo":{}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a"}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":70000}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","background":[]}}}"#,
        r#"  {"method":"spaces"}  "#,
        r#"{"method":"m"} trailing"#,
        r#"[1,2]"#,
        "",
    ];
    for line in lines {
        for connection in [None, Some(3)] {
            assert_eq!(
                skeleton_tagged(line, connection),
                skeleton_full(line, connection),
                "{line}"
            );
        }
    }
    let long = "y".repeat(1000);
    let line = format!(r#"{{"id":"{long}","method":"{long}"}}"#);
    let kept = skeleton_tagged(&line, Some(12));
    assert_eq!(kept, skeleton_full(&line, Some(12)));
    assert!(kept.contains(r#""id":"12:yyy"#), "{kept}");
}

#[test]
fn the_window_keeps_the_newest_and_reads_as_a_partial_trace() {
    let mut w = Window::new(4);
    let mut start = Record::new(0.0, record::START);
    start.command = Some(vec!["agent".into()]);
    w.push(&start);
    for i in 0..5u64 {
        let id = i;
        w.push(&line(i as f64, record::CLIENT_TO_AGENT, 2 * i, &format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s1"}}}}"#
        )));
        w.push(&line(
            i as f64 + 0.5,
            record::AGENT_TO_CLIENT,
            2 * i + 1,
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#),
        ));
    }
    assert_eq!((w.len(), w.total()), (4, 10));
    let a = w.analysis();
    assert_eq!(a.messages.len(), 4);
    assert_eq!(a.messages[0].line, 7, "numbered since the start");
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(a.command.as_deref(), Some(&["agent".to_owned()][..]));
    let live = a.live.unwrap();
    assert_eq!((live.total, live.limit), (10, 4));
    assert_eq!(a.requests["session/prompt"].latencies.len(), 2);
}

/// The window keeps what the analysis reads of v2: the handshake's versions, each
/// `state_update`'s state and a turn's stop reason.
#[test]
fn a_window_reads_a_v2_turn() {
    let mut w = Window::new(100);
    let lines = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"messageId":"m1"}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"running"}}}"#,
    ];
    for (i, text) in lines.iter().enumerate() {
        let dir = if i % 2 == 0 && i < 4 {
            record::CLIENT_TO_AGENT
        } else {
            record::AGENT_TO_CLIENT
        };
        w.push(&line(i as f64, dir, i as u64, text));
    }
    let a = w.analysis();
    assert_eq!(a.protocol, Some(2));
    assert_eq!(a.sessions[0].state, "prompting");
    w.push(&line(
        9.0,
        record::AGENT_TO_CLIENT,
        9,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}"#,
    ));
    let a = w.analysis();
    assert_eq!(a.sessions[0].state, "open");
    assert_eq!(a.sessions[0].stop_reason.as_deref(), Some("cancelled"));
}

/// A million messages through the window: it never holds more than its limit, nor more
/// than its byte bound. The short form runs in CI; the full one by hand:
/// `cargo test -p acp-cli --bin acp --release -- --ignored million_messages`.
fn flood(count: u64) -> Window {
    let mut w = Window::new(LIMIT);
    let mut peak = 0;
    for i in 0..count {
        let text = if i % 3 == 0 {
            format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"session/prompt","params":{{"sessionId":"s{}","prompt":[]}}}}"#,
                i % 7
            )
        } else if i % 3 == 1 {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s{}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"chunk {i}"}}}}}}}}"#,
                i % 7
            )
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"stopReason":"end_turn"}}}}"#,
                i - 2
            )
        };
        let dir = if i % 3 == 0 {
            record::CLIENT_TO_AGENT
        } else {
            record::AGENT_TO_CLIENT
        };
        w.push(&line(i as f64 / 1000.0, dir, i, &text));
        peak = peak.max(w.bytes());
        assert!(w.len() <= LIMIT);
    }
    assert!(peak <= LIMIT * ENTRY_BYTES, "{peak}");
    assert_eq!(w.total(), count);
    assert_eq!(w.len(), LIMIT.min(count as usize));
    w
}

#[test]
fn twenty_thousand_messages_stay_in_the_window() {
    let w = flood(20_000);
    assert!(w.bytes() < LIMIT * 200, "{} bytes", w.bytes());
    let a = w.analysis();
    assert_eq!(a.messages.len(), LIMIT);
    assert!(
        a.problems.is_empty(),
        "{:?}",
        &a.problems[..3.min(a.problems.len())]
    );
}

#[test]
#[ignore = "10^6 messages: run by hand (see flood)"]
fn million_messages_stay_in_the_window() {
    let w = flood(1_000_000);
    assert!(w.bytes() < LIMIT * 200, "{} bytes", w.bytes());
}
