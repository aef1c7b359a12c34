//! The conductor of a proxy chain (feature `unstable_proxy_chains`; see docs/PROXY_CHAINS.md):
//! the agent its client talks to, and the router between the components it runs, zero or
//! more proxies and a final agent.
//!
//! [`conduct`] takes the client's connection and one connection per component, in chain
//! order (acp-cli's `acp conduct` spawns them as child processes). It sends the client's
//! `initialize` as `proxy/initialize` to every component that has a successor (the final
//! agent gets a plain `initialize`), and routes:
//!
//! * the client's messages to the first component, unchanged;
//! * a component's `proxy/successor` request or notification, unwrapped, to the next one;
//! * any other message of a component to its predecessor: the client, unchanged, for the
//!   first component; wrapped in `proxy/successor` for the others.
//!
//! Each hop has its own request ids; a forwarded request's answer (result or error) is the
//! answer on the hop it came from, and a cancelled request is cancelled on the next hop.
//! Messages keep their order along the chain. When a component exits, the requests waiting
//! on it fail with an error naming it, and then every connection is closed.

use std::sync::Arc;
use std::time::Duration;

use acp_rpc::{
    CallOptions, CloseReason, Config, Connection, Error, ErrorCode, Handler, NotificationContext,
    Params, Peer, RawValue, RequestContext,
};
use acp_types::v1::{ProxySuccessorNotification, ProxySuccessorRequest};
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use crate::proxy::{PROXY_INITIALIZE, PROXY_SUCCESSOR};

/// The reading half of a component's (or the client's) byte stream.
pub type BoxReader = Box<dyn AsyncRead + Unpin + Send>;
/// The writing half of a component's (or the client's) byte stream.
pub type BoxWriter = Box<dyn AsyncWrite + Unpin + Send>;

/// One component of the chain: a name for errors and logs (its command line, say) and its
/// byte stream.
pub struct Component {
    /// What errors call it.
    pub name: String,
    /// What it writes.
    pub reader: BoxReader,
    /// What it reads.
    pub writer: BoxWriter,
}

/// A running chain: the client's connection and one per component.
#[derive(Debug)]
pub struct Conductor {
    client: Connection,
    components: Vec<Connection>,
    /// The connection whose end ended the chain (0: the client; 1..: the components).
    first_ended: watch::Receiver<Option<usize>>,
    names: Arc<Vec<String>>,
}

/// Why a chain ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainEnd {
    /// The client went away (closed its side): the normal end of a session.
    ClientLeft,
    /// A component ended first.
    ComponentEnded {
        /// Its position in the chain as given to [`conduct`] (0: the first proxy).
        index: usize,
        /// Its name, as [`Component::name`] gave it.
        name: String,
    },
}

impl ChainEnd {
    /// The position of the component that ended the chain, if one did (a process chain
    /// waits for that process's exit to report it).
    pub fn component(&self) -> Option<usize> {
        match self {
            ChainEnd::ClientLeft => None,
            ChainEnd::ComponentEnded { index, .. } => Some(*index),
        }
    }
}

impl Conductor {
    /// Resolves when the chain is over: the client's connection closed, or a component's
    /// (every connection is closed then). Says which came first, so that a command running
    /// the chain can tell a session that ended from a component that failed it (whose
    /// process exiting once its connection closed is then no failure).
    pub async fn closed(&self) -> ChainEnd {
        // Finished, not just closed: the answers the client is owed (an error for a request
        // a dying component left unanswered) are written before a process running the chain
        // exits.
        self.client.finished().await;
        for c in &self.components {
            c.close();
        }
        let mut first = self.first_ended.clone();
        // The watcher is gone only after it recorded an end, so an error leaves it recorded.
        let _ = first.wait_for(Option::is_some).await;
        let index = first.borrow().unwrap_or(0);
        match index {
            0 => ChainEnd::ClientLeft,
            i => ChainEnd::ComponentEnded {
                index: i - 1,
                name: self.names.get(i).cloned().unwrap_or_default(),
            },
        }
    }
}

/// The peers of every connection: index 0 the client, 1.. the components in order.
struct Routes {
    peers: watch::Receiver<Option<Arc<Vec<Peer>>>>,
    names: Arc<Vec<String>>,
}

impl Routes {
    async fn peers(&self) -> Result<Arc<Vec<Peer>>, Error> {
        let mut rx = self.peers.clone();
        let peers = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Error::internal_error("the conductor is shutting down"))?;
        Ok(peers.clone().expect("waited for Some"))
    }
}

/// [`conduct`] for the client on this process's stdin and stdout (a conductor is a stdio
/// agent to its editor), with the default configuration.
pub fn conduct_stdio(components: Vec<Component>) -> Result<Conductor, Error> {
    conduct(
        Box::new(acp_rpc::stdio::stdin()),
        Box::new(acp_rpc::stdio::stdout()),
        components,
        Config::default(),
    )
}

/// Runs a chain: `client` is the connection of the client the chain serves, `components`
/// the chain in order, the last one the agent. Must be called within a Tokio runtime.
pub fn conduct(
    client_reader: BoxReader,
    client_writer: BoxWriter,
    components: Vec<Component>,
    config: Config,
) -> Result<Conductor, Error> {
    if components.is_empty() {
        return Err(Error::invalid_params("a chain needs at least an agent"));
    }
    let (tx, rx) = watch::channel(None);
    let mut names = vec!["the client".to_string()];
    names.extend(components.iter().map(|c| c.name.clone()));
    let names = Arc::new(names);
    let last = components.len();
    let node = |index: usize| Node {
        index,
        last,
        routes: Routes {
            peers: rx.clone(),
            names: names.clone(),
        },
    };
    let client = Connection::new(client_reader, client_writer, node(0), config.clone());
    let components: Vec<Connection> = components
        .into_iter()
        .enumerate()
        .map(|(i, c)| Connection::new(c.reader, c.writer, node(i + 1), config.clone()))
        .collect();
    let mut peers = vec![client.peer().clone()];
    peers.extend(components.iter().map(|c| c.peer().clone()));
    let _ = tx.send(Some(Arc::new(peers.clone())));
    let (ended_tx, first_ended) = watch::channel(None);
    // A component that ends ends the chain: the client's waiting requests are answered with
    // the error first (a short grace), then everything is closed.
    tokio::spawn(async move {
        let _keep = tx;
        let ends = peers.iter().map(|p| Box::pin(p.closed()));
        let _ = ended_tx.send(Some(first_end(ends).await));
        let _ = tokio::time::timeout(Duration::from_secs(2), peers[0].received_requests_handled())
            .await;
        for p in &peers {
            p.close();
        }
    });
    Ok(Conductor {
        client,
        components,
        first_ended,
        names,
    })
}

/// Which connection ended the chain, given the `closed()` futures of every connection (0
/// the client, 1.. the components): the first to resolve, except that of those found ended
/// together, a component that ended on its own (not closed by us) wins over the client.
///
/// A component that dies fails its client's waiting request at once, and a client that then
/// leaves can close its connection before this task is polled again; both are seen ended in
/// one poll, and the chain ended because of the component. A component closed locally was
/// closed because the client left, so it never wins.
async fn first_end<F>(futures: impl Iterator<Item = F>) -> usize
where
    F: std::future::Future<Output = CloseReason> + Unpin,
{
    let mut futures: Vec<F> = futures.collect();
    std::future::poll_fn(move |cx| {
        let mut ended = Vec::new();
        for (i, f) in futures.iter_mut().enumerate() {
            if let std::task::Poll::Ready(reason) = std::pin::Pin::new(f).poll(cx) {
                ended.push((i, reason));
            }
        }
        let own_end = ended
            .iter()
            .find(|(i, reason)| *i > 0 && !matches!(reason, CloseReason::Local));
        match own_end.or(ended.first()) {
            Some((i, _)) => std::task::Poll::Ready(*i),
            None => std::task::Poll::Pending,
        }
    })
    .await
}

/// The handler of one connection of the chain.
struct Node {
    /// 0: the client; 1..=last: the components.
    index: usize,
    last: usize,
    routes: Routes,
}

/// Where a message goes and how it is written there.
enum Hop {
    /// Unchanged, to this node.
    Plain(usize),
    /// Wrapped in `proxy/successor`, to this node (a proxy, from its successor).
    Wrapped(usize),
}

impl Node {
    /// Where a message of this node goes: `Ok((hop, method, params))`.
    fn route(
        &self,
        method: &str,
        params: Params,
        envelope: impl FnOnce(Params) -> Result<(String, Option<serde_json::Value>), Error>,
    ) -> Result<(Hop, String, Option<Box<RawValue>>), Error> {
        if self.index == 0 {
            return Ok((Hop::Plain(1), method.to_string(), params.into_raw()));
        }
        if method == PROXY_SUCCESSOR {
            if self.index == self.last {
                return Err(Error::method_not_found(method));
            }
            let (inner, params) = envelope(params)?;
            let params = params.as_ref().map(acp_rpc::to_raw).transpose()?;
            return Ok((Hop::Plain(self.index + 1), inner, params));
        }
        let hop = if self.index == 1 {
            Hop::Plain(0)
        } else {
            Hop::Wrapped(self.index - 1)
        };
        Ok((hop, method.to_string(), params.into_raw()))
    }

    /// The error of a forwarded request whose target went away, naming it.
    fn gone(&self, to: usize, e: Error) -> Error {
        if !e.is_connection_closed() {
            return e;
        }
        let name = &self.routes.names[to];
        Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!("{name} of the proxy chain is gone: {}", e.message),
        )
    }
}

#[async_trait]
impl Handler for Node {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let (hop, method, params) = self.route(method, params, |p| {
            let e = p.parse::<ProxySuccessorRequest>()?;
            Ok((e.method, e.params))
        })?;
        let peers = self.routes.peers().await?;
        let options = CallOptions::default();
        let empty = empty_object();
        match hop {
            Hop::Plain(to) => {
                let method = if method == "initialize" && to >= 1 && to < self.last {
                    PROXY_INITIALIZE
                } else {
                    method.as_str()
                };
                let params = params.unwrap_or(empty);
                peers[to]
                    .request_raw(method, &params, options)
                    .await
                    .map_err(|e| self.gone(to, e))
            }
            Hop::Wrapped(to) => {
                let mut envelope = ProxySuccessorRequest::new(method);
                envelope.params = json(params)?;
                peers[to]
                    .request_raw(PROXY_SUCCESSOR, &envelope, options)
                    .await
                    .map_err(|e| self.gone(to, e))
            }
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let (hop, method, params) = self.route(method, params, |p| {
            let e = p.parse::<ProxySuccessorNotification>()?;
            Ok((e.method, e.params))
        })?;
        let peers = self.routes.peers().await?;
        match hop {
            Hop::Plain(to) => {
                let params = params.unwrap_or_else(empty_object);
                peers[to].notify(&method, &params).await
            }
            Hop::Wrapped(to) => {
                let mut envelope = ProxySuccessorNotification::new(method);
                envelope.params = json(params)?;
                peers[to].notify(PROXY_SUCCESSOR, &envelope).await
            }
        }
    }

    /// Requests wait for the notifications read before them, so the chain keeps the order
    /// of what it forwards (a tool call's update before the permission request about it).
    fn waits_for_earlier_notifications(&self, _method: &str) -> bool {
        true
    }
}

fn json(params: Option<Box<RawValue>>) -> Result<Option<serde_json::Value>, Error> {
    params
        .map(|p| serde_json::from_str(p.get()))
        .transpose()
        .map_err(|e| Error::invalid_params(format!("params are not JSON: {e}")))
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_string()).expect("`{}` is JSON")
}

#[cfg(test)]
mod tests {
    use std::future::{Future, pending, ready};
    use std::pin::Pin;

    use super::*;

    type End = Pin<Box<dyn Future<Output = CloseReason> + Send>>;

    fn ended(reason: CloseReason) -> End {
        Box::pin(ready(reason))
    }

    fn open() -> End {
        Box::pin(pending())
    }

    #[tokio::test]
    async fn a_component_that_died_wins_over_a_client_that_left_in_the_same_instant() {
        let ends = vec![ended(CloseReason::Eof), open(), ended(CloseReason::Eof)];
        assert_eq!(first_end(ends.into_iter()).await, 2);
        let ends = vec![
            ended(CloseReason::Eof),
            ended(CloseReason::WriteError("pipe".into())),
        ];
        assert_eq!(first_end(ends.into_iter()).await, 1);
    }

    #[tokio::test]
    async fn components_we_closed_after_the_client_left_do_not_count() {
        let ends = vec![
            ended(CloseReason::Eof),
            ended(CloseReason::Local),
            ended(CloseReason::Local),
        ];
        assert_eq!(first_end(ends.into_iter()).await, 0);
        let ends = vec![ended(CloseReason::Eof), open()];
        assert_eq!(first_end(ends.into_iter()).await, 0);
    }

    #[tokio::test]
    async fn a_component_ending_alone_ends_the_chain() {
        let ends = vec![open(), open(), ended(CloseReason::Eof)];
        assert_eq!(first_end(ends.into_iter()).await, 2);
    }
}
