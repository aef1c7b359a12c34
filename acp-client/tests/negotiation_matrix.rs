//! Version negotiation end to end: every pair of (client pin list, agent pin list), over
//! every ordered choice of one to three dialects on each side, ends in the expected dialect
//! (and a working prompt turn through it) or in the expected clear error, never a hang.
//! Then the client against agents that are not ours: one that answers `"0.0.9"` to anything
//! (Gemini CLI 0.1.x), one that ignores a v1 handshake (the 0.0.9 Rust crate), one that never
//! answers, one that hangs up, one that speaks a newer 0.0.x.

use std::time::Duration;

use acp_agent::negotiate::NegotiateOptions as AgentOptions;
use acp_client::negotiate::{NegotiateOptions, NegotiationError, OfferOutcome};
use acp_client::{Client, Dialect};
use acp_rpc::Error;
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use Dialect::{Crow, Legacy009, Probe, Threads, V1};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

fn init() -> InitializeRequest {
    v(json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}))
}

/// Every ordered list of one to three distinct dialects (85 of them).
fn pin_lists() -> Vec<Vec<Dialect>> {
    let all = Dialect::ALL;
    let mut lists = Vec::new();
    for a in all {
        lists.push(vec![a]);
        for b in all.into_iter().filter(|b| *b != a) {
            lists.push(vec![a, b]);
            for c in all.into_iter().filter(|c| *c != a && *c != b) {
                lists.push(vec![a, b, c]);
            }
        }
    }
    lists
}

/// The v1 agent behind every dialect: echoes the prompt's text as one chunk, after
/// checking the client's capabilities reached it.
struct Echo;

#[acp_agent::async_trait]
impl acp_agent::Agent for Echo {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({"protocolVersion": 1})))
    }
    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(v(json!({"sessionId": "s-1"})))
    }
    async fn prompt(
        &self,
        p: PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<PromptResponse, Error> {
        let ContentBlock::Text(text) = &p.prompt[0] else {
            return Err(Error::invalid_params("text expected"));
        };
        // Every dialect can read files; the capability the client advertised must have
        // arrived (through the adapters too).
        let can_read = cx
            .client()
            .capabilities()
            .is_some_and(|c| c.fs.read_text_file);
        let suffix = if can_read { " (fs)" } else { " (no fs)" };
        cx.session()
            .message_chunk(format!("{}{suffix}", text.text))
            .await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

struct Quiet;
impl Client for Quiet {}

/// What the client should end with, derived from the rules in the negotiation docs: the
/// agent serves the dialect of the client's first probe if it accepts it, else the one whose
/// handshake answer names its own version (v1 <-> 0.0.9), else its first; each probe is then
/// answered by that dialect.
fn expected(client: &[Dialect], agent: &[Dialect]) -> Result<Dialect, String> {
    let first = client[0];
    let served = if agent.contains(&first) {
        first
    } else {
        let other = match first {
            V1 => Some(Legacy009),
            Legacy009 => Some(V1),
            Threads => None,
            // A v1 connection answers probe's `"1"` with its own version.
            Probe => Some(V1),
            Crow => None,
        };
        other.filter(|d| agent.contains(d)).unwrap_or(agent[0])
    };
    for probe in client {
        // Which version (if any) the served dialect answers the probe with.
        // Every `initialize` gets the v1 and 0.0.9 sides' own version; a probe agent
        // refuses any version but its `"1"` (-32602 for an integer, -32001 for another
        // string) and threads' unframed `getThreads` (-32600).
        let answer = match (served, probe) {
            (V1, V1 | Legacy009 | Probe) => Some(V1),
            (Legacy009, V1 | Legacy009 | Probe) => Some(Legacy009),
            (Threads, Threads) => Some(Threads),
            (Probe, Probe) => Some(Probe),
            (Crow, Crow) => Some(Crow),
            _ => None,
        };
        if let Some(spoken) = answer {
            return if client.contains(&spoken) {
                Ok(spoken)
            } else {
                Err(format!("unaccepted {spoken}"))
            };
        }
    }
    Err("no answer".into())
}

async fn negotiate_pair(client: &[Dialect], agent: &[Dialect]) -> Result<Dialect, String> {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let agent_options = AgentOptions::default()
        .with_dialects(agent.to_vec())
        .with_legacy_cwd("/work");
    let served = tokio::spawn(
        acp_agent::Builder::new(Echo)
            .negotiate(agent_options)
            .io(ar, aw),
    );
    let options = NegotiateOptions::new(init())
        .with_dialects(client.to_vec())
        .with_timeout(Duration::from_secs(2));
    let negotiated = match acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(br, bw)
        .await
    {
        Ok(n) => n,
        Err(NegotiationError::Unaccepted { speaks, .. }) => {
            return Err(format!("unaccepted {speaks}"));
        }
        Err(NegotiationError::NoAnswer(tried)) => {
            assert_eq!(tried.len(), client.len(), "every dialect was offered");
            assert!(
                tried
                    .iter()
                    .all(|(_, o)| matches!(o, OfferOutcome::Refused(_))),
                "our agents refuse what they cannot speak, they never stay silent: {tried:?}"
            );
            return Err("no answer".into());
        }
        Err(other) => panic!("{client:?} x {agent:?}: unexpected {other}"),
    };
    let agent_side = served.await.unwrap().expect("the agent side negotiated");
    assert_eq!(agent_side.dialect(), negotiated.dialect, "both sides agree");
    assert_eq!(
        negotiated.initialize.protocol_version,
        ProtocolVersion::LATEST
    );
    // The connection works: one prompt turn through whatever dialect was agreed.
    let agent = negotiated.connection.agent();
    let session = agent
        .new_session(v(json!({"cwd": "/work", "mcpServers": []})))
        .await
        .map_err(|e| format!("session/new: {e}"))?;
    let (updates, result) = agent
        .prompt_stream(PromptRequest::new(
            session.session_id,
            [ContentBlock::text("ping")],
        ))
        .collect()
        .await;
    assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
    // Crow editors serve no file calls: the capability cannot cross that dialect.
    let echoed = if negotiated.dialect == Crow {
        "ping (no fs)"
    } else {
        "ping (fs)"
    };
    assert_eq!(
        updates,
        vec![SessionUpdate::agent_message_text(echoed)],
        "{client:?} x {agent:?} over {}",
        negotiated.dialect
    );
    Ok(negotiated.dialect)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pair_of_pin_lists_ends_in_the_expected_dialect_or_a_clear_error() {
    let lists = pin_lists();
    assert_eq!(lists.len(), 85);
    let mut outcomes = std::collections::BTreeMap::new();
    for client in &lists {
        for agent in &lists {
            let got = tokio::time::timeout(Duration::from_secs(10), negotiate_pair(client, agent))
                .await
                .unwrap_or_else(|_| panic!("{client:?} x {agent:?} hung"));
            assert_eq!(
                got,
                expected(client, agent),
                "client {client:?} x agent {agent:?}"
            );
            *outcomes.entry(format!("{got:?}")).or_insert(0) += 1;
        }
    }
    // Every kind of outcome occurs in the matrix.
    for kind in [
        "Ok(V1)",
        "Ok(Legacy009)",
        "Ok(Threads)",
        "Ok(Probe)",
        "Ok(Crow)",
        "Err(\"unaccepted v1\")",
        "Err(\"unaccepted legacy-0.0.9\")",
        "Err(\"no answer\")",
    ] {
        assert!(outcomes.contains_key(kind), "{kind} missing: {outcomes:?}");
    }
}

#[tokio::test]
async fn notable_pairs_end_as_the_docs_say() {
    // Defaults on both sides: v1.
    assert_eq!(
        negotiate_pair(&[V1, Legacy009, Threads], &[V1, Legacy009, Threads]).await,
        Ok(V1)
    );
    // A v1-only client and a 0.0.9-only agent: the agent answers "0.0.9", the client refuses.
    assert_eq!(
        negotiate_pair(&[V1], &[Legacy009]).await,
        Err("unaccepted legacy-0.0.9".into())
    );
    // A client preferring 0.0.9 meets a v1-only agent, which answers its version; the
    // client accepts v1 and then does the v1 handshake properly (capabilities arrive: the
    // echo says "(fs)").
    assert_eq!(negotiate_pair(&[Legacy009, V1], &[V1]).await, Ok(V1));
    // The threads dialect has no handshake: a threads agent refuses initialize and the
    // client falls back to getThreads.
    assert_eq!(
        negotiate_pair(&[V1, Legacy009, Threads], &[Threads]).await,
        Ok(Threads)
    );
    // A probe-only agent refuses the v1 handshake (its version is the string "1"); the
    // client falls back to probe's own.
    assert_eq!(negotiate_pair(&[V1, Probe], &[Probe]).await, Ok(Probe));
    // A probe-only client meets a v1 agent, which answers its own version: refused.
    assert_eq!(
        negotiate_pair(&[Probe], &[V1, Legacy009]).await,
        Err("unaccepted v1".into())
    );
}

/// A scripted agent: answers each line it reads with `answer(line)` (if any).
fn scripted_agent(
    answer: impl Fn(&Value) -> Option<Value> + Send + 'static,
) -> (
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
    tokio::sync::mpsc::UnboundedReceiver<Value>,
) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (tr, mut tw) = tokio::io::split(theirs);
    let (seen_tx, seen) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(tr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: Value = serde_json::from_str(&line).unwrap();
            let reply = answer(&msg);
            let _ = seen_tx.send(msg);
            if let Some(reply) = reply {
                tw.write_all(format!("{reply}\n").as_bytes()).await.unwrap();
            }
        }
    });
    let (r, w) = tokio::io::split(ours);
    (r, w, seen)
}

#[tokio::test]
async fn an_agent_answering_0_0_9_to_a_v1_handshake_is_driven_in_0_0_9() {
    // Gemini CLI 0.1.x ignores initialize's params and always answers 0.0.9.
    let (r, w, mut seen) = scripted_agent(|msg| match msg["method"].as_str() {
        Some("initialize") => Some(
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "0.0.9", "isAuthenticated": false}}),
        ),
        Some(_) => Some(json!({"jsonrpc": "2.0", "id": msg["id"], "result": null})),
        None => None,
    });
    let negotiated = acp_client::Builder::new(Quiet)
        .negotiate(NegotiateOptions::new(init()))
        .io(r, w)
        .await
        .unwrap();
    assert_eq!(negotiated.dialect, Legacy009);
    // Not authenticated: the adapter offers the agent's own login flow.
    assert_eq!(negotiated.initialize.auth_methods.len(), 1);
    let first = seen.recv().await.unwrap();
    assert_eq!(
        first["params"]["protocolVersion"], 1,
        "the v1 probe went first"
    );
    // The connection goes on after the probe's id: the next request is id 1.
    negotiated
        .connection
        .agent()
        .authenticate(v(
            json!({"methodId": acp_client::legacy::v0_0_9::AUTH_METHOD_ID}),
        ))
        .await
        .unwrap();
    let auth = seen.recv().await.unwrap();
    assert_eq!(
        auth,
        json!({"jsonrpc": "2.0", "id": 1, "method": "authenticate"})
    );
}

#[tokio::test]
async fn an_agent_silent_on_a_v1_handshake_is_found_by_the_0_0_9_probe_after_the_timeout() {
    // The 0.0.9 Rust crate drops an initialize whose protocolVersion it cannot parse.
    let (r, w, mut seen) = scripted_agent(|msg| {
        (msg["params"]["protocolVersion"] == "0.0.9").then(|| {
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "0.0.9", "isAuthenticated": true}})
        })
    });
    let started = tokio::time::Instant::now();
    let options = NegotiateOptions::new(init()).with_timeout(Duration::from_millis(300));
    let negotiated = acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(r, w)
        .await
        .unwrap();
    assert_eq!(negotiated.dialect, Legacy009);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(negotiated.initialize.auth_methods.is_empty());
    assert_eq!(seen.recv().await.unwrap()["id"], 0);
    let second = seen.recv().await.unwrap();
    assert_eq!(
        second,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "0.0.9"}})
    );
}

#[tokio::test]
async fn a_silent_agent_ends_the_negotiation_with_every_probe_named() {
    let (r, w, mut seen) = scripted_agent(|_| None);
    let options = NegotiateOptions::new(init()).with_timeout(Duration::from_millis(100));
    let error = acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(r, w)
        .await
        .unwrap_err();
    let NegotiationError::NoAnswer(tried) = &error else {
        panic!("{error}")
    };
    assert_eq!(
        tried,
        &vec![
            (V1, OfferOutcome::NoAnswer),
            (Legacy009, OfferOutcome::NoAnswer),
            (Threads, OfferOutcome::NoAnswer),
            (Probe, OfferOutcome::NoAnswer),
            (Crow, OfferOutcome::NoAnswer)
        ]
    );
    assert_eq!(
        error.to_string(),
        "no dialect was accepted: v1: no answer; legacy-0.0.9: no answer; threads: no answer; probe: no answer; crow: no answer"
    );
    // The threads probe is written as that dialect's editors wrote it, and so is probe's.
    let _ = (seen.recv().await, seen.recv().await);
    assert_eq!(
        seen.recv().await.unwrap(),
        json!({"id": 2, "method": "getThreads", "params": null})
    );
    assert_eq!(
        seen.recv().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "1"}})
    );
}

#[tokio::test]
async fn a_newer_0_0_x_agent_and_a_hang_up_are_clear_errors() {
    let (r, w, _seen) = scripted_agent(|msg| {
        Some(
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "0.0.10", "isAuthenticated": true}}),
        )
    });
    let error = acp_client::Builder::new(Quiet)
        .negotiate(NegotiateOptions::new(init()))
        .io(r, w)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the agent answered protocol version \"0.0.10\", which we did not offer (we offered protocol version 1, legacy-0.0.9, threads, probe, crow)"
    );

    let (ours, theirs) = tokio::io::duplex(1024);
    drop(theirs);
    let (r, w) = tokio::io::split(ours);
    let error = acp_client::Builder::new(Quiet)
        .negotiate(NegotiateOptions::new(init()))
        .io(r, w)
        .await
        .unwrap_err();
    assert!(
        matches!(error, NegotiationError::Closed(_) | NegotiationError::Io(_)),
        "{error}"
    );
}

#[tokio::test]
async fn a_pin_to_one_dialect_offers_only_that_one() {
    let (r, w, mut seen) =
        scripted_agent(|msg| Some(json!({"id": msg["id"], "result": {"threads": []}})));
    let options = NegotiateOptions::new(init()).with_dialects([Threads]);
    let negotiated = acp_client::Builder::new(Quiet)
        .negotiate(options)
        .io(r, w)
        .await
        .unwrap();
    assert_eq!(negotiated.dialect, Threads);
    assert_eq!(
        seen.recv().await.unwrap(),
        json!({"id": 0, "method": "getThreads", "params": null})
    );
    assert!(
        seen.try_recv().is_err(),
        "nothing but the one probe was offered"
    );
}
