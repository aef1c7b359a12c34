//! Generates the v1 sides of acp-agent and acp-client from v1's method table (the stable
//! `x-methods` plus the unstable overlay's, each behind its feature): the trait each side
//! implements with its default answers, the dispatch of incoming messages to it, and the
//! typed handle each side calls its peer with, with the capability gates.
//!
//! This is the path the legacy natives take ([`crate::natives`]: one [`Call`] per method,
//! trait method, dispatch arm, handle method), with what v1 adds, read from each entry's
//! `x-rust` (see acp-schema's `CONVENTIONS.md`): the Rust name, the session check, the hooks
//! where the side crates keep behaviour the schema cannot say (session bookkeeping, the
//! store, prompt streams), and the capabilities a handle checks before it sends.
//!
//! The hooks are hand-written methods of the side crate's dispatcher or handle, named
//! `<name>_hook`; the generated code calls them and nothing else of the crates' insides.

mod agent;
mod annotations;
mod client;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

pub use annotations::RustSide;

use crate::Error;
use crate::model::{Method, MethodKind, Schema, Side};
use crate::natives::Call;
use crate::unions::{docs, ident};

/// One v1 method with its `x-rust` annotations.
pub(crate) struct V1Call<'a> {
    pub call: Call<'a>,
    pub rust: RustSide,
    /// The cargo feature of an unstable method (`x-unstable`).
    pub feature: Option<String>,
}

impl V1Call<'_> {
    pub fn method(&self) -> &Method {
        self.call.method
    }

    pub fn is_request(&self) -> bool {
        self.call.method.kind == MethodKind::Request
    }

    /// `#[cfg(feature = "...")]` for an unstable method, nothing for a stable one.
    pub fn gate(&self) -> TokenStream {
        match &self.feature {
            Some(f) => quote!(#[cfg(feature = #f)]),
            None => quote!(),
        }
    }

    /// `<Params as RequestMethod>::METHOD` (or `NotificationMethod`): the wire name, from the
    /// binding acp-types generated for the params type.
    pub fn wire_const(&self) -> TokenStream {
        let params = &self.call.params;
        if self.is_request() {
            quote!(<#params as acp_types::RequestMethod>::METHOD)
        } else {
            quote!(<#params as acp_types::NotificationMethod>::METHOD)
        }
    }

    /// The doc comment: the wire name and description, `extra` paragraphs, the feature.
    pub fn doc(&self, extra: &[Option<&str>]) -> TokenStream {
        let m = self.method();
        let what = if self.is_request() {
            ""
        } else {
            " (notification)"
        };
        let mut text = format!("`{}`{what}: {}", m.wire, m.description);
        for paragraph in extra.iter().flatten() {
            text.push_str("\n\n");
            text.push_str(paragraph);
        }
        if let Some(f) = &self.feature {
            text.push_str(&format!("\n\nUnstable: needs the cargo feature `{f}`."));
        }
        docs(Some(&text))
    }

    pub fn name(&self) -> proc_macro2::Ident {
        ident(&self.rust.name)
    }

    pub fn hook(&self) -> proc_macro2::Ident {
        ident(&format!("{}_hook", self.rust.name))
    }
}

/// The methods of v1 (stable, then the overlay's) that the `side` serves, with `x-rust`.
/// `$/` methods belong to the JSON-RPC engine and are left out.
pub(crate) fn served_by<'a>(
    schema: &'a Schema,
    overlay: &'a [(Method, Value)],
    side: Side,
) -> Result<Vec<V1Call<'a>>, Error> {
    let stable = schema.methods.iter().zip(schema.raw_methods());
    let unstable = overlay.iter().map(|(m, v)| (m, v));
    let mut out = Vec::new();
    for (method, raw) in stable.chain(unstable) {
        if method.wire.starts_with("$/") || !(method.side == side || method.side == Side::Protocol)
        {
            continue;
        }
        let rust = annotations::parse(method, raw)?;
        let mut call = Call::new(schema, method);
        call.name = ident(&rust.name);
        out.push(V1Call {
            call,
            rust,
            feature: raw
                .get("x-unstable")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
    Ok(out)
}

/// The parsed overlay methods with their raw entries (for `x-rust` and `x-unstable`).
fn overlay_methods(overlay_text: &str) -> Result<Vec<(Method, Value)>, Error> {
    let overlay: Value = serde_json::from_str(overlay_text).map_err(|e| Error::Schema {
        def: "(overlay)".into(),
        message: e.to_string(),
    })?;
    overlay
        .get("x-methods")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|v| Ok((crate::model::parse_method(v)?, v.clone())))
        .collect()
}

/// One generated file of a side crate: its path relative to the workspace root and its
/// tokens.
pub(crate) struct SideFile {
    pub path: &'static str,
    pub what: &'static str,
    pub tokens: TokenStream,
}

/// Generates every file of both v1 sides from the merged v1 schema (`merged_text`, the
/// stable document with the overlay's definitions) and the overlay itself (for its methods).
pub(crate) fn generate(merged_text: &str, overlay_text: &str) -> Result<Vec<SideFile>, Error> {
    let schema = crate::model::parse(merged_text)?;
    let overlay = overlay_methods(overlay_text)?;
    let mut files = agent::generate(&schema, &overlay)?;
    files.extend(client::generate(&schema, &overlay)?);
    Ok(files)
}

/// The Rust expression that reads one capability (`fs.readTextFile`, `auth.status`) off a
/// capabilities value named `root` of type `root_def`: booleans as they are, optional
/// objects by presence. The path is checked against the schema, so a renamed capability
/// fails generation instead of compiling into a wrong gate.
pub(crate) fn capability_check(
    schema: &Schema,
    root_def: &str,
    path: &str,
    root: TokenStream,
) -> Result<TokenStream, Error> {
    let segments: Vec<&str> = path.split('.').collect();
    access(schema, root_def, &segments, root, path)
}

fn access(
    schema: &Schema,
    def: &str,
    segments: &[&str],
    expr: TokenStream,
    path: &str,
) -> Result<TokenStream, Error> {
    let err = |message: String| Error::Schema {
        def: format!("x-rust capability `{path}`"),
        message,
    };
    let (seg, rest) = segments
        .split_first()
        .ok_or_else(|| err("empty path".into()))?;
    let prop = schema
        .document
        .pointer(&format!("/$defs/{def}/properties/{seg}"))
        .ok_or_else(|| err(format!("`{def}` has no property `{seg}`")))?;
    let field = ident(&crate::unstable::snake(seg));
    let reference = |v: &Value| {
        v.get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .map(str::to_string)
    };
    let boolean = prop.get("type").and_then(Value::as_str) == Some("boolean");
    // A `$ref` with a default is a plain struct field; `anyOf [X, null]` (or a `$ref`
    // without default) is an `Option`.
    let nullable = prop.get("anyOf").and_then(Value::as_array).map(|members| {
        members
            .iter()
            .find_map(reference)
            .ok_or_else(|| err(format!("`{def}.{seg}` is a union without a definition")))
    });
    match (rest.is_empty(), boolean, nullable, reference(prop)) {
        (true, true, _, _) => Ok(quote!(#expr.#field)),
        (true, false, Some(_), _) => Ok(quote!(#expr.#field.is_some())),
        (true, false, None, Some(_)) if prop.get("default").is_none() => {
            Ok(quote!(#expr.#field.is_some()))
        }
        (false, false, None, Some(next)) if prop.get("default").is_some() => {
            access(schema, &next, rest, quote!(#expr.#field), path)
        }
        (false, false, Some(next), _) => {
            let inner = access(schema, &next?, rest, quote!(v), path)?;
            Ok(quote!(#expr.#field.as_ref().is_some_and(|v| #inner)))
        }
        _ => Err(err(format!(
            "`{def}.{seg}` is neither a boolean, an optional object nor (before the last \
             segment) an object with a default"
        ))),
    }
}
