//! A v1 agent in front of a threads editor: the translation for the agent's role, on the
//! skeleton of [`crate::translate`]. [`Threads`] is what its two ends share: the threads
//! (v1 sessions) this connection knows and their histories.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use acp_rpc::{Error, RequestContext};
use acp_types::legacy::threads as t;
use acp_types::time::{now_rfc3339_seconds, rfc3339_seconds};
use acp_types::v1;
use async_trait::async_trait;

use super::native::{Agent, ClientHandle, Context};
use super::{line_offset_of, prompt_of};
use crate::translate::{LegacyEnd, OnDrop, Streamed, V1End, V1Handshake, update_kind, v1_routes};
use crate::{AdapterOptions, lock, not_forwarded};

/// What the two ends of a v1 agent in front of a threads editor share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Threads {
    Threads {
        handshake: V1Handshake::reading(false),
        known: Mutex::default(),
        streamed: Streamed::new(&options.config),
        options,
    }
}

/// The state both ends of the translation share: the threads this connection knows, with
/// what the editor can ask about them.
pub(crate) struct Threads {
    handshake: V1Handshake,
    known: Mutex<HashMap<v1::SessionId, ThreadState>>,
    /// The `streamMessageChunk`s sent to the editor, not yet answered (of every thread).
    streamed: Streamed<t::StreamMessageChunkResponse>,
    options: AdapterOptions,
}

struct ThreadState {
    title: Option<String>,
    /// When the thread last changed (written out only when the editor lists threads).
    modified_at: SystemTime,
    entries: Vec<t::ThreadEntry>,
    /// A `sendMessage` is running: the agent's reply chunks go to the editor.
    prompting: bool,
}

impl ThreadState {
    fn new() -> Self {
        ThreadState {
            title: None,
            modified_at: SystemTime::now(),
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
        self.modified_at = SystemTime::now();
    }

}

/// A thread's metadata: its title, else `Thread <id>`.
fn metadata(id: &v1::SessionId, title: Option<String>, modified_at: String) -> t::ThreadMetadata {
    let title = title.unwrap_or_else(|| format!("Thread {}", id.0));
    t::ThreadMetadata::new(id.as_str(), title, modified_at)
}

impl Threads {
    fn with<T>(&self, id: &v1::SessionId, f: impl FnOnce(&mut ThreadState) -> T) -> Option<T> {
        lock(&self.known).get_mut(id).map(f)
    }

    fn insert(&self, id: v1::SessionId) {
        lock(&self.known).entry(id).or_insert_with(ThreadState::new);
    }

    fn knows(&self, id: &v1::SessionId) -> bool {
        lock(&self.known).contains_key(id)
    }
}

fn thread_not_found(id: &str) -> Error {
    Error::resource_not_found(format!("Thread not found: {id}"))
}

/// The threads agent the editor sees; every call becomes v1 calls to the agent on the pipe.
type ThreadsAgent = LegacyEnd<Threads, ClientHandle>;

#[async_trait]
impl Agent for ThreadsAgent {
    async fn get_threads(&self, _cx: &Context) -> Result<t::GetThreadsResponse, Error> {
        let init = self.handshake.done(&self.v1).await?;
        let mut listed = Vec::new();
        if init.agent_capabilities.session_capabilities.list.is_some() {
            let request = v1::ListSessionsRequest::new().cwd(self.options.session_cwd());
            let answer = self.v1.typed_request(&request).await?;
            listed = answer.sessions;
        }
        let threads = lock(&self.known);
        let mut out: Vec<t::ThreadMetadata> = threads
            .iter()
            .map(|(id, s)| metadata(id, s.title.clone(), rfc3339_seconds(s.modified_at)))
            .collect();
        for info in listed {
            if !threads.contains_key(&info.session_id) {
                let modified_at = info.updated_at.unwrap_or_else(now_rfc3339_seconds);
                out.push(metadata(&info.session_id, info.title, modified_at));
            }
        }
        out.sort_by(|a, b| a.id.0.cmp(&b.id.0));
        Ok(t::GetThreadsResponse::new(out))
    }

    async fn create_thread(&self, _cx: &Context) -> Result<t::CreateThreadResponse, Error> {
        self.handshake.done(&self.v1).await?;
        let new_session = self.options.new_session();
        let created = self.v1.typed_request(&new_session).await?;
        self.insert(created.session_id.clone());
        Ok(t::CreateThreadResponse::new(created.session_id.as_str()))
    }

    async fn open_thread(&self, params: t::OpenThreadParams, _cx: &Context) -> Result<(), Error> {
        let init = self.handshake.done(&self.v1).await?;
        let id = v1::SessionId::from(params.thread_id.as_str());
        if self.knows(&id) {
            return Ok(());
        }
        if !init.agent_capabilities.load_session {
            return Err(thread_not_found(&id.0));
        }
        // The history replayed during the load lands in the new thread's entries.
        self.insert(id.clone());
        let load = self.options.load_session(id.clone());
        if let Err(e) = self.v1.typed_request(&load).await {
            lock(&self.known).remove(&id);
            return Err(e);
        }
        Ok(())
    }

    async fn get_thread_entries(
        &self,
        params: t::GetThreadEntriesParams,
        _cx: &Context,
    ) -> Result<t::GetThreadEntriesResponse, Error> {
        let id = v1::SessionId::from(params.thread_id.as_str());
        self.with(&id, |s| t::GetThreadEntriesResponse::new(s.entries.clone()))
            .ok_or_else(|| thread_not_found(&id.0))
    }

    async fn send_message(&self, params: t::SendMessageParams, _cx: &Context) -> Result<(), Error> {
        self.handshake.done(&self.v1).await?;
        let id = v1::SessionId::from(params.thread_id.as_str());
        let prompt = prompt_of(&params.message);
        self.with(&id, |s| {
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
        let _prompting = OnDrop(|| {
            self.with(&id, |s| s.prompting = false);
        });
        let result = self
            .v1
            .typed_request(&v1::PromptRequest::new(id.clone(), prompt))
            .await;
        // The turn is over once the editor has taken every chunk of it (the v1 answer comes
        // after the turn's notifications, so they are all sent by now).
        self.streamed.answered().await;
        result.map(|_| ())
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
type V1Client = V1End<Threads, ClientHandle>;

v1_routes! {
    V1Client;
    requests { v1::names::FS_READ_TEXT_FILE => read_text_file }
    refuse |method| match method {
        v1::names::SESSION_REQUEST_PERMISSION => not_forwarded(
            crate::Dialect::Threads,
            method,
            "the threads dialect has no permission prompt, so a threads editor cannot be asked",
        ),
        _ => not_forwarded(
            crate::Dialect::Threads,
            method,
            "a threads editor has no such method",
        ),
    };
    notifications { v1::names::SESSION_UPDATE => update }
    drop |method| tracing::debug!(method, "notification from the v1 agent dropped: no threads equivalent");
}

impl V1Client {
    async fn update(&self, n: v1::SessionNotification) -> Result<(), Error> {
        if let Some((id, text)) = self.streamed_text(n) {
            let chunk = t::MessageChunk::text(text);
            let params = t::StreamMessageChunkParams::new(id, chunk);
            self.streamed.send(self.legacy()?.peer(), &params).await?;
        }
        Ok(())
    }

    /// Records a v1 update in its thread; the thread and the text to stream for a chunk of
    /// the agent's reply during a prompt.
    fn streamed_text(&self, n: v1::SessionNotification) -> Option<(t::ThreadId, String)> {
        let id = n.session_id;
        let stream = match n.update {
            v1::SessionUpdate::AgentMessageChunk(chunk) => match chunk.content {
                v1::ContentBlock::Text(text) => self
                    .with(&id, |s| {
                        s.record_text(t::Role::Assistant, &text.text);
                        s.prompting.then_some(text.text)
                    })
                    .flatten(),
                _ => {
                    tracing::warn!(session = %id.0, "threads editors show text only: a non-text agent_message_chunk was dropped");
                    None
                }
            },
            v1::SessionUpdate::UserMessageChunk(chunk) => {
                if let v1::ContentBlock::Text(text) = &chunk.content {
                    self.with(&id, |s| s.record_text(t::Role::User, &text.text));
                }
                None
            }
            v1::SessionUpdate::SessionInfoUpdate(info) => {
                if let Some(Some(title)) = &info.title {
                    self.with(&id, |s| s.title = Some(title.clone()));
                }
                None
            }
            other => {
                // Written out (the update serialized) only for an update that is dropped.
                let kind = update_kind(&other);
                tracing::warn!(session = %id.0, %kind, "the threads dialect has no way to show this session/update; dropped");
                None
            }
        };
        stream.map(|text| (t::ThreadId::from(id.0), text))
    }

    async fn read_text_file(
        &self,
        _cx: &RequestContext,
        p: v1::ReadTextFileRequest,
    ) -> Result<v1::ReadTextFileResponse, Error> {
        let mut read = t::ReadTextFileParams::new(p.session_id.as_str(), p.path.clone());
        (read.line_offset, read.line_limit) = (line_offset_of(p.line), p.limit);
        let answer = self.legacy()?.read_text_file(read).await?;
        self.with(&p.session_id, |s| {
            let entry = t::ThreadEntry::read_file(p.path.clone(), answer.content.clone());
            s.entries.push(entry);
        });
        Ok(v1::ReadTextFileResponse::new(answer.content))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
