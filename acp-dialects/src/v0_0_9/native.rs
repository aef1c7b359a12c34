//! The dialect's own two sides, for peers that speak exactly 0.0.9: the [`Agent`] trait an
//! agent implements and the [`ClientHandle`] it calls the editor with ([`serve`]), and the
//! [`Client`] trait an editor implements and the [`AgentHandle`] it calls the agent with
//! ([`connect`]).

use acp_rpc::{Config, Dialect, Error, ErrorCode, Params, Peer, RawValue, RequestContext, to_raw};
use acp_types::legacy::v0_0_9::*;
use async_trait::async_trait;

use crate::connection::{Serve, ToAgent, ToClient, not_found};
use crate::{Input, Output};

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
        Ok(InitializeResponse::new(ProtocolVersion::current(), true))
    }

    /// `authenticate`: run the agent's own login flow; answer when it is done. The default
    /// has nothing to do.
    async fn authenticate(&self, cx: &Context) -> Result<(), Error> {
        let _ = cx;
        Ok(())
    }

    /// `sendUserMessage`: a user message. Stream the reply and tool calls through
    /// [`crate::Context::client`] and return when the whole turn is over.
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

    /// `streamAssistantMessageChunk`: appends text or a thought to the reply on screen.
    pub async fn stream_assistant_message_chunk(
        &self,
        params: StreamAssistantMessageChunkParams,
    ) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }

    /// `streamAssistantMessageChunk` with text.
    pub async fn stream_text(&self, text: impl Into<String>) -> Result<(), Error> {
        let chunk = AssistantMessageChunk::Text(TextAssistantMessageChunk::new(text));
        self.stream_assistant_message_chunk(StreamAssistantMessageChunkParams::new(chunk))
            .await
    }

    /// `streamAssistantMessageChunk` with a thought.
    pub async fn stream_thought(&self, thought: impl Into<String>) -> Result<(), Error> {
        let chunk = AssistantMessageChunk::Thought(ThoughtAssistantMessageChunk::new(thought));
        self.stream_assistant_message_chunk(StreamAssistantMessageChunkParams::new(chunk))
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
pub type AgentConnection = crate::Connection<ClientHandle>;

/// Serves `agent` to a 0.0.9 editor over a reader/writer pair.
pub fn serve(agent: impl Agent, reader: impl Input, writer: impl Output) -> AgentConnection {
    serve_with(agent, reader, writer, Config::default())
}

/// [`serve`] with a custom [`Config`]; its dialect is always set to
/// [`Dialect::legacy_0_0_9`] (`params` omitted when empty, no notifications, ids from 0
/// unless [`Config::first_request_id`] says otherwise).
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
        Dialect::legacy_0_0_9(),
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
}

/// What a 0.0.9 editor implements: the methods the agent calls. `streamAssistantMessageChunk`
/// and `updateToolCall` default to accepting and ignoring what they get; the others default
/// to "method not found" (`-32601`). Requests are handled one at a time, in the order the
/// agent sent them.
#[async_trait]
pub trait Client: Send + Sync + 'static {
    /// `streamAssistantMessageChunk`: a chunk of the agent's reply (text or a thought).
    async fn stream_assistant_message_chunk(
        &self,
        params: StreamAssistantMessageChunkParams,
    ) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `requestToolCallConfirmation`: show the tool call, ask the user, and answer the
    /// outcome with the id you give the tool call (the agent echoes it in `updateToolCall`).
    async fn request_tool_call_confirmation(
        &self,
        params: RequestToolCallConfirmationParams,
    ) -> Result<RequestToolCallConfirmationResponse, Error> {
        let _ = params;
        not_found::<RequestToolCallConfirmationParams, _>()
    }

    /// `pushToolCall`: show a tool call and answer the id you give it.
    async fn push_tool_call(
        &self,
        params: PushToolCallParams,
    ) -> Result<PushToolCallResponse, Error> {
        let _ = params;
        not_found::<PushToolCallParams, _>()
    }

    /// `updateToolCall`: new status and content (which replaces what was shown).
    async fn update_tool_call(&self, params: UpdateToolCallParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `writeTextFile`.
    async fn write_text_file(&self, params: WriteTextFileParams) -> Result<(), Error> {
        let _ = params;
        not_found::<WriteTextFileParams, _>()
    }

    /// `readTextFile`, with the editor's unsaved changes.
    async fn read_text_file(
        &self,
        params: ReadTextFileParams,
    ) -> Result<ReadTextFileResponse, Error> {
        let _ = params;
        not_found::<ReadTextFileParams, _>()
    }
}

/// A cheap, cloneable, typed handle to the agent's methods.
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

    /// `initialize` with this dialect's version, `"0.0.9"`. Like the dialect's own editors,
    /// an answer with any other version is an error (`-32600`, saying which): 0.0.x peers
    /// speak only their exact version.
    pub async fn initialize(&self) -> Result<InitializeResponse, Error> {
        let params = InitializeParams::new(ProtocolVersion::current());
        let answer = self.peer.typed_request(&params).await?;
        check_version(answer)
    }

    /// `authenticate`: the agent runs its own login flow; resolves when it is done.
    pub async fn authenticate(&self) -> Result<(), Error> {
        self.peer
            .typed_request(&AuthenticateParams)
            .await
            .map(|_| ())
    }

    /// `sendUserMessage`: resolves when the agent's whole turn is over.
    pub async fn send_user_message(&self, params: SendUserMessageParams) -> Result<(), Error> {
        self.peer.typed_request(&params).await.map(|_| ())
    }

    /// `cancelSendMessage`: asks the agent to stop the running turn.
    pub async fn cancel_send_message(&self) -> Result<(), Error> {
        self.peer
            .typed_request(&CancelSendMessageParams)
            .await
            .map(|_| ())
    }
}

/// Accepts an `initialize` answer only for this dialect's exact version.
pub(crate) fn check_version(answer: InitializeResponse) -> Result<InitializeResponse, Error> {
    if answer.protocol_version.0 == PROTOCOL_VERSION {
        Ok(answer)
    } else {
        Err(Error::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "incompatible versions: the agent speaks {:?}, this client only {PROTOCOL_VERSION:?}",
                answer.protocol_version.0
            ),
        ))
    }
}

/// A running 0.0.9 connection to an agent.
pub type ClientConnection = crate::Connection<AgentHandle>;

/// Serves `client` to a 0.0.9 agent over its stdout (`reader`) and stdin (`writer`). Call
/// [`AgentHandle::initialize`] first.
pub fn connect(client: impl Client, reader: impl Input, writer: impl Output) -> ClientConnection {
    connect_with(client, reader, writer, Config::default())
}

/// [`connect`] with a custom [`Config`]; its dialect is always set to
/// [`Dialect::legacy_0_0_9`] (`params` omitted when empty, no notifications, ids from 0
/// unless [`Config::first_request_id`] says otherwise), and the agent's requests are always
/// handled one at a time in arrival order ([`Config::sequential_requests`]): the dialect
/// streams chunks and tool-call updates as requests, which agents send without waiting and
/// which must be shown in the order they were sent.
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
        Dialect::legacy_0_0_9(),
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
            names::STREAM_ASSISTANT_MESSAGE_CHUNK => {
                c.stream_assistant_message_chunk(params.parse_request()?)
                    .await?;
                to_raw(&StreamAssistantMessageChunkResponse)
            }
            names::REQUEST_TOOL_CALL_CONFIRMATION => to_raw(
                &c.request_tool_call_confirmation(params.parse_request()?)
                    .await?,
            ),
            names::PUSH_TOOL_CALL => to_raw(&c.push_tool_call(params.parse_request()?).await?),
            names::UPDATE_TOOL_CALL => {
                c.update_tool_call(params.parse_request()?).await?;
                to_raw(&UpdateToolCallResponse)
            }
            names::WRITE_TEXT_FILE => {
                c.write_text_file(params.parse_request()?).await?;
                to_raw(&WriteTextFileResponse)
            }
            names::READ_TEXT_FILE => to_raw(&c.read_text_file(params.parse_request()?).await?),
            _ => Err(Error::method_not_found(method)),
        }
    }
}
