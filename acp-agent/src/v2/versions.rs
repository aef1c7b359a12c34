//! An agent that speaks v1, v2 or both ([`crate::Builder::v2`], [`crate::Builder::v2_only`])
//! reads the client's `initialize` and serves the version it offers.
//!
//! | the client offers | the agent has v2 and v1 | only v1 | only v2 |
//! | --- | --- | --- | --- |
//! | `protocolVersion` 2 or more | v2 | v1 (its answer says 1) | v2 |
//! | `protocolVersion` 1 | v1 | v1 | v2 (its answer says 2) |
//! | anything else first | v1 | v1 | v2 |
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

/// The version a first message offers: `initialize`'s integer `protocolVersion`.
fn offered(line: &[u8]) -> Option<u64> {
    let message: Value = serde_json::from_slice(line).ok()?;
    if message.get("method")?.as_str()? != "initialize" {
        return None;
    }
    message.get("params")?.get("protocolVersion")?.as_u64()
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
    let version = match sniffer.next_line().await {
        Ok(Some(line)) => {
            let version = offered(&line);
            sniffer.unread(&line);
            version
        }
        Ok(None) => return Err(VersionError::ClosedBeforeFirstMessage),
        // The served connection answers the oversized line itself.
        Err(SniffError::TooLong(_)) => None,
        Err(SniffError::Io(e)) => return Err(e.into()),
    };
    let reader = sniffer.into_reader();
    let wants_v2 = version.is_some_and(|v| v >= 2);
    tracing::debug!(?version, "protocol version offered");
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
