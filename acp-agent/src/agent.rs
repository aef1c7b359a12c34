//! The [`Agent`] trait: one method per ACP v1 method an agent serves.

use acp_types::RequestMethod;
use acp_types::v1::*;
use async_trait::async_trait;

use crate::Error;
use crate::context::{AgentContext, PromptContext};

/// The default answer of a trait method: "method not found" for `P`'s method (the v1 and
/// the legacy native traits share it).
pub(crate) fn not_found<P: RequestMethod, T>() -> Result<T, Error> {
    Err(Error::method_not_found(P::METHOD))
}

/// What an ACP agent implements. Only [`Agent::initialize`] is required; every other
/// request defaults to "method not found" (`-32601`), `session/cancel` to a no-op (the
/// connection already signals the prompt's cancellation token, see
/// [`PromptContext::cancelled`]), and extension notifications are ignored.
///
/// Requests run concurrently; the connection answers requests that arrive before a
/// successful `initialize` itself, and answers `-32002` for calls naming a session it does
/// not know (sessions are learned from the results of `session/new`, `session/load` and
/// `session/resume`).
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// `initialize`: the handshake. The connection sets `protocolVersion` of the answer
    /// itself (the requested version if supported, else the latest one).
    async fn initialize(
        &self,
        params: InitializeRequest,
        cx: &AgentContext,
    ) -> Result<InitializeResponse, Error>;

    /// `authenticate`.
    async fn authenticate(
        &self,
        params: AuthenticateRequest,
        cx: &AgentContext,
    ) -> Result<AuthenticateResponse, Error> {
        let _ = (params, cx);
        not_found::<AuthenticateRequest, _>()
    }

    /// `logout`.
    async fn logout(
        &self,
        params: LogoutRequest,
        cx: &AgentContext,
    ) -> Result<LogoutResponse, Error> {
        let _ = (params, cx);
        not_found::<LogoutRequest, _>()
    }

    /// `session/new`. Updates sent for the new session while (or right after) this runs are
    /// held back until the response has been written.
    async fn new_session(
        &self,
        params: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<NewSessionRequest, _>()
    }

    /// `session/load`: replay the history as `session/update`s, then answer.
    async fn load_session(
        &self,
        params: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<LoadSessionRequest, _>()
    }

    /// `session/list`.
    async fn list_sessions(
        &self,
        params: ListSessionsRequest,
        cx: &AgentContext,
    ) -> Result<ListSessionsResponse, Error> {
        let _ = (params, cx);
        not_found::<ListSessionsRequest, _>()
    }

    /// `session/resume`.
    async fn resume_session(
        &self,
        params: ResumeSessionRequest,
        cx: &AgentContext,
    ) -> Result<ResumeSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<ResumeSessionRequest, _>()
    }

    /// `session/close` (only reached for a known session; forgotten on success).
    async fn close_session(
        &self,
        params: CloseSessionRequest,
        cx: &AgentContext,
    ) -> Result<CloseSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<CloseSessionRequest, _>()
    }

    /// `session/delete` (may name a stored session this connection never loaded).
    async fn delete_session(
        &self,
        params: DeleteSessionRequest,
        cx: &AgentContext,
    ) -> Result<DeleteSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<DeleteSessionRequest, _>()
    }

    /// `session/set_mode` (only reached for a known session).
    async fn set_session_mode(
        &self,
        params: SetSessionModeRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        let _ = (params, cx);
        not_found::<SetSessionModeRequest, _>()
    }

    /// `session/set_config_option` (only reached for a known session).
    async fn set_session_config_option(
        &self,
        params: SetSessionConfigOptionRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let _ = (params, cx);
        not_found::<SetSessionConfigOptionRequest, _>()
    }

    /// `session/set_title` (unstable, feature `unstable_session_set_title`): rename a session.
    /// Advertise it with `sessionCapabilities.title`. Any session the agent would list may be
    /// named, so this is reached for unknown ids too (answer `-32002` for those).
    #[cfg(feature = "unstable_session_set_title")]
    async fn set_session_title(
        &self,
        params: SetSessionTitleRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionTitleResponse, Error> {
        let _ = (params, cx);
        not_found::<SetSessionTitleRequest, _>()
    }

    /// `session/set_model` (unstable, feature `unstable_session_model`, gemini-cli's model
    /// selection): switch a known session to one of the models offered in `models`.
    #[cfg(feature = "unstable_session_model")]
    async fn set_session_model(
        &self,
        params: SetSessionModelRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionModelResponse, Error> {
        let _ = (params, cx);
        not_found::<SetSessionModelRequest, _>()
    }

    /// `session/fork` (unstable, feature `unstable_session_fork`): start a new session from
    /// the history of `params.session_id` (which this connection need not have loaded; answer
    /// `-32002` for one the agent does not know). Advertise it with `sessionCapabilities.fork`.
    /// As with `session/new`, updates for the new session sent before this returns are held
    /// until the answer is written. Served with a store ([`crate::serve_with_store`]), the
    /// connection records the new session with a copy of the source's stored history, so it
    /// can be loaded or resumed later like any other.
    #[cfg(feature = "unstable_session_fork")]
    async fn fork_session(
        &self,
        params: ForkSessionRequest,
        cx: &AgentContext,
    ) -> Result<ForkSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<ForkSessionRequest, _>()
    }

    /// `session/status` (unstable, feature `unstable_session_status`): whether a session is
    /// in memory (`open`) or only saved. Must have no side effect. Reached for sessions this
    /// connection does not know too (answer `-32002` for one the agent does not know).
    /// Advertise it with `sessionCapabilities.status`.
    #[cfg(feature = "unstable_session_status")]
    async fn session_status(
        &self,
        params: SessionStatusRequest,
        cx: &AgentContext,
    ) -> Result<SessionStatusResponse, Error> {
        let _ = (params, cx);
        not_found::<SessionStatusRequest, _>()
    }

    /// `session/archive` (unstable, feature `unstable_session_archive`): hide a session from
    /// default `session/list` results, closing it first if it is active (the connection then
    /// forgets it, as after `session/close`). Archiving an archived session succeeds; an
    /// unknown one is `-32002`. Advertise it with `sessionCapabilities.archive` (together with
    /// `list`, whose `archived` filter and flags the agent then honours).
    #[cfg(feature = "unstable_session_archive")]
    async fn archive_session(
        &self,
        params: ArchiveSessionRequest,
        cx: &AgentContext,
    ) -> Result<ArchiveSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<ArchiveSessionRequest, _>()
    }

    /// `session/unarchive` (unstable, feature `unstable_session_archive`): list a session by
    /// default again, without loading it.
    #[cfg(feature = "unstable_session_archive")]
    async fn unarchive_session(
        &self,
        params: UnarchiveSessionRequest,
        cx: &AgentContext,
    ) -> Result<UnarchiveSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<UnarchiveSessionRequest, _>()
    }

    /// `auth/status` (unstable, feature `unstable_auth_status`): whether the user must sign
    /// in, and the configured accounts. Never answer it with `auth_required`. Advertise it
    /// with `auth.status`; [`crate::ClientHandle::auth_status_update`] then reports changes.
    #[cfg(feature = "unstable_auth_status")]
    async fn auth_status(
        &self,
        params: AuthStatusRequest,
        cx: &AgentContext,
    ) -> Result<AuthStatusResponse, Error> {
        let _ = (params, cx);
        not_found::<AuthStatusRequest, _>()
    }

    /// `providers/list` (unstable, feature `unstable_llm_providers`): the model providers
    /// the client may configure. Advertise the three provider methods with `providers`.
    #[cfg(feature = "unstable_llm_providers")]
    async fn list_providers(
        &self,
        params: ListProvidersRequest,
        cx: &AgentContext,
    ) -> Result<ListProvidersResponse, Error> {
        let _ = (params, cx);
        not_found::<ListProvidersRequest, _>()
    }

    /// `providers/set` (unstable, feature `unstable_llm_providers`): replace one provider's
    /// whole configuration (protocol, base URL, headers, which may hold credentials: keep
    /// them out of logs).
    #[cfg(feature = "unstable_llm_providers")]
    async fn set_provider(
        &self,
        params: SetProviderRequest,
        cx: &AgentContext,
    ) -> Result<SetProviderResponse, Error> {
        let _ = (params, cx);
        not_found::<SetProviderRequest, _>()
    }

    /// `providers/disable` (unstable, feature `unstable_llm_providers`): disable a provider
    /// that is not `required`.
    #[cfg(feature = "unstable_llm_providers")]
    async fn disable_provider(
        &self,
        params: DisableProviderRequest,
        cx: &AgentContext,
    ) -> Result<DisableProviderResponse, Error> {
        let _ = (params, cx);
        not_found::<DisableProviderRequest, _>()
    }

    /// `mcp/message` (request; unstable, feature `unstable_mcp_over_acp`): one inner MCP
    /// request for an MCP server this agent declared to the client with an `acp` entry of
    /// `mcpServers` (the unusual direction; usually the agent is the one calling, with
    /// [`crate::ClientHandle::mcp_message`]). Answer what the MCP server answered, result or
    /// MCP error, as the result; keep ACP errors for an unknown server (`-32602`).
    #[cfg(feature = "unstable_mcp_over_acp")]
    async fn mcp_message(
        &self,
        params: MessageMcpRequest,
        cx: &AgentContext,
    ) -> Result<MessageMcpResponse, Error> {
        let _ = (params, cx);
        not_found::<MessageMcpRequest, _>()
    }

    /// `mcp/message` (notification; unstable, feature `unstable_mcp_over_acp`): an inner MCP
    /// notification (progress, subscription updates) about an inner request this agent sent.
    /// Runs in notification order, like [`Agent::cancel`]. Ignored by default.
    #[cfg(feature = "unstable_mcp_over_acp")]
    async fn mcp_message_notification(&self, params: MessageMcpNotification) {
        let _ = params;
    }

    /// `session/prompt` (only reached for a known session). Every update sent for the
    /// session before this returns is written before the response.
    async fn prompt(
        &self,
        params: PromptRequest,
        cx: &PromptContext,
    ) -> Result<PromptResponse, Error> {
        let _ = (params, cx);
        not_found::<PromptRequest, _>()
    }

    /// `session/cancel`, after the connection has signalled the prompt's token and resolved
    /// the session's pending permission requests as cancelled. Runs in notification order:
    /// it must not await a request to the client (spawn instead).
    async fn cancel(&self, params: CancelNotification) {
        let _ = params;
    }

    /// A request whose method starts with `_` (an extension), with its raw params.
    async fn ext_method(
        &self,
        method: &str,
        params: serde_json::Value,
        cx: &AgentContext,
    ) -> Result<serde_json::Value, Error> {
        let _ = (params, cx);
        Err(Error::method_not_found(method))
    }

    /// A notification whose method starts with `_` (an extension). Ignored by default.
    async fn ext_notification(&self, method: &str, params: serde_json::Value) {
        let _ = (method, params);
    }
}
