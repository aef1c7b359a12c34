//! The v2 offer of a negotiation ([`acp_dialects::negotiation::OfferV2`]): its line, and
//! the connection to an agent that answered it, a v1 connection through acp-dialects'
//! v1<->v2 translation.

use std::sync::Arc;

use acp_dialects::{Input, Output};
use serde_json::Value;

use super::{NegotiateOptions, Negotiated, NegotiationError};
use crate::Client;
#[cfg(feature = "v2")]
use crate::{ClientConnection, Dialect};

/// The v2 offer's line and whether it is the only offer, when v2 is offered (and this
/// build has v2).
pub(super) fn v2_offer(options: &NegotiateOptions) -> Option<(Vec<u8>, bool)> {
    #[cfg(feature = "v2")]
    {
        use acp_dialects::negotiation::OfferV2;
        let only = match options.side.v2 {
            OfferV2::No => return None,
            OfferV2::Only => true,
            _ => false,
        };
        let init = acp_dialects::v2::v2_initialize(&options.side.initialize).ok()?;
        let message =
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init});
        let mut line = serde_json::to_vec(&message).expect("an initialize serializes");
        line.push(b'\n');
        Some((line, only))
    }
    #[cfg(not(feature = "v2"))]
    {
        let _ = options;
        None
    }
}

/// A v2 agent (it answered the v2 offer with `result`) driven for the v1 `client` through
/// acp-dialects' v1<->v2 translation, its v1 `initialize` answered from `result`.
#[cfg(feature = "v2")]
pub(super) async fn connect_v2<C: Client>(
    client: Arc<C>,
    reader: impl Input,
    writer: impl Output,
    options: NegotiateOptions,
    config: acp_rpc::Config,
    result: Value,
) -> Result<Negotiated, NegotiationError> {
    let adapter = options.legacy.with_config(config).with_handshake(result);
    let mut user = None;
    let start = |end| {
        let conn = user.insert(ClientConnection::start(
            client,
            end,
            acp_rpc::Config::default(),
        ));
        conn.peer().clone()
    };
    acp_dialects::v2::drive_for_v1_client(start, reader, writer, adapter);
    let connection = user.expect("the translation starts the v1 client before it returns");
    let initialize = connection
        .agent()
        .initialize(options.side.initialize)
        .await
        .map_err(|e| NegotiationError::Handshake(Dialect::V1, e))?;
    tracing::debug!("negotiated protocol version 2");
    Ok(Negotiated {
        dialect: Dialect::V1,
        version: 2,
        connection,
        initialize,
    })
}

#[cfg(not(feature = "v2"))]
pub(super) async fn connect_v2<C: Client>(
    _: Arc<C>,
    _: impl Input,
    _: impl Output,
    _: NegotiateOptions,
    _: acp_rpc::Config,
    _: Value,
) -> Result<Negotiated, NegotiationError> {
    unreachable!("v2 is offered only with the v2 feature")
}
