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
    pub async fn send(&self, update: SessionUpdate) -> Result<(), Error> {
        self.client.send_update(self.id.clone(), update).await
    }

    /// `agent_message_chunk` with a text block.
    pub async fn message_chunk(&self, text: impl Into<String>) -> Result<(), Error> {
        self.send(SessionUpdate::agent_message_text(text)).await
    }

    /// `agent_thought_chunk` with a text block.
    pub async fn thought_chunk(&self, text: impl Into<String>) -> Result<(), Error> {
        self.send(SessionUpdate::agent_thought_text(text)).await
    }

    /// `user_message_chunk` with a text block (history replay in `session/load`).
    pub async fn user_chunk(&self, text: impl Into<String>) -> Result<(), Error> {
        self.send(SessionUpdate::user_message_text(text)).await
    }

    /// `plan`: replaces the whole plan.
    pub async fn plan(&self, entries: Vec<PlanEntry>) -> Result<(), Error> {
        self.send(SessionUpdate::plan(entries)).await
    }

    /// `available_commands_update`.
    pub async fn available_commands(&self, commands: Vec<AvailableCommand>) -> Result<(), Error> {
        self.send(SessionUpdate::available_commands_update(commands))
            .await
    }

    /// `current_mode_update`.
    pub async fn current_mode(&self, mode: impl Into<SessionModeId>) -> Result<(), Error> {
        self.send(SessionUpdate::current_mode_update(mode)).await
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
