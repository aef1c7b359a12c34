//! The dialect's own two sides, for peers that speak exactly threads: the [`Agent`] trait an
//! agent implements and the [`ClientHandle`] it calls the editor with ([`serve`]), and the
//! [`Client`] trait an editor implements and the [`AgentHandle`] it calls the agent with
//! ([`connect`]).

use acp_rpc::{Config, Dialect, Error, Params, Peer, RawValue, RequestContext, to_raw};
use acp_types::legacy::threads::*;
use async_trait::async_trait;

use crate::connection::{Serve, ToAgent, ToClient, not_found};
use crate::{Input, Output};

/// What a threads agent implements: the five thread methods the editor calls. All of them
/// default to "method not found" (`-32601`). Requests run concurrently.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// `getThreads`: every thread the agent keeps.
    async fn get_threads(&self, cx: &Context) -> Result<GetThreadsResponse, Error> {
        let _ = cx;
        not_found::<GetThreadsParams, _>()
    }

    /// `createThread`: a new, empty thread.
    async fn create_thread(&self, cx: &Context) -> Result<CreateThreadResponse, Error> {
        let _ = cx;
        not_found::<CreateThreadParams, _>()
    }

    /// `openThread`: make a thread the current one (an unknown thread is an error).
    async fn open_thread(&self, params: OpenThreadParams, cx: &Context) -> Result<(), Error> {
        let _ = (params, cx);
        not_found::<OpenThreadParams, _>()
    }

    /// `getThreadEntries`: a thread's history, oldest first.
    async fn get_thread_entries(
        &self,
        params: GetThreadEntriesParams,
        cx: &Context,
    ) -> Result<GetThreadEntriesResponse, Error> {
        let _ = (params, cx);
        not_found::<GetThreadEntriesParams, _>()
    }

    /// `sendMessage`: a user message. Stream the reply with
    /// [`ClientHandle::stream_message_chunk`] and return when the turn is over.
    async fn send_message(&self, params: SendMessageParams, cx: &Context) -> Result<(), Error> {
        let _ = (params, cx);
        not_found::<SendMessageParams, _>()
    }
}

/// The context of one request the agent serves: [`crate::Context::client`] is the typed
/// handle to the editor.
pub type Context = crate::Context<ClientHandle>;

/// A cheap, cloneable, typed handle to the editor's methods. Every call is a request (the
/// dialect has no notifications) and waits for the editor's answer.
#[derive(Clone, Debug)]
pub struct ClientHandle {
    peer: Peer,
}

impl ToClient for ClientHandle {}

impl ClientHandle {
    /// The underlying JSON-RPC peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// `streamMessageChunk`: appends a chunk to the reply on screen.
    pub async fn stream_message_chunk(
        &self,
        params: StreamMessageChunkParams,
    ) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }

    /// `streamMessageChunk` with a text chunk.
    pub async fn stream_text(
        &self,
        thread_id: &ThreadId,
        text: impl Into<String>,
    ) -> Result<(), Error> {
        let chunk = MessageChunk::text(text);
        self.stream_message_chunk(StreamMessageChunkParams::new(thread_id.clone(), chunk))
            .await
    }

    /// `readTextFile`.
    pub async fn read_text_file(
        &self,
        params: ReadTextFileParams,
    ) -> Result<ReadTextFileResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `readBinaryFile` (the content comes back base64-encoded).
    pub async fn read_binary_file(
        &self,
        params: ReadBinaryFileParams,
    ) -> Result<ReadBinaryFileResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `stat`.
    pub async fn stat(&self, params: StatParams) -> Result<StatResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `globSearch`.
    pub async fn glob_search(&self, params: GlobSearchParams) -> Result<GlobSearchResponse, Error> {
        self.peer.typed_request(&params).await
    }
}

/// A running threads agent connection.
pub type AgentConnection = crate::Connection<ClientHandle>;

/// Serves `agent` to a threads editor over a reader/writer pair.
pub fn serve(agent: impl Agent, reader: impl Input, writer: impl Output) -> AgentConnection {
    serve_with(agent, reader, writer, Config::default())
}

/// [`serve`] with a custom [`Config`]; its dialect is always set to
/// [`Dialect::threads`] (no `jsonrpc` member, no notifications, ids from 0).
pub fn serve_with(
    agent: impl Agent,
    reader: impl Input,
    writer: impl Output,
    config: Config,
) -> AgentConnection {
    AgentConnection::start(
        reader,
        writer,
        Dispatch(agent),
        config,
        Dialect::threads(),
        |peer| ClientHandle { peer },
    )
}

struct Dispatch<A>(A);

#[async_trait]
impl<A: Agent> Serve for Dispatch<A> {
    async fn request(
        &self,
        rcx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let cx = Context::new(
            ClientHandle {
                peer: rcx.peer().clone(),
            },
            rcx.id().clone(),
        );
        let agent = &self.0;
        match method {
            names::GET_THREADS => {
                params.parse_request::<GetThreadsParams>()?;
                to_raw(&agent.get_threads(&cx).await?)
            }
            names::CREATE_THREAD => {
                params.parse_request::<CreateThreadParams>()?;
                to_raw(&agent.create_thread(&cx).await?)
            }
            names::OPEN_THREAD => {
                agent.open_thread(params.parse_request()?, &cx).await?;
                to_raw(&OpenThreadResponse)
            }
            names::GET_THREAD_ENTRIES => to_raw(
                &agent
                    .get_thread_entries(params.parse_request()?, &cx)
                    .await?,
            ),
            names::SEND_MESSAGE => {
                agent.send_message(params.parse_request()?, &cx).await?;
                to_raw(&SendMessageResponse)
            }
            _ => Err(Error::method_not_found(method)),
        }
    }
}

/// What a threads editor implements: the methods the agent calls. `streamMessageChunk`
/// defaults to accepting and ignoring the chunk; the file methods default to "method not
/// found" (`-32601`). Requests are handled one at a time, in the order the agent sent them.
#[async_trait]
pub trait Client: Send + Sync + 'static {
    /// `streamMessageChunk`: a chunk of the agent's reply.
    async fn stream_message_chunk(&self, params: StreamMessageChunkParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `readTextFile` (`lineOffset` counts from 0).
    async fn read_text_file(
        &self,
        params: ReadTextFileParams,
    ) -> Result<ReadTextFileResponse, Error> {
        let _ = params;
        not_found::<ReadTextFileParams, _>()
    }

    /// `readBinaryFile`: answer the bytes in standard base64.
    async fn read_binary_file(
        &self,
        params: ReadBinaryFileParams,
    ) -> Result<ReadBinaryFileResponse, Error> {
        let _ = params;
        not_found::<ReadBinaryFileParams, _>()
    }

    /// `stat`.
    async fn stat(&self, params: StatParams) -> Result<StatResponse, Error> {
        let _ = params;
        not_found::<StatParams, _>()
    }

    /// `globSearch`.
    async fn glob_search(&self, params: GlobSearchParams) -> Result<GlobSearchResponse, Error> {
        let _ = params;
        not_found::<GlobSearchParams, _>()
    }
}

/// A cheap, cloneable, typed handle to the agent's thread methods.
#[derive(Clone, Debug)]
pub struct AgentHandle {
    peer: Peer,
}

impl ToAgent for AgentHandle {}

impl AgentHandle {
    /// The underlying JSON-RPC peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// `getThreads`.
    pub async fn get_threads(&self) -> Result<GetThreadsResponse, Error> {
        self.peer.typed_request(&GetThreadsParams).await
    }

    /// `createThread`.
    pub async fn create_thread(&self) -> Result<CreateThreadResponse, Error> {
        self.peer.typed_request(&CreateThreadParams).await
    }

    /// `openThread`.
    pub async fn open_thread(&self, params: OpenThreadParams) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }

    /// `getThreadEntries`.
    pub async fn get_thread_entries(
        &self,
        params: GetThreadEntriesParams,
    ) -> Result<GetThreadEntriesResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `sendMessage`: resolves when the agent's turn is over.
    pub async fn send_message(&self, params: SendMessageParams) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }
}

/// A running threads connection to an agent.
pub type ClientConnection = crate::Connection<AgentHandle>;

/// Serves `client` to a threads agent over its stdout (`reader`) and stdin (`writer`).
pub fn connect(client: impl Client, reader: impl Input, writer: impl Output) -> ClientConnection {
    connect_with(client, reader, writer, Config::default())
}

/// [`connect`] with a custom [`Config`]; its dialect is always set to [`Dialect::threads`],
/// and the agent's requests are always handled one at a time in arrival order
/// ([`Config::sequential_requests`]): the dialect streams its reply as requests, which must
/// be shown in the order they were sent.
pub fn connect_with(
    client: impl Client,
    reader: impl Input,
    writer: impl Output,
    config: Config,
) -> ClientConnection {
    ClientConnection::start(
        reader,
        writer,
        AgentDispatch(client),
        config.with_sequential_requests(true),
        Dialect::threads(),
        |peer| AgentHandle { peer },
    )
}

struct AgentDispatch<C>(C);

#[async_trait]
impl<C: Client> Serve for AgentDispatch<C> {
    async fn request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let c = &self.0;
        match method {
            names::STREAM_MESSAGE_CHUNK => {
                c.stream_message_chunk(params.parse_request()?).await?;
                to_raw(&StreamMessageChunkResponse)
            }
            names::READ_TEXT_FILE => to_raw(&c.read_text_file(params.parse_request()?).await?),
            names::READ_BINARY_FILE => to_raw(&c.read_binary_file(params.parse_request()?).await?),
            names::STAT => to_raw(&c.stat(params.parse_request()?).await?),
            names::GLOB_SEARCH => to_raw(&c.glob_search(params.parse_request()?).await?),
            _ => Err(Error::method_not_found(method)),
        }
    }
}
