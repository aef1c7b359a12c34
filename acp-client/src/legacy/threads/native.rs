//! The native threads editor side: the [`Client`] trait, the [`AgentHandle`] and
//! [`connect`].

use std::sync::Arc;

use acp_rpc::{
    Config, Dialect, Error, Handler, NotificationContext, Params, Peer, RawValue, RequestContext,
    to_raw,
};
use acp_types::legacy::threads::*;
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::legacy::support::not_found;

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
pub type Connection = crate::legacy::Connection<AgentHandle>;

/// Serves `client` to a threads agent over its stdout (`reader`) and stdin (`writer`).
pub fn connect<C, R, W>(client: C, reader: R, writer: W) -> Connection
where
    C: Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connect_with(client, reader, writer, Config::default())
}

/// [`connect`] with a custom [`Config`]; its dialect is always set to [`Dialect::threads`],
/// and the agent's requests are always handled one at a time in arrival order
/// ([`Config::sequential_requests`]): the dialect streams its reply as requests, which must
/// be shown in the order they were sent.
pub fn connect_with<C, R, W>(client: C, reader: R, writer: W, config: Config) -> Connection
where
    C: Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Connection::start(
        reader,
        writer,
        Dispatch(Arc::new(client)),
        config.with_sequential_requests(true),
        Dialect::threads(),
        |peer| AgentHandle { peer },
    )
}

struct Dispatch<C>(Arc<C>);

#[async_trait]
impl<C: Client> Handler for Dispatch<C> {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let c = &*self.0;
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

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        // The dialect has no notifications; an id-less message is logged and dropped.
        Err(Error::method_not_found(method))
    }
}
