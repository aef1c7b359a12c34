//! A negotiating client that offers protocol v2 (`NegotiateOptions::with_v2`): the v2
//! `initialize` goes first; an agent answering 2 is driven through the v1<->v2 translation
//! with its answer reused (it is asked once), one answering 1 gets the v1 handshake with the
//! client's own capabilities, one refusing v2 gets the dialects; v2 only refuses a v1 agent
//! naming both versions.
#![cfg(feature = "v2")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::negotiate::{NegotiateOptions, NegotiationError, OfferV2};
use acp_client::{Client, Dialect};
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Quiet;
impl Client for Quiet {}

type Seen = Arc<Mutex<Vec<Value>>>;

/// An agent on an in-memory pipe that records every message it reads and writes back what
/// `answer` gives for it.
fn scripted_agent(
    answer: impl Fn(&Value) -> Option<Value> + Send + 'static,
) -> (
    Seen,
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
) {
    let seen = Seen::default();
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (tr, mut tw) = tokio::io::split(theirs);
    let record = seen.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(tr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            record.lock().unwrap().push(msg.clone());
            if let Some(reply) = answer(&msg) {
                let mut out = reply.to_string();
                out.push('\n');
                if tw.write_all(out.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
    });
    let (r, w) = tokio::io::split(ours);
    (seen, r, w)
}

fn init() -> InitializeRequest {
    serde_json::from_value(json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": true}, "terminal": true},
        "clientInfo": {"name": "test editor", "version": "1.0.0"},
    }))
    .expect("a v1 initialize")
}

fn ok(msg: &Value, result: Value) -> Option<Value> {
    Some(json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
}

/// A v2 agent: answers `initialize` with 2 and `session/new` with a session.
fn v2_agent(msg: &Value) -> Option<Value> {
    match msg["method"].as_str()? {
        "initialize" => ok(
            msg,
            json!({"protocolVersion": 2, "info": {"name": "v2 agent", "version": "2.0.0"},
                "capabilities": {"session": {"prompt": {"image": {}}}}}),
        ),
        "session/new" => ok(msg, json!({"sessionId": "s-2"})),
        _ => None,
    }
}

/// A v1 agent: answers every `initialize` with 1, as an agent that does not know 2 must.
fn v1_agent(msg: &Value) -> Option<Value> {
    match msg["method"].as_str()? {
        "initialize" => ok(
            msg,
            json!({"protocolVersion": 1, "agentInfo": {"name": "v1 agent", "version": "1.0.0"}}),
        ),
        _ => None,
    }
}

async fn negotiate(
    offer: OfferV2,
    r: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    w: tokio::io::WriteHalf<tokio::io::DuplexStream>,
) -> Result<acp_client::negotiate::Negotiated, NegotiationError> {
    let options = NegotiateOptions::new(init())
        .with_v2(offer)
        .with_timeout(Duration::from_secs(2));
    tokio::time::timeout(
        Duration::from_secs(10),
        acp_client::Builder::new(Quiet).negotiate(options).io(r, w),
    )
    .await
    .expect("the negotiation ends")
}

#[tokio::test]
async fn a_v2_agent_is_driven_through_the_translation_and_asked_initialize_once() {
    let (seen, r, w) = scripted_agent(v2_agent);
    let negotiated = negotiate(OfferV2::First, r, w).await.expect("negotiated");
    assert_eq!(negotiated.version, 2);
    let info = negotiated
        .initialize
        .agent_info
        .as_ref()
        .expect("agent info");
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("v2 agent", "2.0.0")
    );
    assert!(
        negotiated
            .initialize
            .agent_capabilities
            .prompt_capabilities
            .image
    );
    let created = negotiated
        .connection
        .agent()
        .new_session(NewSessionRequest::new("/tmp", vec![]))
        .await
        .expect("a session through the translation");
    assert_eq!(created.session_id.0.to_string(), "s-2");
    let seen = seen.lock().unwrap().clone();
    let inits: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert_eq!(inits.len(), 1, "{seen:?}");
    assert_eq!(inits[0]["params"]["protocolVersion"], 2);
    assert_eq!(inits[0]["params"]["info"]["name"], "test editor");
    // The connection numbers its requests after the offer's id 0.
    let new = seen.iter().find(|m| m["method"] == "session/new").unwrap();
    assert_ne!(new["id"], 0, "{new}");
}

#[tokio::test]
async fn a_v1_agent_gets_the_v1_handshake_with_the_clients_capabilities() {
    let (seen, r, w) = scripted_agent(v1_agent);
    let negotiated = negotiate(OfferV2::First, r, w).await.expect("negotiated");
    assert_eq!(negotiated.version, 1);
    assert_eq!(negotiated.dialect, Dialect::V1);
    let seen = seen.lock().unwrap().clone();
    let inits: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert_eq!(inits.len(), 2, "{seen:?}");
    assert_eq!(inits[0]["params"]["protocolVersion"], 2);
    assert_eq!(inits[1]["params"]["protocolVersion"], 1);
    assert_eq!(inits[1]["params"]["clientCapabilities"]["terminal"], true);
    assert_ne!(inits[0]["id"], inits[1]["id"]);
}

#[tokio::test]
async fn an_agent_refusing_the_v2_offer_is_offered_the_dialects() {
    let (_, r, w) = scripted_agent(|msg| {
        if msg["params"]["protocolVersion"] == 2 {
            return Some(json!({"jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": -32602, "message": "unknown version"}}));
        }
        v1_agent(msg)
    });
    let negotiated = negotiate(OfferV2::First, r, w).await.expect("negotiated");
    assert_eq!((negotiated.version, negotiated.dialect), (1, Dialect::V1));
}

#[tokio::test]
async fn v2_only_refuses_a_v1_agent_naming_both_versions() {
    let (seen, r, w) = scripted_agent(v1_agent);
    let error = negotiate(OfferV2::Only, r, w).await.expect_err("refused");
    assert!(
        matches!(error, NegotiationError::Unoffered { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert_eq!(
        text,
        "the agent answered protocol version 1, which we did not offer (we offered protocol version 2)"
    );
    // Nothing but the v2 offer was sent.
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn without_the_v2_offer_a_v2_answer_is_still_unaccepted() {
    let (_, r, w) = scripted_agent(v2_agent);
    let error = negotiate(OfferV2::No, r, w).await.expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("the agent answered protocol version 2"),
        "{error}"
    );
}
