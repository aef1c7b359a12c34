//! The unstable overlay: protocol items the official crates ship behind cargo features,
//! generated into the v1 module behind the same features.
//!
//! The overlay document (`acp-schema/schemas/v1-unstable.json`, see its description and
//! `CONVENTIONS.md`) adds to v1, and every piece it adds names its feature in `x-unstable`:
//!
//! - `$defs`: new definitions (each with `x-unstable`);
//! - `x-extend`: `{"Def": {"properties": {"name": {..., "x-unstable": "f"}}}}`, new optional
//!   properties of existing objects;
//! - `x-methods`: new methods (each with `x-unstable`), bound to their params and result types
//!   through `RequestMethod`/`NotificationMethod` (they are not in the stable method table).
//!
//! [`merge`] folds the overlay into the v1 document, so the ordinary generator sees one schema;
//! [`gate`] then puts `#[cfg(feature = "f")]` on every item, field, builder and struct-literal
//! field that belongs to an unstable piece. The generated text is the same whatever features
//! are on, so `cargo xtask codegen --check` is feature-independent.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Map, Value};
use syn::visit_mut::VisitMut;

use crate::Error;
use crate::unions::ident;

/// What the overlay adds, by feature.
#[derive(Debug, Default, Clone)]
pub struct Overlay {
    /// New definitions and the feature each belongs to.
    pub defs: BTreeMap<String, String>,
    /// New properties: (definition, Rust field name) and the feature.
    pub fields: BTreeMap<(String, String), String>,
    /// New methods: (wire name, params, result, feature, description).
    pub methods: Vec<OverlayMethod>,
    /// New definitions with `x-null-as-default` (a `null` payload reads as the default).
    pub null_as_default: BTreeSet<String>,
    /// New variants of existing unions: (union, Rust variant name) and the feature.
    pub variants: BTreeMap<(String, String), String>,
    /// String enums that got new values: their inherent functions (`as_str`) match on every
    /// value, so only the match arms are gated, never the function.
    pub value_enums: BTreeSet<String>,
}

/// One method of the overlay.
#[derive(Debug, Clone)]
pub struct OverlayMethod {
    wire: String,
    served_by: String,
    params: String,
    result: Option<String>,
    feature: String,
    description: String,
}

fn err(def: &str, message: impl Into<String>) -> Error {
    Error::Schema {
        def: def.to_string(),
        message: message.into(),
    }
}

fn feature_of(def: &str, v: &Value) -> Result<String, Error> {
    let f = v
        .get("x-unstable")
        .and_then(Value::as_str)
        .ok_or_else(|| err(def, "every overlay item names its feature in `x-unstable`"))?;
    if f != "unstable" && !f.starts_with("unstable_") {
        return Err(err(def, format!("feature `{f}` is not named `unstable_*`")));
    }
    Ok(f.to_string())
}

/// `snake_case` of a camelCase wire name, as typify names the field.
pub(crate) fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.trim_start_matches('_').chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Folds `overlay_text` into the `base_text` document; returns the merged text and what
/// came from the overlay.
pub fn merge(base_text: &str, overlay_text: &str) -> Result<(String, Overlay), Error> {
    let mut base: Value =
        serde_json::from_str(base_text).map_err(|e| err("(document)", e.to_string()))?;
    let overlay: Value =
        serde_json::from_str(overlay_text).map_err(|e| err("(overlay)", e.to_string()))?;
    let mut out = Overlay::default();
    let defs = base
        .get_mut("$defs")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| err("(document)", "no `$defs`"))?;
    let empty = Map::new();
    for (name, def) in overlay
        .get("$defs")
        .and_then(Value::as_object)
        .unwrap_or(&empty)
    {
        let feature = feature_of(name, def)?;
        if defs.contains_key(name) {
            return Err(err(name, "the overlay redefines a stable definition"));
        }
        if def.get("x-null-as-default") == Some(&Value::Bool(true)) {
            out.null_as_default.insert(name.clone());
        }
        defs.insert(name.clone(), def.clone());
        out.defs.insert(name.clone(), feature);
    }
    for (name, ext) in overlay
        .get("x-extend")
        .and_then(Value::as_object)
        .unwrap_or(&empty)
    {
        if let Some(added) = ext.get("oneOf").and_then(Value::as_array) {
            extend_union(defs, name, added, &mut out)?;
            continue;
        }
        let target = defs
            .get_mut(name)
            .and_then(|d| d.get_mut("properties"))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| err(name, "`x-extend` names no object of the base schema"))?;
        for (prop, schema) in ext
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty)
        {
            let feature = feature_of(&format!("{name}.{prop}"), schema)?;
            if target.contains_key(prop) {
                return Err(err(name, format!("`{prop}` is already a stable property")));
            }
            target.insert(prop.clone(), schema.clone());
            out.fields.insert((name.clone(), snake(prop)), feature);
        }
    }
    for m in overlay
        .get("x-methods")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
        let wire = text("method").ok_or_else(|| err("x-methods", "an entry has no `method`"))?;
        let reference = |k: &str| {
            m.get(k)
                .and_then(|r| r.get("$ref"))
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .map(str::to_string)
        };
        out.methods.push(OverlayMethod {
            feature: feature_of(&wire, m)?,
            served_by: text("side").ok_or_else(|| err(&wire, "no `side`"))?,
            params: reference("params").ok_or_else(|| err(&wire, "no `params`"))?,
            result: reference("result"),
            description: text("description").unwrap_or_default(),
            wire,
        });
    }
    let text = serde_json::to_string(&base).map_err(|e| err("(document)", e.to_string()))?;
    Ok((text, out))
}

/// Appends `added` variants (each with `x-unstable`) to the tagged union `name`.
fn extend_union(
    defs: &mut Map<String, Value>,
    name: &str,
    added: &[Value],
    out: &mut Overlay,
) -> Result<(), Error> {
    let union = defs
        .get_mut(name)
        .ok_or_else(|| err(name, "`x-extend` names no definition of the base schema"))?;
    if union.get("x-tag").is_none() && union.get("type") == Some(&Value::from("string")) {
        return extend_string_enum(union, name, added, out);
    }
    let tag = union
        .get("x-tag")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            err(
                name,
                "only tagged unions (`x-tag`) and string enums take new variants",
            )
        })?
        .to_string();
    let key = if union.get("oneOf").is_some() {
        "oneOf"
    } else {
        "anyOf"
    };
    let members = union
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .ok_or_else(|| err(name, "the union has no `oneOf`/`anyOf`"))?;
    for variant in added {
        let value = variant
            .pointer(&format!("/properties/{tag}/const"))
            .and_then(Value::as_str)
            .ok_or_else(|| err(name, format!("a new variant has no `{tag}` const")))?;
        let feature = feature_of(&format!("{name}.{value}"), variant)?;
        let taken = members.iter().any(|m| {
            m.pointer(&format!("/properties/{tag}/const"))
                .and_then(Value::as_str)
                == Some(value)
        });
        if taken {
            return Err(err(name, format!("`{value}` is already a stable variant")));
        }
        let rust = variant
            .get("x-variant")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| crate::model::pascal_case(value));
        // Tagged variants go before the untagged fallback, which serde wants last (and
        // which is only tried once every tag failed).
        let at = members
            .iter()
            .position(|m| m.get("x-untagged") == Some(&Value::Bool(true)))
            .unwrap_or(members.len());
        members.insert(at, variant.clone());
        out.variants.insert((name.to_string(), rust), feature);
    }
    Ok(())
}

/// Appends `added` values (each `{"const": "value"}` with `x-unstable`) to the string enum
/// `name` (shape 4): the `speed` category of `SessionConfigOptionCategory`.
fn extend_string_enum(
    union: &mut Value,
    name: &str,
    added: &[Value],
    out: &mut Overlay,
) -> Result<(), Error> {
    let members = union
        .get_mut("oneOf")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| err(name, "the string enum has no `oneOf`"))?;
    for value in added {
        let text = value
            .get("const")
            .and_then(Value::as_str)
            .ok_or_else(|| err(name, "a new value has no `const`"))?;
        let feature = feature_of(&format!("{name}.{text}"), value)?;
        if members
            .iter()
            .any(|m| m.get("const").and_then(Value::as_str) == Some(text))
        {
            return Err(err(name, format!("`{text}` is already a stable value")));
        }
        let rust = value
            .get("x-variant")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| crate::model::pascal_case(text));
        members.push(value.clone());
        out.variants.insert((name.to_string(), rust), feature);
        out.value_enums.insert(name.to_string());
    }
    Ok(())
}

/// Puts the feature gates on a generated types file and appends the overlay's method
/// bindings.
pub fn gate(types: &str, overlay: &Overlay) -> Result<String, Error> {
    let mut file = syn::parse_file(types).map_err(|e| Error::Render(e.to_string()))?;
    let mut gates = Gates {
        overlay,
        self_type: None,
    };
    gates.visit_file_mut(&mut file);
    for m in &overlay.methods {
        let item: syn::File =
            syn::parse2(binding(m, overlay)).map_err(|e| Error::Render(e.to_string()))?;
        file.items.extend(item.items);
    }
    // Keep the header comment lines the generator wrote before the items.
    let header: String = types
        .lines()
        .take_while(|l| l.starts_with("//") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    Ok(format!("{header}{}", prettyplease::unparse(&file)))
}

fn cfg(feature: &str) -> syn::Attribute {
    syn::parse_quote!(#[cfg(feature = #feature)])
}

/// `RequestMethod`/`NotificationMethod` and a wire-name constant for one overlay method.
fn binding(m: &OverlayMethod, overlay: &Overlay) -> TokenStream {
    let gate = cfg(&m.feature);
    let params_null = overlay.null_as_default.contains(&m.params);
    let params = ident(&m.params);
    let wire = &m.wire;
    let side = match m.served_by.as_str() {
        "client" => quote!(crate::methods::Side::Client),
        "protocol" => quote!(crate::methods::Side::Protocol),
        _ => quote!(crate::methods::Side::Agent),
    };
    let doc = format!(
        " `{wire}` (unstable, feature `{}`): {}",
        m.feature, m.description
    );
    match &m.result {
        Some(result) => {
            let result_null = overlay.null_as_default.contains(result);
            let result = ident(result);
            quote! {
                #gate
                #[doc = #doc]
                impl crate::methods::RequestMethod for #params {
                    const METHOD: &'static str = #wire;
                    const SERVED_BY: crate::methods::Side = #side;
                    const PARAMS_NULL_AS_DEFAULT: bool = #params_null;
                    const RESULT_NULL_AS_DEFAULT: bool = #result_null;
                    type Response = #result;
                }
            }
        }
        None => quote! {
            #gate
            #[doc = #doc]
            impl crate::methods::NotificationMethod for #params {
                const METHOD: &'static str = #wire;
                const SERVED_BY: crate::methods::Side = #side;
                const PARAMS_NULL_AS_DEFAULT: bool = #params_null;
            }
        },
    }
}

struct Gates<'a> {
    overlay: &'a Overlay,
    self_type: Option<String>,
}

impl Gates<'_> {
    /// The first unstable definition named anywhere in `tokens`.
    fn mentioned(&self, tokens: &TokenStream) -> Option<String> {
        tokens
            .to_string()
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .find(|word| self.overlay.defs.contains_key(*word))
            .map(str::to_string)
    }

    /// The feature of an overlay variant of `union` that `tokens` name as `Self::V` or
    /// `Union::V`.
    fn variant_mentioned(&self, union: &str, tokens: &TokenStream) -> Option<String> {
        let text = tokens.to_string().replace(' ', "");
        let names = |path: &str| {
            text.match_indices(path).any(|(at, _)| {
                !text[at + path.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            })
        };
        self.overlay
            .variants
            .iter()
            .find(|((u, v), _)| {
                u == union && (names(&format!("Self::{v}")) || names(&format!("{union}::{v}")))
            })
            .map(|(_, f)| f.clone())
    }

    fn field_feature(&self, ty: &str, field: &str) -> Option<&String> {
        self.overlay
            .fields
            .get(&(ty.to_string(), field.trim_start_matches("r#").to_string()))
    }
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

impl VisitMut for Gates<'_> {
    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        let (name, attrs) = match item {
            syn::Item::Struct(s) => (Some(s.ident.to_string()), Some(&mut s.attrs)),
            syn::Item::Enum(e) => (Some(e.ident.to_string()), Some(&mut e.attrs)),
            syn::Item::Impl(i) => {
                // `impl From<ModelId> for String` belongs to `ModelId` as much as its own impls.
                let mut header = i.clone();
                header.items.clear();
                let mentioned = self.mentioned(&quote!(#header));
                (
                    mentioned.or_else(|| type_name(&i.self_ty)),
                    Some(&mut i.attrs),
                )
            }
            syn::Item::Fn(f) => (
                match &f.sig.output {
                    syn::ReturnType::Type(_, t) => type_name(t),
                    syn::ReturnType::Default => None,
                },
                Some(&mut f.attrs),
            ),
            _ => (None, None),
        };
        if let (Some(name), Some(attrs)) = (name, attrs)
            && let Some(feature) = self.overlay.defs.get(&name)
        {
            attrs.push(cfg(feature));
        } else if let syn::Item::Impl(i) = item
            && i.trait_
                .as_ref()
                .and_then(|(path, _)| path.segments.last())
                .is_some_and(|s| s.ident == "From")
            && let Some(union) = type_name(&i.self_ty)
            && let Some(feature) = self.variant_mentioned(&union, &quote!(#i))
        {
            // A conversion into an overlay variant from a stable type (`From<SessionId>`
            // building a variant whose body needs only a session id) exists with the variant.
            i.attrs.push(cfg(&feature));
        }
        // Inside, fields another feature adds to an overlay definition get their own gate.
        syn::visit_mut::visit_item_mut(self, item);
    }

    fn visit_item_struct_mut(&mut self, s: &mut syn::ItemStruct) {
        let name = s.ident.to_string();
        for field in s.fields.iter_mut() {
            if let Some(f) = field
                .ident
                .as_ref()
                .and_then(|i| self.field_feature(&name, &i.to_string()))
            {
                field.attrs.push(cfg(f));
            }
        }
    }

    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        let outer = self.self_type.take();
        self.self_type = type_name(&i.self_ty);
        let inherent = i.trait_.is_none();
        for item in &mut i.items {
            if let syn::ImplItem::Fn(f) = item
                && let Some(ty) = &self.self_type
            {
                if let Some(feature) = self.field_feature(ty, &f.sig.ident.to_string()) {
                    f.attrs.push(cfg(feature));
                } else if inherent
                    && !self.overlay.value_enums.contains(ty)
                    // An inherent function of a union naming an overlay variant is that
                    // variant's constructor (trait impls only match on it: their arms are
                    // gated one by one).
                    && let Some(feature) = self.variant_mentioned(ty, &quote!(#f))
                {
                    f.attrs.push(cfg(&feature));
                }
            }
        }
        syn::visit_mut::visit_item_impl_mut(self, i);
        self.self_type = outer;
    }

    fn visit_item_enum_mut(&mut self, e: &mut syn::ItemEnum) {
        let name = e.ident.to_string();
        for variant in &mut e.variants {
            if let Some(feature) = self
                .overlay
                .variants
                .get(&(name.clone(), variant.ident.to_string()))
            {
                variant.attrs.push(cfg(feature));
            }
        }
    }

    fn visit_arm_mut(&mut self, arm: &mut syn::Arm) {
        syn::visit_mut::visit_arm_mut(self, arm);
        if let Some(ty) = &self.self_type
            && let Some(feature) = self.variant_mentioned(ty, &quote!(#arm))
        {
            arm.attrs.push(cfg(&feature));
        }
    }

    fn visit_expr_struct_mut(&mut self, e: &mut syn::ExprStruct) {
        syn::visit_mut::visit_expr_struct_mut(self, e);
        let Some(last) = e.path.segments.last() else {
            return;
        };
        let ty = if last.ident == "Self" {
            self.self_type.clone().unwrap_or_default()
        } else {
            last.ident.to_string()
        };
        let overlay = self.overlay;
        for fv in e.fields.iter_mut() {
            if let syn::Member::Named(m) = &fv.member
                && let Some(f) = overlay.fields.get(&(
                    ty.clone(),
                    m.to_string().trim_start_matches("r#").to_string(),
                ))
            {
                fv.attrs.push(cfg(f));
            }
        }
    }
}

/// Every feature the overlay names, for checks that `acp-types` declares them all.
pub fn features(overlay: &Overlay) -> BTreeSet<String> {
    overlay
        .defs
        .values()
        .chain(overlay.fields.values())
        .chain(overlay.variants.values())
        .chain(overlay.methods.iter().map(|m| &m.feature))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
