//! What the [`crate::Agent`] methods receive: [`AgentContext`] and, for prompts,
//! [`PromptContext`] with the session and its cancellation token.

use acp_rpc::RequestId;
use acp_types::v1::{ClientCapabilities, SessionId};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::handle::ClientHandle;
use crate::session::SessionHandle;

/// The context of one incoming request.
#[derive(Clone, Debug)]
pub struct AgentContext {
    pub(crate) client: ClientHandle,
    pub(crate) request_id: RequestId,
}

impl AgentContext {
    /// The typed handle to the client (cheap to clone, usable from spawned tasks).
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    /// The client's capabilities (`None` until `initialize` has succeeded).
    pub fn client_capabilities(&self) -> Option<std::sync::Arc<ClientCapabilities>> {
        self.client.capabilities()
    }

    /// A handle to a known session.
    pub fn session(&self, id: &SessionId) -> Option<SessionHandle> {
        self.client
            .inner
            .is_known(id)
            .then(|| SessionHandle::new(self.client.clone(), id.clone()))
    }

    /// What the session store knows of session `id` (its cwd, title, mode and config
    /// options), when the agent is served with a store and the store has it; `None`
    /// otherwise (or if the store cannot be read: logged).
    ///
    /// A session the store loaded or resumed for the agent (the default `session/load` and
    /// `session/resume`) was never seen by the agent's own `new_session`: this is where the
    /// agent finds its working directory when the session is next prompted.
    ///
    /// Another identity's session ([`AgentContext::identity`]) is `None`, as one the store
    /// does not have.
    pub async fn stored_session(&self, id: &SessionId) -> Option<crate::store::SessionMeta> {
        let recorder = self.client.inner.recorder.as_ref()?;
        match recorder.own_meta(id).await {
            Ok(meta) => meta,
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "the session store could not be read");
                None
            }
        }
    }

    /// Whom this connection serves: the name of the remote caller's credential (a
    /// `NAME:TOKEN` line of `acp serve --token-file`, or whatever the server's
    /// authenticator names), handed in by the server ([`crate::Builder::identity`]). `None` for a local client (stdio) and for the
    /// unnamed identity (the one token without a name). Served with a store, the
    /// connection already keeps each identity to its own sessions; an agent that keeps
    /// sessions or files of its own scopes them by this.
    pub fn identity(&self) -> Option<&str> {
        self.client.inner.identity.as_deref()
    }

    /// The JSON-RPC id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }
}

/// The context of a `session/prompt`: an [`AgentContext`] (through `Deref`) plus the
/// session and the cancellation token `session/cancel` signals.
#[derive(Clone, Debug)]
pub struct PromptContext {
    pub(crate) cx: AgentContext,
    pub(crate) session: SessionHandle,
    pub(crate) token: CancellationToken,
}

impl PromptContext {
    /// The prompted session.
    pub fn session(&self) -> &SessionHandle {
        &self.session
    }

    /// Resolves when the client sends `session/cancel` for this session. Answer with
    /// `stopReason: "cancelled"` then. (If the client withdraws the request itself with
    /// `$/cancel_request`, or the connection ends, the prompt future is simply dropped.)
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.token.cancelled()
    }

    /// Whether the prompt has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The token itself, to hand to spawned work.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl std::ops::Deref for PromptContext {
    type Target = AgentContext;
    fn deref(&self) -> &AgentContext {
        &self.cx
    }
}
