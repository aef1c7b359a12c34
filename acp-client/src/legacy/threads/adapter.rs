//! The adapter that drives a threads agent with one v1 [`crate::Client`]: [`connect_v1`].
//!
//! The user's [`crate::ClientConnection`] runs on an in-memory pipe; [`V1AgentSide`] is the
//! v1 agent it talks to there, [`ThreadsClientSide`] the threads editor the real agent sees.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use acp_rpc::{
    Config, Error, ErrorCode, Handler, NotificationContext, Params, Peer, RawValue, RequestContext,
    to_raw,
};
use acp_types::legacy::threads as t;
use acp_types::v1;
use async_trait::async_trait;
use base64::Engine as _;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};

use super::native::{AgentHandle, Client, connect_with};
use crate::ClientConnection;
use crate::fs::SandboxedFs;
use crate::legacy::support::{pipe, tie};

/// How [`connect_v1`] serves what a v1 client has no method for.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct AdapterOptions {
    /// Serves the agent's `readBinaryFile`, `stat` and `globSearch` (which have no v1
    /// equivalent), and its `readTextFile` when the v1 client did not advertise
    /// `fs.readTextFile`. Without it those calls get `-32601`.
    pub fs: Option<SandboxedFs>,
    /// The `cwd` reported for every session in `session/list` (threads have none). Default:
    /// the first root of [`AdapterOptions::fs`], else empty.
    pub cwd: Option<PathBuf>,
}

impl AdapterOptions {
    /// Sets [`AdapterOptions::fs`].
    #[must_use]
    pub fn with_fs(mut self, fs: SandboxedFs) -> Self {
        self.fs = Some(fs);
        self
    }

    /// Sets [`AdapterOptions::cwd`].
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    fn session_cwd(&self) -> String {
        self.cwd
            .clone()
            .or_else(|| {
                self.fs
                    .as_ref()
                    .and_then(|fs| fs.roots().next().map(PathBuf::from))
            })
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Drives a threads agent (its stdout is `reader`, its stdin `writer`) with a v1 `client`;
/// the returned connection is an ordinary v1 [`ClientConnection`]. See the module docs for
/// the mapping.
pub fn connect_v1<C, R, W>(
    client: C,
    reader: R,
    writer: W,
    options: AdapterOptions,
) -> ClientConnection
where
    C: crate::Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connect_v1_with(client, reader, writer, Config::default(), options)
}

/// [`connect_v1`] with a custom [`Config`] for the threads wire (its dialect is always the
/// threads framing).
pub fn connect_v1_with<C, R, W>(
    client: C,
    reader: R,
    writer: W,
    config: Config,
    options: AdapterOptions,
) -> ClientConnection
where
    C: crate::Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let ((client_read, client_write), (bridge_read, bridge_write)) = pipe();
    let user = ClientConnection::new(client, client_read, client_write, Config::default());
    let shared = Arc::new(Shared {
        capabilities: OnceLock::new(),
        options,
    });
    let agent_slot: Arc<OnceLock<AgentHandle>> = Arc::default();
    let bridge = acp_rpc::Connection::new(
        bridge_read,
        bridge_write,
        V1AgentSide {
            agent: agent_slot.clone(),
            shared: shared.clone(),
        },
        Config::default(),
    );
    let outer = connect_with(
        ThreadsClientSide {
            client: bridge.peer().clone(),
            shared,
        },
        reader,
        writer,
        config,
    );
    let _ = agent_slot.set(outer.agent().clone());
    tie(outer.agent().peer(), bridge.peer());
    tie(bridge.peer(), user.peer());
    user
}

struct Shared {
    /// What the v1 client advertised in `initialize`.
    capabilities: OnceLock<v1::ClientCapabilities>,
    options: AdapterOptions,
}

/// `-32601` for a call the other side cannot serve, saying why.
fn unsupported(method: &str, why: &str) -> Error {
    Error::new(ErrorCode::METHOD_NOT_FOUND, format!("{method}: {why}"))
        .with_data(json!({ "method": method, "dialect": "threads" }))
}

fn thread_of(id: &v1::SessionId) -> t::ThreadId {
    t::ThreadId(id.0.clone())
}

/// The v1 prompt as one threads message: text blocks become text chunks and resource links
/// become `@<path>` mentions; anything else is refused, naming the block.
fn message_of(prompt: &[v1::ContentBlock]) -> Result<t::Message, Error> {
    let mut chunks = Vec::with_capacity(prompt.len());
    for (i, block) in prompt.iter().enumerate() {
        let text = match block {
            v1::ContentBlock::Text(text) => text.text.clone(),
            v1::ContentBlock::ResourceLink(link) => {
                format!("@{}", link.uri.strip_prefix("file://").unwrap_or(&link.uri))
            }
            _ => {
                return Err(Error::invalid_params(format!(
                    "prompt[{i}]: a threads agent takes text (and resource links, sent as @mentions) only"
                ))
                .with_data(json!({ "field": format!("prompt[{i}]") })));
            }
        };
        chunks.push(t::MessageChunk::Text(t::TextChunk { chunk: text }));
    }
    Ok(t::Message {
        role: t::Role::User,
        chunks,
    })
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
            let mut call =
                v1::ToolCall::new(format!("read-{index}"), format!("Read {}", read.path));
            call.kind = v1::ToolKind::Read;
            call.status = v1::ToolCallStatus::Completed;
            call.locations = vec![v1::ToolCallLocation {
                path: read.path.clone(),
                line: None,
                meta: None,
            }];
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
        self.agent
            .get()
            .ok_or_else(|| Error::internal_error("the threads connection is not ready"))
    }

    fn initialize(&self, p: v1::InitializeRequest) -> Result<Box<RawValue>, Error> {
        let _ = self.shared.capabilities.set(p.client_capabilities);
        let capabilities = v1::AgentCapabilities::new()
            .load_session(true)
            .session_capabilities(
                v1::SessionCapabilities::new().list(v1::SessionListCapabilities::new()),
            );
        to_raw(
            &v1::InitializeResponse::new(v1::ProtocolVersion::negotiate(
                p.protocol_version,
                &[v1::ProtocolVersion::LATEST],
            ))
            .agent_capabilities(capabilities),
        )
    }

    async fn load(&self, peer: &Peer, p: v1::LoadSessionRequest) -> Result<Box<RawValue>, Error> {
        let agent = self.agent()?;
        let thread_id = thread_of(&p.session_id);
        agent
            .open_thread(t::OpenThreadParams {
                thread_id: thread_id.clone(),
            })
            .await?;
        let history = agent
            .get_thread_entries(t::GetThreadEntriesParams { thread_id })
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
        let cwd = self.shared.options.session_cwd();
        let sessions = threads
            .threads
            .into_iter()
            .map(|m| v1::SessionInfo {
                session_id: v1::SessionId(m.id.0),
                cwd: cwd.clone(),
                additional_directories: Vec::new(),
                title: Some(m.title),
                updated_at: Some(m.modified_at),
                meta: None,
            })
            .collect();
        to_raw(&v1::ListSessionsResponse {
            sessions,
            next_cursor: None,
            meta: None,
        })
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
                to_raw(&v1::NewSessionResponse {
                    session_id: v1::SessionId(created.thread_id.0),
                    modes: None,
                    config_options: None,
                    meta: None,
                })
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
                    .send_message(t::SendMessageParams {
                        thread_id: thread_of(&p.session_id),
                        message,
                    })
                    .await?;
                // Chunks the agent sent before its answer are passed on before the turn ends.
                agent.peer().received_requests_handled().await;
                to_raw(&v1::PromptResponse::new(v1::StopReason::EndTurn))
            }
            _ => Err(unsupported(method, "a threads agent has no such method")),
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

impl ThreadsClientSide {
    fn fs(&self, method: &str) -> Result<&SandboxedFs, Error> {
        self.shared.options.fs.as_ref().ok_or_else(|| {
            unsupported(
                method,
                "v1 has no such method and no file system was configured (AdapterOptions::with_fs)",
            )
        })
    }

    fn client_reads_files(&self) -> bool {
        self.shared
            .capabilities
            .get()
            .is_some_and(|c| c.fs.read_text_file)
    }
}

#[async_trait]
impl Client for ThreadsClientSide {
    async fn stream_message_chunk(&self, p: t::StreamMessageChunkParams) -> Result<(), Error> {
        let t::MessageChunk::Text(text) = p.chunk else {
            tracing::warn!("a message chunk of an unknown type was dropped");
            return Ok(());
        };
        let update = v1::SessionNotification::new(
            v1::SessionId(p.thread_id.0),
            v1::SessionUpdate::agent_message_text(text.chunk),
        );
        self.client.notify(v1::names::SESSION_UPDATE, &update).await
    }

    async fn read_text_file(
        &self,
        p: t::ReadTextFileParams,
    ) -> Result<t::ReadTextFileResponse, Error> {
        let request = v1::ReadTextFileRequest {
            session_id: v1::SessionId(p.thread_id.0),
            path: p.path,
            // threads line offsets count from 0, v1 lines from 1.
            line: p.line_offset.map(|l| l.saturating_add(1)),
            limit: p.line_limit,
            meta: None,
        };
        let read = if self.client_reads_files() {
            self.client.typed_request(&request).await?
        } else {
            self.fs(t::names::READ_TEXT_FILE)?
                .read_text_file(request)
                .await?
        };
        Ok(t::ReadTextFileResponse {
            version: t::FileVersion(0),
            content: read.content,
        })
    }

    async fn read_binary_file(
        &self,
        p: t::ReadBinaryFileParams,
    ) -> Result<t::ReadBinaryFileResponse, Error> {
        let bytes = self
            .fs(t::names::READ_BINARY_FILE)?
            .read_bytes(&p.path, p.byte_offset, p.byte_limit)
            .await?;
        Ok(t::ReadBinaryFileResponse {
            version: t::FileVersion(0),
            content: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    async fn stat(&self, p: t::StatParams) -> Result<t::StatResponse, Error> {
        let stat = self.fs(t::names::STAT)?.stat(&p.path).await?;
        Ok(t::StatResponse {
            exists: stat.exists,
            is_directory: stat.is_directory,
        })
    }

    async fn glob_search(&self, p: t::GlobSearchParams) -> Result<t::GlobSearchResponse, Error> {
        let matches = self.fs(t::names::GLOB_SEARCH)?.glob(&p.pattern).await?;
        Ok(t::GlobSearchResponse { matches })
    }
}
