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
    /// The wire's peer (the legacy connection's, for a translated client).
    peer: Peer,
    v1: Option<AgentConnection>,
}

impl NegotiatedConnection {
    /// The dialect being spoken.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The v1 connection, when the client speaks v1 (a legacy client is served through its
    /// translation, and its handles speak that dialect).
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
    let detected = match sniffer.next_line().await {
        Ok(Some(line)) => {
            let detected = detect(&line);
            sniffer.unread(&line);
            detected
        }
        Ok(None) => return Err(NegotiationError::ClosedBeforeFirstMessage),
        // The connection answers the oversized line in the dialect it speaks.
        Err(SniffError::TooLong(_)) => None,
        Err(SniffError::Io(e)) => return Err(e.into()),
    };
    let dialect = choose(detected, &accepted);
    tracing::debug!(?detected, %dialect, "negotiated");
    let reader = sniffer.into_reader();
    let config = options.config;
    let legacy_options = options.legacy.with_config(config.clone());
    let store = options.store;
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
    Ok(NegotiatedConnection { dialect, peer, v1 })
}

impl fmt::Display for NegotiatedConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent connection speaking {}", self.dialect)
    }
}
