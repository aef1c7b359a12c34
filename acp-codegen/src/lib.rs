//! The acp-rs code generator: one schema document in, one Rust module out.
//!
//! The schemas live in `acp-schema` and follow its `CONVENTIONS.md`. For each dialect the
//! generator writes two files into `acp-types/src/generated/<dialect>/`:
//!
//! - `types.rs`: every definition. Objects and newtypes come from [typify]; enums, unions and
//!   integer codes are generated here with `quote`, because typify gets them wrong: it makes
//!   tagged unions untagged, loses open enums, ignores our `x-` annotations and merges
//!   colliding names.
//! - `methods.rs`: wire-name constants, the method table, `RequestMethod`/`NotificationMethod`
//!   bindings and the per-sender message enums, all from the schema's `x-methods`.
//!
//! For each legacy dialect of [`NATIVE_SIDES`] it also writes the dialect's own two sides
//! (native traits with their defaults, dispatch, typed handles, `serve`/`connect`) into
//! `acp-dialects/src/generated/<module>.rs`, from the same `x-methods`; and for v1 the
//! same three pieces of acp-agent and acp-client (each a `generated.rs` child of the module it
//! belongs to: `agent`, `dispatch`, `handle`; and acp-client's restart relay), from v1's
//! `x-methods` and their `x-rust` annotations ([`generate_v1_sides`]).
//!
//! Generation does no file IO: [`generate_all`] returns paths and contents, and
//! [`sync::sync`] writes or checks them for `cargo xtask codegen [--check]`. Output is
//! formatted with prettyplease and is byte-for-byte deterministic (definitions keep document order; typify's maps are ordered).
#![deny(missing_docs)]

mod constructors;
pub mod drift;
mod extra;
mod methods;
pub mod model;
mod natives;
mod structs;
pub mod sync;
mod unions;
pub mod unstable;
mod v1_sides;
mod v2_state;

pub use v1_sides::RustSide;

use std::path::PathBuf;

use quote::quote;

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The schema does not follow the conventions.
    #[error("schema definition `{def}`: {message}")]
    Schema {
        /// The definition (or method) at fault.
        def: String,
        /// What is wrong.
        message: String,
    },
    /// typify failed, or produced something the generator cannot use.
    #[error("typify: {0}")]
    Typify(String),
    /// The generated tokens are not valid Rust (a generator bug).
    #[error("generated code does not parse: {0}")]
    Render(String),
}

/// One generated file: its path relative to the workspace root, and its full contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the workspace root, with `/` separators.
    pub path: PathBuf,
    /// File contents.
    pub contents: String,
}

/// The two modules generated from one schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialectModule {
    /// `types.rs`: the data types.
    pub types: String,
    /// `methods.rs`: the method table and message enums.
    pub methods: String,
}

/// Generates the modules of one schema document (`source` names it in the file headers).
pub fn generate_dialect(schema_text: &str, source: &str) -> Result<DialectModule, Error> {
    let schema = model::parse(schema_text)?;
    let (mut types, signatures) = structs::generate(&schema)?;
    for def in &schema.defs {
        let tokens = match &def.kind {
            model::DefKind::StringEnum(e) => unions::string_enum(def, e),
            model::DefKind::TaggedUnion(u) => unions::tagged_union(def, u, &signatures)?,
            model::DefKind::UntaggedUnion(m) => unions::untagged_union(def, m)?,
            model::DefKind::Code(c) => unions::code(def, c)?,
            model::DefKind::Object(o) if structs::is_empty_object(o) => structs::empty_object(def),
            model::DefKind::Null => structs::null_payload(def),
            _ => continue,
        };
        let file: syn::File =
            syn::parse2(tokens).map_err(|e| Error::Render(format!("{}: {e}", def.name)))?;
        types.extend(file.items);
    }
    // Order items by the definition they belong to, so the file reads like the schema.
    let order = |item: &syn::Item| -> usize {
        let name = item_type_name(item);
        name.and_then(|n| schema.defs.iter().position(|d| d.name == n))
            .unwrap_or(usize::MAX)
    };
    types.sort_by_key(order);
    let types_file: syn::File =
        syn::parse2(quote!(#(#types)*)).map_err(|e| Error::Render(e.to_string()))?;
    let types_text = format!(
        "{}{}",
        header(source, &schema.dialect, "types"),
        prettyplease::unparse(&types_file)
    );

    let methods_tokens = methods::generate(&schema)?;
    let methods_file: syn::File =
        syn::parse2(quote!(#methods_tokens)).map_err(|e| Error::Render(e.to_string()))?;
    let methods_text = format!(
        "{}{}",
        header(source, &schema.dialect, "methods"),
        prettyplease::unparse(&methods_file)
    );
    Ok(DialectModule {
        types: types_text,
        methods: methods_text,
    })
}

/// The type an item defines or implements, used to keep related items together.
fn item_type_name(item: &syn::Item) -> Option<String> {
    match item {
        syn::Item::Struct(s) => Some(s.ident.to_string()),
        syn::Item::Enum(e) => Some(e.ident.to_string()),
        syn::Item::Impl(i) => match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        },
        _ => None,
    }
}

fn header(source: &str, dialect: &str, part: &str) -> String {
    format!(
        "// @generated by `cargo xtask codegen` from acp-schema/schemas/{source} (dialect `{dialect}`, {part}).\n\
         // Do not edit by hand: change the schema or acp-codegen and regenerate.\n\n"
    )
}

/// Where the generated modules of a dialect live, relative to the workspace root.
pub fn module_dir(dialect: &str) -> PathBuf {
    PathBuf::from("acp-types/src/generated").join(dialect.replace(['-', '.'], "_"))
}

/// The legacy dialects whose own two sides are generated into acp-dialects: the dialect's
/// name (as in `acp_schema::ALL`) and its module, both in acp-dialects and in
/// `acp_types::legacy`. The generated file is `acp-dialects/src/generated/<module>.rs`,
/// included by the hand-written module as its `native` submodule.
pub const NATIVE_SIDES: &[(&str, &str)] = &[
    ("legacy-0.0.9", "v0_0_9"),
    ("threads", "threads"),
    ("probe", "probe"),
];

/// Generates the native sides of one dialect's schema (see [`NATIVE_SIDES`]); `module` is the
/// dialect's module in acp-dialects and in `acp_types::legacy`.
pub fn generate_native_sides(
    schema_text: &str,
    source: &str,
    module: &str,
) -> Result<String, Error> {
    let schema = model::parse(schema_text)?;
    let tokens = natives::generate(&schema, module)?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| Error::Render(e.to_string()))?;
    Ok(format!(
        "{}{}",
        header(source, &schema.dialect, "native sides"),
        prettyplease::unparse(&file)
    ))
}

/// Generates the two sides of draft protocol v2 (the same shape as a legacy dialect's native
/// sides: the `Agent` and `Client` traits with their defaults, dispatch, the typed handles,
/// `serve`/`connect`) into `acp-dialects/src/generated/v2.rs`, over `acp_types::v2`.
pub fn generate_v2_sides(schema_text: &str, source: &str) -> Result<String, Error> {
    let schema = model::parse(schema_text)?;
    let types: syn::Path = syn::parse_quote!(acp_types::v2);
    // Keyed `session/prompt` retries are answered by a hand-written layer (acp-dialects'
    // `v2/prompt_keys.rs`).
    let layer: syn::Path = syn::parse_quote!(super::prompt_keys::PromptKeys::new);
    let tokens = natives::generate_with_types(&schema, &types, Some(&layer))?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| Error::Render(e.to_string()))?;
    Ok(format!(
        "{}{}",
        header(source, &schema.dialect, "sides"),
        prettyplease::unparse(&file)
    ))
}

/// Generates draft protocol v2's session-state reducer (`SessionState::apply` of acp-client's
/// `v2` module) from the `x-state` annotations of v2's `SessionUpdate`.
pub fn generate_v2_state(schema_text: &str, source: &str) -> Result<String, Error> {
    let schema = model::parse(schema_text)?;
    let tokens = v2_state::generate(&schema)?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| Error::Render(e.to_string()))?;
    Ok(format!(
        "{}{}",
        header(source, &schema.dialect, "session-state reducer"),
        prettyplease::unparse(&file)
    ))
}

/// Generates the v1 sides of acp-agent and acp-client from the v1 document and its unstable
/// overlay: each side's trait with its defaults, its dispatch and its typed handle to the
/// peer, every unstable method behind its feature.
pub fn generate_v1_sides(v1_text: &str, overlay_text: &str) -> Result<Vec<GeneratedFile>, Error> {
    let (merged, _) = unstable::merge(v1_text, overlay_text)?;
    v1_sides::generate(&merged, overlay_text)?
        .into_iter()
        .map(|file| {
            let parsed: syn::File = syn::parse2(file.tokens)
                .map_err(|e| Error::Render(format!("{}: {e}", file.path)))?;
            Ok(GeneratedFile {
                path: PathBuf::from(file.path),
                contents: format!(
                    "// @generated by `cargo xtask codegen` from acp-schema/schemas/v1.json and \
                     v1-unstable.json ({}).\n\
                     // Do not edit by hand: change the schema or acp-codegen and regenerate.\n\n{}",
                    file.what,
                    prettyplease::unparse(&parsed)
                ),
            })
        })
        .collect()
}

/// Generates every file for every schema in `acp_schema::ALL`.
pub fn generate_all() -> Result<Vec<GeneratedFile>, Error> {
    let mut files = Vec::new();
    for doc in acp_schema::ALL {
        let module = if doc.dialect == "v1" {
            // The unstable overlay joins v1, every piece of it behind its cargo feature.
            let (merged, overlay) = unstable::merge(doc.text, acp_schema::V1_UNSTABLE)?;
            let mut module = generate_dialect(&merged, doc.file_name)?;
            module.types = unstable::gate(&module.types, &overlay)?;
            module
        } else {
            generate_dialect(doc.text, doc.file_name)?
        };
        let dir = module_dir(doc.dialect);
        files.push(GeneratedFile {
            path: dir.join("types.rs"),
            contents: module.types,
        });
        files.push(GeneratedFile {
            path: dir.join("methods.rs"),
            contents: module.methods,
        });
    }
    for &(dialect, module) in NATIVE_SIDES {
        let doc = acp_schema::ALL
            .iter()
            .find(|d| d.dialect == dialect)
            .ok_or_else(|| Error::Schema {
                def: dialect.to_string(),
                message: "NATIVE_SIDES names a dialect that is not in acp_schema::ALL".into(),
            })?;
        files.push(GeneratedFile {
            path: PathBuf::from("acp-dialects/src/generated").join(format!("{module}.rs")),
            contents: generate_native_sides(doc.text, doc.file_name, module)?,
        });
    }
    files.push(GeneratedFile {
        path: PathBuf::from("acp-dialects/src/generated/v2.rs"),
        contents: generate_v2_sides(acp_schema::V2, "v2.json")?,
    });
    files.push(GeneratedFile {
        path: PathBuf::from("acp-client/src/generated/v2_state.rs"),
        contents: generate_v2_state(acp_schema::V2, "v2.json")?,
    });
    let v1 = acp_schema::ALL
        .iter()
        .find(|d| d.dialect == "v1")
        .ok_or_else(|| Error::Schema {
            def: "v1".into(),
            message: "acp_schema::ALL has no v1 document".into(),
        })?;
    files.extend(generate_v1_sides(v1.text, acp_schema::V1_UNSTABLE)?);
    Ok(files)
}
