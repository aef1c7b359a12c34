//! Nothing a peer sends is silently lost: every generated object gets an `extra` field
//! (`crate::Extra`) holding the fields the schema does not name, read from the wire and
//! written back after the known ones.
//!
//! The struct keeps serde's derive, switched to `#[serde(remote = "Self")]` so that the
//! derived code becomes inherent `serialize`/`deserialize` functions; the trait impls written
//! here call them. Reading goes through `crate::extra::deserialize_keeping_unknown`, which
//! hands the derived visitor only the keys it names and keeps the rest: no buffering of the
//! whole object, which `#[serde(flatten)]` on the reading side would force on every struct.
//! Writing uses `#[serde(flatten)]` (serde_json writes a struct as a map anyway).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Field, Fields, ItemStruct};

use crate::Error;
use crate::constructors::CtorField;
use crate::unions::ident;

/// The Rust field name of the unknown-field map in every generated object.
pub const FIELD: &str = "extra";

/// Adds the `extra` field and the `remote = "Self"` switch to an object struct; returns the
/// field for the constructors (it starts empty; the builder `extra` sets it whole).
pub fn add_field(name: &str, s: &mut ItemStruct) -> Result<CtorField, Error> {
    let Fields::Named(named) = &mut s.fields else {
        return Err(Error::Typify(format!(
            "`{name}` is not a struct with named fields"
        )));
    };
    if named
        .named
        .iter()
        .any(|f| f.ident.as_ref().is_some_and(|i| i == FIELD))
    {
        return Err(Error::Schema {
            def: name.to_string(),
            message: format!("a property named `{FIELD}` collides with the unknown-field map"),
        });
    }
    let field: Field = syn::parse_quote! {
        /// Fields the schema does not name, kept as received and written back unchanged after
        /// the known ones (empty unless the peer sent some).
        #[serde(flatten, skip_deserializing)]
        pub extra: crate::Extra
    };
    named.named.push(field.clone());
    s.attrs.push(syn::parse_quote!(#[serde(remote = "Self")]));
    Ok(CtorField {
        field,
        required: false,
        null_clears: false,
        patch: false,
    })
}

/// The `Serialize`/`Deserialize` impls of an object given [`add_field`], its `HasExtra` impl
/// and the `with_extra` builder.
pub fn impls(name: &str) -> TokenStream {
    let ty = ident(name);
    let access = has_extra(name);
    quote! {
        impl ::serde::Serialize for #ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                #ty::serialize(self, serializer)
            }
        }
        impl<'de> ::serde::Deserialize<'de> for #ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                crate::extra::deserialize_keeping_unknown(deserializer, |d| #ty::deserialize(d))
            }
        }
        #access
    }
}

/// `HasExtra` and the `with_extra` builder, for any struct with an `extra` field.
pub fn has_extra(name: &str) -> TokenStream {
    let ty = ident(name);
    quote! {
        impl crate::HasExtra for #ty {
            fn extra_fields(&self) -> &crate::Extra {
                &self.extra
            }
            fn extra_fields_mut(&mut self) -> &mut crate::Extra {
                &mut self.extra
            }
        }
        impl #ty {
            /// Adds one field the schema does not name (written after the known ones).
            pub fn with_extra(mut self, key: impl ::std::convert::Into<::std::string::String>, value: ::serde_json::Value) -> Self {
                self.extra.insert(key, value);
                self
            }
        }
    }
}

/// typify writes struct literals of our objects (its `Default` impls and the functions of its
/// `defaults` module); each gets `extra: Default::default()`.
pub struct FillLiterals<'a> {
    /// The names of the object definitions.
    pub objects: &'a std::collections::BTreeSet<&'a str>,
    /// The type of the `impl` being visited (what `Self` names).
    pub self_type: Option<String>,
}

impl syn::visit_mut::VisitMut for FillLiterals<'_> {
    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        let outer = self.self_type.take();
        if let syn::Type::Path(p) = &*i.self_ty {
            self.self_type = p.path.segments.last().map(|s| s.ident.to_string());
        }
        syn::visit_mut::visit_item_impl_mut(self, i);
        self.self_type = outer;
    }

    fn visit_expr_struct_mut(&mut self, e: &mut syn::ExprStruct) {
        syn::visit_mut::visit_expr_struct_mut(self, e);
        let is_object = e.path.segments.last().is_some_and(|s| {
            let name = if s.ident == "Self" {
                self.self_type.clone().unwrap_or_default()
            } else {
                s.ident.to_string()
            };
            self.objects.contains(name.as_str())
        });
        let has_extra = e.fields.iter().any(|f| match &f.member {
            syn::Member::Named(i) => i == FIELD,
            syn::Member::Unnamed(_) => false,
        });
        if is_object && !has_extra && e.rest.is_none() {
            if !e.fields.empty_or_trailing() {
                e.fields.push_punct(Default::default());
            }
            e.fields
                .push(syn::parse_quote!(extra: ::std::default::Default::default()));
        }
    }
}
