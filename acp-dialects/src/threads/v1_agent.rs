//! A v1 agent in front of a threads editor: the translation for the agent's role.
//!
//! The user's v1 agent runs on an in-memory pipe; [`V1Side`] is its client there, [`ThreadsSide`]
//! the threads agent the editor talks to. [`Threads`] is what both share: the threads (v1
//! sessions) this connection knows and their histories.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use acp_rpc::memory::PipeEnd;
use acp_rpc::{
    Error, Handler, NotificationContext, Params, Peer, RawValue, RequestContext, to_raw,
};
use acp_types::legacy::threads as t;
use acp_types::v1;
use async_trait::async_trait;
use tokio::sync::OnceCell;

use super::native::{Agent, ClientHandle, Context, serve_with};
use super::{line_offset_of, prompt_of, session_of, thread_of};
use crate::connection::{ready, translate};
use crate::{AdapterOptions, Input, Output, lock, not_forwarded, rfc3339};

/// Serves the v1 agent `v1_agent` starts to a threads editor; see the module docs of
/// [`super`] for the mapping.
pub(crate) fn serve_v1_agent(
    v1_agent: impl FnOnce(PipeEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Peer {
    let threads = Arc::new(Threads::default());
    let known = threads.clone();
    let config = options.config.clone();
    translate(
        v1_agent,
        |editor| V1Side {
            threads: known,
            editor,
        },
        |agent| {
            let side = ThreadsSide {
                agent,
                initialized: OnceCell::new(),
                threads,
                options,
            };
            serve_with(side, reader, writer, config)
        },
    )
}

/// The threads this connection knows, with what the editor can ask about them.
#[derive(Default)]
struct Threads(Mutex<HashMap<v1::SessionId, ThreadState>>);

struct ThreadState {
    title: Option<String>,
    modified_at: String,
    entries: Vec<t::ThreadEntry>,
    /// A `sendMessage` is running: the agent's reply chunks go to the editor.
    prompting: bool,
}

impl ThreadState {
    fn new() -> Self {
        ThreadState {
            title: None,
            modified_at: now_rfc3339(),
            entries: Vec::new(),
            prompting: false,
        }
    }

    /// Appends text to the history, extending the last entry when it is a message of the
    /// same role (chunks of one message arrive one by one).
    fn record_text(&mut self, role: t::Role, text: &str) {
        let chunk = t::MessageChunk::text(text);
        match self.entries.last_mut() {
            Some(t::ThreadEntry::Message(m)) if m.role == role => m.chunks.push(chunk),
            _ => self.entries.push(t::ThreadEntry::message(role, [chunk])),
        }
        self.modified_at = now_rfc3339();
    }

    fn metadata(&self, id: &v1::SessionId) -> t::ThreadMetadata {
        let title = self.title.clone();
        let title = title.unwrap_or_else(|| format!("Thread {}", id.0));
        t::ThreadMetadata::new(thread_of(id), title, self.modified_at.clone())
    }
}

impl Threads {
    fn with<T>(&self, id: &v1::SessionId, f: impl FnOnce(&mut ThreadState) -> T) -> Option<T> {
        lock(&self.0).get_mut(id).map(f)
    }

    fn insert(&self, id: v1::SessionId) {
        lock(&self.0).entry(id).or_insert_with(ThreadState::new);
    }

    fn knows(&self, id: &v1::SessionId) -> bool {
        lock(&self.0).contains_key(id)
    }
}

fn thread_not_found(id: &str) -> Error {
    Error::resource_not_found(format!("Thread not found: {id}"))
}

/// The threads agent the editor sees; every call becomes v1 calls to the agent on the pipe.
struct ThreadsSide {
    agent: Peer,
    initialized: OnceCell<v1::InitializeResponse>,
    threads: Arc<Threads>,
    options: AdapterOptions,
}

impl ThreadsSide {
    /// The v1 handshake, done once, before the first call (the threads dialect has none).
    async fn agent(&self) -> Result<&v1::InitializeResponse, Error> {
        self.initialized
            .get_or_try_init(|| async {
                let files = v1::FileSystemCapabilities::new().read_text_file(true);
                let init = v1::InitializeRequest::new(v1::ProtocolVersion::LATEST)
                    .client_capabilities(v1::ClientCapabilities::new().fs(files));
                self.agent.typed_request(&init).await
            })
            .await
    }

    fn cwd(&self) -> String {
        self.options.session_cwd().to_string_lossy().into_owned()
    }
}

#[async_trait]
impl Agent for ThreadsSide {
    async fn get_threads(&self, _cx: &Context) -> Result<t::GetThreadsResponse, Error> {
        let init = self.agent().await?;
        let mut listed = Vec::new();
        if init.agent_capabilities.session_capabilities.list.is_some() {
            let request = v1::ListSessionsRequest::new().cwd(self.cwd());
            let answer = self.agent.typed_request(&request).await?;
            listed = answer.sessions;
        }
        let threads = lock(&self.threads.0);
        let mut out: Vec<t::ThreadMetadata> = threads
            .iter()
            .map(|(id, state)| state.metadata(id))
            .collect();
        for info in listed {
            if !threads.contains_key(&info.session_id) {
                let title = info
                    .title
                    .unwrap_or_else(|| format!("Thread {}", info.session_id.0));
                let modified_at = info.updated_at.unwrap_or_else(now_rfc3339);
                out.push(t::ThreadMetadata::new(
                    thread_of(&info.session_id),
                    title,
                    modified_at,
                ));
            }
        }
        out.sort_by(|a, b| a.id.0.cmp(&b.id.0));
        Ok(t::GetThreadsResponse::new(out))
    }

    async fn create_thread(&self, _cx: &Context) -> Result<t::CreateThreadResponse, Error> {
        self.agent().await?;
        let new_session = v1::NewSessionRequest::new(self.cwd(), Vec::<v1::McpServer>::new());
        let created = self.agent.typed_request(&new_session).await?;
        self.threads.insert(created.session_id.clone());
        Ok(t::CreateThreadResponse::new(thread_of(&created.session_id)))
    }

    async fn open_thread(&self, params: t::OpenThreadParams, _cx: &Context) -> Result<(), Error> {
        let init = self.agent().await?;
        let id = session_of(&params.thread_id);
        if self.threads.knows(&id) {
            return Ok(());
        }
        if !init.agent_capabilities.load_session {
            return Err(thread_not_found(&id.0));
        }
        // The history replayed during the load lands in the new thread's entries.
        self.threads.insert(id.clone());
        let load = v1::LoadSessionRequest::new(Vec::<v1::McpServer>::new(), self.cwd(), id.clone());
        if let Err(e) = self.agent.typed_request(&load).await {
            lock(&self.threads.0).remove(&id);
            return Err(e);
        }
        Ok(())
    }

    async fn get_thread_entries(
        &self,
        params: t::GetThreadEntriesParams,
        _cx: &Context,
    ) -> Result<t::GetThreadEntriesResponse, Error> {
        let id = session_of(&params.thread_id);
        self.threads
            .with(&id, |s| t::GetThreadEntriesResponse::new(s.entries.clone()))
            .ok_or_else(|| thread_not_found(&id.0))
    }

    async fn send_message(&self, params: t::SendMessageParams, _cx: &Context) -> Result<(), Error> {
        self.agent().await?;
        let id = session_of(&params.thread_id);
        let prompt = prompt_of(&params.message);
        self.threads
            .with(&id, |s| {
                for block in &prompt {
                    if let v1::ContentBlock::Text(text) = block {
                        s.record_text(t::Role::User, &text.text);
                    }
                }
                if s.title.is_none() {
                    s.title = Some(title_from(&params.message));
                }
                s.prompting = true;
            })
            .ok_or_else(|| thread_not_found(&id.0))?;
        struct Prompting<'a>(&'a Threads, &'a v1::SessionId);
        impl Drop for Prompting<'_> {
            fn drop(&mut self) {
                self.0.with(self.1, |s| s.prompting = false);
            }
        }
        let _prompting = Prompting(&self.threads, &id);
        self.agent
            .typed_request(&v1::PromptRequest::new(id.clone(), prompt))
            .await?;
        Ok(())
    }
}

/// A thread title from the first line of its first message, at most 60 characters.
fn title_from(message: &t::Message) -> String {
    let text: String = message
        .chunks
        .iter()
        .filter_map(|c| match c {
            t::MessageChunk::Text(t) => Some(t.chunk.as_str()),
            t::MessageChunk::Unknown(_) => None,
        })
        .collect();
    let line = text.lines().next().unwrap_or("").trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    if title.is_empty() {
        "Untitled thread".to_string()
    } else {
        title
    }
}

/// The v1 client the agent sees on the pipe; its calls go to the threads editor.
struct V1Side {
    threads: Arc<Threads>,
    editor: Arc<OnceLock<ClientHandle>>,
}

impl V1Side {
    fn editor(&self) -> Result<&ClientHandle, Error> {
        ready(&self.editor)
    }

    async fn update(&self, n: v1::SessionNotification) -> Result<(), Error> {
        let id = n.session_id;
        let kind = update_kind(&n.update);
        let stream = match &n.update {
            v1::SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                v1::ContentBlock::Text(text) => self
                    .threads
                    .with(&id, |s| {
                        s.record_text(t::Role::Assistant, &text.text);
                        s.prompting.then(|| text.text.clone())
                    })
                    .flatten(),
                _ => {
                    tracing::warn!(session = %id.0, "threads editors show text only: a non-text agent_message_chunk was dropped");
                    None
                }
            },
            v1::SessionUpdate::UserMessageChunk(chunk) => {
                if let v1::ContentBlock::Text(text) = &chunk.content {
                    self.threads
                        .with(&id, |s| s.record_text(t::Role::User, &text.text));
                }
                None
            }
            v1::SessionUpdate::SessionInfoUpdate(info) => {
                if let Some(Some(title)) = &info.title {
                    self.threads.with(&id, |s| s.title = Some(title.clone()));
                }
                None
            }
            _ => {
                tracing::warn!(session = %id.0, kind, "the threads dialect has no way to show this session/update; dropped");
                None
            }
        };
        if let Some(text) = stream {
            self.editor()?.stream_text(&thread_of(&id), text).await?;
        }
        Ok(())
    }

    async fn read_text_file(&self, p: v1::ReadTextFileRequest) -> Result<Box<RawValue>, Error> {
        let answer = self
            .editor()?
            .read_text_file({
                let mut read = t::ReadTextFileParams::new(thread_of(&p.session_id), p.path.clone());
                (read.line_offset, read.line_limit) = (line_offset_of(p.line), p.limit);
                read
            })
            .await?;
        self.threads.with(&p.session_id, |s| {
            let entry = t::ThreadEntry::read_file(p.path.clone(), answer.content.clone());
            s.entries.push(entry);
        });
        to_raw(&v1::ReadTextFileResponse::new(answer.content))
    }
}

/// The `sessionUpdate` tag of an update, for logs.
fn update_kind(update: &v1::SessionUpdate) -> &'static str {
    use v1::SessionUpdate as U;
    match update {
        U::UserMessageChunk(_) => "user_message_chunk",
        U::AgentMessageChunk(_) => "agent_message_chunk",
        U::AgentThoughtChunk(_) => "agent_thought_chunk",
        U::ToolCall(_) => "tool_call",
        U::ToolCallUpdate(_) => "tool_call_update",
        U::Plan(_) => "plan",
        _ => "another kind",
    }
}

#[async_trait]
impl Handler for V1Side {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            v1::names::FS_READ_TEXT_FILE => self.read_text_file(params.parse_request()?).await,
            v1::names::SESSION_REQUEST_PERMISSION => Err(not_forwarded(
                crate::Dialect::Threads,
                method,
                "the threads dialect has no permission prompt, so a threads editor cannot be asked",
            )),
            _ => Err(not_forwarded(
                crate::Dialect::Threads,
                method,
                "a threads editor has no such method",
            )),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        if method == v1::names::SESSION_UPDATE {
            self.update(params.parse()?).await
        } else {
            tracing::debug!(
                method,
                "notification from the v1 agent dropped: no threads equivalent"
            );
            Ok(())
        }
    }
}

/// The current time as an RFC 3339 UTC timestamp (`2025-06-25T12:00:00Z`).
fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_750_852_800), "2025-06-25T12:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn titles_come_from_the_first_line_of_the_first_message() {
        let message = |text: &str| t::Message::new(t::Role::User, [t::MessageChunk::text(text)]);
        assert_eq!(
            title_from(&message("Summarize README.md\nplease")),
            "Summarize README.md"
        );
        assert_eq!(title_from(&message("  ")), "Untitled thread");
        let long = "x".repeat(70);
        assert_eq!(title_from(&message(&long)).chars().count(), 61);
    }
}
