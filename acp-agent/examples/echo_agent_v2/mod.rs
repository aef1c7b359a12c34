//! The echo agent's v2 side: echoes each prompt back word by word, as v2 updates, after
//! asking permission (see the example's docs). It serves v2's session baseline
//! (`capabilities.session`: `session/new`, `list`, `resume`, `close`, `prompt`, `cancel`) for
//! the sessions of its connection.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_agent::Error;
use acp_agent::v2::types::*;
use acp_agent::v2::{Agent, Context};

/// Echoes each prompt back word by word, as v2 updates, after asking permission.
#[derive(Default)]
pub struct EchoV2 {
    next: AtomicU64,
    /// Sessions whose work a `session/cancel` ended (until their next prompt).
    cancelled: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The open sessions of the connection, by id, with the `cwd` each was made in
    /// (`session/list`'s answer; `session/close` removes one).
    sessions: std::sync::Mutex<BTreeMap<String, AbsolutePath>>,
}

impl EchoV2 {
    fn id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether the session's work must stop: `session/cancel` asked, or `session/close`
    /// closed the session.
    fn cancelled(&self, session: &SessionId) -> bool {
        self.cancelled.lock().unwrap().contains(&session.0)
            || !self.sessions.lock().unwrap().contains_key(&session.0)
    }

    /// `Ok` when `session` is open on this connection; a clear error otherwise (never made
    /// here, or closed).
    fn open(&self, session: &SessionId) -> Result<(), Error> {
        if self.sessions.lock().unwrap().contains_key(&session.0) {
            return Ok(());
        }
        Err(Error::resource_not_found(format!(
            "no open session `{}` on this connection (never made here, or closed)",
            session.0
        )))
    }
}

/// The idle `state_update` that ends the work, with its stop reason.
fn idle(reason: IdleStopReason) -> SessionUpdate {
    SessionUpdate::StateUpdate(Box::new(SessionStateUpdate::new(StateUpdate::Idle(
        IdleStateUpdate::new().stop_reason(reason),
    ))))
}

#[acp_agent::async_trait]
impl Agent for EchoV2 {
    async fn initialize(
        &self,
        _params: InitializeRequest,
        _cx: &Context,
    ) -> Result<InitializeResponse, Error> {
        // `session: {}`: the baseline session methods, nothing beyond them.
        let capabilities = AgentCapabilities::new().session(SessionCapabilities::default());
        Ok(InitializeResponse::new(
            2,
            Implementation::new("acp-rs echo agent", env!("CARGO_PKG_VERSION")),
        )
        .capabilities(capabilities))
    }

    async fn session_new(
        &self,
        params: NewSessionRequest,
        _cx: &Context,
    ) -> Result<NewSessionResponse, Error> {
        let id = self.id("session");
        self.sessions.lock().unwrap().insert(id.clone(), params.cwd);
        Ok(NewSessionResponse::new(id))
    }

    async fn session_list(
        &self,
        params: ListSessionsRequest,
        _cx: &Context,
    ) -> Result<ListSessionsResponse, Error> {
        let sessions = self.sessions.lock().unwrap();
        let listed = sessions
            .iter()
            .filter(|(_, cwd)| params.cwd.as_ref().is_none_or(|only| only == *cwd))
            .map(|(id, cwd)| SessionInfo::new(id.clone(), cwd.clone()));
        Ok(ListSessionsResponse::new(listed.collect::<Vec<_>>()))
    }

    /// A session of this connection is live already: resuming it restores nothing. (The
    /// echo agent keeps no history, so it has none to replay.)
    async fn session_resume(
        &self,
        params: ResumeSessionRequest,
        _cx: &Context,
    ) -> Result<ResumeSessionResponse, Error> {
        self.open(&params.session_id)?;
        Ok(ResumeSessionResponse::default())
    }

    async fn session_close(
        &self,
        params: CloseSessionRequest,
        _cx: &Context,
    ) -> Result<CloseSessionResponse, Error> {
        self.open(&params.session_id)?;
        // Work in progress stops as for `session/cancel` (see `cancelled`).
        self.sessions.lock().unwrap().remove(&params.session_id.0);
        self.cancelled.lock().unwrap().remove(&params.session_id.0);
        Ok(CloseSessionResponse::default())
    }

    async fn session_prompt(
        &self,
        params: PromptRequest,
        cx: &Context,
    ) -> Result<PromptResponse, Error> {
        let session = params.session_id.clone();
        self.open(&session)?;
        let user = self.id("user");
        let reply = self.id("agent");
        let text: String = params
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" ");
        self.cancelled.lock().unwrap().remove(&session.0);
        let send = |update| {
            cx.client()
                .session_update(UpdateSessionNotification::new(session.clone(), update))
        };
        send(SessionUpdate::StateUpdate(Box::new(
            SessionStateUpdate::new(StateUpdate::Running(RunningStateUpdate::new())),
        )))
        .await?;
        send(SessionUpdate::UserMessage(Box::new(
            UserMessage::new(user.clone()).content(params.prompt),
        )))
        .await?;
        // One tool call, its permission asked with the call as the subject.
        let tool = self.id("echo");
        let call = ToolCallUpdate::new(tool.clone())
            .title("Echo the prompt".to_owned())
            .kind(ToolKind::Other)
            .status(ToolCallStatus::Pending);
        send(SessionUpdate::ToolCallUpdate(Box::new(call))).await?;
        let ask = RequestPermissionRequest::new(
            session.clone(),
            "Echo the prompt back?",
            [
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ],
        )
        .subject(RequestPermissionSubject::ToolCall(
            ToolCallPermissionSubject::new(ToolCallUpdate::new(tool.clone())),
        ));
        let answer = cx.client().session_request_permission(ask).await?;
        let allowed = match &answer.outcome {
            RequestPermissionOutcome::Selected(s) => s.option_id.0 == "allow",
            _ => false,
        };
        if self.cancelled(&session)
            || matches!(answer.outcome, RequestPermissionOutcome::Cancelled(_))
        {
            let done = ToolCallUpdate::new(tool).status(ToolCallStatus::Cancelled);
            send(SessionUpdate::ToolCallUpdate(Box::new(done))).await?;
            send(idle(IdleStopReason::Cancelled)).await?;
            return Ok(PromptResponse::new(user));
        }
        let (status, note) = if allowed {
            (ToolCallStatus::Completed, "echoed")
        } else {
            (ToolCallStatus::Failed, "permission denied")
        };
        let done =
            ToolCallUpdate::new(tool)
                .status(status)
                .content(vec![ToolCallContent::content(ContentBlock::Text(
                    TextContent::new(note),
                ))]);
        send(SessionUpdate::ToolCallUpdate(Box::new(done))).await?;
        if allowed {
            for word in text.split_whitespace() {
                send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    reply.clone(),
                    ContentBlock::Text(TextContent::new(format!("{word} "))),
                )))
                .await?;
            }
        }
        send(idle(IdleStopReason::EndTurn)).await?;
        Ok(PromptResponse::new(user))
    }

    async fn session_cancel(&self, params: CancelSessionNotification) -> Result<(), Error> {
        // Only an open session's: a cancel naming anything else is dropped, so a client
        // cannot grow the set with ids.
        if self.open(&params.session_id).is_ok() {
            self.cancelled.lock().unwrap().insert(params.session_id.0);
        }
        Ok(())
    }
}
