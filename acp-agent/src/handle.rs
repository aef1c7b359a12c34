//! [`ClientHandle`]: the agent's handle to the client. Its typed calls, one per v1 client
//! method, are generated (`handle/generated.rs`), each refused locally when the
//! client did not advertise the capability it needs; here is what they rely on and what
//! the schema cannot say: the creation window and capability checks of `session/update`,
//! and a permission question that a `session/cancel` answers.

use std::sync::Arc;

use acp_types::v1::*;
use acp_types::{NotificationMethod, RequestMethod};
use tokio_util::either::Either;

use crate::Error;
use crate::state::Inner;

#[rustfmt::skip]
mod generated;

/// The error code of a call refused locally because a capability it needs was not
/// advertised (`-32601`, as the client would answer; `data.capability` names it).
pub const CAPABILITY_NOT_ADVERTISED: acp_rpc::ErrorCode = acp_rpc::ErrorCode::METHOD_NOT_FOUND;

/// A cheap, cloneable, typed handle to the client.
#[derive(Clone)]
pub struct ClientHandle {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ClientHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHandle")
            .field("initialized", &self.inner.capabilities().is_some())
            .finish()
    }
}

/// A call refused locally: `method` needs `capability`, which `whose` side did not
/// advertise.
fn refused(method: &str, capability: &str, whose: &str) -> Error {
    Error::new(
        CAPABILITY_NOT_ADVERTISED,
        format!("{method} not sent: {whose} did not advertise the capability {capability}"),
    )
    // Error `data` is free-form JSON (no schema type): the method and the missing capability.
    .with_data(serde_json::json!({ "method": method, "capability": capability }))
}

impl ClientHandle {
    /// The client's capabilities, once `initialize` has succeeded (a repeated `initialize`
    /// replaces them).
    pub fn capabilities(&self) -> Option<std::sync::Arc<ClientCapabilities>> {
        self.inner.capabilities()
    }

    /// The underlying JSON-RPC peer (for anything not covered here).
    pub fn peer(&self) -> &acp_rpc::Peer {
        &self.inner.peer
    }

    /// Refuses a call the client did not advertise `capability` for.
    pub(crate) fn require(
        &self,
        method: &str,
        capability: &str,
        has: fn(&ClientCapabilities) -> bool,
    ) -> Result<(), Error> {
        match self.capabilities() {
            Some(caps) if has(&caps) => Ok(()),
            _ => Err(refused(method, capability, "the client")),
        }
    }

    /// Refuses a call the agent's own `initialize` answer did not advertise `capability`
    /// for (methods the protocol lets an agent send only when it offered them).
    #[allow(
        dead_code,
        reason = "only unstable methods are gated on what the agent offered so far"
    )]
    pub(crate) fn require_offered(
        &self,
        method: &str,
        capability: &str,
        has: fn(&AgentCapabilities) -> bool,
    ) -> Result<(), Error> {
        match self.inner.offered() {
            Some(offered) if has(&offered) => Ok(()),
            _ => Err(refused(
                method,
                capability,
                "the agent's own initialize answer",
            )),
        }
    }

    /// Sends any typed request and reads its typed result.
    pub async fn request<P: RequestMethod + Sync>(&self, params: &P) -> Result<P::Response, Error>
    where
        P::Response: Send + 'static,
    {
        self.inner.peer.typed_request(params).await
    }

    /// Sends any typed notification.
    pub async fn notify<P: NotificationMethod>(&self, params: &P) -> Result<(), Error> {
        self.inner.peer.notify(P::METHOD, params).await
    }

    /// `session/update` from a session id and an update.
    pub fn send_update(
        &self,
        session_id: impl Into<SessionId>,
        update: SessionUpdate,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.session_update(SessionNotification::new(session_id, update))
    }

    /// [`ClientHandle::session_update`]: the kind's capability, then the session's queue.
    ///
    /// The check is made now (it reads the client's capabilities) and the send's own
    /// future returned, with no layer around it that would hold the notification a second
    /// time (see [`SessionHandle::send`](crate::SessionHandle::send)).
    pub(crate) fn session_update_hook(
        &self,
        notification: SessionNotification,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let refused = update_capability(&notification.update).and_then(|(capability, has)| {
            self.require(SessionNotification::METHOD, capability, has)
                .err()
        });
        match refused {
            Some(error) => Either::Left(std::future::ready(Err(error))),
            None => Either::Right(self.inner.send_update(notification)),
        }
    }

    /// [`ClientHandle::request_permission`]: answered `cancelled` at once when the session's
    /// turn is cancelled while the question is pending.
    pub(crate) async fn request_permission_hook(
        &self,
        params: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let token = self.inner.cancel_token(&params.session_id);
        let cancelled = RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled);
        match token {
            Some(token) => {
                if token.is_cancelled() {
                    return Ok(cancelled);
                }
                tokio::select! {
                    r = self.request(&params) => r,
                    _ = token.cancelled() => Ok(cancelled),
                }
            }
            None => self.request(&params).await,
        }
    }

    /// An extension request (`method` should start with `_`).
    pub async fn ext_method(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, Error> {
        self.inner.peer.request(method, &params).await
    }

    /// An extension notification (`method` should start with `_`).
    pub async fn ext_notification(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<(), Error> {
        self.inner.peer.notify(method, &params).await
    }
}

/// Whether a client's capabilities include one capability.
type HasCapability = fn(&ClientCapabilities) -> bool;

/// The client capability a `session/update` kind requires, if any.
fn update_capability(update: &SessionUpdate) -> Option<(&'static str, HasCapability)> {
    match update {
        SessionUpdate::Notice(_) => Some(("session.notices", |c| {
            c.session.as_ref().is_some_and(|s| s.notices.is_some())
        })),
        SessionUpdate::CompactionUpdate(_) | SessionUpdate::CompactionSummaryChunk(_) => {
            Some(("session.compaction", |c| {
                c.session.as_ref().is_some_and(|s| s.compaction.is_some())
            }))
        }
        SessionUpdate::PlanUpdate(_) | SessionUpdate::PlanRemoved(_) => {
            Some(("plan", |c| c.plan.is_some()))
        }
        SessionUpdate::SubagentUpdate(_)
        | SessionUpdate::SessionMessage(_)
        | SessionUpdate::SessionMessageChunk(_) => Some(("subagents", |c| c.subagents.is_some())),
        #[cfg(feature = "unstable_prompt_suggestions")]
        SessionUpdate::PromptSuggestionsUpdate(_) => Some(("session.promptSuggestions", |c| {
            c.session
                .as_ref()
                .is_some_and(|s| s.prompt_suggestions.is_some())
        })),
        #[cfg(feature = "unstable_session_cursors")]
        SessionUpdate::CursorUpdate(_) => Some(("session.cursors", |c| {
            c.session.as_ref().is_some_and(|s| s.cursors.is_some())
        })),
        _ => None,
    }
}
