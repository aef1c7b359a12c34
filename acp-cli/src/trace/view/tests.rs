//! Tests of the view module.

use super::*;

fn rec(ts: f64, dir: &str, line: &str) -> String {
    let mut r = Record::new(ts, dir);
    r.line = Some(line.to_owned());
    serde_json::to_string(&r).unwrap() + "\n"
}

fn sample() -> String {
    let mut s = String::new();
    s += &rec(
        10.000,
        record::CLIENT_TO_AGENT,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
    );
    s += &rec(
        10.002,
        record::AGENT_TO_CLIENT,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
    );
    s += &rec(
        10.003,
        record::CLIENT_TO_AGENT,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#,
    );
    s += &rec(
        10.004,
        record::AGENT_TO_CLIENT,
        r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#,
    );
    s += &rec(
        10.005,
        record::CLIENT_TO_AGENT,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1"}}"#,
    );
    s += &rec(
        10.006,
        record::AGENT_TO_CLIENT,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk"}}}"#,
    );
    s += &rec(
        10.007,
        record::AGENT_TO_CLIENT,
        r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1"}}"#,
    );
    s += &rec(
        10.009,
        record::CLIENT_TO_AGENT,
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"boom"}}"#,
    );
    s += &rec(
        10.015,
        record::AGENT_TO_CLIENT,
        r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
    );
    s
}

#[test]
fn requests_pair_with_responses_by_direction_and_id() {
    let a = analyse(&parse(sample().as_bytes()));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    // Both sides used id 0: the pairs stay apart.
    let init = &a.messages[0];
    assert_eq!(
        (init.pair, init.method.as_deref()),
        (Some(1), Some("initialize"))
    );
    assert!((init.latency.unwrap() - 2.0).abs() < 0.01);
    let permission = &a.messages[6];
    assert_eq!(permission.pair, Some(7));
    assert_eq!(a.messages[7].kind, "error");
    assert_eq!(a.messages[7].error.as_deref(), Some("-32603 boom"));
    assert_eq!(
        a.messages[7].method.as_deref(),
        Some("session/request_permission")
    );
    let prompt = &a.requests["session/prompt"];
    assert_eq!(
        (prompt.requests, prompt.errors, prompt.unanswered),
        (1, 0, 0)
    );
    assert!((prompt.latencies[0] - 10.0).abs() < 0.01);
    assert_eq!(a.notifications["session/update"], 1);
    assert_eq!(a.sessions.len(), 1);
    assert_eq!(a.sessions[0].id, "s1");
    assert_eq!(a.sessions[0].state, "open");
    assert_eq!(a.sessions[0].updates["agent_message_chunk"], 1);
}

#[test]
fn a_pending_prompt_means_prompting_and_an_exit_means_ended() {
    let all = sample();
    let lines: Vec<&str> = all.lines().collect();
    let without_answer = lines[..8].join("\n") + "\n";
    let a = analyse(&parse(without_answer.as_bytes()));
    assert_eq!(a.sessions[0].state, "prompting");
    assert_eq!(a.requests["session/prompt"].unanswered, 1);
    let mut exit = Record::new(10.5, record::EXIT);
    exit.code = Some(0);
    let ended = without_answer + &serde_json::to_string(&exit).unwrap() + "\n";
    let a = analyse(&parse(ended.as_bytes()));
    assert_eq!(a.sessions[0].state, "ended");
    assert_eq!(a.exit.as_deref(), Some("exit code 0"));
}

#[test]
fn bad_lines_are_reported_by_number() {
    let mut text = sample();
    text.insert_str(0, "not json\n");
    let cut = text.len() - 20;
    let t = parse(&text.as_bytes()[..cut]);
    assert_eq!(t.problems.len(), 2, "{:?}", t.problems);
    assert!(
        t.problems[0].starts_with("line 1: not a trace record"),
        "{:?}",
        t.problems
    );
    assert_eq!(
        t.problems[1],
        "line 10: truncated (the file ends inside a record)"
    );
    assert_eq!(t.records.len(), 8);
}

#[test]
fn pairs_follow_seq_even_when_the_file_holds_an_answer_first() {
    let mut request = Record::new(1.0, record::AGENT_TO_CLIENT);
    request.seq = Some(0);
    request.line = Some(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{}}"#.into(),
    );
    let mut answer = Record::new(1.001, record::CLIENT_TO_AGENT);
    answer.seq = Some(1);
    answer.line = Some(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into());
    let text: String = [&answer, &request]
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    let a = analyse(&parse(text.as_bytes()));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(a.messages[0].kind, "request");
    assert_eq!(a.messages[0].line, 2);
    assert_eq!(a.messages[0].pair, Some(1));
    assert_eq!(a.requests["session/request_permission"].unanswered, 0);
}

#[test]
fn quantiles_use_the_nearest_rank() {
    let v: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(quantile(&v, 0.5), Some(50.0));
    assert_eq!(quantile(&v, 0.99), Some(99.0));
    assert_eq!(quantile(&[3.0], 0.99), Some(3.0));
    assert_eq!(quantile(&[], 0.5), None);
}

#[test]
fn the_summary_names_methods_latencies_and_errors() {
    let a = analyse(&parse(sample().as_bytes()));
    let s = summary(&a, "t.ndjson");
    assert!(
        s.contains("trace t.ndjson: 9 messages (4 client to agent, 5 agent to client)"),
        "{s}"
    );
    assert!(s.contains("session/prompt"), "{s}");
    assert!(s.contains("10.00"), "{s}");
    assert!(
        s.contains("line 8: session/request_permission (id 0): -32603 boom"),
        "{s}"
    );
}
