//! Negotiation between v1 and v2: an agent that speaks both serves the version the client
//! offers, a client offers its highest version and falls back when the agent answers lower,
//! pinning to one version works both ways, and an answer of a version the client did not
//! offer is a clear error.
#![cfg(feature = "v2")]

use acp_agent::v2 as agent2;
use acp_client::v2::{self as client2, Connected, Offer, VersionError};
use acp_rpc::Error;
use acp_types::{v1, v2};
use async_trait::async_trait;

struct V1Agent;

#[async_trait]
impl acp_agent::Agent for V1Agent {
    async fn initialize(
        &self,
        _p: v1::InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<v1::InitializeResponse, Error> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion::V1))
    }
}

struct V2Agent;

#[async_trait]
impl agent2::Agent for V2Agent {
    async fn initialize(
        &self,
        _p: v2::InitializeRequest,
        _cx: &agent2::Context,
    ) -> Result<v2::InitializeResponse, Error> {
        Ok(v2::InitializeResponse::new(
            2,
            v2::Implementation::new("both", "0.1.0"),
        ))
    }
}

struct V1Client;
impl acp_client::Client for V1Client {}

struct V2Client;
impl client2::Client for V2Client {}

fn v2_init() -> v2::InitializeRequest {
    v2::InitializeRequest::new(2, v2::Implementation::new("client", "0.1.0"))
}

fn v1_init() -> v1::InitializeRequest {
    v1::InitializeRequest::new(v1::ProtocolVersion::V1)
}

/// Runs an agent with the given sides against a client with the given sides and offer.
async fn run(
    agent_v1: bool,
    agent_v2: bool,
    client_v1: bool,
    client_v2: bool,
    offer: Offer,
) -> (Option<u16>, Result<Connected, VersionError>) {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    // The agent goes through the version detection whatever sides it has; the connection
    // it starts lives until the client's handshake is done.
    let served = tokio::spawn(async move {
        match (agent_v1, agent_v2) {
            (true, true) => {
                acp_agent::Builder::new(V1Agent)
                    .v2(V2Agent)
                    .io(ar, aw)
                    .await
            }
            (false, true) => acp_agent::Builder::v2_only(V2Agent).io(ar, aw).await,
            (true, false) => acp_agent::Builder::new(V1Agent).v1_only().io(ar, aw).await,
            (false, false) => Err(agent2::VersionError::NoAgent),
        }
    });
    // A client without v2 offers none: its builder's v2 side is never asked.
    let mut offer = offer;
    if !client_v2 {
        offer.v2 = None;
    }
    let connect = async move {
        if client_v1 {
            let builder = acp_client::Builder::new(V1Client).v2(V2Client, offer);
            builder.io(br, bw).await
        } else {
            acp_client::Builder::v2_only(V2Client, offer)
                .io(br, bw)
                .await
        }
    };
    let connected = tokio::time::timeout(std::time::Duration::from_secs(10), connect)
        .await
        .expect("negotiation hung");
    let served = served.await.unwrap().ok().map(|s| s.version());
    (served, connected)
}

#[tokio::test]
async fn an_agent_of_both_versions_serves_v2_to_a_client_of_both() {
    let (served, connected) = run(true, true, true, true, Offer::both(v2_init(), v1_init())).await;
    assert_eq!(served, Some(2));
    let Ok(Connected::V2 { initialize, .. }) = connected else {
        panic!("{connected:?}")
    };
    assert_eq!(initialize.info.name, "both");
}

#[tokio::test]
async fn a_client_of_both_versions_falls_back_to_v1_with_a_v1_agent() {
    let (served, connected) = run(true, false, true, true, Offer::both(v2_init(), v1_init())).await;
    assert_eq!(served, Some(1));
    assert!(
        matches!(connected, Ok(Connected::V1 { .. })),
        "{connected:?}"
    );
}

#[tokio::test]
async fn an_agent_of_both_versions_serves_v1_to_a_client_pinned_to_v1() {
    let (served, connected) = run(true, true, true, false, Offer::v1_only(v1_init())).await;
    assert_eq!(served, Some(1));
    assert!(
        matches!(connected, Ok(Connected::V1 { .. })),
        "{connected:?}"
    );
}

#[tokio::test]
async fn a_client_pinned_to_v2_gets_v2_from_an_agent_pinned_to_v2() {
    let (served, connected) = run(false, true, false, true, Offer::v2_only(v2_init())).await;
    assert_eq!(served, Some(2));
    assert!(
        matches!(connected, Ok(Connected::V2 { .. })),
        "{connected:?}"
    );
}

#[tokio::test]
async fn a_v1_answer_to_a_client_pinned_to_v2_is_a_clear_error() {
    let (_, connected) = run(true, false, false, true, Offer::v2_only(v2_init())).await;
    let Err(VersionError::Unoffered { answered, offered }) = &connected else {
        panic!("{connected:?}")
    };
    assert_eq!(answered, &serde_json::json!(1));
    assert_eq!(offered, "2");
    let message = connected.unwrap_err().to_string();
    assert!(message.contains("protocol version 1"), "{message}");
}
