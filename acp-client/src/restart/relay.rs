//! The application's [`Client`] as every connection of a [`super::SupervisedAgent`] sees it:
//! shared across restarts, with the replayed updates of sessions being reloaded held back.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use acp_rpc::Error;
use acp_rpc::sync::lock;
use acp_types::v1::*;
use async_trait::async_trait;
use serde_json::Value;

use crate::Client;

/// The application's client, shared by every connection the supervisor makes, with the
/// updates of sessions being reloaded held back.
pub(super) struct Relay<C: Client> {
    pub(super) client: Arc<C>,
    /// Sessions being reloaded: their replayed updates are not passed on.
    pub(super) muted: Mutex<HashSet<SessionId>>,
}

/// A connection's view of the [`Relay`].
pub(super) struct Shared<C: Client>(pub(super) Arc<Relay<C>>);

#[async_trait]
impl<C: Client> Client for Shared<C> {
    async fn request_permission(
        &self,
        params: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        self.0.client.request_permission(params).await
    }
    async fn read_text_file(
        &self,
        params: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        self.0.client.read_text_file(params).await
    }
    async fn write_text_file(
        &self,
        params: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.0.client.write_text_file(params).await
    }
    async fn approve_terminal(
        &self,
        request: &crate::terminal::TerminalRequest,
    ) -> crate::terminal::TerminalDecision {
        self.0.client.approve_terminal(request).await
    }
    async fn create_terminal(
        &self,
        params: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        self.0.client.create_terminal(params).await
    }
    async fn terminal_output(
        &self,
        params: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        self.0.client.terminal_output(params).await
    }
    async fn release_terminal(
        &self,
        params: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        self.0.client.release_terminal(params).await
    }
    async fn wait_for_terminal_exit(
        &self,
        params: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        self.0.client.wait_for_terminal_exit(params).await
    }
    async fn kill_terminal(
        &self,
        params: KillTerminalRequest,
    ) -> Result<KillTerminalResponse, Error> {
        self.0.client.kill_terminal(params).await
    }
    async fn create_elicitation(
        &self,
        params: CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse, Error> {
        self.0.client.create_elicitation(params).await
    }
    async fn session_update(&self, params: SessionNotification) -> Result<(), Error> {
        if lock(&self.0.muted).contains(&params.session_id) {
            return Ok(());
        }
        self.0.client.session_update(params).await
    }
    async fn complete_elicitation(
        &self,
        params: CompleteElicitationNotification,
    ) -> Result<(), Error> {
        self.0.client.complete_elicitation(params).await
    }
    async fn ext_method(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.0.client.ext_method(method, params).await
    }
    async fn ext_notification(&self, method: &str, params: Value) -> Result<(), Error> {
        self.0.client.ext_notification(method, params).await
    }
}
