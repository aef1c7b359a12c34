//! acp-agent's generated files: the [`Agent`] trait, its dispatch, and the methods of the
//! `ClientHandle` an agent calls the client with.
//!
//! What the generated code expects of acp-agent (hand-written): `crate::Error`;
//! `crate::context::{AgentContext, PromptContext}`; `crate::dispatch::{Dispatch, Incoming}`
//! with `Dispatch::agent`, `Incoming::cx` and `Incoming::known`; a `<name>_hook` method on
//! `Dispatch` for every method marked `"serve": "hook"`; and on `ClientHandle`: `request`,
//! `notify`, `require` (client capability), `require_offered` (the agent's own) and a
//! `<name>_hook` for every method marked `"call": "hook"`.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use super::{SideFile, V1Call, capability_check, served_by};
use crate::Error;
use crate::model::{Method, Schema, Side};

/// The three files, each a `generated` child of the module it belongs to (`agent`,
/// `dispatch`, `handle`), so the hand-written modules and the generated code form no import
/// circle.
pub(super) fn generate(
    schema: &Schema,
    overlay: &[(Method, Value)],
) -> Result<Vec<SideFile>, Error> {
    let served = served_by(schema, overlay, Side::Agent)?;
    let called = served_by(schema, overlay, Side::Client)?;
    Ok(vec![
        SideFile {
            path: "acp-agent/src/agent/generated.rs",
            what: "the Agent trait",
            tokens: agent_trait(&served)?,
        },
        SideFile {
            path: "acp-agent/src/dispatch/generated.rs",
            what: "the agent's dispatch",
            tokens: dispatch(&served),
        },
        SideFile {
            path: "acp-agent/src/handle/generated.rs",
            what: "the agent's handle to the client",
            tokens: client_handle(schema, &called)?,
        },
    ])
}

fn agent_trait(served: &[V1Call]) -> Result<TokenStream, Error> {
    let methods = served.iter().map(trait_method);
    Ok(quote! {
        use acp_types::v1::*;
        use async_trait::async_trait;

        use crate::Error;
        use crate::context::{AgentContext, PromptContext};

        /// What an ACP agent implements: one method per v1 method an agent serves. Only
        /// [`Agent::initialize`] is required; every other request defaults to "method not
        /// found" (`-32601`), `session/cancel` to a no-op (the connection already signals the
        /// prompt's cancellation token, see [`PromptContext::cancelled`]), and notifications
        /// and extension notifications are ignored.
        ///
        /// Requests run concurrently; the connection answers requests that arrive before a
        /// successful `initialize` itself, and answers `-32002` for calls naming a session
        /// it does not know where the method says so (sessions are learned from the results
        /// of `session/new`, `session/load` and `session/resume`).
        ///
        /// Generated from the method table (acp-schema's `v1.json` and `v1-unstable.json`):
        /// a method added there appears here with its default.
        #[async_trait]
        pub trait Agent: Send + Sync + 'static {
            #(#methods)*

            /// A request whose method starts with `_` (an extension), with its raw params.
            /// The default answers `-32601` (method not found).
            async fn ext_method(
                &self,
                method: &str,
                params: serde_json::Value,
                cx: &AgentContext,
            ) -> Result<serde_json::Value, Error> {
                let _ = (params, cx);
                Err(Error::method_not_found(method))
            }

            /// A notification whose method starts with `_` (an extension). Ignored by default.
            async fn ext_notification(&self, method: &str, params: serde_json::Value) {
                let _ = (method, params);
            }
        }
    })
}

fn trait_method(c: &V1Call) -> TokenStream {
    let name = c.name();
    let params = &c.call.params;
    let gate = c.gate();
    if !c.is_request() {
        let doc = c.doc(&[c.rust.doc.as_deref(), Some("Ignored by default.")]);
        return quote! {
            #doc
            #gate
            async fn #name(&self, params: #params) {
                let _ = params;
            }
        };
    }
    let ret = c.call.result_type();
    let context = if c.rust.prompt_context {
        quote!(PromptContext)
    } else {
        quote!(AgentContext)
    };
    let signature =
        quote!(async fn #name(&self, params: #params, cx: &#context) -> Result<#ret, Error>);
    if c.rust.required {
        let doc = c.doc(&[c.rust.doc.as_deref()]);
        return quote!(#doc #gate #signature;);
    }
    let doc = c.doc(&[
        c.rust.doc.as_deref(),
        Some("The default answers `-32601` (method not found)."),
    ]);
    let wire = c.wire_const();
    quote! {
        #doc
        #gate
        #signature {
            let _ = (params, cx);
            Err(Error::method_not_found(#wire))
        }
    }
}

fn dispatch(served: &[V1Call]) -> TokenStream {
    let requests = served.iter().filter(|c| c.is_request()).map(request_arm);
    let notifications = served
        .iter()
        .filter(|c| !c.is_request())
        .map(notification_arm);
    quote! {
        use acp_rpc::{Params, RawValue, to_raw};
        use acp_types::v1::*;

        use crate::Error;
        use crate::agent::Agent;
        use crate::dispatch::{Dispatch, Incoming};

        impl<A: Agent> Dispatch<A> {
            /// Routes a request to its [`Agent`] method or, where the connection keeps
            /// bookkeeping around it, to the method's hook.
            pub(crate) async fn route_request(
                &self,
                call: &mut Incoming,
                method: &str,
                params: Params,
            ) -> Result<Box<RawValue>, Error> {
                let agent = &*self.agent;
                match method {
                    #(#requests)*
                    m if m.starts_with('_') => {
                        let value: serde_json::Value = params.parse()?;
                        to_raw(&agent.ext_method(m, value, &call.cx).await?)
                    }
                    _ => Err(Error::method_not_found(method)),
                }
            }

            /// Routes a notification to its [`Agent`] method or hook.
            pub(crate) async fn route_notification(
                &self,
                method: &str,
                params: Params,
            ) -> Result<(), Error> {
                let agent = &*self.agent;
                match method {
                    #(#notifications)*
                    m if m.starts_with('_') => {
                        let value: serde_json::Value = params.parse()?;
                        agent.ext_notification(m, value).await;
                        Ok(())
                    }
                    _ => Err(Error::method_not_found(method)),
                }
            }
        }
    }
}

fn request_arm(c: &V1Call) -> TokenStream {
    let wire = &c.method().wire;
    let gate = c.gate();
    let params = &c.call.params;
    let known = c
        .rust
        .known_session
        .then(|| quote!(call.known(&params.session_id)?;));
    if c.rust.hook_parses {
        let hook = c.hook();
        return quote! {
            #gate
            #wire => to_raw(&self.#hook(call, params).await?),
        };
    }
    let answer = if c.rust.serve_hook {
        let hook = c.hook();
        quote!(self.#hook(call, params).await?)
    } else {
        let name = c.name();
        quote!(agent.#name(params, &call.cx).await?)
    };
    quote! {
        #gate
        #wire => {
            let params = params.parse_request::<#params>()?;
            #known
            to_raw(&#answer)
        }
    }
}

fn notification_arm(c: &V1Call) -> TokenStream {
    let wire = &c.method().wire;
    let gate = c.gate();
    let params = &c.call.params;
    let handle = if c.rust.serve_hook {
        let hook = c.hook();
        quote!(self.#hook(params).await)
    } else {
        let name = c.name();
        quote! {{
            agent.#name(params).await;
            Ok(())
        }}
    };
    quote! {
        #gate
        #wire => {
            let params = params.parse_notification::<#params>()?;
            #handle
        }
    }
}

fn client_handle(schema: &Schema, called: &[V1Call]) -> Result<TokenStream, Error> {
    let methods = called
        .iter()
        .map(|c| handle_method(schema, c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(quote! {
        use acp_types::v1::*;

        use crate::Error;
        use crate::handle::ClientHandle;

        /// The client's methods, one per v1 method a client serves, each refused locally
        /// (never sent) when the client did not advertise the capability it needs
        /// ([`crate::CAPABILITY_NOT_ADVERTISED`]).
        impl ClientHandle {
            #(#methods)*
        }
    })
}

fn handle_method(schema: &Schema, c: &V1Call) -> Result<TokenStream, Error> {
    let name = c.name();
    let params = &c.call.params;
    let gate = c.gate();
    let wire = c.wire_const();
    let mut checks = Vec::new();
    let mut notes = Vec::new();
    if let Some(path) = &c.rust.capability {
        let has = capability_check(schema, "ClientCapabilities", path, quote!(c))?;
        checks.push(quote!(self.require(#wire, #path, |c| #has)?;));
        notes.push(format!("Needs the client capability `{path}`."));
    }
    if let Some(path) = &c.rust.offered {
        let has = capability_check(schema, "AgentCapabilities", path, quote!(a))?;
        checks.push(quote!(self.require_offered(#wire, #path, |a| #has)?;));
        notes.push(format!(
            "Refused locally (never sent) unless this agent's own `initialize` answer \
             advertised `{path}`."
        ));
    }
    let mut extra: Vec<Option<&str>> = vec![c.rust.call_doc.as_deref()];
    extra.extend(notes.iter().map(|n| Some(n.as_str())));
    let doc = c.doc(&extra);
    let (ret, send) = if c.is_request() {
        (c.call.result_type(), quote!(self.request(&params).await))
    } else {
        (quote!(()), quote!(self.notify(&params).await))
    };
    if c.rust.call_hook && checks.is_empty() {
        // The hook's own future, not one around it: a call's future is held (and moved) by
        // every caller up the stack, and a wrapper layer would add the parameters' size to it
        // (a streamed `session/update` is on this path for every chunk).
        let hook = c.hook();
        return Ok(quote! {
            #doc
            #gate
            pub fn #name(
                &self,
                params: #params,
            ) -> impl std::future::Future<Output = Result<#ret, Error>> + Send + '_ {
                self.#hook(params)
            }
        });
    }
    let body = if c.rust.call_hook {
        let hook = c.hook();
        quote!(self.#hook(params).await)
    } else {
        send
    };
    Ok(quote! {
        #doc
        #gate
        pub async fn #name(&self, params: #params) -> Result<#ret, Error> {
            #(#checks)*
            #body
        }
    })
}
