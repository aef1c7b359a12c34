//! A threads agent behind a v1 client: the translation for the client's role, on the
//! skeleton of [`crate::translate`]. [`Shared`] is what its two ends share: where the
//! agent's file calls go, and the `cwd` sessions are listed with.

use acp_rpc::{Error, RequestContext};
use acp_types::legacy::threads as t;
use acp_types::v1;
use async_trait::async_trait;
use base64::Engine as _;

use super::native::{AgentHandle, Client};
use super::{line_of, message_of};
use crate::client_files::ClientFiles;
use crate::translate::{LegacyEnd, V1End, show, v1_routes};
use crate::{AdapterOptions, Dialect, refused};

/// What the two ends of a threads agent behind a v1 client share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Shared {
    Shared {
        files: ClientFiles::new(&options, no_files),
        listed_cwd: listed_cwd(&options),
    }
}

/// The `cwd` reported for every session in `session/list`: [`AdapterOptions::cwd`], else
/// the first root of [`AdapterOptions::fs`], else empty.
fn listed_cwd(options: &AdapterOptions) -> String {
    options
        .cwd
        .clone()
        .or_else(|| options.fs.as_ref().and_then(|fs| fs.default_cwd()))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The state both ends of the translation share.
pub(crate) struct Shared {
    /// Where the agent's file calls go.
    files: ClientFiles,
    /// The `cwd` of every session in `session/list`.
    listed_cwd: String,
}

/// `-32601` for a file call neither the client nor a local file system serves.
fn no_files(method: &str) -> Error {
    let why = "v1 has no such method and no file system was configured (AdapterOptions::with_fs)";
    refused(Dialect::Threads, method, why)
}

/// The updates that replay one history entry in `session/load`.
fn replay(entry: &t::ThreadEntry, index: usize) -> Vec<v1::SessionUpdate> {
    match entry {
        t::ThreadEntry::Message(m) => m
            .chunks
            .iter()
            .filter_map(|c| match c {
                t::MessageChunk::Text(text) => Some(text.chunk.clone()),
                t::MessageChunk::Unknown(_) => None,
            })
            .map(|text| match m.role {
                t::Role::User => v1::SessionUpdate::user_message_text(text),
                _ => v1::SessionUpdate::agent_message_text(text),
            })
            .collect(),
        t::ThreadEntry::ReadFile(read) => {
            let call = v1::ToolCall::new(format!("read-{index}"), format!("Read {}", read.path))
                .kind(v1::ToolKind::Read)
                .status(v1::ToolCallStatus::Completed)
                .locations([v1::ToolCallLocation::new(read.path.clone())]);
            vec![call.into()]
        }
        t::ThreadEntry::Unknown(_) => Vec::new(),
    }
}

/// The v1 agent the user's connection talks to on the pipe; its calls go to the threads
/// agent.
type V1Agent = V1End<Shared, AgentHandle>;

v1_routes! {
    V1Agent;
    requests {
        v1::names::INITIALIZE => initialize,
        v1::names::SESSION_NEW => new_session,
        v1::names::SESSION_LOAD => load,
        v1::names::SESSION_LIST => list,
        v1::names::SESSION_PROMPT => prompt,
    }
    refuse |method| refused(Dialect::Threads, method, "a threads agent has no such method");
    notifications {}
    drop |method| if method == v1::names::SESSION_CANCEL {
        tracing::warn!(
            "session/cancel dropped: a threads agent cannot be cancelled, the turn runs to its end"
        );
    } else {
        tracing::debug!(method, "notification dropped: a threads agent has no equivalent");
    };
}

impl V1Agent {
    async fn initialize(
        &self,
        _cx: &RequestContext,
        p: v1::InitializeRequest,
    ) -> Result<v1::InitializeResponse, Error> {
        self.files.advertise(&p.client_capabilities);
        let capabilities = v1::AgentCapabilities::new()
            .load_session(true)
            .session_capabilities(
                v1::SessionCapabilities::new().list(v1::SessionListCapabilities::new()),
            );
        let version =
            v1::ProtocolVersion::negotiate(p.protocol_version, &[v1::ProtocolVersion::LATEST]);
        Ok(v1::InitializeResponse::new(version).agent_capabilities(capabilities))
    }

    async fn new_session(
        &self,
        _cx: &RequestContext,
        _p: v1::NewSessionRequest,
    ) -> Result<v1::NewSessionResponse, Error> {
        let created = self.legacy()?.create_thread().await?;
        Ok(v1::NewSessionResponse::new(created.thread_id.as_str()))
    }

    async fn prompt(
        &self,
        _cx: &RequestContext,
        p: v1::PromptRequest,
    ) -> Result<v1::PromptResponse, Error> {
        let message = message_of(&p.prompt)?;
        let agent = self.legacy()?;
        agent
            .send_message(t::SendMessageParams::new(p.session_id.as_str(), message))
            .await?;
        // Chunks the agent sent before its answer are passed on before the turn ends.
        agent.peer().received_requests_handled().await;
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }

    async fn load(
        &self,
        cx: &RequestContext,
        p: v1::LoadSessionRequest,
    ) -> Result<v1::LoadSessionResponse, Error> {
        let agent = self.legacy()?;
        let thread_id = t::ThreadId::from(p.session_id.as_str());
        agent
            .open_thread(t::OpenThreadParams::new(thread_id.clone()))
            .await?;
        let history = agent
            .get_thread_entries(t::GetThreadEntriesParams::new(thread_id))
            .await?;
        for (i, entry) in history.entries.iter().enumerate() {
            for update in replay(entry, i) {
                show(cx.peer(), p.session_id.clone(), update).await?;
            }
        }
        Ok(v1::LoadSessionResponse::default())
    }

    async fn list(
        &self,
        _cx: &RequestContext,
        _p: v1::ListSessionsRequest,
    ) -> Result<v1::ListSessionsResponse, Error> {
        let threads = self.legacy()?.get_threads().await?;
        let cwd = self.listed_cwd.clone();
        let sessions: Vec<_> = threads
            .threads
            .into_iter()
            .map(|m| {
                v1::SessionInfo::new(m.id.as_str(), cwd.clone())
                    .title(m.title)
                    .updated_at(m.modified_at)
            })
            .collect();
        Ok(v1::ListSessionsResponse::new(sessions))
    }
}

/// The threads editor the real agent talks to; its calls go to the user's v1 client.
type ThreadsEditor = LegacyEnd<Shared, AgentHandle>;

#[async_trait]
impl Client for ThreadsEditor {
    async fn stream_message_chunk(&self, p: t::StreamMessageChunkParams) -> Result<(), Error> {
        let t::MessageChunk::Text(text) = p.chunk else {
            tracing::warn!("a message chunk of an unknown type was dropped");
            return Ok(());
        };
        let update = v1::SessionUpdate::agent_message_text(text.chunk);
        show(&self.v1, p.thread_id.as_str(), update).await
    }

    async fn read_text_file(
        &self,
        p: t::ReadTextFileParams,
    ) -> Result<t::ReadTextFileResponse, Error> {
        let mut request = v1::ReadTextFileRequest::new(p.thread_id.as_str(), p.path);
        (request.line, request.limit) = (line_of(p.line_offset), p.line_limit);
        let files = &self.files;
        let read = (files.read_text_file(&self.v1, t::names::READ_TEXT_FILE, request)).await?;
        Ok(t::ReadTextFileResponse::new(
            t::FileVersion(0),
            read.content,
        ))
    }

    async fn read_binary_file(
        &self,
        p: t::ReadBinaryFileParams,
    ) -> Result<t::ReadBinaryFileResponse, Error> {
        let bytes = self
            .files
            .local(t::names::READ_BINARY_FILE)?
            .read_bytes(&p.path, p.byte_offset, p.byte_limit)
            .await?;
        let content = base64::engine::general_purpose::STANDARD.encode(bytes);
        Ok(t::ReadBinaryFileResponse::new(t::FileVersion(0), content))
    }

    async fn stat(&self, p: t::StatParams) -> Result<t::StatResponse, Error> {
        let stat = self.files.local(t::names::STAT)?.stat(&p.path).await?;
        Ok(t::StatResponse::new(stat.exists, stat.is_directory))
    }

    async fn glob_search(&self, p: t::GlobSearchParams) -> Result<t::GlobSearchResponse, Error> {
        let matches = self
            .files
            .local(t::names::GLOB_SEARCH)?
            .glob(&p.pattern)
            .await?;
        Ok(t::GlobSearchResponse::new(matches))
    }
}
