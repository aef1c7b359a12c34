//! The dialect's own two sides, for peers that speak exactly probe: the [`Agent`] trait an
//! agent implements and the [`ClientHandle`] it calls the editor with ([`serve`]), and the
//! [`Client`] trait an editor implements and the [`AgentHandle`] it calls the agent with
//! ([`connect`]).
//!
//! Both sides use the dialect's framing ([`framing`]) and, unless the [`Config`] says
//! otherwise, its 30 second request timeout ([`DEFAULT_REQUEST_TIMEOUT`]).

use acp_rpc::{
    Config, Error, Handler, NotificationContext, Params, Peer, RawValue, RequestContext, to_raw,
};
use acp_types::NotificationMethod;
use acp_types::legacy::probe::*;
use async_trait::async_trait;

use crate::connection::{ToAgent, ToClient, not_found};
use crate::{Input, Output};

/// The probe wire: JSON-RPC 2.0 with `"jsonrpc"` required and written, notifications, and
/// requests numbered from 1 (as the dialect's own client does).
pub fn framing() -> acp_rpc::Dialect {
    acp_rpc::Dialect::default()
}

/// `config` with the dialect's request timeout when it sets none.
fn with_dialect_timeout(config: Config) -> Config {
    if config.default_timeout.is_some() {
        config
    } else {
        config.with_default_timeout(Some(DEFAULT_REQUEST_TIMEOUT))
    }
}

/// What a probe agent implements: the requests the editor sends. All default to "method
/// not found" (`-32601`). Requests run concurrently.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// `initialize`: the agent's version, identity and capabilities (its advertised tools
    /// among them).
    async fn initialize(
        &self,
        params: InitializeParams,
        cx: &Context,
    ) -> Result<InitializeResponse, Error> {
        let _ = (params, cx);
        not_found::<InitializeParams, _>()
    }

    /// `newSession`: a new session.
    async fn new_session(
        &self,
        params: NewSessionParams,
        cx: &Context,
    ) -> Result<NewSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<NewSessionParams, _>()
    }

    /// `loadSession`: a kept session and its history.
    async fn load_session(
        &self,
        params: LoadSessionParams,
        cx: &Context,
    ) -> Result<LoadSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<LoadSessionParams, _>()
    }

    /// `setSessionMode`: switch a session's mode (announce it with
    /// [`ClientHandle::session_updated`]).
    async fn set_session_mode(
        &self,
        params: SetSessionModeParams,
        cx: &Context,
    ) -> Result<SetSessionModeResponse, Error> {
        let _ = (params, cx);
        not_found::<SetSessionModeParams, _>()
    }

    /// `prompt`: the user's message. Stream the reply with [`ClientHandle::message_chunk`]
    /// and answer the whole of it when the turn is over.
    async fn prompt(&self, params: PromptParams, cx: &Context) -> Result<PromptResponse, Error> {
        let _ = (params, cx);
        not_found::<PromptParams, _>()
    }

    /// `cancel`: stop what runs in a session.
    async fn cancel(&self, params: CancelParams, cx: &Context) -> Result<CancelResponse, Error> {
        let _ = (params, cx);
        not_found::<CancelParams, _>()
    }
}

/// The context of one request the agent serves: [`crate::Context::client`] is the typed
/// handle to the editor.
pub type Context = crate::Context<ClientHandle>;

/// A cheap, cloneable, typed handle to the editor: its two file requests and the three
/// notifications it receives.
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

    /// `readTextFile`.
    pub async fn read_text_file(
        &self,
        params: ReadTextFileParams,
    ) -> Result<ReadTextFileResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `writeTextFile`.
    pub async fn write_text_file(
        &self,
        params: WriteTextFileParams,
    ) -> Result<WriteTextFileResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `toolCallProgress` (a notification).
    pub async fn tool_call_progress(&self, params: ToolCallProgressParams) -> Result<(), Error> {
        self.peer
            .notify(ToolCallProgressParams::METHOD, &params)
            .await
    }

    /// `messageChunk` (a notification).
    pub async fn message_chunk(&self, params: MessageChunkParams) -> Result<(), Error> {
        self.peer.notify(MessageChunkParams::METHOD, &params).await
    }

    /// `sessionUpdated` (a notification).
    pub async fn session_updated(&self, params: SessionUpdatedParams) -> Result<(), Error> {
        self.peer
            .notify(SessionUpdatedParams::METHOD, &params)
            .await
    }
}

/// A running probe agent connection.
pub type AgentConnection = crate::Connection<ClientHandle>;

/// Serves `agent` to a probe editor over a reader/writer pair.
pub fn serve(agent: impl Agent, reader: impl Input, writer: impl Output) -> AgentConnection {
    serve_with(agent, reader, writer, Config::default())
}

/// [`serve`] with a custom [`Config`]; its dialect framing is always [`framing`], and its
/// request timeout is the dialect's 30 seconds unless the config sets one.
pub fn serve_with(
    agent: impl Agent,
    reader: impl Input,
    writer: impl Output,
    config: Config,
) -> AgentConnection {
    AgentConnection::start_handler(
        reader,
        writer,
        Dispatch(agent),
        with_dialect_timeout(config),
        framing(),
        |peer| ClientHandle { peer },
    )
}

struct Dispatch<A>(A);

#[async_trait]
impl<A: Agent> Handler for Dispatch<A> {
    async fn handle_request(
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
            names::INITIALIZE => to_raw(&agent.initialize(params.parse_request()?, &cx).await?),
            names::NEW_SESSION => to_raw(&agent.new_session(params.parse_request()?, &cx).await?),
            names::LOAD_SESSION => to_raw(&agent.load_session(params.parse_request()?, &cx).await?),
            names::SET_SESSION_MODE => {
                to_raw(&agent.set_session_mode(params.parse_request()?, &cx).await?)
            }
            names::PROMPT => to_raw(&agent.prompt(params.parse_request()?, &cx).await?),
            names::CANCEL => to_raw(&agent.cancel(params.parse_request()?, &cx).await?),
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        Err(Error::method_not_found(method))
    }
}

/// What a probe editor implements: the agent's file requests (default "method not found",
/// `-32601`) and its three notifications (default: accepted and ignored). Notifications are
/// handled one at a time, in the order sent.
#[async_trait]
pub trait Client: Send + Sync + 'static {
    /// `readTextFile`.
    async fn read_text_file(
        &self,
        params: ReadTextFileParams,
    ) -> Result<ReadTextFileResponse, Error> {
        let _ = params;
        not_found::<ReadTextFileParams, _>()
    }

    /// `writeTextFile`.
    async fn write_text_file(
        &self,
        params: WriteTextFileParams,
    ) -> Result<WriteTextFileResponse, Error> {
        let _ = params;
        not_found::<WriteTextFileParams, _>()
    }

    /// `toolCallProgress`: a tool call's state. Must not await a request to the agent.
    async fn tool_call_progress(&self, params: ToolCallProgressParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `messageChunk`: a piece of the reply. Must not await a request to the agent.
    async fn message_chunk(&self, params: MessageChunkParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `sessionUpdated`: a session's new state. Must not await a request to the agent.
    async fn session_updated(&self, params: SessionUpdatedParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }
}

/// A cheap, cloneable, typed handle to the agent's requests.
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

    /// `initialize`.
    pub async fn initialize(&self, params: InitializeParams) -> Result<InitializeResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `newSession`.
    pub async fn new_session(&self, params: NewSessionParams) -> Result<NewSessionResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `loadSession`.
    pub async fn load_session(
        &self,
        params: LoadSessionParams,
    ) -> Result<LoadSessionResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `setSessionMode`.
    pub async fn set_session_mode(
        &self,
        params: SetSessionModeParams,
    ) -> Result<SetSessionModeResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `prompt`: resolves with the whole reply when the agent's turn is over.
    pub async fn prompt(&self, params: PromptParams) -> Result<PromptResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `cancel`.
    pub async fn cancel(&self, params: CancelParams) -> Result<CancelResponse, Error> {
        self.peer.typed_request(&params).await
    }
}

/// A running probe connection to an agent.
pub type ClientConnection = crate::Connection<AgentHandle>;

/// Serves `client` to a probe agent over its stdout (`reader`) and stdin (`writer`).
pub fn connect(client: impl Client, reader: impl Input, writer: impl Output) -> ClientConnection {
    connect_with(client, reader, writer, Config::default())
}

/// [`connect`] with a custom [`Config`]; its dialect framing is always [`framing`], and its
/// request timeout is the dialect's 30 seconds unless the config sets one.
pub fn connect_with(
    client: impl Client,
    reader: impl Input,
    writer: impl Output,
    config: Config,
) -> ClientConnection {
    ClientConnection::start_handler(
        reader,
        writer,
        AgentDispatch(client),
        with_dialect_timeout(config),
        framing(),
        |peer| AgentHandle { peer },
    )
}

struct AgentDispatch<C>(C);

#[async_trait]
impl<C: Client> Handler for AgentDispatch<C> {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let c = &self.0;
        match method {
            names::READ_TEXT_FILE => to_raw(&c.read_text_file(params.parse_request()?).await?),
            names::WRITE_TEXT_FILE => to_raw(&c.write_text_file(params.parse_request()?).await?),
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let c = &self.0;
        match method {
            names::TOOL_CALL_PROGRESS => c.tool_call_progress(params.parse()?).await,
            names::MESSAGE_CHUNK => c.message_chunk(params.parse()?).await,
            names::SESSION_UPDATED => c.session_updated(params.parse()?).await,
            _ => Err(Error::method_not_found(method)),
        }
    }
}
