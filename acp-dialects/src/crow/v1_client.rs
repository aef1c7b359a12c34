//! A crow agent behind a v1 client: the translation for the client's role, on the
//! skeleton of [`crate::translate`] (its two ends share no state).

use acp_rpc::{Error, RequestContext};
use acp_types::legacy::crow as c;
use acp_types::v1;
use async_trait::async_trait;

use super::native::{AgentHandle, Client};
use super::{prompt_from_v1, update_to_v1};
use crate::translate::{LegacyEnd, V1End, show, v1_routes};
use crate::{AdapterOptions, refused};

/// The two ends of a crow agent behind a v1 client share nothing.
pub(crate) fn state(_options: AdapterOptions) {}

/// The v1 agent the user's connection talks to on the pipe; its calls go to the crow agent.
type V1Agent = V1End<(), AgentHandle>;

v1_routes! {
    V1Agent;
    requests {
        v1::names::INITIALIZE => initialize,
        v1::names::SESSION_NEW => new_session,
        v1::names::SESSION_LOAD => load_session,
        v1::names::SESSION_PROMPT => prompt,
    }
    refuse |method| refused(crate::Dialect::Crow, method, "a crow agent has no such method");
    notifications { v1::names::SESSION_CANCEL => cancel }
    drop |method| tracing::debug!(method, "notification from the v1 client dropped: no crow equivalent");
}

impl V1Agent {
    async fn initialize(
        &self,
        _cx: &RequestContext,
        r: v1::InitializeRequest,
    ) -> Result<v1::InitializeResponse, Error> {
        let mut init = c::InitializeParams::new(c::ProtocolVersion(r.protocol_version.0))
            .client_capabilities(c::ClientCapabilities::new());
        if let Some(info) = r.client_info {
            let mut client = c::Implementation::new(info.name, info.version);
            client.title = info.title;
            init = init.client_info(client);
        }
        let answer = self.legacy()?.initialize(init).await?;
        let caps = answer.agent_capabilities.clone().unwrap_or_default();
        let (prompt, mcp) = (
            caps.prompt_capabilities.unwrap_or_default(),
            caps.mcp_capabilities.unwrap_or_default(),
        );
        let prompt = v1::PromptCapabilities::new()
            .image(prompt.image)
            .embedded_context(prompt.resource);
        let mcp = v1::McpCapabilities::new().http(mcp.http).sse(mcp.sse);
        let capabilities = v1::AgentCapabilities::new()
            .load_session(caps.load_session)
            .prompt_capabilities(prompt)
            .mcp_capabilities(mcp);
        let mut response =
            v1::InitializeResponse::new(v1::ProtocolVersion(answer.protocol_version.0))
                .agent_capabilities(capabilities);
        if let Some(info) = answer.agent_info {
            let mut agent = v1::Implementation::new(info.name, info.version);
            agent.title = info.title;
            response = response.agent_info(agent);
        }
        Ok(response)
    }

    async fn new_session(
        &self,
        _cx: &RequestContext,
        r: v1::NewSessionRequest,
    ) -> Result<v1::NewSessionResponse, Error> {
        let servers = r
            .mcp_servers
            .iter()
            .filter_map(|s| serde_json::to_value(s).ok());
        let request = c::NewSessionParams::new(r.cwd).mcp_servers(servers);
        let created = self.legacy()?.session_new(request).await?;
        Ok(v1::NewSessionResponse::new(created.session_id.as_str()))
    }

    async fn load_session(
        &self,
        _cx: &RequestContext,
        r: v1::LoadSessionRequest,
    ) -> Result<v1::LoadSessionResponse, Error> {
        let request = c::LoadSessionParams::new(r.session_id.as_str()).cwd(r.cwd);
        self.legacy()?.session_load(request).await?;
        Ok(v1::LoadSessionResponse::new())
    }

    async fn prompt(
        &self,
        _cx: &RequestContext,
        r: v1::PromptRequest,
    ) -> Result<v1::PromptResponse, Error> {
        let prompt = prompt_from_v1(&r.prompt)?;
        let request = c::PromptParams::new(r.session_id.as_str(), prompt);
        let answer = self.legacy()?.session_prompt(request).await?;
        let reason = match answer.stop_reason {
            c::StopReason::EndTurn => v1::StopReason::EndTurn,
            c::StopReason::Cancelled => v1::StopReason::Cancelled,
            c::StopReason::Error => {
                return Err(Error::internal_error(
                    "the crow agent ended its turn with stop_reason \"error\"",
                ));
            }
            c::StopReason::Unknown(other) => {
                tracing::warn!(stop_reason = %other, "an unknown crow stop reason read as end_turn");
                v1::StopReason::EndTurn
            }
        };
        Ok(v1::PromptResponse::new(reason))
    }

    async fn cancel(&self, n: v1::CancelNotification) -> Result<(), Error> {
        let agent = self.legacy()?.clone();
        let cancel = c::CancelParams::new(n.session_id.as_str());
        // The answer is only logged: a notification handler does not wait for it.
        tokio::spawn(async move {
            if let Err(e) = agent.cancel(cancel).await {
                tracing::warn!(error = %e, "the crow agent refused cancel");
            }
        });
        Ok(())
    }
}

/// The crow editor the real agent sees; its updates go to the user's v1 client.
type CrowEditor = LegacyEnd<(), AgentHandle>;

/// The v1 kind of a crow permission option, guessed from its words (crow options carry
/// none): a rejection says so in its id or title.
fn option_kind(option: &c::PermissionOption) -> v1::PermissionOptionKind {
    let words = format!("{} {}", option.id, option.title).to_lowercase();
    if words.contains("reject") || words.contains("deny") {
        v1::PermissionOptionKind::RejectOnce
    } else {
        v1::PermissionOptionKind::AllowOnce
    }
}

impl CrowEditor {
    /// Asks the v1 client for a permission the crow agent asked for, and sends the answer
    /// back as `permission_response`. Runs on its own task: the notification handler that
    /// starts it must not wait for the client.
    fn ask(&self, session: c::SessionId, ask: c::PermissionRequest, agent: AgentHandle) {
        let client = self.v1.clone();
        tokio::spawn(async move {
            let mut call =
                v1::ToolCallUpdate::new(ask.tool_call_id.clone()).title(ask.title.clone());
            call.raw_input = ask.arguments.clone().map(serde_json::Value::String);
            let options = ask
                .permission_options
                .iter()
                .map(|o| v1::PermissionOption::new(o.id.clone(), o.title.clone(), option_kind(o)));
            let request = v1::RequestPermissionRequest::new(session.as_str(), call, options);
            let option = match client.typed_request(&request).await {
                Ok(answer) => match answer.outcome {
                    v1::RequestPermissionOutcome::Selected(s) => Some(s.option_id.0),
                    _ => None,
                },
                Err(e) => {
                    tracing::warn!(error = %e, "the v1 client did not answer a permission request: dismissed");
                    None
                }
            };
            let mut response = c::PermissionResponseParams::new(session, ask.tool_call_id);
            if let Some(option) = option {
                response = response.option_id(option);
            }
            if let Err(e) = agent.permission_response(response).await {
                tracing::warn!(error = %e, "permission_response could not be sent");
            }
        });
    }
}

#[async_trait]
impl Client for CrowEditor {
    async fn session_update(&self, params: c::SessionUpdateParams) -> Result<(), Error> {
        if let c::SessionUpdate::PermissionRequest(ask) = params.update {
            let agent = self.legacy()?.clone();
            self.ask(params.session_id, ask, agent);
            return Ok(());
        }
        match update_to_v1(&params.update) {
            Some(update) => show(&self.v1, params.session_id.as_str(), update).await,
            None => Ok(()),
        }
    }
}
