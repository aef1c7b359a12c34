//! A client that speaks v1, v2 or both ([`crate::Builder::v2`], [`crate::Builder::v2_only`])
//! offers its highest version and falls back when the agent answers lower.
//!
//! With v2 offered, the v2 `initialize` goes out first, before any connection starts. The
//! answer's `protocolVersion` decides: `2` starts the v2 connection (the handshake is done);
//! `1`, with v1 offered too, starts a v1 connection that does v1's own handshake (the agent
//! has not seen the client's v1 capabilities); an error answer falls back to v1 the same way.
//! A version that was not offered (`1` when only v2 is, `3`, ...) is
//! [`VersionError::Unoffered`]: the specification's rule, a client that does not support the
//! version the agent answers closes the connection and tells the user. With only v1 offered,
//! the v1 handshake runs as usual and an answer other than `1` is the same error.

use std::time::Duration;

use acp_dialects::{Input, Output};
use acp_rpc::Config;
use acp_rpc::sniff::{LineSniffer, SniffError};
use acp_types::v1;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::Client;
use super::types::{InitializeRequest, InitializeResponse};

/// What a [`crate::Builder`] speaking v2 offers: the `initialize` of each version the client speaks
/// (`None`: that version is not offered), the connection's configuration and how long to
/// wait for the v2 answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Offer {
    /// The v2 handshake, when v2 is offered.
    pub v2: Option<InitializeRequest>,
    /// The v1 handshake, when v1 is offered.
    pub v1: Option<v1::InitializeRequest>,
    /// The configuration of the connection that starts.
    pub config: Config,
    /// How long to wait for the answer to the v2 `initialize` (default 30 s).
    pub timeout: Duration,
    /// At most this many lines the agent writes before its answer are kept for the
    /// connection (default 64); more is an error, so memory stays bounded.
    pub max_kept_lines: usize,
}

impl Offer {
    /// Offers both versions, v2 first.
    pub fn both(v2: InitializeRequest, v1: v1::InitializeRequest) -> Self {
        Offer {
            v2: Some(v2),
            v1: Some(v1),
            config: Config::default(),
            timeout: Duration::from_secs(30),
            max_kept_lines: 64,
        }
    }

    /// Offers v2 only.
    pub fn v2_only(v2: InitializeRequest) -> Self {
        Offer {
            v1: None,
            ..Offer::both(v2, v1::InitializeRequest::new(v1::ProtocolVersion::V1))
        }
    }

    /// Offers v1 only.
    pub fn v1_only(v1: v1::InitializeRequest) -> Self {
        Offer {
            v2: None,
            ..Offer::both(
                InitializeRequest::new(2, super::types::Implementation::new("", "")),
                v1,
            )
        }
    }
}

/// The connection a [`crate::Builder`] speaking v2 started, with the agent's `initialize` answer.
#[derive(Debug)]
pub enum Connected {
    /// The agent speaks v1.
    V1 {
        /// The v1 connection.
        connection: crate::ClientConnection,
        /// The agent's v1 answer (boxed, as is v2's: answers differ much in size).
        initialize: Box<v1::InitializeResponse>,
    },
    /// The agent speaks v2.
    V2 {
        /// The v2 connection.
        connection: super::ClientConnection,
        /// The agent's v2 answer.
        initialize: Box<InitializeResponse>,
    },
}

/// Why a [`crate::Builder`] speaking v2 started no connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VersionError {
    /// The offer names no version, or a version without its client.
    #[error("nothing to offer: give the client and the initialize of at least one version")]
    NothingOffered,
    /// The agent answered a version the client did not offer.
    #[error(
        "the agent answered protocol version {answered}, which this client did not offer ({offered})"
    )]
    Unoffered {
        /// The version the agent answered.
        answered: Value,
        /// What was offered, e.g. `2, 1`.
        offered: String,
    },
    /// The handshake failed (an error answer, or an answer that does not read).
    #[error("the initialize handshake failed: {0}")]
    Handshake(acp_rpc::Error),
    /// No answer to the v2 `initialize` within [`Offer::timeout`].
    #[error("no answer to initialize within {0:?}")]
    Timeout(Duration),
    /// The agent closed the stream before answering.
    #[error("the agent closed the connection before answering initialize")]
    Closed,
    /// The agent wrote more than [`Offer::max_kept_lines`] lines before answering.
    #[error("the agent wrote more than {0} lines before answering initialize")]
    TooMuchBeforeAnswer(usize),
    /// Reading or writing the stream failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

fn offered(offer: &Offer, v1: bool, v2: bool) -> String {
    let mut out = Vec::new();
    if v2 && offer.v2.is_some() {
        out.push("2");
    }
    if v1 && offer.v1.is_some() {
        out.push("1");
    }
    out.join(", ")
}

/// Offers the client's versions (see the module docs) and starts the connection the agent's
/// answer calls for.
pub(crate) async fn connect<C1, C2>(
    v1_client: Option<std::sync::Arc<C1>>,
    v2_client: Option<C2>,
    reader: impl Input,
    mut writer: impl Output,
    offer: Offer,
) -> Result<Connected, VersionError>
where
    C1: crate::Client,
    C2: Client,
{
    let has_v1 = v1_client.is_some() && offer.v1.is_some();
    let has_v2 = v2_client.is_some() && offer.v2.is_some();
    let offered_text = offered(&offer, has_v1, has_v2);
    let (Some(v2_client), Some(init)) = (v2_client, offer.v2.clone()) else {
        let (Some(client), true) = (v1_client, has_v1) else {
            return Err(VersionError::NothingOffered);
        };
        return connect_v1(client, reader, writer, &offer, 0, offered_text).await;
    };
    let line = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init});
    let mut bytes = serde_json::to_vec(&line).expect("JSON");
    bytes.push(b'\n');
    writer.write_all(&bytes).await?;
    writer.flush().await?;

    let mut sniffer = LineSniffer::new(reader, offer.config.max_message_size);
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let answer = tokio::time::timeout(offer.timeout, async {
        loop {
            let line = match sniffer.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return Err(VersionError::Closed),
                Err(SniffError::TooLong(_)) => continue,
                Err(SniffError::Io(e)) => return Err(e.into()),
            };
            let message: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
            if message.get("id") == Some(&json!(0)) && message.get("method").is_none() {
                return Ok(message);
            }
            if kept.len() >= offer.max_kept_lines {
                return Err(VersionError::TooMuchBeforeAnswer(offer.max_kept_lines));
            }
            kept.push(line);
        }
    })
    .await
    .map_err(|_| VersionError::Timeout(offer.timeout))??;
    let mut replay = Vec::new();
    for line in kept {
        replay.extend_from_slice(&line);
        replay.push(b'\n');
    }
    if !replay.is_empty() {
        replay.pop();
        sniffer.unread(&replay);
    }
    let reader = sniffer.into_reader();

    let version = answer["result"]["protocolVersion"].clone();
    if answer.get("error").is_some() || version.as_u64() == Some(1) {
        // An error, or a v1 agent: v1's own handshake, when v1 is offered.
        if let (Some(client), true) = (v1_client, has_v1) {
            return connect_v1(client, reader, writer, &offer, 1, offered_text).await;
        }
        if let Some(error) = answer.get("error") {
            let error = serde_json::from_value(error.clone())
                .unwrap_or_else(|_| acp_rpc::Error::internal_error(error.to_string()));
            return Err(VersionError::Handshake(error));
        }
    }
    if version.as_u64() != Some(2) {
        return Err(VersionError::Unoffered {
            answered: version,
            offered: offered_text,
        });
    }
    let initialize: InitializeResponse =
        serde_json::from_value(answer["result"].clone()).map_err(|e| {
            VersionError::Handshake(acp_rpc::Error::invalid_params(format!(
                "the agent's initialize answer does not read as v2: {e}"
            )))
        })?;
    let config = offer.config.with_first_request_id(1);
    let connection = super::connect_with(v2_client, reader, writer, config);
    Ok(Connected::V2 {
        connection,
        initialize: Box::new(initialize),
    })
}

async fn connect_v1(
    client: std::sync::Arc<impl crate::Client>,
    reader: impl Input,
    writer: impl Output,
    offer: &Offer,
    first_id: i64,
    offered_text: String,
) -> Result<Connected, VersionError> {
    let init = offer.v1.clone().ok_or(VersionError::NothingOffered)?;
    let config = offer.config.clone().with_first_request_id(first_id);
    let connection = crate::ClientConnection::start(client, (reader, writer), config);
    let initialize = connection
        .agent()
        .initialize(init)
        .await
        .map_err(VersionError::Handshake)?;
    if initialize.protocol_version != v1::ProtocolVersion::V1 {
        connection.close();
        return Err(VersionError::Unoffered {
            answered: json!(initialize.protocol_version),
            offered: offered_text,
        });
    }
    Ok(Connected::V1 {
        connection,
        initialize: Box::new(initialize),
    })
}
