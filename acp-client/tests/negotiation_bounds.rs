//! Version negotiation against agents that would make it slow or unbounded: one that logs
//! 100,000 lines on stdout before it answers (replayed to the connection in one piece, not
//! line by line), one that logs past the caps (a clear error), one that never answers (one
//! deadline for the whole negotiation, not one per dialect), and one that answers a version
//! that is not 1 (refused, not taken for v1).

use std::time::Duration;

use acp_client::negotiate::{NegotiateOptions, NegotiationError, OfferOutcome};
use acp_client::{Client, Dialect};
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Quiet;
impl Client for Quiet {}

fn init() -> InitializeRequest {
    serde_json::from_value(json!({"protocolVersion": 1})).expect("a v1 initialize")
}

/// An agent on an in-memory pipe: for every probe it reads, `answer` gives what it writes
/// back (any number of lines, or none).
fn scripted_agent(
    answer: impl Fn(&Value) -> Vec<String> + Send + 'static,
) -> (
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (tr, mut tw) = tokio::io::split(theirs);
    tokio::spawn(async move {
        let mut lines = BufReader::new(tr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let mut out = String::new();
            for reply in answer(&msg) {
                out.push_str(&reply);
                out.push('\n');
            }
            if tw.write_all(out.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let (r, w) = tokio::io::split(ours);
    (r, w)
}

/// `count` log lines, then the v1 answer to a v1 `initialize`.
fn chatty(count: usize) -> impl Fn(&Value) -> Vec<String> + Send + 'static {
    move |msg| {
        if msg["method"] != "initialize" || !msg["params"]["protocolVersion"].is_number() {
            return Vec::new();
        }
        let mut lines: Vec<String> = (0..count)
            .map(|i| format!("[agent] starting up, step {i}"))
            .collect();
        lines.push(
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1}})
                .to_string(),
        );
        lines
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_lines_before_the_answer_are_kept_and_replayed_at_once() {
    let (r, w) = scripted_agent(chatty(100_000));
    let started = std::time::Instant::now();
    // Handing the kept lines back one at a time copied the whole buffer each time: about
    // 4 s for 10,000 lines, minutes for 100,000. Built once, it is a fraction of a second.
    let negotiated = tokio::time::timeout(
        Duration::from_secs(20),
        acp_client::Builder::new(Quiet)
            .negotiate(NegotiateOptions::new(init()))
            .io(r, w),
    )
    .await
    .expect("negotiation ends in well under 20 s")
    .unwrap();
    assert_eq!(negotiated.dialect, Dialect::V1);
    assert_eq!(
        negotiated.initialize.protocol_version,
        ProtocolVersion::LATEST
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn lines_past_the_caps_end_the_negotiation_with_a_clear_error() {
    // Past the line cap.
    let (r, w) = scripted_agent(chatty(1_001));
    let options = NegotiateOptions::new(init()).with_kept_limits(1_000, 1 << 20);
    let error = acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(r, w)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            NegotiationError::TooMuchBeforeAnswer {
                lines: 1_000,
                bytes: 1_048_576
            }
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "the agent wrote more than 1000 lines or 1048576 bytes before answering the handshake"
    );
    // Exactly at the line cap is fine.
    let (r, w) = scripted_agent(chatty(1_000));
    let options = NegotiateOptions::new(init()).with_kept_limits(1_000, 1 << 20);
    assert_eq!(
        acp_client::Builder::new(Quiet)
            .negotiate(options)
            .io(r, w)
            .await
            .unwrap()
            .dialect,
        Dialect::V1
    );
    // Past the byte cap: 100 lines of about 30 bytes are over 1,000 bytes.
    let (r, w) = scripted_agent(chatty(100));
    let options = NegotiateOptions::new(init()).with_kept_limits(1_000_000, 1_000);
    let error = acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(r, w)
        .await
        .unwrap_err();
    assert!(
        matches!(error, NegotiationError::TooMuchBeforeAnswer { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_silent_agent_costs_one_deadline_whatever_the_number_of_dialects() {
    for dialects in [
        vec![Dialect::V1],
        vec![Dialect::V1, Dialect::Legacy009, Dialect::Threads],
    ] {
        let (r, w) = scripted_agent(|_| Vec::new());
        // Each probe may wait 10 s; the whole negotiation may take 300 ms.
        let options = NegotiateOptions::new(init())
            .with_dialects(dialects.clone())
            .with_timeout(Duration::from_secs(10))
            .with_deadline(Duration::from_millis(300));
        let started = tokio::time::Instant::now();
        let error = tokio::time::timeout(
            Duration::from_secs(5),
            acp_client::Builder::new(Quiet).negotiate(options).io(r, w),
        )
        .await
        .expect("the deadline ends the negotiation")
        .unwrap_err();
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
        let NegotiationError::Deadline(deadline, tried) = &error else {
            panic!("{error}")
        };
        assert_eq!(*deadline, Duration::from_millis(300));
        assert_eq!(tried, &vec![(Dialect::V1, OfferOutcome::NoAnswer)]);
        assert_eq!(
            error.to_string(),
            "no dialect was agreed within 300ms: v1: no answer"
        );
    }
}

#[tokio::test]
async fn the_deadline_shares_itself_among_the_probes_of_a_quick_timeout() {
    // Probes time out after 100 ms each: the five are offered and each named, well within
    // the deadline.
    let (r, w) = scripted_agent(|_| Vec::new());
    let options = NegotiateOptions::new(init())
        .with_timeout(Duration::from_millis(100))
        .with_deadline(Duration::from_secs(5));
    let error = acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(r, w)
        .await
        .unwrap_err();
    let NegotiationError::NoAnswer(tried) = &error else {
        panic!("{error}")
    };
    assert_eq!(tried.len(), 5);
}

/// Issue 32: offered protocol version 65535, Claude's agent answers `2` with a v2-shaped
/// result. A client that offered only 1 says plainly that the agent answered a version it did
/// not offer, and which one it offered.
#[tokio::test]
async fn an_agent_answering_a_version_we_did_not_offer_is_named_in_the_error() {
    let (r, w) = scripted_agent(|msg| {
        vec![
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": 2,
                "agent": {"name": "claude-code", "version": "2.0.0"},
                "capabilities": {"sessions": {"load": true}, "prompt": {"image": true}},
                "auth": {"methods": []}
            }})
            .to_string(),
        ]
    });
    let options = NegotiateOptions::new(init()).with_dialects(vec![Dialect::V1]);
    let error = acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(r, w)
        .await
        .unwrap_err();
    assert!(
        matches!(error, NegotiationError::Unaccepted { .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "the agent answered protocol version 2, which we did not offer (we offered protocol version 1)"
    );
}

#[tokio::test]
async fn an_agent_answering_a_version_other_than_1_is_not_taken_for_v1() {
    for version in [json!(2), json!(0), json!(99)] {
        let answer = version.clone();
        let (r, w) = scripted_agent(move |msg| {
            vec![
                json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": answer}})
                    .to_string(),
            ]
        });
        let error = acp_client::Builder::new(Quiet)
            .negotiate(NegotiateOptions::new(init()))
            .io(r, w)
            .await
            .unwrap_err();
        let NegotiationError::Unaccepted { speaks, .. } = &error else {
            panic!("{error}")
        };
        assert_eq!(speaks, &format!("protocol version {version}"));
        assert_eq!(
            error.to_string(),
            format!(
                "the agent answered protocol version {version}, which we did not offer (we offered protocol version 1, legacy-0.0.9, threads, probe, crow)"
            )
        );
    }
}
