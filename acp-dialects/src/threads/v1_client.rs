//! A threads agent behind a v1 client: the translation for the client's role.
//!
//! The user's v1 client connection runs on an in-memory pipe; [`V1AgentSide`] is the
//! v1 agent it talks to there, [`ThreadsClientSide`] the threads editor the real agent sees.

use std::sync::{Arc, OnceLock};

use acp_rpc::memory::PipeEnd;
use acp_rpc::{
    Error, Handler, NotificationContext, Params, Peer, RawValue, RequestContext, to_raw,
};
use acp_types::legacy::threads as t;
use acp_types::v1;
use async_trait::async_trait;
use base64::Engine as _;

use super::native::{AgentHandle, Client, connect_with};
use super::{line_of, message_of, session_of, thread_of};
use crate::client_files::ClientFiles;
use crate::connection::{ready, translate};
use crate::{AdapterOptions, Input, Output, refused};

/// Drives a threads agent for the v1 client `v1_client` starts; see the module docs of
/// [`super`] for the mapping.
pub(crate) fn drive_for_v1_client(
    v1_client: impl FnOnce(PipeEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Peer {
    let config = options.config.clone();
    let shared = Arc::new(Shared {
        files: ClientFiles::new(crate::Dialect::Threads, &options, NO_FILES),
        listed_cwd: listed_cwd(&options),
    });
    let known = shared.clone();
    translate(
        v1_client,
        |agent| V1AgentSide {
            agent,
            shared: known,
        },
        |client| connect_with(ThreadsClientSide { client, shared }, reader, writer, config),
    )
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

struct Shared {
    /// Where the agent's file calls go.
    files: ClientFiles,
    /// The `cwd` of every session in `session/list`.
    listed_cwd: String,
}

/// Why a file call is refused when neither the client nor a local file system serves it.
const NO_FILES: &str =
    "v1 has no such method and no file system was configured (AdapterOptions::with_fs)";

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
            vec![v1::SessionUpdate::ToolCall(Box::new(call))]
        }
        t::ThreadEntry::Unknown(_) => Vec::new(),
    }
}

/// The v1 agent the user's connection talks to on the pipe.
struct V1AgentSide {
    agent: Arc<OnceLock<AgentHandle>>,
    shared: Arc<Shared>,
}

impl V1AgentSide {
    fn agent(&self) -> Result<&AgentHandle, Error> {
        ready(&self.agent)
    }

    fn initialize(&self, p: v1::InitializeRequest) -> Result<Box<RawValue>, Error> {
        self.shared.files.advertise(&p.client_capabilities);
        let capabilities = v1::AgentCapabilities::new()
            .load_session(true)
            .session_capabilities(
                v1::SessionCapabilities::new().list(v1::SessionListCapabilities::new()),
            );
        let version =
            v1::ProtocolVersion::negotiate(p.protocol_version, &[v1::ProtocolVersion::LATEST]);
        to_raw(&v1::InitializeResponse::new(version).agent_capabilities(capabilities))
    }

    async fn load(&self, peer: &Peer, p: v1::LoadSessionRequest) -> Result<Box<RawValue>, Error> {
        let agent = self.agent()?;
        let thread_id = thread_of(&p.session_id);
        agent
            .open_thread(t::OpenThreadParams::new(thread_id.clone()))
            .await?;
        let history = agent
            .get_thread_entries(t::GetThreadEntriesParams::new(thread_id))
            .await?;
        for (i, entry) in history.entries.iter().enumerate() {
            for update in replay(entry, i) {
                peer.notify(
                    v1::names::SESSION_UPDATE,
                    &v1::SessionNotification::new(p.session_id.clone(), update),
                )
                .await?;
            }
        }
        to_raw(&v1::LoadSessionResponse::default())
    }

    async fn list(&self) -> Result<Box<RawValue>, Error> {
        let threads = self.agent()?.get_threads().await?;
        let cwd = self.shared.listed_cwd.clone();
        let sessions: Vec<_> = threads
            .threads
            .into_iter()
            .map(|m| {
                v1::SessionInfo::new(session_of(&m.id), cwd.clone())
                    .title(m.title)
                    .updated_at(m.modified_at)
            })
            .collect();
        to_raw(&v1::ListSessionsResponse::new(sessions))
    }
}

#[async_trait]
impl Handler for V1AgentSide {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            v1::names::INITIALIZE => self.initialize(params.parse_request()?),
            v1::names::SESSION_NEW => {
                let _: v1::NewSessionRequest = params.parse_request()?;
                let created = self.agent()?.create_thread().await?;
                to_raw(&v1::NewSessionResponse::new(session_of(&created.thread_id)))
            }
            v1::names::SESSION_LOAD => self.load(cx.peer(), params.parse_request()?).await,
            v1::names::SESSION_LIST => {
                let _: v1::ListSessionsRequest = params.parse_request()?;
                self.list().await
            }
            v1::names::SESSION_PROMPT => {
                let p: v1::PromptRequest = params.parse_request()?;
                let message = message_of(&p.prompt)?;
                let agent = self.agent()?;
                agent
                    .send_message(t::SendMessageParams::new(thread_of(&p.session_id), message))
                    .await?;
                // Chunks the agent sent before its answer are passed on before the turn ends.
                agent.peer().received_requests_handled().await;
                to_raw(&v1::PromptResponse::new(v1::StopReason::EndTurn))
            }
            _ => Err(refused(
                crate::Dialect::Threads,
                method,
                "a threads agent has no such method",
            )),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        if method == v1::names::SESSION_CANCEL {
            tracing::warn!(
                "session/cancel dropped: a threads agent cannot be cancelled, the turn runs to its end"
            );
        } else {
            tracing::debug!(
                method,
                "notification dropped: a threads agent has no equivalent"
            );
        }
        Ok(())
    }
}

/// The threads editor the real agent talks to; its calls go to the user's v1 client.
struct ThreadsClientSide {
    client: Peer,
    shared: Arc<Shared>,
}

#[async_trait]
impl Client for ThreadsClientSide {
    async fn stream_message_chunk(&self, p: t::StreamMessageChunkParams) -> Result<(), Error> {
        let t::MessageChunk::Text(text) = p.chunk else {
            tracing::warn!("a message chunk of an unknown type was dropped");
            return Ok(());
        };
        let update = v1::SessionNotification::new(
            session_of(&p.thread_id),
            v1::SessionUpdate::agent_message_text(text.chunk),
        );
        self.client.notify(v1::names::SESSION_UPDATE, &update).await
    }

    async fn read_text_file(
        &self,
        p: t::ReadTextFileParams,
    ) -> Result<t::ReadTextFileResponse, Error> {
        let mut request = v1::ReadTextFileRequest::new(session_of(&p.thread_id), p.path);
        (request.line, request.limit) = (line_of(p.line_offset), p.line_limit);
        let files = &self.shared.files;
        let read = (files.read_text_file(&self.client, t::names::READ_TEXT_FILE, request)).await?;
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
            .shared
            .files
            .local(t::names::READ_BINARY_FILE)?
            .read_bytes(&p.path, p.byte_offset, p.byte_limit)
            .await?;
        let content = base64::engine::general_purpose::STANDARD.encode(bytes);
        Ok(t::ReadBinaryFileResponse::new(t::FileVersion(0), content))
    }

    async fn stat(&self, p: t::StatParams) -> Result<t::StatResponse, Error> {
        let stat = self
            .shared
            .files
            .local(t::names::STAT)?
            .stat(&p.path)
            .await?;
        Ok(t::StatResponse::new(stat.exists, stat.is_directory))
    }

    async fn glob_search(&self, p: t::GlobSearchParams) -> Result<t::GlobSearchResponse, Error> {
        let matches = self
            .shared
            .files
            .local(t::names::GLOB_SEARCH)?
            .glob(&p.pattern)
            .await?;
        Ok(t::GlobSearchResponse::new(matches))
    }
}
