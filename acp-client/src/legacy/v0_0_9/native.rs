//! The native 0.0.9 editor side: the [`Client`] trait, the [`AgentHandle`] and [`connect`].

use std::sync::Arc;

use acp_rpc::{
    Config, Dialect, Error, ErrorCode, Handler, NotificationContext, Params, Peer, RawValue,
    RequestContext, to_raw,
};
use acp_types::legacy::v0_0_9::*;
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::legacy::support::not_found;

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

impl AgentHandle {
    /// The underlying JSON-RPC peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// `initialize` with this dialect's version, `"0.0.9"`. Like the dialect's own editors,
    /// an answer with any other version is an error (`-32600`, saying which): 0.0.x peers
    /// speak only their exact version.
    pub async fn initialize(&self) -> Result<InitializeResponse, Error> {
        let answer = self
            .peer
            .typed_request(&InitializeParams {
                protocol_version: ProtocolVersion::current(),
            })
            .await?;
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
pub type Connection = crate::legacy::Connection<AgentHandle>;

/// Serves `client` to a 0.0.9 agent over its stdout (`reader`) and stdin (`writer`). Call
/// [`AgentHandle::initialize`] first.
pub fn connect<C, R, W>(client: C, reader: R, writer: W) -> Connection
where
    C: Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connect_with(client, reader, writer, Config::default())
}

/// [`connect`] with a custom [`Config`]; its dialect is always set to
/// [`Dialect::legacy_0_0_9`] (`params` omitted when empty, no notifications, ids from 0
/// unless [`Config::first_request_id`] says otherwise), and the agent's requests are always
/// handled one at a time in arrival order ([`Config::sequential_requests`]): the dialect
/// streams chunks and tool-call updates as requests, which agents send without waiting and
/// which must be shown in the order they were sent.
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
        Dialect::legacy_0_0_9(),
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
