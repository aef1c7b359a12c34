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

/// Issue 46, one wire record: every producer's output reads back in `acp trace view`.
mod producers {
    use acp_rpc::record::Role;
    use acp_rpc::{Config, Connection, Error, Handler, Params, RawValue, RequestContext};

    use super::*;

    struct Echo;

    #[acp_rpc::async_trait]
    impl Handler for Echo {
        async fn handle_request(
            &self,
            _cx: RequestContext,
            _method: &str,
            params: Params,
        ) -> Result<Box<RawValue>, Error> {
            acp_rpc::to_raw(&params.parse::<serde_json::Value>()?)
        }
    }

    fn text(records: &[Record]) -> String {
        records.iter().map(|r| r.to_json() + "\n").collect()
    }

    /// acp-rpc's recording tap, on the client's side of a real connection.
    #[tokio::test]
    async fn the_engine_taps_records_read_as_a_paired_request() {
        let (tap, mut rx) = acp_rpc::tap::recorder(Role::Client);
        let (ours, theirs) = tokio::io::duplex(4096);
        let (r, w) = tokio::io::split(ours);
        let client = Connection::new(r, w, Echo, Config::default().with_observer(tap));
        let (r, w) = tokio::io::split(theirs);
        let _agent = Connection::new(r, w, Echo, Config::default());
        let answer: serde_json::Value = client
            .peer()
            .request("session/new", &serde_json::json!({"cwd": "/"}))
            .await
            .unwrap();
        assert_eq!(answer["cwd"], "/");
        client.close();
        let mut records = Vec::new();
        while let Some(record) = rx.recv().await {
            records.push(record);
            if records.len() == 2 {
                break;
            }
        }
        let trace = parse(text(&records).as_bytes());
        assert!(trace.problems.is_empty(), "{:?}", trace.problems);
        let analysis = analyse(&trace);
        assert_eq!(analysis.messages.len(), 2);
        assert_eq!(analysis.messages[0].dir, "c2a");
        assert_eq!(analysis.messages[1].kind, "response");
        assert_eq!(analysis.messages[0].pair, Some(1));
        assert_eq!(analysis.requests["session/new"].requests, 1);
    }

    /// `acp check --trace`: the kit's trace events are wire records.
    #[test]
    fn acp_check_trace_events_read_back() {
        let command = vec!["agent".to_owned()];
        let events = [
            acp_check::TraceEvent::Start { command: &command },
            acp_check::TraceEvent::Line {
                seq: 0,
                ts: 5.0,
                to_agent: true,
                line: r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
                lossy: false,
            },
            acp_check::TraceEvent::Line {
                seq: 1,
                ts: 5.001,
                to_agent: false,
                line: r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#,
                lossy: false,
            },
            acp_check::TraceEvent::Exit {
                code: Some(0),
                signal: None,
            },
        ];
        let records: Vec<Record> = events.iter().map(|e| e.record()).collect();
        let trace = parse(text(&records).as_bytes());
        assert!(trace.problems.is_empty(), "{:?}", trace.problems);
        let analysis = analyse(&trace);
        assert_eq!(analysis.messages.len(), 2);
        assert_eq!(analysis.messages[0].pair, Some(1));
        assert_eq!(analysis.requests["initialize"].requests, 1);
    }

    /// The interop suite's relay writes wire records (its own test reads them back with
    /// `Record::parse`, this reader's); transcripts written before that are still read.
    #[test]
    fn a_former_interop_transcript_reads_back() {
        let old = concat!(
            r#"{"seq":1,"us":100,"from":"client","line":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}"}"#,
            "\n",
            r#"{"seq":2,"us":2100,"from":"agent","line":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"}"#,
            "\n"
        );
        let trace = parse(old.as_bytes());
        assert!(trace.problems.is_empty(), "{:?}", trace.problems);
        let analysis = analyse(&trace);
        assert_eq!(analysis.messages.len(), 2);
        assert_eq!(analysis.messages[1].dir, "a2c");
        let latency = analysis.messages[0].latency.unwrap();
        assert!((latency - 2.0).abs() < 1e-6, "{latency}");
    }
}

/// A v2 turn: the prompt is answered when accepted, and the session's state follows its
/// `state_update`s (running, requires_action, idle with its stop reason); the protocol is
/// the agent's answer to `initialize`.
fn v2_turn(until: usize) -> String {
    let lines = [
        (
            record::CLIENT_TO_AGENT,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#,
        ),
        (
            record::AGENT_TO_CLIENT,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}}"#,
        ),
        (
            record::CLIENT_TO_AGENT,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#,
        ),
        (
            record::AGENT_TO_CLIENT,
            r#"{"jsonrpc":"2.0","id":1,"result":{"messageId":"m1"}}"#,
        ),
        (
            record::AGENT_TO_CLIENT,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"running"}}}"#,
        ),
        (
            record::AGENT_TO_CLIENT,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"requires_action"}}}"#,
        ),
        (
            record::AGENT_TO_CLIENT,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}"#,
        ),
    ];
    lines[..until]
        .iter()
        .enumerate()
        .map(|(i, (dir, line))| rec(10.0 + i as f64 / 1000.0, dir, line))
        .collect()
}

#[test]
fn a_v2_sessions_state_follows_its_state_updates() {
    let states: Vec<&str> = [5, 6, 7]
        .into_iter()
        .map(|until| analyse(&parse(v2_turn(until).as_bytes())).sessions[0].state)
        .collect();
    assert_eq!(states, ["prompting", "waiting", "open"]);
    let a = analyse(&parse(v2_turn(7).as_bytes()));
    assert_eq!(a.protocol, Some(2));
    assert_eq!(a.sessions[0].stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(a.sessions[0].updates["state_update"], 3);
    let idle = a.messages.last().unwrap();
    assert_eq!(
        (idle.state.as_deref(), idle.stop_reason.as_deref()),
        (Some("idle"), Some("end_turn"))
    );
    let text = summary(&a, "t");
    assert!(text.contains("protocol: v2\n"), "{text}");
    assert!(
        text.contains("s1  open  1 prompt(s), 0 error(s), last turn: end_turn"),
        "{text}"
    );
}

#[test]
fn a_v1_turn_shows_its_stop_reason_and_the_offered_version_stands_without_an_answer() {
    let a = analyse(&parse(sample().as_bytes()));
    assert_eq!(a.protocol, Some(1));
    assert_eq!(a.sessions[0].stop_reason.as_deref(), Some("end_turn"));
    let offer_only = v2_turn(1);
    assert_eq!(analyse(&parse(offer_only.as_bytes())).protocol, Some(2));
}
