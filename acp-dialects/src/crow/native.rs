//! The dialect's own two sides, for peers that speak exactly crow: the [`Agent`] trait an
//! agent implements and the [`ClientHandle`] it calls the editor with ([`serve`]), and the
//! [`Client`] trait an editor implements and the [`AgentHandle`] it calls the agent with
//! ([`connect`]).
//!
//! Both sides accept either spelling of a session id (`session_id` or `sessionId`) on
//! input, whichever the member is written as on output ([`respelled`]).

use acp_rpc::{
    Config, Error, Handler, NotificationContext, Params, Peer, RawValue, RequestContext,
    deserialize_params, to_raw,
};
use acp_types::legacy::crow::*;
use acp_types::{NotificationMethod, RequestMethod};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::connection::{ToAgent, ToClient, not_found};
use crate::{Input, Output};

/// The crow wire: JSON-RPC 2.0, as v1 frames it.
pub fn framing() -> acp_rpc::Framing {
    acp_rpc::Framing::default()
}

/// The two spellings of a session id the seed's peers use.
const SPELLINGS: [&str; 2] = ["session_id", "sessionId"];

/// Reads a JSON object as `T`, whose session id member is spelled `canonical`: the other
/// spelling is accepted in its place. `-32602` names the field, as any params error.
pub fn respelled<T: DeserializeOwned>(mut value: Value, canonical: &str) -> Result<T, Error> {
    if let Value::Object(members) = &mut value
        && !members.contains_key(canonical)
    {
        let other = SPELLINGS
            .iter()
            .find(|s| **s != canonical && members.contains_key(**s));
        if let Some(id) = other.and_then(|o| members.remove(*o)) {
            members.insert(canonical.to_string(), id);
        }
    }
    deserialize_params(&value.to_string())
}

/// [`respelled`] for incoming params. Params that name `canonical` need no respelling, and
/// are read straight into `T` (every streamed update of a crow agent that spells it our
/// way); anything else, or what does not read that way, takes the respelling path.
fn params_respelled<T: DeserializeOwned>(params: &Params, canonical: &str) -> Result<T, Error> {
    let text = params.raw().map_or("null", |raw| raw.get());
    let named = text.match_indices(canonical).any(|(at, _)| {
        text[..at].ends_with('"') && text[at + canonical.len()..].starts_with('"')
    });
    if named && let Ok(value) = serde_json::from_str(text)
    {
        return Ok(value);
    }
    respelled(params.parse::<Value>()?, canonical)
}

/// Sends a request whose answer carries a session id spelled `canonical` (or the other way).
async fn request_respelled<P: RequestMethod>(
    peer: &Peer,
    params: &P,
    canonical: &str,
) -> Result<P::Response, Error> {
    let answer: Value = peer.request(P::METHOD, params).await?;
    let answer = if answer.is_null() {
        Value::Object(Default::default())
    } else {
        answer
    };
    respelled(answer, canonical).map_err(|e| {
        Error::internal_error(format!(
            "response to {} did not deserialize: {}",
            P::METHOD,
            e.message
        ))
    })
}

/// What a crow agent implements: the editor's requests (default "method not found",
/// `-32601`) and its `permission_response` (default: ignored). Requests run concurrently.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// `initialize`.
    async fn initialize(
        &self,
        params: InitializeParams,
        cx: &Context,
    ) -> Result<InitializeResponse, Error> {
        let _ = (params, cx);
        not_found::<InitializeParams, _>()
    }

    /// `session/new`.
    async fn session_new(
        &self,
        params: NewSessionParams,
        cx: &Context,
    ) -> Result<NewSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<NewSessionParams, _>()
    }

    /// `session/load`: replay the history with [`ClientHandle::session_update`] before
    /// answering.
    async fn session_load(
        &self,
        params: LoadSessionParams,
        cx: &Context,
    ) -> Result<LoadSessionResponse, Error> {
        let _ = (params, cx);
        not_found::<LoadSessionParams, _>()
    }

    /// `session/prompt`: stream with [`ClientHandle::session_update`], answer the stop
    /// reason.
    async fn session_prompt(
        &self,
        params: PromptParams,
        cx: &Context,
    ) -> Result<PromptResponse, Error> {
        let _ = (params, cx);
        not_found::<PromptParams, _>()
    }

    /// `cancel`.
    async fn cancel(&self, params: CancelParams, cx: &Context) -> Result<CancelResponse, Error> {
        let _ = (params, cx);
        not_found::<CancelParams, _>()
    }

    /// `permission_response` (a notification): the editor's answer to a permission
    /// request. Must not await a request to the editor.
    async fn permission_response(&self, params: PermissionResponseParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }
}

/// The context of one request the agent serves.
pub type Context = crate::Context<ClientHandle>;

/// A cheap, cloneable, typed handle to the editor: its one notification.
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

    /// `session/update` (a notification).
    ///
    /// Not an `async fn`: the params are handed to the engine when it is called, so the
    /// returned future holds the queued message only (a translation boxes one per update).
    pub fn session_update(
        &self,
        params: SessionUpdateParams,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.peer.notify_value(SessionUpdateParams::METHOD, params)
    }
}

/// A running crow agent connection.
pub type AgentConnection = crate::Connection<ClientHandle>;

/// Serves `agent` to a crow editor over a reader/writer pair.
pub fn serve(agent: impl Agent, reader: impl Input, writer: impl Output) -> AgentConnection {
    serve_with(agent, reader, writer, Config::default())
}

/// [`serve`] with a custom [`Config`]; its dialect framing is always [`framing`].
pub fn serve_with(
    agent: impl Agent,
    reader: impl Input,
    writer: impl Output,
    config: Config,
) -> AgentConnection {
    AgentConnection::start((reader, writer), Dispatch(agent), config, framing(), |peer| {
        ClientHandle { peer }
    })
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
            names::SESSION_NEW => to_raw(&agent.session_new(params.parse_request()?, &cx).await?),
            names::SESSION_LOAD => to_raw(
                &agent
                    .session_load(params_respelled(&params, "session_id")?, &cx)
                    .await?,
            ),
            names::SESSION_PROMPT => to_raw(
                &agent
                    .session_prompt(params_respelled(&params, "session_id")?, &cx)
                    .await?,
            ),
            names::CANCEL => to_raw(
                &agent
                    .cancel(params_respelled(&params, "session_id")?, &cx)
                    .await?,
            ),
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        match method {
            names::PERMISSION_RESPONSE => {
                self.0
                    .permission_response(params_respelled(&params, "session_id")?)
                    .await
            }
            _ => Err(Error::method_not_found(method)),
        }
    }
}

/// What a crow editor implements: the agent's `session/update` notifications (default:
/// ignored), handled one at a time in the order sent.
#[async_trait]
pub trait Client: Send + Sync + 'static {
    /// `session/update`. Must not await a request to the agent.
    async fn session_update(&self, params: SessionUpdateParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }
}

/// A cheap, cloneable, typed handle to the agent.
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

    /// `session/new` (the answer's `sessionId` may be spelled `session_id`).
    pub async fn session_new(&self, params: NewSessionParams) -> Result<NewSessionResponse, Error> {
        request_respelled(&self.peer, &params, "sessionId").await
    }

    /// `session/load`: resolves after the replayed history.
    pub async fn session_load(
        &self,
        params: LoadSessionParams,
    ) -> Result<LoadSessionResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `session/prompt`: resolves with the stop reason when the turn is over.
    pub async fn session_prompt(&self, params: PromptParams) -> Result<PromptResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `cancel`.
    pub async fn cancel(&self, params: CancelParams) -> Result<CancelResponse, Error> {
        self.peer.typed_request(&params).await
    }

    /// `permission_response` (a notification).
    pub async fn permission_response(&self, params: PermissionResponseParams) -> Result<(), Error> {
        self.peer
            .notify(PermissionResponseParams::METHOD, &params)
            .await
    }
}

/// A running crow connection to an agent.
pub type ClientConnection = crate::Connection<AgentHandle>;

/// Serves `client` to a crow agent over its stdout (`reader`) and stdin (`writer`).
pub fn connect(client: impl Client, reader: impl Input, writer: impl Output) -> ClientConnection {
    connect_with(client, reader, writer, Config::default())
}

/// [`connect`] with a custom [`Config`]; its dialect framing is always [`framing`].
pub fn connect_with(
    client: impl Client,
    reader: impl Input,
    writer: impl Output,
    config: Config,
) -> ClientConnection {
    ClientConnection::start(
        (reader, writer),
        AgentDispatch(client),
        config,
        framing(),
        |peer| AgentHandle { peer },
    )
}

struct AgentDispatch<C>(C);

#[async_trait]
impl<C: Client> Handler for AgentDispatch<C> {
    /// The agent's requests wait for the notifications it sent before them (acp-rpc's
    /// ordering guarantee, as acp-client asks for it).
    fn waits_for_earlier_notifications(&self, _method: &str) -> bool {
        true
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        match method {
            names::SESSION_UPDATE => {
                self.0
                    .session_update(params_respelled(&params, "sessionId")?)
                    .await
            }
            _ => Err(Error::method_not_found(method)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn either_spelling_of_a_session_id_is_read() {
        let a: CancelParams = respelled(json!({"session_id": "s"}), "session_id").unwrap();
        let b: CancelParams = respelled(json!({"sessionId": "s"}), "session_id").unwrap();
        assert_eq!(a, b);
        let e = respelled::<CancelParams>(json!({"id": "s"}), "session_id").unwrap_err();
        assert_eq!(e.code, acp_rpc::ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn incoming_params_are_read_directly_when_they_name_the_key_and_respelled_otherwise() {
        let params =
            |text: &str| Params::new(Some(RawValue::from_string(text.to_string()).unwrap()));
        let read = |text: &str| params_respelled::<CancelParams>(&params(text), "session_id");
        let direct = read(r#"{"session_id":"s"}"#).unwrap();
        assert_eq!(direct, read(r#"{"sessionId":"s"}"#).unwrap());
        // The key's name as a value, not as a key: the direct read fails, the respelling
        // reads it.
        let named_in_a_value = read(r#"{"sessionId":"session_id"}"#).unwrap();
        let expected = respelled::<CancelParams>(json!({"session_id": "session_id"}), "session_id");
        assert_eq!(named_in_a_value, expected.unwrap());
        assert_eq!(
            read(r#"{"id":"s"}"#).unwrap_err().code,
            acp_rpc::ErrorCode::INVALID_PARAMS
        );
    }
}
