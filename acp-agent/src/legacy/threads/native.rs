//! The native threads agent: the [`Agent`] trait, the [`ClientHandle`] to the editor, and
//! [`serve`].

use std::sync::Arc;

use acp_rpc::{
    Config, Dialect, Handler, NotificationContext, Params, Peer, RawValue, RequestContext,
    RequestId, to_raw,
};
use acp_types::legacy::threads::*;
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::Error;
use crate::agent::not_found;

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

/// The context of one incoming request.
#[derive(Clone, Debug)]
pub struct Context {
    client: ClientHandle,
    request_id: RequestId,
}

impl Context {
    /// The typed handle to the editor.
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }
}

/// A cheap, cloneable, typed handle to the editor's methods. Every call is a request (the
/// dialect has no notifications) and waits for the editor's answer.
#[derive(Clone, Debug)]
pub struct ClientHandle {
    peer: Peer,
}

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
        self.stream_message_chunk(StreamMessageChunkParams {
            thread_id: thread_id.clone(),
            chunk: MessageChunk::Text(TextChunk { chunk: text.into() }),
        })
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
pub type Connection = crate::legacy::Connection<ClientHandle>;

/// Serves `agent` to a threads editor over a reader/writer pair.
pub fn serve<A, R, W>(agent: A, reader: R, writer: W) -> Connection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(agent, reader, writer, Config::default())
}

/// [`serve`] with a custom [`Config`]; its dialect is always set to
/// [`Dialect::threads`] (no `jsonrpc` member, no notifications, ids from 0).
pub fn serve_with<A, R, W>(agent: A, reader: R, writer: W, config: Config) -> Connection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Connection::start(
        reader,
        writer,
        Dispatch(Arc::new(agent)),
        config,
        Dialect::threads(),
        |peer| ClientHandle { peer },
    )
}

struct Dispatch<A>(Arc<A>);

#[async_trait]
impl<A: Agent> Handler for Dispatch<A> {
    async fn handle_request(
        &self,
        rcx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let cx = Context {
            client: ClientHandle {
                peer: rcx.peer().clone(),
            },
            request_id: rcx.id().clone(),
        };
        let agent = &*self.0;
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
