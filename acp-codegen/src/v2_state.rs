//! Generates the session-state reducer of draft protocol v2 from the `x-state` annotations
//! on the variants of v2's `SessionUpdate` (acp-schema's `CONVENTIONS.md`, "The v2 session
//! state"): `SessionState::apply`, one match arm per update kind, each calling the
//! hand-written operation of acp-client's `v2::state` that the annotation names
//! (`<op>_<collection>`, with the message role when there is one). A variant without
//! `x-state`, or an operation outside upsert/append/replace/remove, fails generation, so a
//! new update kind in the schema cannot be silently left out of the reducer.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use crate::Error;
use crate::model::{DefKind, Schema};
use crate::unions::ident;

const OPS: &[&str] = &["upsert", "append", "replace", "remove"];

fn err(message: String) -> Error {
    Error::Schema {
        def: "SessionUpdate".into(),
        message,
    }
}

/// `toolCalls` -> `tool_calls`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The `impl SessionState { pub fn apply(..) }` of acp-client's `v2` module.
pub fn generate(schema: &Schema) -> Result<TokenStream, Error> {
    let Some(DefKind::TaggedUnion(union)) = schema.def("SessionUpdate").map(|d| &d.kind) else {
        return Err(err("v2 needs a tagged union `SessionUpdate`".into()));
    };
    let raw = schema.document["$defs"]["SessionUpdate"]["oneOf"]
        .as_array()
        .ok_or_else(|| err("`oneOf` expected".into()))?;
    let mut arms = Vec::new();
    for variant in &union.variants {
        let tag = variant
            .tag_value
            .as_deref()
            .ok_or_else(|| err(format!("`{}` has no tag", variant.rust_name)))?;
        let entry = raw
            .iter()
            .find(|m| m["properties"]["sessionUpdate"]["const"] == tag)
            .ok_or_else(|| err(format!("no variant `{tag}` in the document")))?;
        let state = &entry["x-state"];
        let op = state["op"]
            .as_str()
            .filter(|op| OPS.contains(op))
            .ok_or_else(|| {
                err(format!(
                    "`{tag}` needs `x-state` with an `op` of {}",
                    OPS.join(", ")
                ))
            })?;
        let collection = state["collection"]
            .as_str()
            .ok_or_else(|| err(format!("`{tag}`'s `x-state` needs a `collection`")))?;
        let method = format_ident!("{op}_{}", snake(collection));
        let rust = ident(&variant.rust_name);
        let role = match state.get("role").and_then(Value::as_str) {
            Some(role) => {
                let role = ident(&crate::model::pascal_case(role));
                quote!(MessageRole::#role,)
            }
            None => quote!(),
        };
        // A boxed body (`x-boxed`) is handed on as the body itself.
        let body = if variant.boxed {
            quote!(body.as_ref())
        } else {
            quote!(body)
        };
        arms.push(quote! {
            SessionUpdate::#rust(body) => self.#method(#role #body),
        });
    }
    Ok(quote! {
        use acp_types::v2::SessionUpdate;

        use super::{MessageRole, SessionState};

        impl SessionState {
            /// Applies one `session/update` to the session as the client keeps it, as the
            /// schema's `x-state` annotation of its kind says (upsert, append, replace or
            /// remove in one part of the session). Returns `false` for an update kind this
            /// schema does not know (kept as raw JSON in `SessionUpdate::Unknown`), which
            /// changes nothing.
            pub fn apply(&mut self, update: &SessionUpdate) -> bool {
                match update {
                    #(#arms)*
                    SessionUpdate::Unknown(_) => return false,
                }
                true
            }
        }
    })
}
