//! Reconnecting to a remote agent: [`RemoteConnector`] opens a fresh [`RemoteLink`] each
//! time an [`acp_client::restart::SupervisedAgent`] asks, so a client survives a server that
//! restarts, a host that dies behind a load balancer, or a network that drops: the
//! supervisor connects again, sends a new `initialize`, then `session/resume` (or
//! `session/load`) for each session it had, as the transport RFD prescribes.
//!
//! ```no_run
//! use acp_client::negotiate::NegotiateOptions;
//! use acp_client::restart::{RestartPolicy, SupervisedAgent};
//! # #[derive(Clone)] struct Editor;
//! # #[acp_client::async_trait] impl acp_client::Client for Editor {}
//! # async fn run() -> Result<(), acp_rpc::Error> {
//! let connector = acp_remote::RemoteConnector::new(
//!     "ws://127.0.0.1:8080/acp",
//!     acp_remote::ConnectOptions::new().token("secret"),
//! );
//! use acp_agent::types::{InitializeRequest, ProtocolVersion};
//! let init = InitializeRequest::new(ProtocolVersion::V1);
//! let agent = SupervisedAgent::connect(
//!     connector,
//!     Editor,
//!     NegotiateOptions::new(init),
//!     RestartPolicy::default(),
//! )
//! .await?;
//! // Use `agent.new_session(...)` and `agent.prompt(...)`: the sessions come back after a
//! // reconnection with the same ids.
//! # Ok(()) }
//! ```

use acp_client::restart::{Connector, Transport};
use acp_rpc::ErrorCode;

use super::{ConnectOptions, connect};
use crate::Error;

/// Connects to a remote agent again each time a supervisor needs it; see the module docs.
#[derive(Clone, Debug)]
pub struct RemoteConnector {
    url: String,
    options: ConnectOptions,
}

impl RemoteConnector {
    /// Reaches `url` (`http://HOST:PORT/acp` or `ws://HOST:PORT/acp`) with `options`.
    pub fn new(url: impl Into<String>, options: ConnectOptions) -> Self {
        RemoteConnector {
            url: url.into(),
            options,
        }
    }
}

#[acp_client::async_trait]
impl Connector for RemoteConnector {
    async fn connect(&self) -> Result<Transport, acp_rpc::Error> {
        let link = connect(&self.url, &self.options)
            .await
            .map_err(|e| connect_error(&self.url, e))?;
        let finished = link.finished;
        Ok(Transport {
            reader: Box::new(link.reader),
            writer: Box::new(link.writer),
            finished: Some(Box::pin(async move { finished.wait().await })),
        })
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

/// A failed connection as the supervisor's retry table reads it: a refused credential is
/// not retried, an unreachable or overloaded server is, a URL this crate cannot reach is a
/// mistake to report.
fn connect_error(url: &str, error: Error) -> acp_rpc::Error {
    let code = match &error {
        Error::Refused { status, .. } => super::code_for_status(*status),
        Error::Io(_) | Error::WebSocket(_) => ErrorCode::CONNECTION_CLOSED,
        Error::Config(_) => ErrorCode::INVALID_REQUEST,
    };
    acp_rpc::Error::new(code, format!("connecting to {url} failed: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_client::restart::FailureKind;

    #[test]
    fn connection_failures_are_classified_for_the_retry_table() {
        let kind = |e: Error| FailureKind::of(&connect_error("ws://127.0.0.1:1/acp", e));
        let refused = |status| Error::Refused {
            status,
            message: String::new(),
        };
        assert_eq!(kind(refused(401)), FailureKind::Authentication);
        assert_eq!(kind(refused(503)), FailureKind::Timeout);
        assert_eq!(kind(refused(404)), FailureKind::Timeout);
        assert_eq!(kind(refused(413)), FailureKind::Protocol);
        assert_eq!(
            kind(Error::Io(std::io::ErrorKind::ConnectionRefused.into())),
            FailureKind::Timeout
        );
        assert_eq!(kind(Error::Config("bad".into())), FailureKind::Protocol);
    }
}
