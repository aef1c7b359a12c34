//! v2 `session/prompt` with an `idempotencyKey`: a retry of an answered key gets the
//! original answer and does not run the agent's handler again; keys are per session; a
//! retry while the first attempt runs waits for it; a failed attempt frees its key; at most
//! `MAX_KEYS_PER_SESSION` keys are remembered per session, the oldest forgotten; a
//! malformed key is `-32602` and the connection serves on.
#![cfg(feature = "v2")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_agent::v2::{self as a2, types as w2};
use acp_dialects::v2 as d2;
use acp_rpc::Error;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

/// Counts its prompt handler's runs; answers `m<run>`. Session `slow` waits for `gate`;
/// session `flaky` fails its first run.
#[derive(Clone, Default)]
struct Counter {
    runs: Arc<AtomicUsize>,
    gate: Arc<Notify>,
    started: Arc<Notify>,
}

#[async_trait::async_trait]
impl a2::Agent for Counter {
    async fn session_prompt(
        &self,
        params: w2::PromptRequest,
        _cx: &a2::Context,
    ) -> Result<w2::PromptResponse, Error> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        match params.session_id.as_str() {
            "slow" => {
                self.started.notify_one();
                self.gate.notified().await;
            }
            "flaky" if run == 1 => return Err(Error::internal_error("the model is down")),
            _ => {}
        }
        Ok(w2::PromptResponse::new(format!("m{run}")))
    }

    async fn session_close(
        &self,
        _params: w2::CloseSessionRequest,
        _cx: &a2::Context,
    ) -> Result<w2::CloseSessionResponse, Error> {
        Ok(w2::CloseSessionResponse::new())
    }
}

struct NoClient;
impl d2::Client for NoClient {}

fn setup() -> (Counter, d2::AgentHandle, d2::ClientConnection) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(agent_io);
    let agent = Counter::default();
    a2::serve(agent.clone(), ar, aw);
    let (cr, cw) = tokio::io::split(client_io);
    let conn = d2::connect(NoClient, cr, cw);
    (agent, conn.agent().clone(), conn)
}

fn prompt(session: &str, key: Option<&str>) -> w2::PromptRequest {
    let p = w2::PromptRequest::new(session, [w2::ContentBlock::text("hi")]);
    match key {
        Some(k) => p.idempotency_key(w2::IdempotencyKey::try_from(k).unwrap()),
        None => p,
    }
}

async fn send(agent: &d2::AgentHandle, session: &str, key: Option<&str>) -> String {
    let answer = agent.session_prompt(prompt(session, key)).await.unwrap();
    answer.message_id.0
}

#[tokio::test]
async fn a_retry_gets_the_original_message_id_and_the_handler_runs_once() {
    let (counter, agent, _conn) = setup();
    let first = send(&agent, "s1", Some("k-1")).await;
    let retry = send(&agent, "s1", Some("k-1")).await;
    assert_eq!(first, retry);
    assert_eq!(counter.runs.load(Ordering::SeqCst), 1);
    // Another key, or none, is another submission; keys are case-sensitive.
    assert_ne!(send(&agent, "s1", Some("K-1")).await, first);
    assert_ne!(send(&agent, "s1", None).await, first);
    assert_ne!(send(&agent, "s1", None).await, first);
    assert_eq!(counter.runs.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn sessions_do_not_share_keys() {
    let (counter, agent, _conn) = setup();
    let one = send(&agent, "s1", Some("same")).await;
    let two = send(&agent, "s2", Some("same")).await;
    assert_ne!(one, two);
    assert_eq!(send(&agent, "s1", Some("same")).await, one);
    assert_eq!(send(&agent, "s2", Some("same")).await, two);
    assert_eq!(counter.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_retry_while_the_first_attempt_runs_waits_for_its_answer() {
    let (counter, agent, _conn) = setup();
    let first = tokio::spawn({
        let agent = agent.clone();
        async move { send(&agent, "slow", Some("k")).await }
    });
    counter.started.notified().await;
    let retry = tokio::spawn({
        let agent = agent.clone();
        async move { send(&agent, "slow", Some("k")).await }
    });
    // Let the retry reach the agent and wait there, then let the first attempt finish.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !retry.is_finished(),
        "the retry must wait for the first attempt"
    );
    counter.gate.notify_one();
    // Bounded: without the wait both attempts run and one never passes the gate.
    let both = tokio::time::timeout(Duration::from_secs(10), async {
        (first.await.unwrap(), retry.await.unwrap())
    });
    let (first, retry) = both.await.expect("both attempts answered");
    assert_eq!(first, retry);
    assert_eq!(counter.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_attempt_inserts_nothing_so_its_retry_runs_again() {
    let (counter, agent, _conn) = setup();
    let err = agent
        .session_prompt(prompt("flaky", Some("k")))
        .await
        .unwrap_err();
    assert!(err.message.contains("model is down"), "{err:?}");
    let second = send(&agent, "flaky", Some("k")).await;
    assert_eq!(second, "m2");
    assert_eq!(send(&agent, "flaky", Some("k")).await, "m2");
    assert_eq!(counter.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn closing_a_session_forgets_its_keys() {
    let (counter, agent, _conn) = setup();
    let first = send(&agent, "s1", Some("k")).await;
    agent
        .session_close(w2::CloseSessionRequest::new("s1"))
        .await
        .unwrap();
    assert_ne!(send(&agent, "s1", Some("k")).await, first);
    assert_eq!(counter.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_session_remembers_at_most_the_cap_of_keys_oldest_forgotten_first() {
    let cap = d2::prompt_keys::MAX_KEYS_PER_SESSION;
    let (counter, agent, _conn) = setup();
    let oldest = send(&agent, "s1", Some("k0")).await;
    let second = send(&agent, "s1", Some("k1")).await;
    for i in 2..=cap {
        send(&agent, "s1", Some(&format!("k{i}"))).await;
    }
    assert_eq!(counter.runs.load(Ordering::SeqCst), cap + 1);
    // k0 was pushed out by the cap + 1st key: a new submission now.
    assert_ne!(send(&agent, "s1", Some("k0")).await, oldest);
    assert_eq!(counter.runs.load(Ordering::SeqCst), cap + 2);
    // Re-running k0 pushed out k1; the newest keys are still remembered.
    assert_ne!(send(&agent, "s1", Some("k1")).await, second);
    let newest = format!("k{cap}");
    let before = counter.runs.load(Ordering::SeqCst);
    send(&agent, "s1", Some(&newest)).await;
    assert_eq!(counter.runs.load(Ordering::SeqCst), before);
}

/// Raw lines, for what the typed client cannot send.
async fn raw_exchange(lines: &[Value]) -> (Counter, Vec<Value>) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(agent_io);
    let agent = Counter::default();
    let conn = a2::serve(agent.clone(), ar, aw);
    let (cr, mut cw) = tokio::io::split(client_io);
    let mut answers = Vec::new();
    let mut reader = BufReader::new(cr).lines();
    for line in lines {
        cw.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(10), reader.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("the connection serves on");
        answers.push(serde_json::from_str(&answer).unwrap());
    }
    drop(conn);
    (agent, answers)
}

fn raw_prompt(id: u64, key: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {
        "sessionId": "s1", "idempotencyKey": key, "prompt": [{"type": "text", "text": "hi"}]}})
}

#[tokio::test]
async fn a_malformed_key_is_invalid_params_and_the_connection_serves_on() {
    let bad = [
        json!(""),
        json!("k".repeat(256)),
        json!(0),
        json!(7),
        json!(true),
        json!({"k": 1}),
    ];
    let mut lines: Vec<Value> = bad
        .iter()
        .enumerate()
        .map(|(i, key)| raw_prompt(i as u64 + 1, key.clone()))
        .collect();
    lines.push(raw_prompt(100, json!("é".repeat(255))));
    lines.push(raw_prompt(101, json!("é".repeat(255))));
    lines.push(raw_prompt(102, Value::Null));
    let (counter, answers) = raw_exchange(&lines).await;
    for (answer, key) in answers.iter().zip(&bad) {
        assert_eq!(answer["error"]["code"], -32602, "key {key}: {answer}");
        assert_eq!(
            answer["error"]["data"]["field"], "idempotencyKey",
            "{answer}"
        );
    }
    assert!(
        answers[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 255 characters"),
        "{}",
        answers[1]
    );
    // 255 two-byte characters (510 bytes) are a valid key: the retry gets the same answer.
    assert_eq!(answers[6]["result"]["messageId"], "m1", "{}", answers[6]);
    assert_eq!(answers[7]["result"], answers[6]["result"]);
    // `null` is no key: a new submission.
    assert_eq!(answers[8]["result"]["messageId"], "m2", "{}", answers[8]);
    assert_eq!(counter.runs.load(Ordering::SeqCst), 2);
}
