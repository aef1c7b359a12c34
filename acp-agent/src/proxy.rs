//! The proxy role of proxy chains (feature `unstable_proxy_chains`; see docs/PROXY_CHAINS.md).
//!
//! A conductor runs a chain of components between a client and an agent. A component that
//! has a successor is a **proxy**: the conductor starts it with `proxy/initialize` instead
//! of `initialize`. A proxy has one connection, to the conductor, on which it is the agent
//! of its predecessor (the client's requests and notifications arrive as ordinary
//! messages), and on which everything to and from its successor travels wrapped in
//! `proxy/successor` envelopes.
//!
//! [`serve_proxy`] turns a [`Proxy`] into that component. The connection does the
//! wrapping, answers `proxy/initialize` by first sending `initialize` to the successor,
//! and forwards whatever the [`Proxy`] does not answer or drop; its hooks see every message
//! both ways, and may change it, answer it themselves or drop it. Each hop has its own
//! request ids (acp-rpc's): a forwarded request is a new request on the next hop, whose
//! answer (result or error, unchanged) answers the original, and cancelling the original
//! (`$/cancel_request`) cancels the forwarded one on the next hop. Messages the proxy
//! forwards keep their order: a request reaches the hooks only after every notification
//! read before it was forwarded, and a forwarded request's answer only after every
//! notification that came before that answer.
//!
//! ```no_run
//! use acp_agent::proxy::{Message, Proxy, ProxyContext, RequestStep, serve_proxy};
//!
//! /// Forwards everything, and logs each request going to the agent.
//! struct Log;
//!
//! #[acp_agent::async_trait]
//! impl Proxy for Log {
//!     async fn request_from_predecessor(&self, _cx: &ProxyContext, request: Message) -> RequestStep {
//!         eprintln!("-> {}", request.method);
//!         RequestStep::Forward(request)
//!     }
//! }
//!
//! # async fn run() {
//! let conn = serve_proxy(Log, acp_rpc::stdio::stdin(), acp_rpc::stdio::stdout(), Default::default());
//! conn.closed().await;
//! # }
//! ```

use std::sync::Arc;

use acp_rpc::{
    CallOptions, Config, Connection, Error, Handler, NotificationContext, Params, Peer, RawValue,
    RequestContext, to_raw,
};
use acp_types::v1::{
    InitializeProxyRequest, InitializeProxyResponse, InitializeResponse,
    ProxySuccessorNotification, ProxySuccessorRequest,
};
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

/// `proxy/initialize`: a conductor starts a component that has a successor with it.
pub const PROXY_INITIALIZE: &str = "proxy/initialize";
/// `proxy/successor`: the envelope of a message to or from the successor.
pub const PROXY_SUCCESSOR: &str = "proxy/successor";

/// One request or notification as a proxy sees it, unwrapped: its method and params, the
/// params as raw JSON (forwarded byte for byte unless a hook changes them).
#[derive(Debug)]
pub struct Message {
    /// The method.
    pub method: String,
    /// The params, absent when the message has none.
    pub params: Option<Box<RawValue>>,
}

impl Message {
    /// A message from its method and typed params.
    pub fn new(method: impl Into<String>, params: &impl serde::Serialize) -> Result<Self, Error> {
        Ok(Message {
            method: method.into(),
            params: Some(to_raw(params)?),
        })
    }
}

/// What a proxy does with a request.
#[derive(Debug)]
pub enum RequestStep {
    /// Pass it (changed or not) on to the other neighbour; its answer is the answer.
    Forward(Message),
    /// Answer it here (a result or an error); it goes no further.
    Answer(Result<Box<RawValue>, Error>),
}

/// What a proxy does with a notification.
#[derive(Debug)]
pub enum NotificationStep {
    /// Pass it (changed or not) on to the other neighbour.
    Forward(Message),
    /// Drop it.
    Drop,
}

/// A component of a proxy chain between a predecessor (the client side) and a successor
/// (the agent side). Every hook defaults to forwarding, so a proxy overrides only what it
/// changes. Requests run concurrently; notifications run one at a time, in order.
#[async_trait]
pub trait Proxy: Send + Sync + 'static {
    /// A request from the predecessor (the client's side), going to the successor.
    async fn request_from_predecessor(&self, cx: &ProxyContext, request: Message) -> RequestStep {
        let _ = cx;
        RequestStep::Forward(request)
    }

    /// A request from the successor (the agent's side), going to the predecessor.
    async fn request_from_successor(&self, cx: &ProxyContext, request: Message) -> RequestStep {
        let _ = cx;
        RequestStep::Forward(request)
    }

    /// A notification from the predecessor, going to the successor.
    async fn notification_from_predecessor(
        &self,
        cx: &ProxyContext,
        notification: Message,
    ) -> NotificationStep {
        let _ = cx;
        NotificationStep::Forward(notification)
    }

    /// A notification from the successor, going to the predecessor.
    async fn notification_from_successor(
        &self,
        cx: &ProxyContext,
        notification: Message,
    ) -> NotificationStep {
        let _ = cx;
        NotificationStep::Forward(notification)
    }

    /// The successor's `initialize` answer, before it answers `proxy/initialize`: a proxy
    /// that adds or hides capabilities changes them here. The `protocolVersion` it returns
    /// is ignored (a proxy never changes the version).
    async fn initialized(&self, answer: InitializeResponse) -> InitializeResponse {
        answer
    }
}

/// What a [`Proxy`]'s hooks reach both neighbours through: to answer a request by asking
/// the successor something else, to send a message of its own, or to change an answer
/// (forward it here, then answer with the changed result).
#[derive(Clone, Debug)]
pub struct ProxyContext {
    peer: Peer,
}

impl ProxyContext {
    /// Sends a request to the successor (wrapped in `proxy/successor`) and returns its
    /// answer. Dropping the future cancels it on that hop.
    pub async fn request_successor(&self, request: Message) -> Result<Box<RawValue>, Error> {
        let mut envelope = ProxySuccessorRequest::new(request.method);
        envelope.params = json_params(request.params)?;
        self.peer
            .request_raw(PROXY_SUCCESSOR, &envelope, CallOptions::default())
            .await
    }

    /// Sends a request to the predecessor and returns its answer. Dropping the future
    /// cancels it on that hop.
    pub async fn request_predecessor(&self, request: Message) -> Result<Box<RawValue>, Error> {
        let params = request.params.unwrap_or_else(empty_object);
        self.peer
            .request_raw(&request.method, &params, CallOptions::default())
            .await
    }

    /// Sends a notification to the successor (wrapped in `proxy/successor`).
    pub async fn notify_successor(&self, notification: Message) -> Result<(), Error> {
        let mut envelope = ProxySuccessorNotification::new(notification.method);
        envelope.params = json_params(notification.params)?;
        self.peer.notify(PROXY_SUCCESSOR, &envelope).await
    }

    /// Sends a notification to the predecessor.
    pub async fn notify_predecessor(&self, notification: Message) -> Result<(), Error> {
        let params = notification.params.unwrap_or_else(empty_object);
        self.peer.notify(&notification.method, &params).await
    }
}

/// Serves `proxy` on one connection to its conductor. Must be called within a Tokio runtime.
pub fn serve_proxy<P, R, W>(proxy: P, reader: R, writer: W, config: Config) -> Connection
where
    P: Proxy,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let handler = ProxyHandler {
        proxy: Arc::new(proxy),
    };
    Connection::new(reader, writer, handler, config)
}

/// [`serve_proxy`] on this process's stdin and stdout, as a conductor runs its components.
pub fn serve_proxy_stdio<P: Proxy>(proxy: P) -> Connection {
    serve_proxy(
        proxy,
        acp_rpc::stdio::stdin(),
        acp_rpc::stdio::stdout(),
        Config::default(),
    )
}

struct ProxyHandler<P> {
    proxy: Arc<P>,
}

impl<P: Proxy> ProxyHandler<P> {
    async fn proxy_initialize(
        &self,
        cx: &ProxyContext,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let InitializeProxyRequest::Initialize(request) =
            params.parse::<InitializeProxyRequest>()?;
        let answer = cx
            .request_successor(Message::new("initialize", &request)?)
            .await?;
        let answer: InitializeResponse = serde_json::from_str(answer.get()).map_err(|e| {
            Error::internal_error(format!(
                "the successor's initialize answer did not parse: {e}"
            ))
        })?;
        let version = answer.protocol_version.clone();
        let mut answer = self.proxy.initialized(answer).await;
        answer.protocol_version = version;
        to_raw(&InitializeProxyResponse::from(answer))
    }
}

#[async_trait]
impl<P: Proxy> Handler for ProxyHandler<P> {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let pcx = ProxyContext {
            peer: cx.peer().clone(),
        };
        match method {
            PROXY_INITIALIZE => self.proxy_initialize(&pcx, params).await,
            "initialize" => Err(Error::invalid_request(
                "this component is a proxy: a conductor starts it with proxy/initialize",
            )),
            PROXY_SUCCESSOR => {
                let envelope = params.parse::<ProxySuccessorRequest>()?;
                let request = Message {
                    method: envelope.method,
                    params: raw_params(envelope.params)?,
                };
                match self.proxy.request_from_successor(&pcx, request).await {
                    RequestStep::Forward(request) => pcx.request_predecessor(request).await,
                    RequestStep::Answer(answer) => answer,
                }
            }
            _ => {
                let request = Message {
                    method: method.to_string(),
                    params: params.into_raw(),
                };
                match self.proxy.request_from_predecessor(&pcx, request).await {
                    RequestStep::Forward(request) => pcx.request_successor(request).await,
                    RequestStep::Answer(answer) => answer,
                }
            }
        }
    }

    async fn handle_notification(
        &self,
        cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let pcx = ProxyContext {
            peer: cx.peer().clone(),
        };
        if method == PROXY_SUCCESSOR {
            let envelope = params.parse::<ProxySuccessorNotification>()?;
            let notification = Message {
                method: envelope.method,
                params: raw_params(envelope.params)?,
            };
            match self
                .proxy
                .notification_from_successor(&pcx, notification)
                .await
            {
                NotificationStep::Forward(n) => pcx.notify_predecessor(n).await,
                NotificationStep::Drop => Ok(()),
            }
        } else {
            let notification = Message {
                method: method.to_string(),
                params: params.into_raw(),
            };
            match self
                .proxy
                .notification_from_predecessor(&pcx, notification)
                .await
            {
                NotificationStep::Forward(n) => pcx.notify_successor(n).await,
                NotificationStep::Drop => Ok(()),
            }
        }
    }

    /// Every request waits for the notifications read before it, so that what a proxy
    /// forwards keeps its order (a tool call's update before the permission request about it).
    fn waits_for_earlier_notifications(&self, _method: &str) -> bool {
        true
    }
}

fn json_params(params: Option<Box<RawValue>>) -> Result<Option<serde_json::Value>, Error> {
    params
        .map(|p| serde_json::from_str(p.get()))
        .transpose()
        .map_err(|e| Error::invalid_params(format!("params are not JSON: {e}")))
}

fn raw_params(params: Option<serde_json::Value>) -> Result<Option<Box<RawValue>>, Error> {
    params.as_ref().map(to_raw).transpose()
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_string()).expect("`{}` is JSON")
}
