//! A v1 agent in front of a crow editor: the translation for the agent's role, on the
//! skeleton of [`crate::translate`]. [`Permissions`] is what its two ends share: the
//! permission requests waiting for the editor's `permission_response`.

use std::collections::HashMap;
use std::sync::Mutex;

use acp_rpc::{Error, RequestContext};
use acp_types::legacy::crow as c;
use acp_types::v1;
use async_trait::async_trait;
use tokio::sync::oneshot;

use super::native::{Agent, ClientHandle, Context};
use super::{prompt_to_v1, update_from_v1};
use crate::translate::{LegacyEnd, V1End, v1_routes};
use crate::{AdapterOptions, lock, not_forwarded};

/// What the two ends of a v1 agent in front of a crow editor share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Permissions {
    Permissions {
        waiting: Mutex::default(),
        options,
    }
}

/// Where a waiting permission request gets the chosen option id, or `None` when dismissed.
type Answer = oneshot::Sender<Option<String>>;

/// The state both ends of the translation share: the permission requests waiting for the
/// editor, by session and tool call.
pub(crate) struct Permissions {
    waiting: Mutex<HashMap<(v1::SessionId, String), Answer>>,
    options: AdapterOptions,
}

impl Permissions {
    fn answer(&self, session: &v1::SessionId, tool_call: &str, option: Option<String>) -> bool {
        let waiting = lock(&self.waiting).remove(&(session.clone(), tool_call.to_string()));
        waiting.is_some_and(|w| w.send(option).is_ok())
    }

    /// Cancels every request of a session.
    fn cancel_waiting(&self, session: &v1::SessionId) {
        lock(&self.waiting).retain(|(s, _), _| s != session);
    }
}

/// The crow agent the editor sees; every call becomes a v1 call to the agent on the pipe.
type CrowAgent = LegacyEnd<Permissions, ClientHandle>;

#[async_trait]
impl Agent for CrowAgent {
    async fn initialize(
        &self,
        params: c::InitializeParams,
        _cx: &Context,
    ) -> Result<c::InitializeResponse, Error> {
        let mut init = v1::InitializeRequest::new(v1::ProtocolVersion(params.protocol_version.0));
        if let Some(info) = params.client_info {
            let mut client = v1::Implementation::new(info.name, info.version);
            client.title = info.title;
            init = init.client_info(client);
        }
        let answer = self.v1.typed_request(&init).await?;
        let caps = &answer.agent_capabilities;
        let prompt = c::PromptCapabilities::new()
            .text(true)
            .image(caps.prompt_capabilities.image)
            .resource(caps.prompt_capabilities.embedded_context);
        let mcp = c::McpCapabilities::new()
            .http(caps.mcp_capabilities.http)
            .sse(caps.mcp_capabilities.sse);
        let capabilities = c::AgentCapabilities::new()
            .prompt_capabilities(prompt)
            .mcp_capabilities(mcp)
            .load_session(caps.load_session);
        let mut response =
            c::InitializeResponse::new(c::ProtocolVersion(answer.protocol_version.0))
                .agent_capabilities(capabilities);
        if let Some(info) = answer.agent_info {
            let mut agent = c::Implementation::new(info.name, info.version);
            agent.title = info.title;
            response = response.agent_info(agent);
        }
        Ok(response)
    }

    async fn session_new(
        &self,
        params: c::NewSessionParams,
        _cx: &Context,
    ) -> Result<c::NewSessionResponse, Error> {
        let servers: Vec<v1::McpServer> = params
            .mcp_servers
            .into_iter()
            .filter_map(|s| match serde_json::from_value(s) {
                Ok(server) => Some(server),
                Err(e) => {
                    tracing::warn!(error = %e, "an MCP server that does not read as v1's was dropped");
                    None
                }
            })
            .collect();
        let request = v1::NewSessionRequest::new(params.cwd, servers);
        let created = self.v1.typed_request(&request).await?;
        Ok(c::NewSessionResponse::new(created.session_id.as_str()))
    }

    async fn session_load(
        &self,
        params: c::LoadSessionParams,
        _cx: &Context,
    ) -> Result<c::LoadSessionResponse, Error> {
        let cwd = params.cwd.unwrap_or_else(|| self.options.session_cwd());
        let load = v1::LoadSessionRequest::new(
            Vec::<v1::McpServer>::new(),
            cwd,
            params.session_id.as_str(),
        );
        self.v1.typed_request(&load).await?;
        Ok(c::LoadSessionResponse::new())
    }

    async fn session_prompt(
        &self,
        params: c::PromptParams,
        _cx: &Context,
    ) -> Result<c::PromptResponse, Error> {
        let prompt =
            v1::PromptRequest::new(params.session_id.as_str(), prompt_to_v1(&params.prompt));
        let answer = self.v1.typed_request(&prompt).await?;
        Ok(c::PromptResponse::new(c::convert::stop_reason_from_v1(
            &answer.stop_reason,
        )))
    }

    async fn cancel(
        &self,
        params: c::CancelParams,
        _cx: &Context,
    ) -> Result<c::CancelResponse, Error> {
        let session = v1::SessionId::from(params.session_id.as_str());
        self.cancel_waiting(&session);
        self.v1
            .notify(
                v1::names::SESSION_CANCEL,
                &v1::CancelNotification::new(session),
            )
            .await?;
        Ok(c::CancelResponse::new())
    }

    async fn permission_response(&self, params: c::PermissionResponseParams) -> Result<(), Error> {
        let session = v1::SessionId::from(params.session_id.as_str());
        if !self.answer(&session, &params.tool_call_id, params.option_id) {
            tracing::debug!(tool_call = %params.tool_call_id, "a permission_response to no waiting request: ignored");
        }
        Ok(())
    }
}

/// The v1 client the agent sees on the pipe; its calls go to the crow editor.
type V1Client = V1End<Permissions, ClientHandle>;

v1_routes! {
    V1Client;
    requests { v1::names::SESSION_REQUEST_PERMISSION => request_permission }
    refuse |method| not_forwarded(crate::Dialect::Crow, method, "a crow editor has no such method");
    notifications { v1::names::SESSION_UPDATE => update }
    drop |method| tracing::debug!(method, "notification from the v1 agent dropped: no crow equivalent");
}

impl V1Client {
    async fn request_permission(
        &self,
        _cx: &RequestContext,
        r: v1::RequestPermissionRequest,
    ) -> Result<v1::RequestPermissionResponse, Error> {
        let call = &r.tool_call;
        let tool_call_id = call.tool_call_id.0.clone();
        let title = call.title.clone().unwrap_or_else(|| tool_call_id.clone());
        let options = r.options.iter().enumerate().map(|(i, o)| {
            c::PermissionOption::new(o.option_id.0.clone(), o.name.clone()).is_primary(i == 0)
        });
        let mut ask =
            c::PermissionRequest::new(tool_call_id.clone(), title).permission_options(options);
        if let Some(input) = &call.raw_input {
            ask = ask.arguments(match input {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert((r.session_id.clone(), tool_call_id), tx);
        let update = c::SessionUpdateParams::new(
            r.session_id.as_str(),
            c::SessionUpdate::PermissionRequest(ask),
        );
        self.legacy()?.session_update(update).await?;
        let outcome = match rx.await.ok().flatten() {
            Some(option) => v1::RequestPermissionOutcome::selected(option),
            None => v1::RequestPermissionOutcome::Cancelled,
        };
        Ok(v1::RequestPermissionResponse::new(outcome))
    }

    async fn update(&self, n: v1::SessionNotification) -> Result<(), Error> {
        let Some(update) = update_from_v1(&n.update) else {
            return Ok(());
        };
        let update = c::SessionUpdateParams::new(n.session_id.as_str(), update);
        self.legacy()?.session_update(update).await
    }
}
