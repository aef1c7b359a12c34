//! One `http` MCP server (feature `mcp-http`): rmcp's streamable HTTP client with the
//! server's headers, the handshake and tool listing within the start bound, and the server
//! marked unavailable once its MCP session ends. It is not restarted: a failing HTTP server is
//! reported, not retried. `https://` goes over rustls with ring (see the `tls` module).

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::server::{Live, State, Watcher};
use super::{McpConfig, McpError};
use crate::types::McpServerHttp;

/// What the HTTP supervisor needs, shared with the connector.
pub(super) struct HttpSupervisor {
    pub(super) name: String,
    pub(super) spec: McpServerHttp,
    pub(super) config: McpConfig,
    pub(super) state: watch::Sender<State>,
    pub(super) shutdown: CancellationToken,
}

impl HttpSupervisor {
    /// Connects, then watches the MCP session until it ends or the connector closes.
    pub(super) async fn run(self) {
        let bound = self.config.start_timeout;
        let connected = tokio::select! {
            connected = tokio::time::timeout(bound, self.connect()) => connected,
            _ = self.shutdown.cancelled() => {
                self.state.send_replace(State::Failed(McpError::Closed));
                return;
            }
        };
        let service = match connected {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                self.state.send_replace(State::Failed(e));
                return;
            }
            Err(_) => {
                self.state
                    .send_replace(State::Failed(McpError::StartTimeout {
                        server: self.name.clone(),
                        after: bound,
                        stderr: String::new(),
                    }));
                return;
            }
        };
        tokio::select! {
            _ = service.waiting() => {
                self.state.send_replace(State::Failed(McpError::Exited {
                    server: self.name.clone(),
                    stderr: String::new(),
                }));
            }
            _ = self.shutdown.cancelled() => {
                self.state.send_replace(State::Failed(McpError::Closed));
            }
        }
    }

    async fn connect(
        &self,
    ) -> Result<rmcp::service::RunningService<rmcp::RoleClient, Watcher>, McpError> {
        let mut headers = HashMap::new();
        for h in &self.spec.headers {
            let name = HeaderName::from_bytes(h.name.as_bytes());
            let value = HeaderValue::from_str(&h.value);
            let (Ok(name), Ok(value)) = (name, value) else {
                return Err(self.error(format!("invalid header {:?}", h.name)));
            };
            headers.insert(name, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(self.spec.url.clone())
            .custom_headers(headers);
        if let Some(policy) = &self.config.policy {
            // An address literal never reaches the resolver: checked here.
            policy
                .check_url_now(&self.spec.url)
                .map_err(|why| self.error(format!("{} is refused: {why}", self.spec.url)))?;
        }
        let client =
            super::tls::client(&self.config.root_certificates, self.config.policy.as_ref())
                .map_err(|e| self.error(e))?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let service = Watcher::new(&self.name, &self.config)
            .serve(transport)
            .await
            .map_err(|e| self.error(e.to_string()))?;
        service
            .service()
            .list(service.peer())
            .await
            .map_err(|e| self.error(e))?;
        let live = Live {
            peer: service.peer().clone(),
            tools: service.service().tools.clone(),
        };
        self.state.send_replace(State::Ready(Arc::new(live)));
        Ok(service)
    }

    fn error(&self, reason: String) -> McpError {
        McpError::Initialize {
            server: self.name.clone(),
            reason,
            stderr: String::new(),
        }
    }
}
