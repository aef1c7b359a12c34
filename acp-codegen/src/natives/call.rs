//! One method of a dialect's table as the generated sides see it ([`Call`]): the trait
//! method that serves it, the arm that dispatches it, and the typed handle's method that
//! calls it.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::Error;
use crate::model::{DefKind, Method, MethodKind, NativeDefault, Schema};
use crate::unions::{docs, ident};

/// The Rust method name of a wire name: `sendUserMessage` and `session/new` become
/// `send_user_message` and `session_new`.
pub(super) fn snake_case(wire: &str) -> Ident {
    let mut out = String::new();
    for c in wire.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    ident(out.trim_end_matches('_'))
}

/// Whether a definition is a null payload (no params, or an empty result).
fn is_null(schema: &Schema, def: &str) -> bool {
    schema
        .def(def)
        .is_some_and(|d| matches!(d.kind, DefKind::Null))
}

/// One method as the generated code sees it (the legacy natives and the v1 sides).
/// Notification params that acp-types writes its usual shape of itself, byte for byte what
/// serde_json writes and several times faster (a streamed text chunk: nearly every message
/// an agent sends), and the method that does: the generated method hands it to the engine
/// with the params (`Peer::notify_value_with`).
const DIRECT_WRITERS: &[(&str, &str)] = &[("UpdateSessionNotification", "write_text_chunk")];

/// The writer of [`DIRECT_WRITERS`] for the params type named `params`.
fn direct_writer(params: &str) -> Option<&'static str> {
    DIRECT_WRITERS
        .iter()
        .find(|(name, _)| *name == params)
        .map(|(_, writer)| *writer)
}

pub(crate) struct Call<'a> {
    pub method: &'a Method,
    pub name: Ident,
    pub params: Ident,
    /// The params are a null payload: the Rust methods take none.
    pub no_params: bool,
    /// The result type, `None` for a notification or a null result (the Rust methods
    /// return `()`).
    pub result: Option<Ident>,
}

impl<'a> Call<'a> {
    pub fn new(schema: &Schema, method: &'a Method) -> Self {
        let result = method
            .result
            .as_deref()
            .filter(|r| !is_null(schema, r))
            .map(ident);
        Call {
            method,
            name: snake_case(&method.wire),
            params: ident(&method.params),
            no_params: is_null(schema, &method.params),
            result,
        }
    }

    pub(super) fn is_request(&self) -> bool {
        self.method.kind == MethodKind::Request
    }

    pub fn result_type(&self) -> TokenStream {
        match &self.result {
            Some(r) => quote!(#r),
            None => quote!(()),
        }
    }

    /// The trait method: its signature and default body. Requests an agent serves get the
    /// request's [`Context`] (the handle to the editor).
    pub(super) fn trait_method(&self, with_cx: bool) -> Result<TokenStream, Error> {
        let Call { name, params, .. } = self;
        let ret = self.result_type();
        let with_cx = with_cx && self.is_request();
        let mut args = Vec::new();
        let mut names = Vec::new();
        if !self.no_params {
            args.push(quote!(params: #params));
            names.push(quote!(params));
        }
        if with_cx {
            args.push(quote!(cx: &Context));
            names.push(quote!(cx));
        }
        let unused = match names.len() {
            0 => quote!(),
            1 => quote!(let _ = #(#names)*;),
            _ => quote!(let _ = (#(#names),*);),
        };
        let wire = &self.method.wire;
        let (body, default_doc) = match self.method.default {
            NativeDefault::NotFound if self.is_request() => (
                quote!(#unused crate::connection::not_found::<#params, _>()),
                "The default answers `-32601` (method not found).".to_string(),
            ),
            NativeDefault::NotFound | NativeDefault::Accept => {
                if self.result.is_some() {
                    return Err(Error::Schema {
                        def: format!("x-methods[{wire}]"),
                        message: "`\"x-default\": \"accept\"` needs a null result".into(),
                    });
                }
                (
                    quote!(#unused Ok(())),
                    "The default accepts and ignores it.".to_string(),
                )
            }
            NativeDefault::Dialect => (
                quote!(super::defaults::#name(#(#names),*)),
                format!("The default is the dialect's own answer (`defaults::{name}`)."),
            ),
        };
        let doc = docs(Some(&format!(
            "`{wire}`: {}\n\n{default_doc}",
            self.method.description
        )));
        Ok(quote! {
            #doc
            async fn #name(&self, #(#args),*) -> ::std::result::Result<#ret, Error> {
                #body
            }
        })
    }

    /// The dispatch arm: parse the params, call the trait method, write the result.
    pub(super) fn dispatch_arm(&self, implementor: &TokenStream, with_cx: bool) -> TokenStream {
        let Call { name, params, .. } = self;
        let wire = &self.method.wire;
        let with_cx = with_cx && self.is_request();
        let parse = if self.is_request() {
            quote!(params.parse_request::<#params>()?)
        } else {
            quote!(params.parse::<#params>()?)
        };
        let mut args = Vec::new();
        let head = if self.no_params {
            quote!(#parse;)
        } else {
            args.push(quote!(params));
            quote!(let params = #parse;)
        };
        if with_cx {
            args.push(quote!(&cx));
        }
        let call = quote!(#implementor.#name(#(#args),*).await?);
        // A request's result goes out unserialized ([`acp_rpc::Reply::new`]): the writer
        // serializes it into its own buffer, with no intermediate JSON text of its own.
        let answer = if !self.is_request() {
            quote!(#call; Ok(()))
        } else if self.result.is_some() {
            quote!(Ok(Reply::new(#call)))
        } else {
            let result = ident(self.method.result.as_deref().unwrap_or_default());
            quote!(#call; Ok(Reply::new(#result)))
        };
        quote!(#wire => { #head #answer })
    }

    /// The notification's arm of `start_notification`: its params parsed straight from the
    /// line, and the trait method's future started with them; `None` (the ordinary path,
    /// with its usual errors) when they do not parse. A null payload has none (its line
    /// carries no params to read).
    pub(super) fn start_arm(&self, implementor: &TokenStream) -> Option<TokenStream> {
        if self.is_request() || self.no_params {
            return None;
        }
        let Call { name, params, .. } = self;
        let wire = &self.method.wire;
        Some(quote! {
            #wire => {
                let params: #params = ::serde_json::from_str(params).ok()?;
                ::std::option::Option::Some(::acp_rpc::StartedNotification::new(
                    #wire,
                    async move { #implementor.#name(params).await },
                ))
            }
        })
    }

    /// The typed handle's method that calls the peer.
    pub(super) fn handle_method(&self) -> TokenStream {
        let Call { name, params, .. } = self;
        let ret = self.result_type();
        let (arg, value) = if self.no_params {
            (quote!(), quote!(&#params))
        } else {
            (quote!(params: #params), quote!(&params))
        };
        let wire = &self.method.wire;
        if !self.is_request() {
            let owned = if self.no_params {
                quote!(#params)
            } else {
                quote!(params)
            };
            // Not an `async fn`: the params are handed to the engine when the method is
            // called (written as JSON then, or passed as they are to an engine of a memory
            // pair), so the returned future holds the queued message, not the params beside
            // it. A caller's future that awaits it stays small (they are boxed per message).
            let doc = docs(Some(&format!(
                "`{wire}` (a notification): {}\n\nThe params are written (or, to an engine \
                 of a memory pair, handed over as they are) when this is called; the message \
                 is sent when the returned future is awaited, which waits only for room in \
                 the outgoing queue.",
                self.method.description
            )));
            let send = match direct_writer(&params.to_string()) {
                Some(writer) => {
                    let writer = format_ident!("{writer}");
                    quote!(self.peer.notify_value_with(#wire, #owned, Some(#params::#writer)))
                }
                None => quote!(self.peer.notify_value(#wire, #owned)),
            };
            return quote! {
                #doc
                pub fn #name(&self, #arg) -> impl ::std::future::Future<Output = ::std::result::Result<(), Error>> + Send + '_ {
                    #send
                }
            };
        }
        let body = if self.result.is_some() {
            quote!(self.peer.typed_request(#value).await)
        } else {
            quote!(self.peer.typed_request(#value).await.map(|_| ()))
        };
        let doc = docs(Some(&format!(
            "`{wire}` (waits for the answer): {}",
            self.method.description
        )));
        quote! {
            #doc
            pub async fn #name(&self, #arg) -> ::std::result::Result<#ret, Error> {
                #body
            }
        }
    }
}
