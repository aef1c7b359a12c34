//! Generates what a schema's `x-methods` says: wire-name constants, the method table, the
//! `RequestMethod`/`NotificationMethod` bindings, and one enum per sender and message kind.
//!
//! The enums are named after the side that *sends* them, as in the official SDKs:
//! `ClientRequest` holds every request a client sends (the agent serves them), `AgentResponse`
//! every result an agent sends back, and so on.

use proc_macro2::TokenStream;
use quote::quote;

use crate::Error;
use crate::model::{Method, MethodKind, Schema, Side, pascal_case};
use crate::unions::{docs, ident};

fn side_tokens(side: Side) -> TokenStream {
    match side {
        Side::Agent => quote!(crate::methods::Side::Agent),
        Side::Client => quote!(crate::methods::Side::Client),
        Side::Protocol => quote!(crate::methods::Side::Protocol),
    }
}

fn const_name(wire: &str) -> proc_macro2::Ident {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in wire.chars() {
        if c.is_ascii_alphanumeric() {
            // camelCase wire names (`getThreads`) split at the case change: `GET_THREADS`.
            if c.is_ascii_uppercase() && prev_lower {
                out.push('_');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_uppercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            prev_lower = false;
            out.push('_');
        }
    }
    ident(out.trim_end_matches('_'))
}

fn null_as_default(schema: &Schema, def: &str) -> bool {
    schema.def(def).is_some_and(|d| d.null_as_default)
}

/// Generates the methods module of one schema.
pub fn generate(schema: &Schema) -> Result<TokenStream, Error> {
    let consts = schema.methods.iter().map(|m| {
        let name = const_name(&m.wire);
        let wire = &m.wire;
        let doc = docs(Some(&format!("`{wire}`: {}", m.description)));
        quote! { #doc pub const #name: &str = #wire; }
    });

    let table = schema.methods.iter().map(|m| {
        let wire = &m.wire;
        let side = side_tokens(m.side);
        let kind = match m.kind {
            MethodKind::Request => quote!(crate::methods::MethodKind::Request),
            MethodKind::Notification => quote!(crate::methods::MethodKind::Notification),
        };
        let params = &m.params;
        let result = match &m.result {
            Some(r) => quote!(::std::option::Option::Some(#r)),
            None => quote!(::std::option::Option::None),
        };
        let description = &m.description;
        quote! {
            crate::methods::MethodInfo {
                name: #wire,
                served_by: #side,
                kind: #kind,
                params_type: #params,
                result_type: #result,
                description: #description,
            },
        }
    });

    let bindings = schema.methods.iter().map(|m| {
        let params = ident(&m.params);
        let side = side_tokens(m.side);
        let wire = &m.wire;
        let params_null = null_as_default(schema, &m.params);
        match &m.result {
            Some(result) => {
                let result_ty = ident(result);
                let result_null = null_as_default(schema, result);
                quote! {
                    impl crate::methods::RequestMethod for #params {
                        const METHOD: &'static str = #wire;
                        const SERVED_BY: crate::methods::Side = #side;
                        const PARAMS_NULL_AS_DEFAULT: bool = #params_null;
                        const RESULT_NULL_AS_DEFAULT: bool = #result_null;
                        type Response = #result_ty;
                    }
                }
            }
            None => quote! {
                impl crate::methods::NotificationMethod for #params {
                    const METHOD: &'static str = #wire;
                    const SERVED_BY: crate::methods::Side = #side;
                    const PARAMS_NULL_AS_DEFAULT: bool = #params_null;
                }
            },
        }
    });

    let client_requests = select(schema, Side::Agent, MethodKind::Request);
    let agent_requests = select(schema, Side::Client, MethodKind::Request);
    let client_notifications = select(schema, Side::Agent, MethodKind::Notification);
    let agent_notifications = select(schema, Side::Client, MethodKind::Notification);
    let protocol_notifications = select(schema, Side::Protocol, MethodKind::Notification);

    let client_request = message_enum(
        schema,
        "ClientRequest",
        "A request a client sends and the agent serves, with its params.",
        &client_requests,
        Payload::Params,
    );
    let agent_request = message_enum(
        schema,
        "AgentRequest",
        "A request an agent sends and the client serves, with its params.",
        &agent_requests,
        Payload::Params,
    );
    let client_notification = message_enum(
        schema,
        "ClientNotification",
        "A notification a client sends to the agent.",
        &[client_notifications.clone(), protocol_notifications.clone()].concat(),
        Payload::Params,
    );
    let agent_notification = message_enum(
        schema,
        "AgentNotification",
        "A notification an agent sends to the client.",
        &[agent_notifications.clone(), protocol_notifications.clone()].concat(),
        Payload::Params,
    );
    let agent_response = message_enum(
        schema,
        "AgentResponse",
        "A result an agent sends back for a `ClientRequest`.",
        &client_requests,
        Payload::Result,
    );
    let client_response = message_enum(
        schema,
        "ClientResponse",
        "A result a client sends back for an `AgentRequest`.",
        &agent_requests,
        Payload::Result,
    );

    Ok(quote! {
        use super::types::*;

        /// The wire name of every method of this dialect.
        pub mod names {
            #( #consts )*
        }

        /// Every method of this dialect: wire name, serving side, kind, params and result types.
        pub const METHODS: &[crate::methods::MethodInfo] = &[ #( #table )* ];

        #( #bindings )*

        #client_request
        #agent_request
        #client_notification
        #agent_notification
        #agent_response
        #client_response
    })
}

fn select(schema: &Schema, side: Side, kind: MethodKind) -> Vec<Method> {
    schema
        .methods
        .iter()
        .filter(|m| m.side == side && m.kind == kind)
        .cloned()
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Payload {
    Params,
    Result,
}

fn message_enum(
    schema: &Schema,
    name: &str,
    doc: &str,
    methods: &[Method],
    payload: Payload,
) -> TokenStream {
    let enum_name = ident(name);
    let doc = docs(Some(doc));
    let variants: Vec<_> = methods
        .iter()
        .map(|m| ident(&pascal_case(&m.wire)))
        .collect();
    let types: Vec<_> = methods
        .iter()
        .map(|m| match payload {
            Payload::Params => ident(&m.params),
            Payload::Result => ident(m.result.as_deref().unwrap_or(&m.params)),
        })
        .collect();
    let nulls: Vec<bool> = methods
        .iter()
        .map(|m| match payload {
            Payload::Params => null_as_default(schema, &m.params),
            Payload::Result => null_as_default(schema, m.result.as_deref().unwrap_or(&m.params)),
        })
        .collect();
    let wires: Vec<&str> = methods.iter().map(|m| m.wire.as_str()).collect();
    let variant_docs = methods.iter().map(|m| {
        let text = format!("`{}`: {}", m.wire, m.description);
        docs(Some(&text))
    });
    let what = match payload {
        Payload::Params => "params",
        Payload::Result => "result",
    };
    let decode_doc = format!(
        "Reads the {what} of `method` from JSON (text, `RawValue` or `Value`).\n\nMethods starting with `_` are extensions and keep their {what} as raw JSON; any other unknown method is `DecodeError::UnknownMethod`."
    );
    let payload_doc = format!("Serializes the {what} of this message.");
    let serde_impls = (payload == Payload::Params).then(|| {
        quote! {
            impl ::serde::Serialize for #enum_name {
                fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                    use ::serde::ser::SerializeStruct;
                    let mut s = serializer.serialize_struct(stringify!(#enum_name), 2)?;
                    s.serialize_field("method", self.method())?;
                    match self {
                        #( Self::#variants(params) => s.serialize_field("params", params)?, )*
                        Self::Extension { params, .. } => s.serialize_field("params", params)?,
                    }
                    s.end()
                }
            }
            impl<'de> ::serde::Deserialize<'de> for #enum_name {
                fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                    let message = <crate::methods::RawMessage as ::serde::Deserialize>::deserialize(deserializer)?;
                    Self::decode(&message.method, message.params).map_err(::serde::de::Error::custom)
                }
            }
        }
    });
    let payload_serialize = (payload == Payload::Result).then(|| {
        quote! {
            impl ::serde::Serialize for #enum_name {
                fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                    match self {
                        #( Self::#variants(value) => value.serialize(serializer), )*
                        Self::Extension { params, .. } => params.serialize(serializer),
                    }
                }
            }
        }
    });
    quote! {
        #doc
        #[derive(Clone, Debug, PartialEq)]
        pub enum #enum_name {
            #( #variant_docs #variants(#types), )*
            /// An extension method (its name starts with `_`), kept as raw JSON.
            Extension {
                /// The method's wire name.
                method: ::std::string::String,
                /// Its payload, untouched.
                params: ::serde_json::Value,
            },
        }
        impl #enum_name {
            /// The wire name of the method.
            pub fn method(&self) -> &str {
                match self {
                    #( Self::#variants(_) => #wires, )*
                    Self::Extension { method, .. } => method,
                }
            }
            #[doc = #decode_doc]
            pub fn decode(method: &str, payload: impl crate::methods::Payload) -> ::std::result::Result<Self, crate::methods::DecodeError> {
                match method {
                    #( #wires => payload.parse::<#types>(#nulls).map(Self::#variants).map_err(|e| crate::methods::DecodeError::invalid(method, e)), )*
                    _ if method.starts_with('_') => payload
                        .parse::<::serde_json::Value>(false)
                        .map(|params| Self::Extension { method: method.to_owned(), params })
                        .map_err(|e| crate::methods::DecodeError::invalid(method, e)),
                    _ => ::std::result::Result::Err(crate::methods::DecodeError::UnknownMethod(method.to_owned())),
                }
            }
            #[doc = #payload_doc]
            pub fn payload_to_value(&self) -> ::serde_json::Result<::serde_json::Value> {
                match self {
                    #( Self::#variants(value) => ::serde_json::to_value(value), )*
                    Self::Extension { params, .. } => ::std::result::Result::Ok(params.clone()),
                }
            }
        }
        #serde_impls
        #payload_serialize
    }
}
