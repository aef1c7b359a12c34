//! The v1 agent's own calls (permission requests, updates, files, terminals, elicitation),
//! answered toward the v2 client, by local files or by the translation's terminals.

use acp_rpc::{Error, RequestContext};
use acp_types::{v1, v2};
use serde_json::json;

use super::super::map::{content_to_v2, json_of, map_content, recast, unmapped};
use super::super::native::ClientHandle;
use super::super::terminals::Terminals;
use super::super::updates::Streamed;
use super::Shared;
use crate::lock;
use crate::translate::{V1End, v1_routes};

/// The v1 client the agent sees on the pair; its calls go to the v2 client, to local
/// files or to the translation's terminals.
type V1Client = V1End<Shared, ClientHandle>;

v1_routes! {
    V1Client;
    requests {
        v1::names::SESSION_REQUEST_PERMISSION => request_permission,
        v1::names::FS_READ_TEXT_FILE => read_text_file,
        v1::names::FS_WRITE_TEXT_FILE => write_text_file,
        v1::names::TERMINAL_CREATE => terminal_create,
        v1::names::TERMINAL_OUTPUT => terminal_output,
        v1::names::TERMINAL_WAIT_FOR_EXIT => terminal_wait,
        v1::names::TERMINAL_KILL => terminal_kill,
        v1::names::TERMINAL_RELEASE => terminal_release,
        v1::names::ELICITATION_CREATE => elicitation,
    }
    refuse |method| unmapped(method, "a v2 client has no such method");
    notifications {
        v1::names::SESSION_UPDATE => update,
        v1::names::ELICITATION_COMPLETE => elicitation_complete,
    }
    drop |method| tracing::warn!(method, "notification from the v1 agent dropped: v2 has no equivalent");
}

/// An update the v1 agent sent for a session the client has closed (the client is done with
/// it), or for one no answer named while too many such sessions are kept: not passed on,
/// and logged.
fn dropped_update(session: &str) {
    tracing::debug!(%session, "a v1 session/update was dropped: the client closed its session, or it names one no answer of the agent's gave out while many such are kept");
}

impl V1Client {
    /// A v1 update, mapped before the one wait, for the v2 client's queue: the future holds
    /// the v1 update and that wait, nothing of the mapping (it is boxed for every streamed
    /// chunk, so its size is per-chunk work).
    async fn update(&self, n: v1::SessionNotification) -> Result<(), Error> {
        let Some(n) = self.update_to_v2(n)? else {
            return Ok(());
        };
        self.legacy()?.session_update(n).await
    }

    /// The v2 update a v1 one becomes, or `None` when it is not passed on (logged).
    fn update_to_v2(
        &self,
        n: v1::SessionNotification,
    ) -> Result<Option<v2::UpdateSessionNotification>, Error> {
        let id = n.session_id.0;
        if lock(&self.quiet).contains(&id) {
            return Ok(None);
        }
        // A turn's streamed text takes the typed path; everything else the mapping of JSON.
        let update = match self.with_named(&id, |s| s.text_chunk(n.update)) {
            Some(Streamed::Text(chunk)) => {
                return Ok(Some(v2::UpdateSessionNotification::new(id, chunk)));
            }
            Some(Streamed::Other(update)) => update,
            None => {
                dropped_update(&id);
                return Ok(None);
            }
        };
        match self.with_named(&id, |s| s.update(json_of(&update))) {
            Some(Ok(update)) => {
                let update: v2::SessionUpdate = recast(update, "the session update")?;
                Ok(Some(v2::UpdateSessionNotification::new(id, update)))
            }
            Some(Err(why)) => {
                tracing::warn!(session = %id, %why, "a v1 session/update was not passed to the v2 client");
                Ok(None)
            }
            None => {
                dropped_update(&id);
                Ok(None)
            }
        }
    }

    async fn request_permission(
        &self,
        _cx: &RequestContext,
        p: v1::RequestPermissionRequest,
    ) -> Result<v1::RequestPermissionResponse, Error> {
        let id = p.session_id.0.clone();
        let mut call = json_of(&p.tool_call);
        let call_id = call["toolCallId"].as_str().unwrap_or_default().to_string();
        let known = self
            .with_named(&id, |s| s.titles.get(&call_id).cloned())
            .flatten();
        let title = call["title"].as_str().map(str::to_string).or(known);
        call["sessionUpdate"] = json!("tool_call_update");
        map_content(&mut call, content_to_v2);
        if let Some(o) = call.as_object_mut() {
            o.remove("sessionUpdate");
        }
        let request = json!({
            "sessionId": id,
            "title": title.unwrap_or_else(|| "Allow this tool call?".to_string()),
            "subject": { "type": "tool_call", "toolCall": call },
            "options": json_of(&p.options),
        });
        let request: v2::RequestPermissionRequest = recast(request, "the permission request")?;
        let answer = self.legacy()?.session_request_permission(request).await?;
        recast(json_of(&answer), "the permission answer")
    }

    async fn read_text_file(
        &self,
        _cx: &RequestContext,
        p: v1::ReadTextFileRequest,
    ) -> Result<v1::ReadTextFileResponse, Error> {
        self.files(v1::names::FS_READ_TEXT_FILE)?
            .read_text_file(p)
            .await
    }

    async fn write_text_file(
        &self,
        _cx: &RequestContext,
        p: v1::WriteTextFileRequest,
    ) -> Result<v1::WriteTextFileResponse, Error> {
        self.files(v1::names::FS_WRITE_TEXT_FILE)?
            .write_text_file(p)
            .await
    }

    fn files(&self, method: &str) -> Result<&dyn crate::LocalFiles, Error> {
        self.options.fs.as_deref().ok_or_else(|| {
            unmapped(
                method,
                "v2 clients have no file methods and no local file system was configured (AdapterOptions::with_fs)",
            )
        })
    }

    fn terminals(&self, method: &str) -> Result<&Terminals, Error> {
        self.terminals.as_ref().ok_or_else(|| {
            unmapped(
                method,
                "v2 clients run no terminals and local terminals are off (AdapterOptions::with_local_terminals)",
            )
        })
    }

    async fn terminal_create(
        &self,
        _cx: &RequestContext,
        p: v1::CreateTerminalRequest,
    ) -> Result<v1::CreateTerminalResponse, Error> {
        let terminals = self.terminals(v1::names::TERMINAL_CREATE)?;
        terminals
            .create(p, self.legacy()?.clone(), &self.options)
            .await
    }

    async fn terminal_output(
        &self,
        _cx: &RequestContext,
        p: v1::TerminalOutputRequest,
    ) -> Result<v1::TerminalOutputResponse, Error> {
        self.terminals(v1::names::TERMINAL_OUTPUT)?
            .output(&p.terminal_id.0)
    }

    async fn terminal_wait(
        &self,
        _cx: &RequestContext,
        p: v1::WaitForTerminalExitRequest,
    ) -> Result<v1::WaitForTerminalExitResponse, Error> {
        let terminals = self.terminals(v1::names::TERMINAL_WAIT_FOR_EXIT)?;
        terminals.wait(&p.terminal_id.0).await
    }

    async fn terminal_kill(
        &self,
        _cx: &RequestContext,
        p: v1::KillTerminalRequest,
    ) -> Result<v1::KillTerminalResponse, Error> {
        self.terminals(v1::names::TERMINAL_KILL)?
            .kill(&p.terminal_id.0)?;
        Ok(v1::KillTerminalResponse::default())
    }

    async fn terminal_release(
        &self,
        _cx: &RequestContext,
        p: v1::ReleaseTerminalRequest,
    ) -> Result<v1::ReleaseTerminalResponse, Error> {
        self.terminals(v1::names::TERMINAL_RELEASE)?
            .release(&p.terminal_id.0)?;
        Ok(v1::ReleaseTerminalResponse::default())
    }

    async fn elicitation(
        &self,
        _cx: &RequestContext,
        p: v1::CreateElicitationRequest,
    ) -> Result<v1::CreateElicitationResponse, Error> {
        let request: v2::CreateElicitationRequest = recast(json_of(&p), "the elicitation")?;
        let answer = self.legacy()?.elicitation_create(request).await?;
        recast(json_of(&answer), "the elicitation answer")
    }

    async fn elicitation_complete(
        &self,
        n: v1::CompleteElicitationNotification,
    ) -> Result<(), Error> {
        let n: v2::CompleteElicitationNotification = recast(json_of(&n), "elicitation/complete")?;
        self.legacy()?.elicitation_complete(n).await
    }
}
