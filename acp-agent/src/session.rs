//! Session updates: [`SessionHandle`] streaming helpers and [`ToolCallHandle`], each sending
//! exactly one `session/update`.

use acp_types::v1::*;

use crate::Error;
use crate::handle::ClientHandle;

/// A handle to one session, for streaming `session/update`s (cheap to clone).
#[derive(Clone, Debug)]
pub struct SessionHandle {
    client: ClientHandle,
    id: SessionId,
}

impl SessionHandle {
    pub(crate) fn new(client: ClientHandle, id: SessionId) -> Self {
        SessionHandle { client, id }
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The handle to the client.
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    /// Sends any update for this session.
    ///
    /// This and the helpers below return the send's own future rather than one around it:
    /// an update streams on every chunk, and each layer of `async fn` would copy the update
    /// into a larger future.
    pub fn send(
        &self,
        update: SessionUpdate,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.client.send_update(self.id.clone(), update)
    }

    /// `agent_message_chunk` with a text block.
    pub fn message_chunk(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.send(SessionUpdate::agent_message_text(text))
    }

    /// `agent_thought_chunk` with a text block.
    pub fn thought_chunk(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.send(SessionUpdate::agent_thought_text(text))
    }

    /// `user_message_chunk` with a text block (history replay in `session/load`).
    pub fn user_chunk(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.send(SessionUpdate::user_message_text(text))
    }

    /// `plan`: replaces the whole plan.
    pub fn plan(
        &self,
        entries: Vec<PlanEntry>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.send(SessionUpdate::plan(entries))
    }

    /// `available_commands_update`.
    pub fn available_commands(
        &self,
        commands: Vec<AvailableCommand>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.send(SessionUpdate::available_commands_update(commands))
    }

    /// `current_mode_update`.
    pub fn current_mode(
        &self,
        mode: impl Into<SessionModeId>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.send(SessionUpdate::current_mode_update(mode))
    }

    /// `tool_call`: announces a tool call and returns a handle to update it.
    pub async fn start_tool_call(&self, call: ToolCall) -> Result<ToolCallHandle, Error> {
        let id = call.tool_call_id.clone();
        self.send(SessionUpdate::ToolCall(Box::new(call))).await?;
        Ok(ToolCallHandle {
            session: self.clone(),
            id,
        })
    }

    /// `session/request_permission` for this session.
    pub async fn request_permission(
        &self,
        tool_call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Result<RequestPermissionOutcome, Error> {
        let response = self
            .client
            .request_permission(RequestPermissionRequest::new(
                self.id.clone(),
                tool_call,
                options,
            ))
            .await?;
        Ok(response.outcome)
    }
}

/// A handle to one announced tool call; every method sends one `tool_call_update`.
#[derive(Clone, Debug)]
pub struct ToolCallHandle {
    session: SessionHandle,
    id: ToolCallId,
}

impl ToolCallHandle {
    /// The tool call id.
    pub fn id(&self) -> &ToolCallId {
        &self.id
    }

    /// The session.
    pub fn session(&self) -> &SessionHandle {
        &self.session
    }

    /// An empty update for this call (to fill in and pass to [`ToolCallHandle::update`]).
    pub fn blank(&self) -> ToolCallUpdate {
        ToolCallUpdate::new(self.id.clone())
    }

    /// Sends an update (its `toolCallId` is set to this call's).
    pub async fn update(&self, mut update: ToolCallUpdate) -> Result<(), Error> {
        update.tool_call_id = self.id.clone();
        self.session
            .send(SessionUpdate::ToolCallUpdate(Box::new(update)))
            .await
    }

    /// Changes the status.
    pub async fn status(&self, status: ToolCallStatus) -> Result<(), Error> {
        self.update(self.blank().status(status)).await
    }

    /// Replaces the content.
    pub async fn content(&self, content: Vec<ToolCallContent>) -> Result<(), Error> {
        self.update(self.blank().content(content)).await
    }

    /// Replaces the locations.
    pub async fn locations(&self, locations: Vec<ToolCallLocation>) -> Result<(), Error> {
        self.update(self.blank().locations(locations)).await
    }

    /// Status `completed` with the final content.
    pub async fn complete(&self, content: Vec<ToolCallContent>) -> Result<(), Error> {
        self.update(
            self.blank()
                .status(ToolCallStatus::Completed)
                .content(content),
        )
        .await
    }

    /// Status `failed` with content explaining why.
    pub async fn fail(&self, content: Vec<ToolCallContent>) -> Result<(), Error> {
        self.update(self.blank().status(ToolCallStatus::Failed).content(content))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{size_of, size_of_val};

    use acp_types::v1::*;

    struct Silent;

    #[async_trait::async_trait]
    impl crate::Agent for Silent {
        async fn initialize(
            &self,
            params: InitializeRequest,
            _: &crate::AgentContext,
        ) -> Result<InitializeResponse, crate::Error> {
            Ok(InitializeResponse::new(params.protocol_version))
        }
    }

    /// A streamed update's future holds the update about once: every chunk's future is made
    /// and moved by each caller up the stack. While each layer (`message_chunk`, `send`,
    /// `send_update`, `session_update`, its hook, the state's send, the engine's notify)
    /// was an `async fn` holding its arguments again, it was 2,032 bytes, copied several
    /// times per chunk (a tenth of a WebSocket server's time in `acp-bench remote`).
    #[tokio::test]
    async fn an_update_future_holds_the_update_about_once() {
        let (agent_in, _client_out) = tokio::io::duplex(64);
        let (agent_out, _client_in) = tokio::io::duplex(64);
        let conn = crate::Builder::new(Silent).io(agent_in, agent_out);
        let session = super::SessionHandle::new(conn.client().clone(), SessionId::from("s"));
        let update = size_of::<SessionNotification>();
        let chunk = size_of_val(&session.message_chunk("tok"));
        let send = size_of_val(&session.send(SessionUpdate::agent_message_text("tok")));
        for (what, size) in [("message_chunk", chunk), ("send", send)] {
            assert!(
                size <= 3 * update,
                "{what}'s future is {size} bytes, over three notifications ({update} each)"
            );
        }
    }
}
