//! The `Client` trait: what an agent may ask of the client (v1 client methods), and the
//! dispatcher that turns incoming JSON-RPC traffic into calls on it.

use std::sync::Arc;

use acp_rpc::{
    Error, Handler, NotificationContext, Params, RawValue, Reply, RequestContext,
    StartedNotification,
};
use acp_types::v1::{
    CompleteElicitationNotification, CreateElicitationRequest, CreateElicitationResponse,
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse, names,
};
use acp_types::{NotificationMethod, RequestMethod};
use async_trait::async_trait;
use serde_json::Value;

use crate::stream::Subscribers;

/// The client side of ACP v1: one method per request or notification an agent sends.
///
/// Every request method defaults to "method not found" (`-32601`); the notifications
/// (`session_update`, `complete_elicitation`, `ext_notification`) default to ignoring the
/// message. Implement what you advertise in your `clientCapabilities`; the
/// [`crate::fs::SandboxedFs`] and [`crate::terminal::Terminals`] building blocks serve the
/// fs and terminal methods.
///
/// Notification methods run one at a time in arrival order and must not await a request to
/// the agent (spawn a task for that); request methods run concurrently, each started only
/// once every notification the agent sent before it has been handled (so a permission
/// question never reaches you before the `session/update` that announced its tool call).
#[async_trait]
pub trait Client: Send + Sync + 'static {
    /// `session/request_permission`: ask the user to pick one of the options.
    async fn request_permission(
        &self,
        params: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::SESSION_REQUEST_PERMISSION))
    }

    /// `fs/read_text_file`.
    async fn read_text_file(
        &self,
        params: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::FS_READ_TEXT_FILE))
    }

    /// `fs/write_text_file`.
    async fn write_text_file(
        &self,
        params: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::FS_WRITE_TEXT_FILE))
    }

    /// Whether to run a `terminal/create`: called by [`crate::terminal::Terminals::create`]
    /// with exactly what would run (command, arguments, working directory, environment,
    /// output limit) after the client's own limits passed. Ask the user here.
    ///
    /// Default: refuse, so a client runs nothing an application did not allow.
    #[cfg(feature = "process")]
    async fn approve_terminal(
        &self,
        request: &crate::terminal::TerminalRequest,
    ) -> crate::terminal::TerminalDecision {
        let _ = request;
        crate::terminal::TerminalDecision::deny(
            "this client runs no terminal command unless the application allows it",
        )
    }

    /// `terminal/create`.
    async fn create_terminal(
        &self,
        params: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::TERMINAL_CREATE))
    }

    /// `terminal/output`.
    async fn terminal_output(
        &self,
        params: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::TERMINAL_OUTPUT))
    }

    /// `terminal/release`.
    async fn release_terminal(
        &self,
        params: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::TERMINAL_RELEASE))
    }

    /// `terminal/wait_for_exit`.
    async fn wait_for_terminal_exit(
        &self,
        params: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::TERMINAL_WAIT_FOR_EXIT))
    }

    /// `terminal/kill`.
    async fn kill_terminal(
        &self,
        params: KillTerminalRequest,
    ) -> Result<KillTerminalResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::TERMINAL_KILL))
    }

    /// `elicitation/create`.
    async fn create_elicitation(
        &self,
        params: CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(names::ELICITATION_CREATE))
    }

    /// `session/update` (notification). Default: ignored.
    async fn session_update(&self, params: SessionNotification) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `elicitation/complete` (notification). Default: ignored.
    async fn complete_elicitation(
        &self,
        params: CompleteElicitationNotification,
    ) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `auth/status_update` (notification; unstable, feature `unstable_auth_status`): the
    /// agent's authentication state changed. Default: ignored.
    #[cfg(feature = "unstable_auth_status")]
    async fn auth_status_update(
        &self,
        params: acp_types::v1::AuthStatusUpdateNotification,
    ) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// `mcp/message` (request; unstable, feature `unstable_mcp_over_acp`): one inner MCP
    /// request for an MCP server this client declared with an `acp` entry of `mcpServers`
    /// (offered to agents advertising `mcpCapabilities.acp`). Answer what the MCP server
    /// answered, result or MCP error, as the result; keep ACP errors for an unknown server
    /// (`-32602`). Default: `-32601`.
    #[cfg(feature = "unstable_mcp_over_acp")]
    async fn mcp_message(
        &self,
        params: acp_types::v1::MessageMcpRequest,
    ) -> Result<acp_types::v1::MessageMcpResponse, Error> {
        let _ = params;
        Err(Error::method_not_found(
            <acp_types::v1::MessageMcpRequest as RequestMethod>::METHOD,
        ))
    }

    /// `mcp/message` (notification; unstable, feature `unstable_mcp_over_acp`): an inner MCP
    /// notification about a running inner request. Default: ignored.
    #[cfg(feature = "unstable_mcp_over_acp")]
    async fn mcp_message_notification(
        &self,
        params: acp_types::v1::MessageMcpNotification,
    ) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// An `_`-prefixed extension request, with its raw params. Default: `-32601`.
    async fn ext_method(&self, method: &str, params: Value) -> Result<Value, Error> {
        let _ = params;
        Err(Error::method_not_found(method))
    }

    /// An `_`-prefixed extension notification. Default: ignored.
    async fn ext_notification(&self, method: &str, params: Value) -> Result<(), Error> {
        let _ = (method, params);
        Ok(())
    }
}

/// Parses the params of a request, honouring "null params mean the default".
fn parse_request<P: RequestMethod>(params: &Params) -> Result<P, Error> {
    if P::PARAMS_NULL_AS_DEFAULT && params.raw().is_none() {
        return acp_rpc::deserialize_params("{}");
    }
    params.parse()
}

fn parse_notification<P: NotificationMethod>(params: &Params) -> Result<P, Error> {
    if P::PARAMS_NULL_AS_DEFAULT && params.raw().is_none() {
        return acp_rpc::deserialize_params("{}");
    }
    params.parse()
}

/// The raw params as a `Value` (`null` when absent).
fn raw_value(params: &Params) -> Result<Value, Error> {
    params.parse::<Value>()
}

/// Routes incoming traffic to a [`Client`] (and `session/update`s to prompt streams).
pub(crate) struct Dispatcher<C: Client> {
    pub(crate) client: Arc<C>,
    pub(crate) subscribers: Subscribers,
}

#[async_trait]
impl<C: Client> Handler for Dispatcher<C> {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.handle_request_reply(cx, method, params)
            .await?
            .into_raw()
    }

    /// Every request of the agent's waits until the `session/update`s (and other
    /// notifications) sent before it have been handled: a permission question about a tool
    /// call reaches [`Client::request_permission`] after the update that announced the call
    /// reached [`Client::session_update`] and the prompt streams (see acp-rpc's `concepts`,
    /// *Ordering*).
    fn waits_for_earlier_notifications(&self, _method: &str) -> bool {
        true
    }

    /// Results go out unserialized: the writer serializes them into its own buffer (a
    /// 1 MiB `fs/read_text_file` answer gets no MiB-sized buffer of its own).
    async fn handle_request_reply(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Reply, Error> {
        let c = &*self.client;
        match method {
            names::SESSION_REQUEST_PERMISSION => Ok(Reply::new(
                c.request_permission(parse_request(&params)?).await?,
            )),
            names::FS_READ_TEXT_FILE => {
                Ok(Reply::new(c.read_text_file(parse_request(&params)?).await?))
            }
            names::FS_WRITE_TEXT_FILE => Ok(Reply::new(
                c.write_text_file(parse_request(&params)?).await?,
            )),
            names::TERMINAL_CREATE => Ok(Reply::new(
                c.create_terminal(parse_request(&params)?).await?,
            )),
            names::TERMINAL_OUTPUT => Ok(Reply::new(
                c.terminal_output(parse_request(&params)?).await?,
            )),
            names::TERMINAL_RELEASE => Ok(Reply::new(
                c.release_terminal(parse_request(&params)?).await?,
            )),
            names::TERMINAL_WAIT_FOR_EXIT => Ok(Reply::new(
                c.wait_for_terminal_exit(parse_request(&params)?).await?,
            )),
            names::TERMINAL_KILL => Ok(Reply::new(c.kill_terminal(parse_request(&params)?).await?)),
            names::ELICITATION_CREATE => Ok(Reply::new(
                c.create_elicitation(parse_request(&params)?).await?,
            )),
            #[cfg(feature = "unstable_mcp_over_acp")]
            m if m == <acp_types::v1::MessageMcpRequest as RequestMethod>::METHOD => {
                Ok(Reply::new(c.mcp_message(parse_request(&params)?).await?))
            }
            m if m.starts_with('_') => Ok(Reply::new(c.ext_method(m, raw_value(&params)?).await?)),
            m => Err(Error::method_not_found(m)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let c = &*self.client;
        match method {
            names::SESSION_UPDATE => self.session_update(parse_notification(&params)?).await,
            names::ELICITATION_COMPLETE => {
                c.complete_elicitation(parse_notification(&params)?).await
            }
            #[cfg(feature = "unstable_auth_status")]
            m if m
                == <acp_types::v1::AuthStatusUpdateNotification as NotificationMethod>::METHOD =>
            {
                c.auth_status_update(parse_notification(&params)?).await
            }
            #[cfg(feature = "unstable_mcp_over_acp")]
            m if m == <acp_types::v1::MessageMcpNotification as NotificationMethod>::METHOD => {
                c.mcp_message_notification(parse_notification(&params)?)
                    .await
            }
            m if m.starts_with('_') => c.ext_notification(m, raw_value(&params)?).await,
            m => Err(Error::method_not_found(m)),
        }
    }
    /// `session/update` is the one notification that comes in streams (a prompt's every
    /// chunk), so the reader parses it straight from the line into the future that handles
    /// it: one pass over the text instead of two, and the value is neither boxed nor copied
    /// on its way. Anything that does not parse goes the ordinary way, where a bad message
    /// gets its usual error.
    fn start_notification(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        if method != names::SESSION_UPDATE {
            return None;
        }
        let n: SessionNotification = serde_json::from_str(params).ok()?;
        Some(StartedNotification::new(
            names::SESSION_UPDATE,
            async move { self.session_update(n).await },
        ))
    }
}

impl<C: Client> Dispatcher<C> {
    /// A `session/update`: to the prompt streams of its session, then to the client.
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        self.subscribers.deliver(&n).await;
        self.client.session_update(n).await
    }
}
