//! Negotiation on the agent side ([`crate::Builder::negotiate`]): serve one v1 [`Agent`] to
//! a client of any dialect this build speaks, detected from the client's first message.
//!
//! ```no_run
//! use acp_agent::negotiate::NegotiateOptions;
//! use acp_agent::types::{InitializeRequest, InitializeResponse, ProtocolVersion};
//! use acp_agent::{Agent, AgentContext, Builder, Dialect, Error};
//!
//! struct MyAgent;
//!
//! #[acp_agent::async_trait]
//! impl Agent for MyAgent {
//!     async fn initialize(&self, _p: InitializeRequest, _cx: &AgentContext)
//!         -> Result<InitializeResponse, Error> {
//!         Ok(InitializeResponse::new(ProtocolVersion::V1))
//!     }
//! }
//!
//! # async fn run() -> Result<(), acp_agent::negotiate::NegotiationError> {
//! // Accept v1 and the 0.0.9 dialect, not threads.
//! let options = NegotiateOptions::default().with_dialects([Dialect::V1, Dialect::Legacy009]);
//! let conn = Builder::new(MyAgent).negotiate(options).stdio().await?;
//! eprintln!("the client speaks {}", conn.dialect());
//! conn.closed().await;
//! # Ok(()) }
//! ```
//!
//! # Detection
//!
//! [`detect`] reads the first message (its docs say what each dialect's looks like); one
//! that shows no dialect is served by the first accepted dialect, answering as it answers.
//!
//! # A dialect the agent does not accept
//!
//! The client is answered as the specifications say, never left waiting: a 0.0.9
//! `initialize` sent to an agent that accepts v1 but not 0.0.9 is answered by the v1
//! connection with the latest version it speaks (`1`), and a v1 `initialize` sent to an
//! agent that accepts 0.0.9 but not v1 is answered `"0.0.9"`; in both cases the client
//! decides whether it can go on. A dialect with no common ground (a thread method sent to
//! an agent that does not accept threads) gets that dialect's error for an unknown or
//! premature method.

use std::fmt;

use acp_dialects::{Input, Output};
use acp_rpc::sniff::{LineSniffer, SniffError};
use acp_rpc::{CloseReason, Peer};

use crate::store::StoreSlot;
use crate::{Agent, AgentConnection, Dialect};

/// What [`crate::Builder::negotiate`] accepts, and how it serves each dialect (acp-dialects' options shared by
/// both sides, with this side's own part: where the sessions are kept, see
/// [`crate::store`]; `with_store` keeps them in any [`crate::store::SessionStore`]).
pub type NegotiateOptions = acp_dialects::negotiation::NegotiateOptions<AgentSide<StoreSlot>>;

pub use acp_dialects::negotiation::AgentSide;
pub use acp_dialects::negotiation::{choose, compiled_dialects, detect};

/// Why a negotiating [`crate::Builder`] could not start a connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The client closed the stream before sending anything.
    #[error("the client closed the connection before sending anything")]
    ClosedBeforeFirstMessage,
    /// Reading the first message failed.
    #[error("reading the client's first message failed: {0}")]
    Io(#[from] std::io::Error),
    /// No dialect to serve: the list is empty or names only dialects this build lacks.
    #[error("no dialect to serve: {0:?} names none this build speaks (it speaks {1:?})")]
    NoDialect(Vec<Dialect>, Vec<Dialect>),
}

/// A connection whose dialect was negotiated: the v1 connection, or a legacy one running the
/// v1 agent through its translation.
#[derive(Clone, Debug)]
pub struct NegotiatedConnection {
    dialect: Dialect,
    /// 1, or 2 for a v2 client served through the v1<->v2 translation.
    version: u16,
    /// The wire's peer (the legacy connection's, for a translated client).
    peer: Peer,
    v1: Option<AgentConnection>,
}

impl NegotiatedConnection {
    /// A v1 connection, served as it is.
    pub(crate) fn served_v1(conn: AgentConnection) -> Self {
        NegotiatedConnection {
            dialect: Dialect::V1,
            version: 1,
            peer: conn.peer().clone(),
            v1: Some(conn),
        }
    }

    /// A v2 client served the v1 agent through the v1<->v2 translation, whose wire is `peer`.
    #[cfg(feature = "v2")]
    pub(crate) fn translated_v2(peer: Peer) -> Self {
        NegotiatedConnection {
            dialect: Dialect::V1,
            version: 2,
            peer,
            v1: None,
        }
    }

    /// The dialect being spoken.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The protocol version served: 1 (v1 or a legacy dialect), or 2 for a client offering
    /// v2 to a negotiation that accepts it (`NegotiateOptions::with_v2`), whose
    /// [`NegotiatedConnection::dialect`] is then [`Dialect::V1`], the agent's own.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The v1 connection, when the client speaks v1 (a legacy or v2 client is served through
    /// its translation, and its handles speak that dialect).
    pub fn v1(&self) -> Option<&AgentConnection> {
        self.v1.as_ref()
    }

    /// Resolves when the connection has ended, with the reason, and its output is done
    /// (what was queued for the client is written, see [`acp_rpc::Peer::finished`]), so a
    /// process may exit right after.
    pub async fn closed(&self) -> CloseReason {
        self.peer.finished().await
    }

    /// Ends the connection.
    pub fn close(&self) {
        self.peer.close();
    }
}

/// What a negotiating [`crate::Builder`] hands [`serve`]: the builder's settings.
pub(crate) struct Accept {
    pub(crate) dialects: Vec<Dialect>,
    pub(crate) config: acp_rpc::Config,
    pub(crate) legacy: acp_dialects::AdapterOptions,
    pub(crate) store: Option<std::sync::Arc<dyn crate::store::SessionStore>>,
    pub(crate) identity: Option<std::sync::Arc<str>>,
    /// Serve a client offering v2 through the v1<->v2 translation.
    #[cfg(feature = "v2")]
    pub(crate) v2: bool,
}

/// Waits for the client's first message, detects its dialect ([`detect`]), and serves
/// `agent` in the accepted dialect that fits (see the module docs).
pub(crate) async fn serve<A: Agent>(
    agent: A,
    reader: impl Input,
    writer: impl Output,
    options: Accept,
) -> Result<NegotiatedConnection, NegotiationError> {
    let accepted = acp_dialects::negotiation::accepted(&options.dialects)
        .map_err(|compiled| NegotiationError::NoDialect(options.dialects.clone(), compiled))?;
    let mut sniffer = LineSniffer::new(reader, options.config.max_message_size);
    let (detected, wants_v2) = match sniffer.next_line().await {
        Ok(Some(line)) => {
            let detected = detect(&line);
            let wants_v2 = serves_v2(&options, &line);
            sniffer.unread(&line);
            (detected, wants_v2)
        }
        Ok(None) => return Err(NegotiationError::ClosedBeforeFirstMessage),
        // The connection answers the oversized line in the dialect it speaks.
        Err(SniffError::TooLong(_)) => (None, false),
        Err(SniffError::Io(e)) => return Err(e.into()),
    };
    let reader = sniffer.into_reader();
    let config = options.config;
    let legacy_options = options.legacy.with_config(config.clone());
    let store = options.store;
    #[cfg(feature = "v2")]
    if wants_v2 {
        tracing::debug!(?detected, "negotiated v2, through the v1<->v2 translation");
        let translation = crate::v2::serve_v1_with(
            agent,
            reader,
            writer,
            legacy_options,
            store,
            options.identity,
        );
        return Ok(NegotiatedConnection::translated_v2(
            translation.peer().clone(),
        ));
    }
    let _ = wants_v2;
    let dialect = choose(detected, &accepted);
    tracing::debug!(?detected, %dialect, "negotiated");
    let (peer, v1) = match dialect {
        Dialect::V1 => {
            let transport = (reader, writer);
            let conn =
                crate::connection::serve_inner(agent, transport, config, store, options.identity);
            (conn.peer().clone(), Some(conn))
        }
        legacy => {
            let translation = crate::legacy::serve_translated(
                legacy,
                agent,
                reader,
                writer,
                legacy_options,
                store,
            );
            let translation = translation.expect("only compiled dialects are accepted");
            (translation.peer().clone(), None)
        }
    };
    Ok(NegotiatedConnection {
        dialect,
        version: 1,
        peer,
        v1,
    })
}

/// Whether the client whose first line is `first_line` is served v2 through the
/// translation: the negotiation accepts v2 and the line offers it (the table in
/// [`crate::v2`], for an agent that has v1).
fn serves_v2(options: &Accept, first_line: &[u8]) -> bool {
    #[cfg(feature = "v2")]
    return options.v2 && crate::v2::first_line_goes_to_v2(first_line, true);
    #[cfg(not(feature = "v2"))]
    {
        let _ = (options, first_line);
        false
    }
}

impl fmt::Display for NegotiatedConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.version {
            2 => f.write_str(
                "agent connection speaking v2 (the v1 agent through the v1<->v2 translation)",
            ),
            _ => write!(f, "agent connection speaking {}", self.dialect),
        }
    }
}
