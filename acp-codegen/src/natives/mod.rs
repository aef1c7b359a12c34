//! Generates a legacy dialect's own two sides from its `x-methods`, for acp-dialects: the
//! `Agent` trait (what an agent of the dialect serves) with the `ClientHandle` it calls the
//! editor through, the `Client` trait with its `AgentHandle`, the dispatch of incoming
//! messages to the traits, and `serve`/`connect` to start either side.
//!
//! The file is a module of the dialect's hand-written module in acp-dialects, which supplies
//! what the table cannot say: `framing()` (the wire's [`acp_rpc::Framing`]) and, for a
//! method marked `"x-default": "dialect"`, the default answer `defaults::<method>`.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::Error;
use crate::model::{Schema, Side};
use crate::unions::{docs, ident};

mod call;

pub(crate) use call::Call;

/// The calls one role serves: `Side::Protocol` methods are served by both, except acp-rpc's
/// own `$/` methods (`$/cancel_request`), which the engine handles before any dispatch.
fn served_by<'a>(schema: &'a Schema, side: Side) -> Vec<Call<'a>> {
    schema
        .methods
        .iter()
        .filter(|m| m.side == side || m.side == Side::Protocol)
        .filter(|m| !m.wire.starts_with("$/"))
        .map(|m| Call::new(schema, m))
        .collect()
}

/// The handler that dispatches incoming messages to one trait's implementation.
fn dispatch(name: &Ident, bound: &Ident, calls: &[Call], agent: bool) -> TokenStream {
    let requests: Vec<_> = calls.iter().filter(|c| c.is_request()).collect();
    let notifications: Vec<_> = calls.iter().filter(|c| !c.is_request()).collect();
    let implementor = quote!(self.0);
    let request_arms = requests.iter().map(|c| c.dispatch_arm(&implementor, agent));
    let notification_arms = notifications
        .iter()
        .map(|c| c.dispatch_arm(&implementor, agent));
    let request_match = arms_or_not_found(request_arms.collect());
    let notification_match = arms_or_not_found(notification_arms.collect());
    let context = if agent && !requests.is_empty() {
        quote! {
            let cx = Context::new(ClientHandle { peer: rcx.peer().clone() }, rcx.id().clone());
        }
    } else {
        quote!(let _ = rcx;)
    };
    let params_used = if requests.is_empty() {
        quote!(let _ = params;)
    } else {
        quote!()
    };
    let notification_params_used = if notifications.is_empty() {
        quote!(let _ = params;)
    } else {
        quote!()
    };
    // The editor's side answers the agent's requests only after the notifications the
    // agent sent before them (acp-rpc's ordering guarantee, as acp-client asks for it).
    let ordered = if agent {
        quote!()
    } else {
        quote! {
            fn waits_for_earlier_notifications(&self, _method: &str) -> bool {
                true
            }
        }
    };
    // The editor's side gets the agent's notifications in streams (a prompt's every
    // `session/update`): read each straight from the line, once (acp-rpc's
    // `Handler::start_notification`), as acp-client's v1 dispatcher does.
    let start_arms: Vec<_> = if agent {
        Vec::new()
    } else {
        notifications
            .iter()
            .filter_map(|c| c.start_arm(&implementor))
            .collect()
    };
    let started = if start_arms.is_empty() {
        quote!()
    } else {
        quote! {
            fn start_notification(
                self: ::std::sync::Arc<Self>,
                _cx: NotificationContext,
                method: &str,
                params: &str,
            ) -> ::std::option::Option<::acp_rpc::StartedNotification> {
                match method {
                    #( #start_arms )*
                    _ => ::std::option::Option::None,
                }
            }
        }
    };
    quote! {
        struct #name<T>(T);

        #[async_trait]
        impl<T: #bound> Handler for #name<T> {
            #ordered

            #started

            async fn handle_request(
                &self,
                rcx: RequestContext,
                method: &str,
                params: Params,
            ) -> ::std::result::Result<Box<RawValue>, Error> {
                self.handle_request_reply(rcx, method, params).await?.into_raw()
            }

            async fn handle_request_reply(
                &self,
                rcx: RequestContext,
                method: &str,
                params: Params,
            ) -> ::std::result::Result<Reply, Error> {
                #context
                #params_used
                #request_match
            }

            async fn handle_notification(
                &self,
                _cx: NotificationContext,
                method: &str,
                params: Params,
            ) -> ::std::result::Result<(), Error> {
                #notification_params_used
                #notification_match
            }
        }
    }
}

/// `match method { <arms> }`, or only "method not found" when there are no arms.
fn arms_or_not_found(arms: Vec<TokenStream>) -> TokenStream {
    if arms.is_empty() {
        quote!(Err(Error::method_not_found(method)))
    } else {
        quote! {
            match method {
                #( #arms )*
                _ => Err(Error::method_not_found(method)),
            }
        }
    }
}

/// Generates the native sides of one legacy dialect; `module` is its module in acp-dialects
/// and in `acp_types::legacy`.
pub fn generate(schema: &Schema, module: &str) -> Result<TokenStream, Error> {
    let types: syn::Path = syn::parse_str(&format!("acp_types::legacy::{module}"))
        .map_err(|e| Error::Render(e.to_string()))?;
    generate_with_types(schema, &types, None)
}

/// [`generate`] for a dialect whose types live at `types` (`acp_types::v2`). With
/// `agent_layer`, `serve_with` hands the generated agent dispatch to that hand-written
/// function of the dialect's module and serves what it returns (v2's
/// `prompt_keys::PromptKeys::new`, which answers `session/prompt` retries by key).
pub fn generate_with_types(
    schema: &Schema,
    types: &syn::Path,
    agent_layer: Option<&syn::Path>,
) -> Result<TokenStream, Error> {
    let dialect = &schema.dialect;
    let agent_handler = match agent_layer {
        Some(layer) => quote! { #layer(AgentDispatch(agent)) },
        None => quote! { AgentDispatch(agent) },
    };
    let agent_calls = served_by(schema, Side::Agent);
    let client_calls = served_by(schema, Side::Client);
    let agent_methods = agent_calls
        .iter()
        .map(|c| c.trait_method(true))
        .collect::<Result<Vec<_>, _>>()?;
    let client_methods = client_calls
        .iter()
        .map(|c| c.trait_method(false))
        .collect::<Result<Vec<_>, _>>()?;
    let to_client = client_calls
        .iter()
        .filter(|c| c.method.handle)
        .map(Call::handle_method);
    let to_agent = agent_calls
        .iter()
        .filter(|c| c.method.handle)
        .map(Call::handle_method);
    let agent_dispatch = dispatch(&ident("AgentDispatch"), &ident("Agent"), &agent_calls, true);
    let client_dispatch = dispatch(
        &ident("ClientDispatch"),
        &ident("Client"),
        &client_calls,
        false,
    );

    let module_doc = format!(
        "The `{dialect}` dialect's own two sides, generated from its method table: the [`Agent`]\n\
         trait an agent implements and the [`ClientHandle`] it calls the editor with ([`serve`]),\n\
         and the [`Client`] trait an editor implements and the [`AgentHandle`] it calls the agent\n\
         with ([`connect`])."
    );
    let module_doc = module_doc.lines().map(|l| format!(" {l}"));
    let agent_doc = docs(Some(&format!(
        "What an agent of the `{dialect}` dialect implements: the methods its editor calls.\n\
         Requests run concurrently, so one is served while another runs."
    )));
    let client_doc = docs(Some(&format!(
        "What an editor of the `{dialect}` dialect implements: the methods its agent calls.\n\
         Requests are handled one at a time, in the order the agent sent them."
    )));
    let serve_doc = docs(Some(&format!(
        "Serves `agent` to an editor of the `{dialect}` dialect over a reader/writer pair."
    )));
    let connect_doc = docs(Some(&format!(
        "Serves `client` to an agent of the `{dialect}` dialect over its stdout (`reader`) and\n\
         stdin (`writer`)."
    )));
    let agent_conn_doc = docs(Some(&format!("A running `{dialect}` agent connection.")));
    let client_conn_doc = docs(Some(&format!(
        "A running `{dialect}` connection to an agent."
    )));

    Ok(quote! {
        #( #![doc = #module_doc] )*

        use acp_rpc::{
            Config, Error, Handler, NotificationContext, Params, Peer, RawValue, Reply,
            RequestContext,
        };
        use acp_rpc::transport::Transport;
        use #types::*;
        use async_trait::async_trait;

        use crate::connection::{ToAgent, ToClient};
        use crate::{Input, Output};

        #agent_doc
        #[async_trait]
        pub trait Agent: Send + Sync + 'static {
            #( #agent_methods )*
        }

        /// The context of one request the agent serves: [`crate::Context::client`] is the
        /// typed handle to the editor.
        pub type Context = crate::Context<ClientHandle>;

        /// A cheap, cloneable, typed handle to the editor's methods.
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

            #( #to_client )*
        }

        #agent_conn_doc
        pub type AgentConnection = crate::Connection<ClientHandle>;

        #serve_doc
        pub fn serve(agent: impl Agent, reader: impl Input, writer: impl Output) -> AgentConnection {
            serve_with(agent, reader, writer, Config::default())
        }

        /// [`serve`] with a custom [`Config`]; its framing is always the dialect's
        /// (`framing()` of the dialect's module).
        pub fn serve_with(
            agent: impl Agent,
            reader: impl Input,
            writer: impl Output,
            config: Config,
        ) -> AgentConnection {
            serve_over(agent, (reader, writer), config)
        }

        /// [`serve_with`] over any [`Transport`]: a reader/writer pair, one end of an
        /// in-memory message pair (an agent in the editor's process, a translation), frames.
        pub fn serve_over(
            agent: impl Agent,
            transport: impl Transport,
            config: Config,
        ) -> AgentConnection {
            AgentConnection::start(
                transport,
                #agent_handler,
                config,
                super::framing(),
                |peer| ClientHandle { peer },
            )
        }

        #agent_dispatch

        #client_doc
        #[async_trait]
        pub trait Client: Send + Sync + 'static {
            #( #client_methods )*
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

            #( #to_agent )*
        }

        #client_conn_doc
        pub type ClientConnection = crate::Connection<AgentHandle>;

        #connect_doc
        pub fn connect(client: impl Client, reader: impl Input, writer: impl Output) -> ClientConnection {
            connect_with(client, reader, writer, Config::default())
        }

        /// [`connect`] with a custom [`Config`]; its framing is always the dialect's
        /// (`framing()` of the dialect's module), and the agent's requests are always handled
        /// one at a time in arrival order ([`Config::sequential_requests`]): what an agent
        /// streams must be shown in the order it was sent.
        pub fn connect_with(
            client: impl Client,
            reader: impl Input,
            writer: impl Output,
            config: Config,
        ) -> ClientConnection {
            connect_over(client, (reader, writer), config)
        }

        /// [`connect_with`] over any [`Transport`]: a reader/writer pair, one end of an
        /// in-memory message pair (an agent in this process, a translation), frames.
        pub fn connect_over(
            client: impl Client,
            transport: impl Transport,
            config: Config,
        ) -> ClientConnection {
            ClientConnection::start(
                transport,
                ClientDispatch(client),
                config.with_sequential_requests(true),
                super::framing(),
                |peer| AgentHandle { peer },
            )
        }

        #client_dispatch
    })
}

#[cfg(test)]
mod tests;
