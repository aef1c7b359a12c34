//! The echo agent's v2 side: echoes each prompt back word by word, as v2 updates, after
//! asking permission (see the example's docs).

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
}

impl EchoV2 {
    fn id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    fn cancelled(&self, session: &SessionId) -> bool {
        self.cancelled.lock().unwrap().contains(&session.0)
    }
}

/// The idle `state_update` that ends the work, with its stop reason.
fn idle(reason: IdleStopReason) -> SessionUpdate {
    SessionUpdate::StateUpdate(SessionStateUpdate::new(StateUpdate::Idle(
        IdleStateUpdate::new().stop_reason(reason),
    )))
}

#[acp_agent::async_trait]
impl Agent for EchoV2 {
    async fn initialize(
        &self,
        _params: InitializeRequest,
        _cx: &Context,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(
            2,
            Implementation::new("acp-rs echo agent", env!("CARGO_PKG_VERSION")),
        ))
    }

    async fn session_new(
        &self,
        _params: NewSessionRequest,
        _cx: &Context,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new(self.id("session")))
    }

    async fn session_prompt(
        &self,
        params: PromptRequest,
        cx: &Context,
    ) -> Result<PromptResponse, Error> {
        let session = params.session_id.clone();
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
        send(SessionUpdate::StateUpdate(SessionStateUpdate::new(
            StateUpdate::Running(RunningStateUpdate::new()),
        )))
        .await?;
        send(SessionUpdate::UserMessage(
            UserMessage::new(user.clone()).content(params.prompt),
        ))
        .await?;
        // One tool call, its permission asked with the call as the subject.
        let tool = self.id("echo");
        let call = ToolCallUpdate::new(tool.clone())
            .title("Echo the prompt".to_owned())
            .kind(ToolKind::Other)
            .status(ToolCallStatus::Pending);
        send(SessionUpdate::ToolCallUpdate(call)).await?;
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
            send(SessionUpdate::ToolCallUpdate(done)).await?;
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
        send(SessionUpdate::ToolCallUpdate(done)).await?;
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
        self.cancelled.lock().unwrap().insert(params.session_id.0);
        Ok(())
    }
}
