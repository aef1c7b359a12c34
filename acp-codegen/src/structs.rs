//! Object structs and newtypes: typify generates them, then we fix what it cannot know.
//!
//! typify is given only the plain shapes (objects, string and integer newtypes); every enum and
//! union is swapped for our own type with `with_replacement`. Its output is then rewritten with
//! `syn`: fields go back to schema order, serde attributes are rebuilt from our absent/null/
//! default and leniency rules, enum-typed optional fields that have a default lose their
//! `Option`, `_meta` becomes the boxed `crate::Meta`, and shape-8 objects get their
//! `#[serde(flatten)]` union field.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use serde_json::{Map, Value};
use syn::{Attribute, Field, Fields, Item, ItemStruct};

use crate::Error;
use crate::constructors::{self, CtorField, Signatures};
use crate::model::{DefKind, ObjectDef, Prop, Schema};
use crate::unions::{docs, ident};

/// Where the hand-written serde helpers live, seen from the generated module.
const SERDE_UTIL: &str = "crate::serde_util";

/// The hand-written type of every `_meta` property, seen from the generated module: a boxed
/// map, so that an absent `_meta` costs one pointer instead of an inline `serde_json::Map`
/// in every protocol value (the parser moves values by value, so their size is parse time).
const META: &str = "crate::Meta";

/// The three-state type of `x-patch` properties (hand-written in acp-types).
const PATCH: &str = "crate::Patch";

/// `T` of an `::std::option::Option<T>`.
fn generic_option(ty: &syn::Type) -> Option<syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => match a.args.first()? {
            syn::GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Runs typify over the plain definitions and returns the rewritten items, with the
/// constructors of every object type and the `new` signatures the union constructors forward to.
pub fn generate(schema: &Schema) -> Result<(Vec<Item>, Signatures), Error> {
    let mut defs = Map::new();
    let mut settings = typify::TypeSpaceSettings::default();
    settings
        .with_struct_builder(false)
        .with_derive("PartialEq".to_string())
        .with_map_type("::std::collections::BTreeMap".to_string());
    for def in &schema.defs {
        let raw = &schema.document["$defs"][&def.name];
        match &def.kind {
            DefKind::Object(obj) if is_empty_object(obj) => {
                // typify turns `{}` objects into map newtypes; ours is an empty struct.
                defs.insert(def.name.clone(), Value::Object(Map::new()));
                settings.with_replacement(
                    def.name.clone(),
                    def.name.clone(),
                    std::iter::empty::<typify::TypeSpaceImpl>(),
                );
            }
            DefKind::Object(_) => {
                let mut plain = strip_annotations(raw);
                if let Value::Object(o) = &mut plain {
                    o.remove("allOf");
                }
                defs.insert(def.name.clone(), plain);
            }
            DefKind::StringNewtype | DefKind::IntegerNewtype => {
                defs.insert(def.name.clone(), strip_annotations(raw));
            }
            _ => {
                // Our own generated type stands in; typify only needs the name to resolve.
                defs.insert(def.name.clone(), Value::Object(Map::new()));
                settings.with_replacement(
                    def.name.clone(),
                    def.name.clone(),
                    std::iter::empty::<typify::TypeSpaceImpl>(),
                );
            }
        }
    }
    let root = serde_json::json!({ "$defs": defs });
    let root: schemars08::schema::RootSchema =
        serde_json::from_value(root).map_err(|e| Error::Typify(e.to_string()))?;
    let mut space = typify::TypeSpace::new(&settings);
    space
        .add_root_schema(root)
        .map_err(|e| Error::Typify(e.to_string()))?;
    let mut file: syn::File =
        syn::parse2(space.to_stream()).map_err(|e| Error::Typify(e.to_string()))?;
    syn::visit_mut::VisitMut::visit_file_mut(&mut DocSpacing, &mut file);
    let objects: BTreeSet<&str> = schema
        .defs
        .iter()
        .filter(|d| matches!(d.kind, DefKind::Object(_)))
        .map(|d| d.name.as_str())
        .collect();
    syn::visit_mut::VisitMut::visit_file_mut(
        &mut crate::extra::FillLiterals {
            objects: &objects,
            self_type: None,
        },
        &mut file,
    );

    let known: BTreeSet<&str> = schema.defs.iter().map(|d| d.name.as_str()).collect();
    let mut items = Vec::new();
    let mut signatures = Signatures::new();
    for def in &schema.defs {
        match &def.kind {
            DefKind::Object(obj) if is_empty_object(obj) => {
                signatures.insert(def.name.clone(), Vec::new());
            }
            DefKind::StringNewtype if is_constrained(&schema.document["$defs"][&def.name]) => {
                // typify checks `minLength`/`maxLength`/`pattern` in `FromStr`, `TryFrom<&str>`
                // and `Deserialize`; an infallible `From<&str>` would conflict and skip them.
            }
            DefKind::StringNewtype => {
                // Ids and other string newtypes are written as literals most of the time.
                let name = ident(&def.name);
                items.push(syn::parse_quote! {
                    impl ::std::convert::From<&str> for #name {
                        fn from(value: &str) -> Self {
                            Self(value.to_owned())
                        }
                    }
                });
            }
            _ => {}
        }
    }
    for item in file.items {
        match item {
            Item::Struct(mut s) => {
                let name = s.ident.to_string();
                if !known.contains(name.as_str()) {
                    return Err(Error::Typify(format!(
                        "typify invented the type `{name}`: give every nested type a name in `$defs`"
                    )));
                }
                if let Some(DefKind::Object(obj)) = schema.def(&name).map(|d| &d.kind) {
                    let mut fields = rewrite_object(schema, &name, obj, &mut s)?;
                    fields.push(crate::extra::add_field(&name, &mut s)?);
                    // Code outside acp-types builds values through `new` and the builders, so
                    // a field the schema gains later breaks none of it.
                    s.attrs.push(syn::parse_quote!(#[non_exhaustive]));
                    let (ctors, params) = constructors::object(&name, &fields)?;
                    signatures.insert(name.clone(), params);
                    items.push(Item::Struct(s));
                    let ctors: syn::File = syn::parse2(ctors)
                        .map_err(|e| Error::Render(format!("{name} constructors: {e}")))?;
                    items.extend(ctors.items);
                    let keep: syn::File = syn::parse2(crate::extra::impls(&name))
                        .map_err(|e| Error::Render(format!("{name} extra: {e}")))?;
                    items.extend(keep.items);
                } else {
                    items.push(Item::Struct(s));
                }
            }
            Item::Enum(e) => {
                return Err(Error::Typify(format!(
                    "typify generated the enum `{}`: enums must be named definitions",
                    e.ident
                )));
            }
            Item::Impl(i) if is_clone_from_ref(&i) => {}
            Item::Mod(mut m) if m.ident == "defaults" => {
                // typify names our replacement types without `super::` inside this module.
                if let Some((_, content)) = &mut m.content {
                    content.insert(
                        0,
                        syn::parse_quote!(
                            #[allow(unused_imports)]
                            use super::*;
                        ),
                    );
                }
                items.push(Item::Mod(m));
            }
            other => items.push(other),
        }
    }
    Ok((items, signatures))
}

/// A string newtype typify validates (`IdempotencyKey`: 1 to 255 characters), so that it has
/// no infallible conversion from `&str`.
fn is_constrained(raw: &Value) -> bool {
    ["minLength", "maxLength", "pattern"]
        .iter()
        .any(|k| raw.get(*k).is_some())
}

/// typify writes `///text`; rustdoc convention (and the rest of our output) is `/// text`.
struct DocSpacing;

impl syn::visit_mut::VisitMut for DocSpacing {
    fn visit_attribute_mut(&mut self, attr: &mut Attribute) {
        if !attr.path().is_ident("doc") {
            return;
        }
        if let syn::Meta::NameValue(nv) = &mut attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) = &mut nv.value
        {
            let value = text.value();
            if !value.is_empty() && !value.starts_with(' ') {
                let spaced = value
                    .lines()
                    .map(|l| format!(" {l}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                *text = syn::LitStr::new(&spaced, text.span());
            }
        }
    }
}

/// An object definition without properties (a marker such as a capability with no options).
pub fn is_empty_object(obj: &ObjectDef) -> bool {
    obj.props.is_empty() && obj.embedded.is_none()
}

/// An object without properties: a struct that reads any object, keeps its fields (all
/// unknown) and writes them back (`{}` when there were none).
pub fn empty_object(def: &crate::model::Def) -> TokenStream {
    let name = ident(&def.name);
    let doc = docs(def.description.as_deref());
    let access = crate::extra::has_extra(&def.name);
    quote! {
        #doc
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug, Default, PartialEq)]
        #[serde(transparent)]
        #[non_exhaustive]
        pub struct #name {
            /// Fields the schema does not name, kept as received and written back unchanged.
            pub extra: crate::Extra,
        }

        impl #name {
            /// The empty value (it has no fields yet; later versions may add optional ones).
            pub fn new() -> Self {
                Self::default()
            }
        }
        #access
    }
}

/// A payload that is always `null`: a unit struct that writes `null` and reads `null` or, as
/// the peers of the legacy dialects tolerate, any object (ignored).
pub fn null_payload(def: &crate::model::Def) -> TokenStream {
    let name = ident(&def.name);
    let doc = docs(def.description.as_deref());
    let util: syn::Path = syn::parse_str(SERDE_UTIL).expect("a path");
    quote! {
        #doc
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct #name;

        impl ::serde::Serialize for #name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_unit()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                #util::deserialize_null_payload(deserializer).map(|()| #name)
            }
        }
    }
}

/// typify adds `impl From<&T> for T` (a clone) to every type; it only adds noise.
fn is_clone_from_ref(i: &syn::ItemImpl) -> bool {
    let Some((path, _)) = &i.trait_ else {
        return false;
    };
    path.segments.last().is_some_and(|s| {
        s.ident == "From" && s.arguments.to_token_stream().to_string().contains('&')
    })
}

/// Drops our `x-` annotations and `default`s typify does not need to see twice.
fn strip_annotations(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with("x-"))
                .map(|(k, v)| {
                    // Inside `properties` the keys are property names, never annotations.
                    if k == "properties" {
                        let props = v
                            .as_object()
                            .map(|p| {
                                p.iter()
                                    .map(|(pk, pv)| (pk.clone(), strip_annotations(pv)))
                                    .collect::<Map<_, _>>()
                            })
                            .unwrap_or_default();
                        (k.clone(), Value::Object(props))
                    } else {
                        (k.clone(), strip_annotations(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_annotations).collect()),
        other => other.clone(),
    }
}

/// The serde settings typify wrote for a field, as `(key, value)` pairs.
fn serde_pairs(attrs: &[Attribute]) -> Result<Vec<(String, Option<String>)>, Error> {
    let mut pairs = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            if meta.input.peek(syn::Token![=]) {
                let lit: syn::LitStr = meta.value()?.parse()?;
                pairs.push((key, Some(lit.value())));
            } else {
                pairs.push((key, None));
            }
            Ok(())
        })
        .map_err(|e| Error::Typify(format!("unexpected serde attribute from typify: {e}")))?;
    }
    Ok(pairs)
}

fn rewrite_object(
    schema: &Schema,
    name: &str,
    obj: &ObjectDef,
    s: &mut ItemStruct,
) -> Result<Vec<CtorField>, Error> {
    let Fields::Named(named) = &mut s.fields else {
        return Err(Error::Typify(format!(
            "`{name}` is not a struct with named fields"
        )));
    };
    let mut fields: Vec<(usize, Field, &Prop)> = Vec::new();
    for mut field in std::mem::take(&mut named.named) {
        let pairs = serde_pairs(&field.attrs)?;
        let ident_name = field
            .ident
            .as_ref()
            .map(|i| i.to_string().trim_start_matches("r#").to_string())
            .unwrap_or_default();
        let json_name = pairs
            .iter()
            .find(|(k, _)| k == "rename")
            .and_then(|(_, v)| v.clone())
            .unwrap_or(ident_name.clone());
        let (index, prop) = obj
            .props
            .iter()
            .enumerate()
            .find(|(_, p)| p.json_name == json_name)
            .ok_or_else(|| Error::Typify(format!("`{name}.{json_name}` is not in the schema")))?;
        field.attrs.retain(|a| !a.path().is_ident("serde"));
        if prop.json_name == "_meta" {
            use_meta_type(name, &mut field)?;
        }
        let attrs = field_attrs(schema, prop, &json_name, &ident_name, &pairs, &mut field)?;
        if !attrs.is_empty() {
            field.attrs.push(syn::parse_quote!(#[serde(#attrs)]));
        }
        fields.push((index, field, prop));
    }
    fields.sort_by_key(|(i, _, _)| *i);
    let mut ctor_fields: Vec<CtorField> = fields
        .iter()
        .map(|(_, field, prop)| CtorField {
            field: field.clone(),
            required: prop.required
                && !field
                    .ty
                    .to_token_stream()
                    .to_string()
                    .replace(' ', "")
                    .starts_with("::std::option::Option<"),
            null_clears: prop.null_clears,
            patch: prop.patch,
        })
        .collect();
    named.named = fields.into_iter().map(|(_, f, _)| f).collect();
    if let Some((union, field)) = &obj.embedded {
        // The embedded union has no default, so neither has the object.
        remove_derive(&mut s.attrs, "Default");
        let union = ident(union);
        let field = ident(field);
        let doc = docs(Some(
            "The variant part of this object: its tag and fields sit beside the fields above on the wire.",
        ));
        let embedded: Field = syn::parse_quote! {
            #doc
            #[serde(flatten)]
            pub #field: #union
        };
        ctor_fields.push(CtorField {
            field: embedded.clone(),
            required: true,
            null_clears: false,
            patch: false,
        });
        named.named.push(embedded);
    }
    Ok(ctor_fields)
}

/// `_meta` (checked by the model to be any JSON object) is [`META`] instead of the
/// `serde_json::Map` typify writes for it.
fn use_meta_type(name: &str, field: &mut Field) -> Result<(), Error> {
    let map = "::serde_json::Map<::std::string::String,::serde_json::Value>";
    let meta: syn::Type = syn::parse_str(META).expect("a path");
    let ty_text = field.ty.to_token_stream().to_string().replace(' ', "");
    field.ty = if ty_text == map {
        meta
    } else if ty_text == format!("::std::option::Option<{map}>") {
        syn::parse_quote!(::std::option::Option<#meta>)
    } else {
        return Err(Error::Typify(format!(
            "`{name}._meta` is `{ty_text}`, expected a `serde_json::Map`"
        )));
    };
    Ok(())
}

fn remove_derive(attrs: &mut [Attribute], name: &str) {
    for attr in attrs.iter_mut().filter(|a| a.path().is_ident("derive")) {
        let Ok(paths) = attr.parse_args_with(
            syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
        ) else {
            continue;
        };
        let kept = paths.iter().filter(|p| !p.is_ident(name));
        *attr = syn::parse_quote!(#[derive(#(#kept),*)]);
    }
}

/// Which hand-written deserializer enforces the property's leniency rules, if any
/// (`is_meta`: the field is `_meta`, read straight into `crate::Meta`).
fn deserializer_for(prop: &Prop, is_option: bool, is_meta: bool) -> Option<&'static str> {
    match (prop.lenient, prop.skip_invalid_items, is_option) {
        (true, true, true) => Some("lenient_option_vec"),
        (true, true, false) => Some("lenient_vec"),
        (true, false, true) if is_meta => Some("lenient_meta"),
        (true, false, _) => Some("lenient"),
        (false, true, true) => Some("skip_invalid_option_items"),
        (false, true, false) => Some("skip_invalid_items"),
        (false, false, _) if prop.null_as_default => Some("null_as_default"),
        (false, false, _) => None,
    }
}

fn field_attrs(
    schema: &Schema,
    prop: &Prop,
    json_name: &str,
    ident_name: &str,
    typify_pairs: &[(String, Option<String>)],
    field: &mut Field,
) -> Result<TokenStream, Error> {
    let mut parts: Vec<TokenStream> = Vec::new();
    if json_name != ident_name {
        parts.push(quote!(rename = #json_name));
    }
    let ty_text = field.ty.to_token_stream().to_string().replace(' ', "");
    let is_option = ty_text.starts_with("::std::option::Option<");
    let is_any = ty_text == "::std::option::Option<::serde_json::Value>";

    // An optional, non-nullable reference to an enum with a default: absent means the default,
    // and the default is not written.
    let enum_default = (!prop.required && !prop.nullable && !prop.has_default)
        .then(|| prop.referenced_def())
        .flatten()
        .and_then(|r| schema.def(r))
        .filter(|d| matches!(&d.kind, DefKind::StringEnum(e) if e.default.is_some()));
    if let Some(def) = enum_default {
        let ty = ident(&def.name);
        field.ty = syn::parse_quote!(#ty);
        let skip = format!("{}::is_default", def.name);
        parts.push(quote!(default, skip_serializing_if = #skip));
    } else if prop.required {
        // A required field stays required even when lenient: only a wrong value is forgiven.
    } else if prop.patch {
        let inner = match generic_option(&field.ty) {
            Some(inner) => inner,
            None => field.ty.clone(),
        };
        let patch: syn::Type = syn::parse_str(PATCH).expect("a path");
        field.ty = syn::parse_quote!(#patch<#inner>);
        let skip = format!("{PATCH}::is_absent");
        parts.push(quote!(default, skip_serializing_if = #skip));
        return Ok(quote!(#(#parts),*));
    } else if prop.null_clears {
        let inner = &field.ty;
        field.ty = syn::parse_quote!(::std::option::Option<#inner>);
        let helper = if prop.skip_invalid_items {
            "null_clears_vec"
        } else {
            "null_clears"
        };
        let path = format!("{SERDE_UTIL}::{helper}");
        parts.push(quote!(
            default,
            skip_serializing_if = "::std::option::Option::is_none",
            deserialize_with = #path
        ));
        return Ok(quote!(#(#parts),*));
    } else {
        // Keep typify's `default` (it may name a function producing the schema's default) and
        // its `skip_serializing_if`, which follow the same absent/default rules as ours.
        let mut has_default = false;
        for (k, v) in typify_pairs {
            match (k.as_str(), v) {
                ("default", None) => {
                    has_default = true;
                    parts.push(quote!(default));
                }
                ("default", Some(path)) => {
                    has_default = true;
                    parts.push(quote!(default = #path));
                }
                // A property with a `default` is always written, even when empty.
                ("skip_serializing_if", Some(_)) if prop.has_default => {}
                ("skip_serializing_if", Some(path)) => {
                    let path = path.replace(' ', "");
                    parts.push(quote!(skip_serializing_if = #path));
                }
                _ => {}
            }
        }
        if !has_default {
            parts.push(quote!(default));
        }
        if is_option && !typify_pairs.iter().any(|(k, _)| k == "skip_serializing_if") {
            parts.push(quote!(
                skip_serializing_if = "::std::option::Option::is_none"
            ));
        }
    }
    let is_meta = field.ty.to_token_stream().to_string().replace(' ', "")
        == format!("::std::option::Option<{META}>");
    if !is_any && let Some(helper) = deserializer_for(prop, is_option, is_meta) {
        let path = format!("{SERDE_UTIL}::{helper}");
        parts.push(quote!(deserialize_with = #path));
    }
    Ok(quote!(#(#parts),*))
}
