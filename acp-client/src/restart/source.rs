//! Where a [`SupervisedAgent`] gets its agent from each time it starts one: a command it
//! spawns ([`AgentCommand`]), or a [`Connector`] that opens a fresh transport to an agent
//! that lives elsewhere (a remote agent: `acp_remote::RemoteConnector` reaches one over
//! Streamable HTTP or WebSocket). Either way the supervisor negotiates on what it gets and
//! restores its sessions the same way.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use acp_rpc::{Error, ErrorCode};
use acp_types::v1::InitializeResponse;
use tokio::io::{AsyncRead, AsyncWrite};

use super::relay::{Relay, Shared};
use crate::negotiate::{NegotiateOptions, NegotiationError, OfferOutcome};
use crate::process::{AgentCommand, AgentProcess, ProcessError};
use crate::{Client, ClientConnection, Dialect};

#[cfg(doc)]
use super::SupervisedAgent;

/// A fresh connection to an agent, as a [`Connector`] opens it: the agent's messages on
/// `reader`, the client's on `writer` (JSON lines, as over stdio).
pub struct Transport {
    /// The agent's messages.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// The client's messages; closing it ends the connection.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// Resolves once the transport has said goodbye after the writer closed (a remote
    /// transport's `DELETE` or close frame); the supervisor waits for it, with a bound,
    /// when it shuts down. `None`: nothing to wait for.
    pub finished: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("finished", &self.finished.is_some())
            .finish_non_exhaustive()
    }
}

/// Opens a connection to an agent, each time a [`SupervisedAgent`] (re)starts it.
///
/// Implement it for a transport of your own; `acp_remote::RemoteConnector` implements it
/// for remote agents. An error fails that start attempt: the restart policy decides on a
/// retry from its code ([`super::FailureKind::of`]: `-32000` means the credential was
/// refused and is not retried; connection errors are).
#[async_trait::async_trait]
pub trait Connector: Send + Sync + 'static {
    /// Opens a fresh connection.
    async fn connect(&self) -> Result<Transport, Error>;

    /// What it reaches, for logs and errors (a URL, a socket path).
    fn describe(&self) -> String;
}

/// The agent a supervisor (re)starts.
pub(crate) enum Source {
    Command(AgentCommand),
    Connector(Arc<dyn Connector>),
}

impl Source {
    pub(crate) fn describe(&self) -> String {
        match self {
            Source::Command(command) => command.program.to_string_lossy().into_owned(),
            Source::Connector(connector) => connector.describe(),
        }
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Command(command) => command.fmt(f),
            Source::Connector(connector) => write!(f, "Connector({})", connector.describe()),
        }
    }
}

/// A running agent and the connection to it.
pub(crate) struct Live {
    pub(crate) process: Option<AgentProcess>,
    pub(crate) finished: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    pub(crate) connection: ClientConnection,
    pub(crate) initialize: InitializeResponse,
    pub(crate) dialect: Dialect,
}

/// Starts the agent of `source` and negotiates with it. A process that cannot start is the
/// agent being unreachable (for the retry table); a connector's error keeps its code.
pub(crate) async fn start<C: Client>(
    source: &Source,
    client: &Arc<Relay<C>>,
    options: &NegotiateOptions,
) -> Result<Live, Error> {
    match source {
        Source::Command(command) => start_command(command, client, options)
            .await
            .map_err(|e| Error::new(ErrorCode::CONNECTION_CLOSED, e.to_string())),
        Source::Connector(connector) => start_connector(&**connector, client, options).await,
    }
}

/// Spawns `command` and negotiates with it.
pub(crate) async fn start_command<C: Client>(
    command: &AgentCommand,
    client: &Arc<Relay<C>>,
    options: &NegotiateOptions,
) -> Result<Live, ProcessError> {
    let mut process = AgentProcess::spawn(command)?;
    let negotiated = process
        .negotiate(Arc::new(Shared(client.clone())), options.clone())
        .await?;
    Ok(Live {
        process: Some(process),
        finished: None,
        connection: negotiated.connection,
        initialize: negotiated.initialize,
        dialect: negotiated.dialect,
    })
}

/// Opens a connection through `connector` and negotiates on it. A refused credential
/// (`-32000` answering an offer) keeps its code, so the retry table does not retry it.
pub(crate) async fn start_connector<C: Client>(
    connector: &dyn Connector,
    client: &Arc<Relay<C>>,
    options: &NegotiateOptions,
) -> Result<Live, Error> {
    let transport = connector.connect().await?;
    let negotiated = crate::negotiate::connect(
        Arc::new(Shared(client.clone())),
        transport.reader,
        transport.writer,
        options.clone(),
    )
    .await
    .map_err(|e| {
        let code = match &e {
            NegotiationError::NoAnswer(tried) | NegotiationError::Deadline(_, tried) => {
                tried.iter().find_map(|(_, outcome)| match outcome {
                    OfferOutcome::Refused(refusal) if refusal.code == ErrorCode::AUTH_REQUIRED => {
                        Some(refusal.code)
                    }
                    _ => None,
                })
            }
            _ => None,
        };
        Error::new(
            code.unwrap_or(ErrorCode::CONNECTION_CLOSED),
            format!("negotiating with {} failed: {e}", connector.describe()),
        )
    })?;
    Ok(Live {
        process: None,
        finished: transport.finished,
        connection: negotiated.connection,
        initialize: negotiated.initialize,
        dialect: negotiated.dialect,
    })
}
