//! An agent that speaks v1, v2 or both ([`crate::Builder::v2`], [`crate::Builder::v2_only`])
//! reads the client's `initialize` and serves the version it offers.
//!
//! | the client offers | the agent has v2 and v1 | only v1 | only v2 |
//! | --- | --- | --- | --- |
//! | `protocolVersion` 2 | v2 | v1 (its answer says 1) | v2 |
//! | `protocolVersion` 3 or more, params v2 reads | v2 (its answer says 2) | v1 (its answer says 1) | v2 |
//! | `protocolVersion` 3 or more, params only v1 reads | v1 (its answer says 1) | v1 | v2 |
//! | `protocolVersion` 1 | v1 | v1 | v2 (its answer says 2) |
//! | anything else first | v1 | v1 | v2 |
//!
//! A later version than 2 is answered with the newest version that can read the request: a
//! client that offers a version we do not know (as `acp check`'s `handshake.unsupported_version`
//! does, with a v1-shaped `initialize`) gets an answer naming a version we speak, not an
//! invalid-params error for a field v2 requires.
//!
//! The served side answers the `initialize` itself, so the client learns the version from
//! the answer and decides whether it can go on, as the specification says.

use std::sync::Arc;

use acp_dialects::{Input, Output};
use acp_rpc::Config;
use acp_rpc::sniff::{LineSniffer, SniffError};
use serde_json::Value;

use super::Agent;
use crate::store::SessionStore;

/// The connection a [`crate::Builder`] speaking v1 and v2 started: v1 or v2.
#[derive(Debug)]
pub enum Served {
    /// The client is served v1.
    V1(crate::AgentConnection),
    /// The client is served v2.
    V2(super::AgentConnection),
}

impl Served {
    /// The protocol version served (1 or 2).
    pub fn version(&self) -> u16 {
        match self {
            Served::V1(_) => 1,
            Served::V2(_) => 2,
        }
    }
}

/// Why a [`crate::Builder`] speaking v1 and v2 started no connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VersionError {
    /// Neither a v1 nor a v2 agent was given.
    #[error("no agent to serve: give a v1 agent, a v2 agent or both")]
    NoAgent,
    /// The client closed the stream before sending anything.
    #[error("the client closed the connection before sending anything")]
    ClosedBeforeFirstMessage,
    /// Reading the first message failed.
    #[error("reading the client's first message failed: {0}")]
    Io(#[from] std::io::Error),
}

/// What a first message offers: `initialize`'s integer `protocolVersion`, and whether its
/// params read as a v2 `initialize` request.
fn offered(line: &[u8]) -> Option<(u64, bool)> {
    let mut message: Value = serde_json::from_slice(line).ok()?;
    if message.get("method")?.as_str()? != "initialize" {
        return None;
    }
    let params = message.get_mut("params")?.take();
    let version = params.get("protocolVersion")?.as_u64()?;
    let v2_shaped = serde_json::from_value::<super::types::InitializeRequest>(params).is_ok();
    Some((version, v2_shaped))
}

/// Whether an agent that speaks v2, and v1 too when `has_v1`, serves v2 to a client whose
/// first line is `first_line` (the table above). For a program that reads the first line
/// itself before choosing how to serve, as the echo agent example does.
pub fn first_line_goes_to_v2(first_line: &[u8], has_v1: bool) -> bool {
    serves_v2(offered(first_line), has_v1)
}

/// Whether an agent speaking v1 (`has_v1`) and v2 serves v2 to this offer.
fn serves_v2(offer: Option<(u64, bool)>, has_v1: bool) -> bool {
    match offer {
        Some((2, _)) => true,
        Some((version, v2_shaped)) if version > 2 => v2_shaped || !has_v1,
        _ => false,
    }
}

/// Serves the client in the version its `initialize` offers, with `v1` or `v2` (at least
/// one); the v1 side keeps its sessions in `store` for `identity`.
pub(crate) async fn serve<A1, A2>(
    v1: Option<A1>,
    v2: Option<A2>,
    reader: impl Input,
    writer: impl Output,
    config: Config,
    store: Option<Arc<dyn SessionStore>>,
    identity: Option<Arc<str>>,
) -> Result<Served, VersionError>
where
    A1: crate::Agent,
    A2: Agent,
{
    if v1.is_none() && v2.is_none() {
        return Err(VersionError::NoAgent);
    }
    let mut sniffer = LineSniffer::new(reader, config.max_message_size);
    let offer = match sniffer.next_line().await {
        Ok(Some(line)) => {
            let offer = offered(&line);
            sniffer.unread(&line);
            offer
        }
        Ok(None) => return Err(VersionError::ClosedBeforeFirstMessage),
        // The served connection answers the oversized line itself.
        Err(SniffError::TooLong(_)) => None,
        Err(SniffError::Io(e)) => return Err(e.into()),
    };
    let reader = sniffer.into_reader();
    let wants_v2 = serves_v2(offer, v1.is_some());
    tracing::debug!(version = ?offer.map(|(v, _)| v), wants_v2, "protocol version offered");
    Ok(match (v1, v2) {
        (Some(_), Some(agent)) | (None, Some(agent)) if wants_v2 => {
            Served::V2(super::serve_with(agent, reader, writer, config))
        }
        (Some(agent), _) => Served::V1(crate::connection::serve_inner(
            agent,
            (reader, writer),
            config,
            store,
            identity,
        )),
        (None, Some(agent)) => Served::V2(super::serve_with(agent, reader, writer, config)),
        (None, None) => return Err(VersionError::NoAgent),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initialize(params: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params
        }))
        .unwrap()
    }

    #[test]
    fn a_later_version_in_v1_shape_is_served_v1_when_the_agent_has_it() {
        let v1_shaped = initialize(serde_json::json!({"protocolVersion": 65535}));
        let offer = offered(&v1_shaped);
        assert_eq!(offer, Some((65535, false)));
        assert!(!serves_v2(offer, true), "v1 reads it: v1 answers");
        assert!(serves_v2(offer, false), "a v2-only agent still answers");
    }

    #[test]
    fn a_later_version_in_v2_shape_is_served_v2() {
        let v2_shaped = initialize(serde_json::json!({
            "protocolVersion": 65535,
            "info": {"name": "later-client", "version": "9.0.0"},
        }));
        let offer = offered(&v2_shaped);
        assert_eq!(offer, Some((65535, true)));
        assert!(serves_v2(offer, true));
    }

    #[test]
    fn version_two_and_v1_offers_go_where_they_name() {
        let two = offered(&initialize(serde_json::json!({"protocolVersion": 2})));
        assert!(serves_v2(two, true));
        let one = offered(&initialize(serde_json::json!({"protocolVersion": 1})));
        assert!(!serves_v2(one, true));
        assert!(!serves_v2(
            offered(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"),
            true
        ));
        assert!(!first_line_goes_to_v2(b"not json", true));
        let later_v1_shaped = initialize(serde_json::json!({"protocolVersion": 65535}));
        assert!(!first_line_goes_to_v2(&later_v1_shaped, true));
        assert!(first_line_goes_to_v2(&later_v1_shaped, false));
    }
}
