//! Generates the types typify cannot: open string enums, tagged and untagged unions, and open
//! integer codes (shapes 4 to 7 of `CONVENTIONS.md`).

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use crate::Error;
use crate::constructors;
use crate::model::{CodeDef, Def, StringEnumDef, TaggedUnionDef, UntaggedMember, ref_name};

/// A Rust identifier for a type or variant name.
pub fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// `#[doc = "..."]` lines for an optional description.
pub fn docs(description: Option<&str>) -> TokenStream {
    match description {
        Some(text) => {
            let lines = text.lines().map(|l| format!(" {l}"));
            quote! { #( #[doc = #lines] )* }
        }
        None => TokenStream::new(),
    }
}

/// The Rust type of a property schema (used for union members).
pub fn rust_type(def: &str, schema: &Value) -> Result<TokenStream, Error> {
    let err = |m: &str| Error::Schema {
        def: def.to_string(),
        message: m.to_string(),
    };
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = ident(ref_name(r).ok_or_else(|| err("bad $ref"))?);
        return Ok(quote!(#name));
    }
    let ty = match schema.get("type") {
        None => return Ok(quote!(::serde_json::Value)),
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err(err("union members cannot be nullable; add a `Null` member")),
    };
    Ok(match ty {
        "string" => quote!(::std::string::String),
        "boolean" => quote!(bool),
        "number" => quote!(f64),
        "integer" => match schema.get("format").and_then(Value::as_str) {
            Some("uint16") => quote!(u16),
            Some("uint32") => quote!(u32),
            Some("int32") => quote!(i32),
            Some("uint64") => quote!(u64),
            _ => quote!(i64),
        },
        "array" => {
            let items = schema
                .get("items")
                .ok_or_else(|| err("array without `items`"))?;
            let inner = rust_type(def, items)?;
            quote!(::std::vec::Vec<#inner>)
        }
        "object" => match schema.get("additionalProperties") {
            Some(Value::Bool(true)) | None => {
                quote!(::serde_json::Map<::std::string::String, ::serde_json::Value>)
            }
            Some(inner) => {
                let inner = rust_type(def, inner)?;
                quote!(::std::collections::BTreeMap<::std::string::String, #inner>)
            }
        },
        other => return Err(err(&format!("unsupported member type `{other}`"))),
    })
}

/// Shape 4: an open string enum.
pub fn string_enum(def: &Def, e: &StringEnumDef) -> TokenStream {
    let name = ident(&def.name);
    let doc = docs(def.description.as_deref());
    let variants: Vec<Ident> = e.variants.iter().map(|v| ident(v)).collect();
    let values: Vec<&str> = e.values.iter().map(|(v, _)| v.as_str()).collect();
    let variant_docs = e.values.iter().map(|(_, d)| docs(d.as_deref()));
    let default_impl = e.default.as_ref().map(|d| {
        let position = e.values.iter().position(|(c, _)| c == d).unwrap_or(0);
        let v = &variants[position];
        quote! {
            impl ::std::default::Default for #name {
                fn default() -> Self {
                    Self::#v
                }
            }
            impl #name {
                /// Whether this is the value an absent field stands for (it is then not written).
                pub fn is_default(&self) -> bool {
                    *self == Self::#v
                }
            }
        }
    });
    quote! {
        #doc
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum #name {
            #( #variant_docs #[serde(rename = #values)] #variants, )*
            /// A value this version of the schema does not know, kept as sent.
            #[serde(untagged)]
            Unknown(::std::string::String),
        }
        impl #name {
            /// The value as written on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    #( Self::#variants => #values, )*
                    Self::Unknown(other) => other,
                }
            }
        }
        impl ::std::fmt::Display for #name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        #default_impl
    }
}

/// Shape 5: an internally tagged union whose unknown tags are kept as raw JSON.
///
/// Serialization is derived; deserialization is generated so that a *known* tag with a bad
/// body is an error (serde's derive would quietly fall back to the catch-all variant).
///
/// Deserialization goes through `crate::serde_util::deserialize_tag_first`: when the tag is
/// the object's first key (as every serializer we know writes it) and names a variant with a
/// body, and the union has no untagged fallback, the body is read straight from the rest of
/// the object; otherwise the object is buffered as a `serde_json::Value` and dispatched on
/// its tag. Both paths accept and reject the same objects (one exception: an object that
/// repeats the tag key is dispatched on its first occurrence on the direct path, on its last
/// when buffered); the direct one skips building a `Value` (with `serde_json/preserve_order`,
/// an index map per object), which was most of the cost of receiving a streamed chunk.
pub fn tagged_union(
    def: &Def,
    u: &TaggedUnionDef,
    signatures: &constructors::Signatures,
) -> Result<TokenStream, Error> {
    let name = ident(&def.name);
    let doc = docs(def.description.as_deref());
    let tag = &u.tag;
    let mut variants = Vec::new();
    let mut arms = Vec::new();
    let mut direct_arms = Vec::new();
    // The untagged variant (if any) is tried when the tag is absent, unknown, or names a
    // variant whose body does not parse, as serde's own derive does.
    // `Self::V(<expr>)`, boxing the body for an `x-boxed` variant; the constructor as a
    // function of the body (`Self::V`, or a closure that boxes); and the type the variant holds.
    let wrap = |v: &crate::model::TaggedVariant, expr: TokenStream| {
        let vname = ident(&v.rust_name);
        if v.boxed {
            quote!(Self::#vname(::std::boxed::Box::new(#expr)))
        } else {
            quote!(Self::#vname(#expr))
        }
    };
    let make = |v: &crate::model::TaggedVariant| {
        if v.boxed {
            let built = wrap(v, quote!(body));
            quote!(|body| #built)
        } else {
            let vname = ident(&v.rust_name);
            quote!(Self::#vname)
        }
    };
    let held = |v: &crate::model::TaggedVariant, body: &Ident| {
        if v.boxed {
            quote!(::std::boxed::Box<#body>)
        } else {
            quote!(#body)
        }
    };
    let fallback = u.variants.iter().find(|v| v.tag_value.is_none()).map(|v| {
        let body = ident(v.body.as_deref().unwrap_or_default());
        (make(v), body)
    });
    for v in &u.variants {
        let vname = ident(&v.rust_name);
        let vdoc = docs(v.description.as_deref());
        let construct = make(v);
        let built = wrap(v, quote!(body));
        match (&v.tag_value, &v.body) {
            (Some(value), Some(body)) => {
                let body = ident(body);
                let ty = held(v, &body);
                variants.push(quote! { #vdoc #[serde(rename = #value)] #vname(#ty), });
                let on_error = match &fallback {
                    Some((fmake, fbody)) => quote! {
                        Err(error) => <#fbody as ::serde::Deserialize>::deserialize(value)
                            .map(#fmake)
                            .map_err(|_| ::serde::de::Error::custom(error)),
                    },
                    None => quote! { Err(error) => Err(::serde::de::Error::custom(error)), },
                };
                arms.push(quote! {
                    Some(#value) => match <#body as ::serde::Deserialize>::deserialize(&value) {
                        // The tag belongs to the union, not to the body's unknown fields.
                        Ok(mut body) => {
                            crate::HasExtra::extra_fields_mut(&mut body).remove(#tag);
                            Ok(#built)
                        }
                        #on_error
                    },
                });
                if fallback.is_none() {
                    direct_arms.push(quote! {
                        #value => ::std::result::Result::Ok(
                            <#body as ::serde::Deserialize>::deserialize(
                                ::serde::de::value::MapAccessDeserializer::new(rest),
                            )
                            .map(#construct),
                        ),
                    });
                }
            }
            (Some(value), None) => {
                variants.push(quote! { #vdoc #[serde(rename = #value)] #vname, });
                arms.push(quote! { Some(#value) => Ok(Self::#vname), });
            }
            (None, Some(body)) => {
                let ty = held(v, &ident(body));
                variants.push(quote! { #vdoc #[serde(untagged)] #vname(#ty), });
            }
            (None, None) => {
                return Err(Error::Schema {
                    def: def.name.clone(),
                    message: "untagged unit variant".into(),
                });
            }
        }
    }
    let (unknown_arm, absent_arm) = match &fallback {
        Some((fmake, fbody)) => (
            quote! {
                Some(_) => Ok(<#fbody as ::serde::Deserialize>::deserialize(&value)
                    .map(#fmake)
                    .unwrap_or(Self::Unknown(value))),
            },
            quote! {
                None => <#fbody as ::serde::Deserialize>::deserialize(value)
                    .map(#fmake)
                    .map_err(::serde::de::Error::custom),
            },
        ),
        None => (
            quote! { Some(_) => Ok(Self::Unknown(value)), },
            quote! { None => Err(::serde::de::Error::missing_field(#tag)), },
        ),
    };
    // `Union::variant(...)` and `From<Body>` conversions, so building one reads
    // `SessionUpdate::tool_call("t1", "Read")` or `call.into()`.
    let ctor_variants: Vec<constructors::Variant> = u
        .variants
        .iter()
        .filter_map(|v| {
            Some(constructors::Variant {
                rust_name: &v.rust_name,
                body: v.body.as_deref()?,
                boxed: v.boxed,
                tag_value: v.tag_value.as_deref(),
            })
        })
        .collect();
    let ctors = constructors::tagged_union(&def.name, &ctor_variants, signatures);
    let direct_body = if direct_arms.is_empty() {
        quote! {
            let _ = tag;
            ::std::result::Result::Err(rest)
        }
    } else {
        quote! {
            match tag {
                #( #direct_arms )*
                _ => ::std::result::Result::Err(rest),
            }
        }
    };
    Ok(quote! {
        #doc
        #[derive(::serde::Serialize, Clone, Debug, PartialEq)]
        #[serde(tag = #tag)]
        pub enum #name {
            #( #variants )*
            /// A variant this version of the schema does not know, kept as raw JSON.
            #[serde(untagged)]
            Unknown(::serde_json::Value),
        }
        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                crate::serde_util::deserialize_tag_first(deserializer)
            }
        }
        impl crate::serde_util::TagFirst for #name {
            const TAG: &'static str = #tag;
            const EXPECTING: &'static str = concat!("an object for ", stringify!(#name));
            fn direct<'de, A: ::serde::de::MapAccess<'de>>(
                tag: &str,
                rest: A,
            ) -> ::std::result::Result<::std::result::Result<Self, A::Error>, A> {
                #direct_body
            }
            fn from_value<E: ::serde::de::Error>(value: ::serde_json::Value) -> ::std::result::Result<Self, E> {
                if !value.is_object() {
                    return ::std::result::Result::Err(::serde::de::Error::custom(
                        concat!("expected an object for ", stringify!(#name)),
                    ));
                }
                let tag = match value.get(#tag) {
                    ::std::option::Option::None => ::std::option::Option::None,
                    ::std::option::Option::Some(::serde_json::Value::String(tag)) => ::std::option::Option::Some(tag.clone()),
                    ::std::option::Option::Some(_) => {
                        return ::std::result::Result::Err(::serde::de::Error::custom(
                            concat!("`", #tag, "` must be a string"),
                        ));
                    }
                };
                use ::std::option::Option::{None, Some};
                use ::std::result::Result::{Err, Ok};
                match tag.as_deref() {
                    #( #arms )*
                    #unknown_arm
                    #absent_arm
                }
            }
        }
        #ctors
    })
}

/// Shape 6: an untagged union; the first member that parses wins.
pub fn untagged_union(def: &Def, members: &[UntaggedMember]) -> Result<TokenStream, Error> {
    let name = ident(&def.name);
    let doc = docs(def.description.as_deref());
    let mut variants = Vec::new();
    for m in members {
        let vname = ident(&m.title);
        let vdoc = docs(m.description.as_deref());
        if m.schema.get("type") == Some(&Value::from("null")) {
            variants.push(quote! { #vdoc #vname, });
        } else {
            let ty = rust_type(&def.name, &m.schema)?;
            variants.push(quote! { #vdoc #vname(#ty), });
        }
    }
    // `From<Member>` for members that are schema types no other member shares (members of
    // plain JSON types, such as the request id's number and string, are left to hand-written
    // impls: which one a literal means is a choice, not a rule).
    let froms = members.iter().filter_map(|m| {
        let target = m.schema.get("$ref").and_then(Value::as_str)?;
        let unique = members
            .iter()
            .filter(|o| o.schema.get("$ref").and_then(Value::as_str) == Some(target))
            .count()
            == 1;
        let ty = ident(ref_name(target)?);
        let vname = ident(&m.title);
        unique.then(|| {
            quote! {
                impl ::std::convert::From<#ty> for #name {
                    fn from(value: #ty) -> Self {
                        Self::#vname(value)
                    }
                }
            }
        })
    });
    Ok(quote! {
        #doc
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug, PartialEq)]
        #[serde(untagged)]
        pub enum #name {
            #( #variants )*
        }
        #( #froms )*
    })
}

/// Shape 7: an integer newtype with named well-known values.
pub fn code(def: &Def, c: &CodeDef) -> Result<TokenStream, Error> {
    let name = ident(&def.name);
    let doc = docs(def.description.as_deref());
    let int = match c.format.as_str() {
        "int32" => quote!(i32),
        "int64" => quote!(i64),
        other => {
            return Err(Error::Schema {
                def: def.name.clone(),
                message: format!("unsupported code format `{other}`"),
            });
        }
    };
    let consts = c.known.iter().map(|(n, v, d)| {
        let cname = ident(n);
        let cdoc = docs(d.as_deref());
        let lit = proc_macro2::Literal::i64_unsuffixed(*v);
        quote! { #cdoc pub const #cname: Self = Self(#lit); }
    });
    let names = c.known.iter().map(|(n, _, _)| {
        let cname = ident(n);
        quote! { Self::#cname => ::std::option::Option::Some(#n), }
    });
    Ok(quote! {
        #doc
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[serde(transparent)]
        pub struct #name(pub #int);
        impl #name {
            #( #consts )*
            /// The constant name of a well-known value, or `None` for any other value.
            pub fn known_name(&self) -> ::std::option::Option<&'static str> {
                match *self {
                    #( #names )*
                    _ => ::std::option::Option::None,
                }
            }
        }
        impl ::std::convert::From<#int> for #name {
            fn from(value: #int) -> Self {
                Self(value)
            }
        }
        impl ::std::convert::From<#name> for #int {
            fn from(value: #name) -> Self {
                value.0
            }
        }
    })
}
