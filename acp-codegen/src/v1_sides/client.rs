//! acp-client's generated files: the [`Client`] trait, its dispatch, and the methods of the
//! `AgentHandle` a client calls the agent with.
//!
//! What the generated code expects of acp-client (hand-written): `crate::dispatch::Dispatcher`
//! with `Dispatcher::client` and a `<name>_hook` for every client method marked
//! `"serve": "hook"`; `crate::handle::AgentHandle` with `request` and `notify`;
//! `crate::terminal` (feature `process`) for the terminal approval the trait carries, and the
//! building blocks of [`BUILTINS`] that `"builtin"` methods default to.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use super::{SideFile, V1Call, served_by};
use crate::Error;
use crate::model::{Method, Schema, Side};

/// A building block of acp-client that serves some client methods when the application
/// provides one: the trait gets an accessor for it (default `None`), and each method whose
/// `x-rust` says `"builtin": "<key>.<call>"` defaults to `<accessor>()?.<call>(params)`.
struct BuiltinBlock {
    /// The name `"builtin"` annotations use.
    key: &'static str,
    /// The trait's accessor method.
    accessor: &'static str,
    /// The block's type, from acp-client's root.
    ty: &'static str,
    /// The cargo feature the block needs, if any.
    feature: Option<&'static str>,
    /// The block's methods that also take the client, to ask it (`Terminals::create`
    /// asks `approve_terminal`).
    asks_the_client: &'static [&'static str],
    /// The accessor's documentation.
    doc: &'static str,
}

const BUILTINS: &[BuiltinBlock] = &[
    BuiltinBlock {
        key: "fs",
        accessor: "file_system",
        ty: "crate::fs::SandboxedFs",
        feature: None,
        asks_the_client: &[],
        doc: "The sandboxed file system that serves `fs/*` requests: return `Some` and \
              the `fs` methods need no code of yours (override one to log or gate it, \
              and call the block from there).\n\nDefault: `None`, and the `fs` methods \
              answer `-32601`.",
    },
    BuiltinBlock {
        key: "terminals",
        accessor: "terminals",
        ty: "crate::terminal::Terminals",
        feature: Some("process"),
        asks_the_client: &["create"],
        doc: "The terminals that serve `terminal/*` requests: return `Some` and the \
              terminal methods need no code of yours; each `terminal/create` still asks \
              [`Client::approve_terminal`] (override a method to log or gate it, and call \
              the block from there).\n\nDefault: `None`, and the terminal methods answer \
              `-32601`.",
    },
];

fn builtin_block(c: &V1Call) -> Result<Option<&'static BuiltinBlock>, Error> {
    let Some(builtin) = &c.rust.builtin else {
        return Ok(None);
    };
    match BUILTINS.iter().find(|b| b.key == builtin.provider) {
        Some(block) => Ok(Some(block)),
        None => Err(Error::Schema {
            def: format!("x-methods[{}].x-rust", c.method().wire),
            message: format!(
                "no building block `{}` (known: {})",
                builtin.provider,
                BUILTINS
                    .iter()
                    .map(|b| b.key)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

fn feature_gate(feature: Option<&str>) -> TokenStream {
    match feature {
        Some(f) => quote!(#[cfg(feature = #f)]),
        None => TokenStream::new(),
    }
}

/// The three files and their index.
pub(super) fn generate(
    schema: &Schema,
    overlay: &[(Method, Value)],
) -> Result<Vec<SideFile>, Error> {
    let served = served_by(schema, overlay, Side::Client)?;
    let called = served_by(schema, overlay, Side::Agent)?;
    if let Some(c) = served
        .iter()
        .chain(&called)
        .find(|c| c.rust.call_hook && c.method().side != Side::Client)
    {
        return Err(Error::Schema {
            def: format!("x-methods[{}].x-rust", c.method().wire),
            message: "`\"call\": \"hook\"` is for the agent's calls to client methods".into(),
        });
    }
    Ok(vec![
        SideFile {
            path: "acp-client/src/client/generated.rs",
            what: "the Client trait",
            tokens: client_trait(&served)?,
        },
        SideFile {
            path: "acp-client/src/dispatch/generated.rs",
            what: "the client's dispatch",
            tokens: dispatch(&served),
        },
        SideFile {
            path: "acp-client/src/handle/generated.rs",
            what: "the client's handle to the agent",
            tokens: agent_handle(&called),
        },
        SideFile {
            path: "acp-client/src/restart/relay/generated.rs",
            what: "the supervisor's relay to the application's client",
            tokens: relay(&served),
        },
    ])
}

fn client_trait(served: &[V1Call]) -> Result<TokenStream, Error> {
    let methods = served
        .iter()
        .map(trait_method)
        .collect::<Result<Vec<_>, _>>()?;
    let accessors = BUILTINS.iter().map(|b| {
        let (accessor, gate) = (format_ident!("{}", b.accessor), feature_gate(b.feature));
        let ty: syn::Path = syn::parse_str(b.ty).expect("a building block's type is a path");
        let doc = b.doc;
        quote! {
            #[doc = #doc]
            #gate
            fn #accessor(&self) -> Option<&#ty> {
                None
            }
        }
    });
    Ok(quote! {
        use acp_rpc::Error;
        use acp_types::v1::*;
        use async_trait::async_trait;
        use serde_json::Value;

        /// The client side of ACP v1: one method per request or notification an agent sends.
        ///
        /// Every request method defaults to "method not found" (`-32601`); the notifications
        /// default to ignoring the message. Implement what you advertise in your
        /// `clientCapabilities`; the [`crate::fs::SandboxedFs`] and
        /// [`crate::terminal::Terminals`] building blocks serve the fs and terminal methods
        /// when [`Client::file_system`] and [`Client::terminals`] return them.
        ///
        /// Notification methods run one at a time in arrival order and must not await a
        /// request to the agent (spawn a task for that); request methods run concurrently,
        /// each started only once every notification the agent sent before it has been
        /// handled (so a permission question never reaches you before the `session/update`
        /// that announced its tool call).
        ///
        /// Generated from the method table (acp-schema's `v1.json` and `v1-unstable.json`):
        /// a method added there appears here with its default.
        #[async_trait]
        pub trait Client: Send + Sync + 'static {
            #(#methods)*

            #(#accessors)*

            /// Whether to run a `terminal/create`: called by
            /// [`crate::terminal::Terminals::create`] with exactly what would run (command,
            /// arguments, working directory, environment, output limit) after the client's
            /// own limits passed. Ask the user here.
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
    })
}

fn trait_method(c: &V1Call) -> Result<TokenStream, Error> {
    let name = c.name();
    let params = &c.call.params;
    let gate = c.gate();
    if !c.is_request() {
        let doc = c.doc(&[c.rust.doc.as_deref(), Some("Default: ignored.")]);
        return Ok(quote! {
            #doc
            #gate
            async fn #name(&self, params: #params) -> Result<(), Error> {
                let _ = params;
                Ok(())
            }
        });
    }
    let ret = c.call.result_type();
    let wire = c.wire_const();
    let (builtin_doc, serve_builtin) = match builtin_block(c)? {
        None => (None, TokenStream::new()),
        Some(block) => {
            let call = &c.rust.builtin.as_ref().expect("a block was found").call;
            let block_gate = feature_gate(block.feature);
            let accessor = format_ident!("{}", block.accessor);
            let call_ident = format_ident!("{}", call);
            let args = if block.asks_the_client.contains(&call.as_str()) {
                quote!(params, self)
            } else {
                quote!(params)
            };
            let doc = format!(
                "Default: served by [`Client::{}`] when it returns one, otherwise `-32601` \
                 (method not found).",
                block.accessor
            );
            let serve = quote! {
                #block_gate
                if let Some(block) = self.#accessor() {
                    return block.#call_ident(#args).await;
                }
            };
            (Some(doc), serve)
        }
    };
    let doc = c.doc(&[
        c.rust.doc.as_deref(),
        Some(
            builtin_doc
                .as_deref()
                .unwrap_or("Default: `-32601` (method not found)."),
        ),
    ]);
    Ok(quote! {
        #doc
        #gate
        async fn #name(&self, params: #params) -> Result<#ret, Error> {
            #serve_builtin
            let _ = params;
            Err(Error::method_not_found(#wire))
        }
    })
}

fn dispatch(served: &[V1Call]) -> TokenStream {
    let requests = served.iter().filter(|c| c.is_request()).map(|c| {
        let (wire, gate, params, name) = (&c.method().wire, c.gate(), &c.call.params, c.name());
        let call = if c.rust.serve_hook {
            let hook = c.hook();
            quote!(self.#hook(params).await?)
        } else {
            quote!(client.#name(params).await?)
        };
        quote! {
            #gate
            #wire => {
                let params = params.parse_request::<#params>()?;
                Ok(Reply::new(#call))
            }
        }
    });
    let notifications = served.iter().filter(|c| !c.is_request()).map(|c| {
        let (wire, gate, params, name) = (&c.method().wire, c.gate(), &c.call.params, c.name());
        let call = if c.rust.serve_hook {
            let hook = c.hook();
            quote!(self.#hook(params).await)
        } else {
            quote!(client.#name(params).await)
        };
        quote! {
            #gate
            #wire => {
                let params = params.parse_notification::<#params>()?;
                #call
            }
        }
    });
    quote! {
        use acp_rpc::{Error, Params, Reply};
        use acp_types::v1::*;

        use crate::client::Client;
        use crate::dispatch::Dispatcher;

        impl<C: Client> Dispatcher<C> {
            /// Routes a request to its [`Client`] method (or hook). Results go out
            /// unserialized ([`Reply`]): the writer serializes them into its own buffer.
            pub(crate) async fn route_request(&self, method: &str, params: Params) -> Result<Reply, Error> {
                let client = &*self.client;
                match method {
                    #(#requests)*
                    m if m.starts_with('_') => {
                        Ok(Reply::new(client.ext_method(m, params.parse()?).await?))
                    }
                    m => Err(Error::method_not_found(m)),
                }
            }

            /// Routes a notification to its [`Client`] method (or hook).
            pub(crate) async fn route_notification(&self, method: &str, params: Params) -> Result<(), Error> {
                let client = &*self.client;
                match method {
                    #(#notifications)*
                    m if m.starts_with('_') => client.ext_notification(m, params.parse()?).await,
                    m => Err(Error::method_not_found(m)),
                }
            }
        }
    }
}

fn agent_handle(called: &[V1Call]) -> TokenStream {
    let methods = called.iter().map(|c| {
        let (name, params, gate) = (c.name(), &c.call.params, c.gate());
        let doc = c.doc(&[c.rust.call_doc.as_deref()]);
        let (ret, send) = if c.is_request() {
            (c.call.result_type(), quote!(self.request(&params).await))
        } else {
            (quote!(()), quote!(self.notify(&params).await))
        };
        quote! {
            #doc
            #gate
            pub async fn #name(&self, params: #params) -> Result<#ret, Error> {
                #send
            }
        }
    });
    quote! {
        use acp_rpc::Error;
        use acp_types::v1::*;

        use crate::handle::AgentHandle;

        /// The agent's methods, one per v1 method an agent serves, each with its timeout
        /// ([`crate::RequestTimeouts`]).
        impl AgentHandle {
            #(#methods)*
        }
    }
}

/// The one method the supervisor's relay does not simply hand on: the updates it replays
/// while reloading a session after a restart are held back by its hook.
const RELAY_FILTERED: &str = "session/update";

/// `impl Client for restart::relay::Shared<C>`: every method handed on to the application's
/// client, so that a method added to the schema reaches it through a supervised agent too.
fn relay(served: &[V1Call]) -> TokenStream {
    let methods = served.iter().map(|c| {
        let (name, params, gate) = (c.name(), &c.call.params, c.gate());
        let ret = if c.is_request() {
            c.call.result_type()
        } else {
            quote!(())
        };
        let body = if c.method().wire == RELAY_FILTERED {
            let hook = c.hook();
            quote!(self.#hook(params).await)
        } else {
            quote!(self.0.client.#name(params).await)
        };
        quote! {
            #gate
            async fn #name(&self, params: #params) -> Result<#ret, Error> {
                #body
            }
        }
    });
    quote! {
        #![cfg(feature = "process")]

        use acp_rpc::Error;
        use acp_types::v1::*;
        use async_trait::async_trait;
        use serde_json::Value;

        use crate::client::Client;
        use crate::restart::relay::Shared;

        #[async_trait]
        impl<C: Client> Client for Shared<C> {
            #(#methods)*

            async fn approve_terminal(
                &self,
                request: &crate::terminal::TerminalRequest,
            ) -> crate::terminal::TerminalDecision {
                self.0.client.approve_terminal(request).await
            }

            async fn ext_method(&self, method: &str, params: Value) -> Result<Value, Error> {
                self.0.client.ext_method(method, params).await
            }

            async fn ext_notification(&self, method: &str, params: Value) -> Result<(), Error> {
                self.0.client.ext_notification(method, params).await
            }
        }
    }
}
