//! The native 0.0.9 agent: the [`Agent`] trait, the [`ClientHandle`] to the editor, and
//! [`serve`].

use std::sync::Arc;

use acp_rpc::{
    Config, Dialect, Handler, NotificationContext, Params, Peer, RawValue, RequestContext,
    RequestId, to_raw,
};
use acp_types::legacy::v0_0_9::*;
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::Error;
use crate::agent::not_found;

/// What a 0.0.9 agent implements: the four methods the editor calls. Requests run
/// concurrently, so `cancelSendMessage` is served while a `sendUserMessage` is running.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// `initialize`: the default answers this dialect's version (`"0.0.9"`, whatever the
    /// editor asked for, as the dialect's rule says: the editor decides whether it can go on)
    /// and `isAuthenticated: true`.
    async fn initialize(
        &self,
        params: InitializeParams,
        cx: &Context,
    ) -> Result<InitializeResponse, Error> {
        let _ = (params, cx);
        Ok(InitializeResponse {
            protocol_version: ProtocolVersion::current(),
            is_authenticated: true,
        })
    }

    /// `authenticate`: run the agent's own login flow; answer when it is done. The default
    /// has nothing to do.
    async fn authenticate(&self, cx: &Context) -> Result<(), Error> {
        let _ = cx;
        Ok(())
    }

    /// `sendUserMessage`: a user message. Stream the reply and tool calls through
    /// [`Context::client`] and return when the whole turn is over.
    async fn send_user_message(
        &self,
        params: SendUserMessageParams,
        cx: &Context,
    ) -> Result<(), Error> {
        let _ = (params, cx);
        not_found::<SendUserMessageParams, _>()
    }

    /// `cancelSendMessage`: stop the running turn (its `sendUserMessage` should then
    /// return). The default does nothing.
    async fn cancel_send_message(&self, cx: &Context) -> Result<(), Error> {
        let _ = cx;
        Ok(())
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

    /// `streamAssistantMessageChunk`: appends text or a thought to the reply on screen.
    pub async fn stream_assistant_message_chunk(
        &self,
        params: StreamAssistantMessageChunkParams,
    ) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }

    /// `streamAssistantMessageChunk` with text.
    pub async fn stream_text(&self, text: impl Into<String>) -> Result<(), Error> {
        self.stream_assistant_message_chunk(StreamAssistantMessageChunkParams {
            chunk: AssistantMessageChunk::Text(TextAssistantMessageChunk { text: text.into() }),
        })
        .await
    }

    /// `streamAssistantMessageChunk` with a thought.
    pub async fn stream_thought(&self, thought: impl Into<String>) -> Result<(), Error> {
        self.stream_assistant_message_chunk(StreamAssistantMessageChunkParams {
            chunk: AssistantMessageChunk::Thought(ThoughtAssistantMessageChunk {
                thought: thought.into(),
            }),
        })
        .await
    }

    /// `pushToolCall`: shows a tool call that needs no confirmation; the editor answers the
    /// id to use in [`ClientHandle::update_tool_call`].
    pub async fn push_tool_call(
        &self,
        params: PushToolCallParams,
    ) -> Result<PushToolCallResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `requestToolCallConfirmation`: shows a tool call and asks the user; the answer carries
    /// the outcome and the tool call's id.
    pub async fn request_tool_call_confirmation(
        &self,
        params: RequestToolCallConfirmationParams,
    ) -> Result<RequestToolCallConfirmationResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `updateToolCall`: new status and content (which replaces what was shown).
    pub async fn update_tool_call(&self, params: UpdateToolCallParams) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }

    /// `readTextFile`, with the editor's unsaved changes.
    pub async fn read_text_file(
        &self,
        params: ReadTextFileParams,
    ) -> Result<ReadTextFileResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `writeTextFile`.
    pub async fn write_text_file(&self, params: WriteTextFileParams) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }
}

/// A running 0.0.9 agent connection.
pub type Connection = crate::legacy::Connection<ClientHandle>;

/// Serves `agent` to a 0.0.9 editor over a reader/writer pair.
pub fn serve<A, R, W>(agent: A, reader: R, writer: W) -> Connection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(agent, reader, writer, Config::default())
}

/// [`serve`] with a custom [`Config`]; its dialect is always set to
/// [`Dialect::legacy_0_0_9`] (`params` omitted when empty, no notifications, ids from 0
/// unless [`Config::first_request_id`] says otherwise).
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
        Dialect::legacy_0_0_9(),
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
        // `authenticate` and `cancelSendMessage` carry no params; whatever comes is ignored,
        // as the dialect's peers did.
        match method {
            names::INITIALIZE => to_raw(&agent.initialize(params.parse_request()?, &cx).await?),
            names::AUTHENTICATE => {
                agent.authenticate(&cx).await?;
                to_raw(&AuthenticateResponse)
            }
            names::SEND_USER_MESSAGE => {
                agent
                    .send_user_message(params.parse_request()?, &cx)
                    .await?;
                to_raw(&SendUserMessageResponse)
            }
            names::CANCEL_SEND_MESSAGE => {
                agent.cancel_send_message(&cx).await?;
                to_raw(&CancelSendMessageResponse)
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
