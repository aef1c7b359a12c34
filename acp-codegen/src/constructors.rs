//! Typed construction: `new` with the required fields, one by-value builder method per optional
//! field, and short constructors on tagged unions.
//!
//! The generated structs are `#[non_exhaustive]`, so code outside `acp-types` cannot write a
//! struct literal; it builds every value through what this module writes, which keeps working
//! when a schema gains an optional field (the protocol grows every month):
//!
//! - `Type::new(required...)` takes the required properties in schema order (and, for an object
//!   that embeds a union, that union last); every other field starts absent or at its default.
//! - One method per optional or defaulted property, named after the field, takes the value by
//!   `impl Into<Inner>` where that helps (ids, strings, nested objects), `impl IntoIterator`
//!   for lists and maps (strings as `impl Into<String>`, other elements as themselves so that
//!   `[]` infers), and plain numbers and booleans (where `impl Into` would defeat literal
//!   inference). A property where `null` clears the value takes the `Option` itself.
//! - A tagged union gets `Union::variant(required fields of the body...)` for every variant
//!   with a body, and `From<Body>` where no other variant carries the same body; a variant
//!   whose body has one required field of a schema type no other variant uses also converts
//!   from that field (`ToolCallContent::from(ContentBlock)`).

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::{Attribute, Field, Type};

use crate::Error;

/// A field of a generated object as the constructors see it.
pub struct CtorField {
    /// The field as it stands in the rewritten struct (type and docs final).
    pub field: Field,
    /// Listed in `required` (and not an `Option`): a parameter of `new`.
    pub required: bool,
    /// `x-null-clears`: `Option<Option<T>>`, where the builder takes the inner `Option`.
    pub null_clears: bool,
    /// `x-patch`: `Patch<T>`, where the builder takes `impl Into<Patch<T>>` (a `T` sets the
    /// value, `Patch::Null` clears it on the peer's side).
    pub patch: bool,
}

/// One parameter of a type's `new`, so a union variant can forward to it.
#[derive(Clone)]
pub struct Param {
    name: Ident,
    ty: TokenStream,
    /// The field's type when it is a schema type (used for the `From<field>` conversions).
    named_type: Option<String>,
}

/// The `new` parameters of every object type, by definition name.
pub type Signatures = BTreeMap<String, Vec<Param>>;

/// How a value of type `ty` is taken by a constructor or builder: the parameter type and the
/// expression that turns the parameter `name` into the field value.
fn take(ty: &Type, name: &Ident) -> (TokenStream, TokenStream) {
    if let Some(inner) = generic_args(ty, "Vec") {
        let (item, conv) = element(&inner[0]);
        let collect = if conv.is_empty() {
            quote!(#name.into_iter().collect())
        } else {
            quote!(#name.into_iter().map(#conv).collect())
        };
        return (
            quote!(impl ::std::iter::IntoIterator<Item = #item>),
            collect,
        );
    }
    if let Some(inner) = generic_args(ty, "BTreeMap").or_else(|| generic_args(ty, "HashMap")) {
        let (k, kconv) = element(&inner[0]);
        let (v, vconv) = element(&inner[1]);
        let identity = quote!(::std::convert::identity);
        let (kconv, vconv) = (
            if kconv.is_empty() {
                identity.clone()
            } else {
                kconv
            },
            if vconv.is_empty() { identity } else { vconv },
        );
        return (
            quote!(impl ::std::iter::IntoIterator<Item = (#k, #v)>),
            quote!(#name.into_iter().map(|(k, v)| ((#kconv)(k), (#vconv)(v))).collect()),
        );
    }
    if is_plain(ty) {
        return (quote!(#ty), quote!(#name));
    }
    (quote!(impl ::std::convert::Into<#ty>), quote!(#name.into()))
}

/// How one element of a list or map is taken, and the function that converts it: strings as
/// `impl Into<String>` (so `["-l", "-a"]` fills a list of strings), everything else as itself
/// (no conversion: empty), so that an empty `[]` (the usual `mcpServers`) still infers its
/// element type.
fn element(ty: &Type) -> (TokenStream, TokenStream) {
    let text = ty.to_token_stream().to_string().replace(' ', "");
    if text == "::std::string::String" {
        (
            quote!(impl ::std::convert::Into<#ty>),
            quote!(::std::convert::Into::<#ty>::into),
        )
    } else {
        (quote!(#ty), TokenStream::new())
    }
}

/// Numbers and booleans, taken as themselves: `impl Into<u32>` would refuse the literal `5`.
fn is_plain(ty: &Type) -> bool {
    const PLAIN: &[&str] = &[
        "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "usize",
        "isize",
    ];
    let text = ty.to_token_stream().to_string().replace(' ', "");
    let last = text.rsplit("::").next().unwrap_or(&text);
    PLAIN.contains(&last) || text.starts_with("::std::num::")
}

/// The generic arguments of `ty` when its last path segment is `wrapper`.
fn generic_args(ty: &Type, wrapper: &str) -> Option<Vec<Type>> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != wrapper {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    Some(
        args.args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            })
            .collect(),
    )
}

/// The name of a schema type (a bare single-segment path), if `ty` is one.
fn schema_type_name(ty: &Type) -> Option<String> {
    let Type::Path(p) = ty else { return None };
    (p.qself.is_none() && p.path.segments.len() == 1 && p.path.leading_colon.is_none())
        .then(|| p.path.segments[0].ident.to_string())
}

fn doc_attrs(attrs: &[Attribute]) -> Vec<&Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("doc")).collect()
}

/// `new` and the builder methods of one object type.
pub fn object(name: &str, fields: &[CtorField]) -> Result<(TokenStream, Vec<Param>), Error> {
    let ty = format_ident!("{name}");
    let mut params = Vec::new();
    let mut inits = Vec::new();
    let mut builders = Vec::new();
    for f in fields {
        let field = f
            .field
            .ident
            .clone()
            .ok_or_else(|| Error::Typify(format!("`{name}` has an unnamed field")))?;
        let bare = field.to_string().trim_start_matches("r#").to_string();
        if bare == "new" {
            return Err(Error::Schema {
                def: name.to_string(),
                message: "a property named `new` would collide with the constructor".into(),
            });
        }
        if f.required {
            let arg = format_ident!("{}", bare);
            let (pty, expr) = take(&f.field.ty, &arg);
            inits.push(quote!(#field: #expr));
            params.push(Param {
                name: arg,
                ty: pty,
                named_type: schema_type_name(&f.field.ty),
            });
            continue;
        }
        inits.push(quote!(#field: ::std::default::Default::default()));
        let mut docs: Vec<TokenStream> = doc_attrs(&f.field.attrs)
            .into_iter()
            .map(ToTokens::to_token_stream)
            .collect();
        if docs.is_empty() {
            let line = format!(" Sets `{bare}`.");
            docs.push(quote!(#[doc = #line]));
        }
        let value = format_ident!("value");
        let ty = &f.field.ty;
        let (pty, expr) = match generic_args(&f.field.ty, "Option") {
            _ if f.patch => (
                quote!(impl ::std::convert::Into<#ty>),
                quote!(::std::convert::Into::into(value)),
            ),
            Some(inner) if f.null_clears => {
                let inner = &inner[0];
                (quote!(#inner), quote!(::std::option::Option::Some(value)))
            }
            Some(inner) => {
                let (pty, expr) = take(&inner[0], &value);
                (pty, quote!(::std::option::Option::Some(#expr)))
            }
            None => take(&f.field.ty, &value),
        };
        let clears = f.null_clears.then(|| {
            quote!(#[doc = ""] #[doc = " `None` writes an explicit `null`, which clears the value on the peer's side."])
        });
        builders.push(quote! {
            #(#docs)*
            #clears
            pub fn #field(mut self, value: #pty) -> Self {
                self.#field = #expr;
                self
            }
        });
    }
    let names: Vec<&Ident> = params.iter().map(|p| &p.name).collect();
    let tys: Vec<&TokenStream> = params.iter().map(|p| &p.ty).collect();
    let new_doc = if params.is_empty() {
        " A value with every field absent or at its default.".to_string()
    } else {
        let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        format!(
            " A value from its required fields ({}); the optional ones start absent or at their default and are set with the builder methods.",
            list.join(", ")
        )
    };
    let tokens = quote! {
        impl #ty {
            #[doc = #new_doc]
            pub fn new(#(#names: #tys),*) -> Self {
                Self { #(#inits),* }
            }
            #(#builders)*
        }
    };
    Ok((tokens, params))
}

/// `snake_case` for a `PascalCase` variant name, as a usable identifier.
fn snake(name: &str) -> Ident {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    syn::parse_str::<Ident>(&out).unwrap_or_else(|_| format_ident!("r#{out}"))
}

/// One variant of a tagged union, as the union constructors see it.
pub struct Variant<'a> {
    /// The Rust variant name.
    pub rust_name: &'a str,
    /// The body definition.
    pub body: &'a str,
    /// The variant holds `Box<Body>`.
    pub boxed: bool,
    /// The tag value (`None` for the untagged fallback).
    pub tag_value: Option<&'a str>,
}

/// The short constructors and `From` conversions of a tagged union.
pub fn tagged_union(union: &str, variants: &[Variant], signatures: &Signatures) -> TokenStream {
    let name = format_ident!("{union}");
    let wrap = |v: &Variant, expr: TokenStream| {
        let vname = format_ident!("{}", v.rust_name);
        if v.boxed {
            quote!(Self::#vname(::std::boxed::Box::new(#expr)))
        } else {
            quote!(Self::#vname(#expr))
        }
    };
    let count = |pred: &dyn Fn(&Variant) -> bool| variants.iter().filter(|v| pred(v)).count();
    let mut methods = Vec::new();
    let mut froms = Vec::new();
    for v in variants {
        let body = format_ident!("{}", v.body);
        // An empty-object or null body has no signature entry of its own: it takes nothing.
        let params = signatures.get(v.body).cloned().unwrap_or_default();
        let names: Vec<&Ident> = params.iter().map(|p| &p.name).collect();
        let tys: Vec<&TokenStream> = params.iter().map(|p| &p.ty).collect();
        let method = snake(v.rust_name);
        let built = wrap(v, quote!(#body::new(#(#names),*)));
        let doc = match v.tag_value {
            Some(tag) => format!(
                " A `{tag}` variant from its body's required fields (see [`{}::new`]).",
                v.body
            ),
            None => format!(
                " The untagged `{}` variant from its body's required fields (see [`{}::new`]).",
                v.rust_name, v.body
            ),
        };
        if signatures.contains_key(v.body) {
            methods.push(quote! {
                #[doc = #doc]
                pub fn #method(#(#names: #tys),*) -> Self {
                    #built
                }
            });
        }
        // `From<Body>` for a body no other variant carries.
        if count(&|w| w.body == v.body) == 1 {
            let built = wrap(v, quote!(body));
            froms.push(quote! {
                impl ::std::convert::From<#body> for #name {
                    fn from(body: #body) -> Self {
                        #built
                    }
                }
            });
        }
        // `From<Field>` for a one-field body whose field type is a schema type that is
        // neither another variant's body nor any other one-field body's field.
        if let [only] = params.as_slice()
            && let Some(field_ty) = &only.named_type
            && count(&|w| w.body == field_ty.as_str()) == 0
            && variants
                .iter()
                .filter(|w| {
                    signatures.get(w.body).is_some_and(|p| {
                        p.len() == 1 && p[0].named_type.as_deref() == Some(field_ty.as_str())
                    })
                })
                .count()
                == 1
        {
            let field_ty = format_ident!("{field_ty}");
            let arg = &only.name;
            let built = wrap(v, quote!(#body::new(#arg)));
            froms.push(quote! {
                impl ::std::convert::From<#field_ty> for #name {
                    fn from(#arg: #field_ty) -> Self {
                        #built
                    }
                }
            });
        }
    }
    quote! {
        impl #name {
            #(#methods)*
        }
        #(#froms)*
    }
}
