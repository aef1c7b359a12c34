//! The shapes a schema document is read into (numbered as in acp-schema's `CONVENTIONS.md`).

use serde_json::Value;

/// The definition name of a local `$ref` (`#/$defs/Name`).
pub fn ref_name(reference: &str) -> Option<&str> {
    reference.strip_prefix("#/$defs/")
}

/// Who serves (receives and handles) a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The agent serves it; the client sends it.
    Agent,
    /// The client serves it; the agent sends it.
    Client,
    /// Either side may send and serve it (protocol-level methods such as `$/cancel_request`).
    Protocol,
}

/// Whether a method is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// Answered with a result or an error.
    Request,
    /// Never answered.
    Notification,
}

/// One entry of the document's `x-methods`.
#[derive(Debug, Clone)]
pub struct Method {
    /// Wire name, e.g. `session/prompt`.
    pub wire: String,
    /// Who serves it.
    pub side: Side,
    /// Request or notification.
    pub kind: MethodKind,
    /// Name of the params definition.
    pub params: String,
    /// Name of the result definition (requests only).
    pub result: Option<String>,
    /// What the method is for.
    pub description: String,
    /// `x-default`: what a generated native side answers when its implementation does not
    /// override the method.
    pub default: NativeDefault,
    /// `x-handle` (default `true`): whether the generated typed handle gets a method for it
    /// (`false`: the dialect's module writes that method by hand).
    pub handle: bool,
}

/// What a generated native trait method does when it is not overridden (`x-default`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeDefault {
    /// Absent on a request: `-32601` (method not found).
    NotFound,
    /// `"accept"`, and absent on a notification: accept and ignore (the result must be a
    /// null payload).
    Accept,
    /// `"dialect"`: the dialect's own answer, `defaults::<method>` of its module.
    Dialect,
}

/// A definition of `$defs` with its recognised shape.
#[derive(Debug, Clone)]
pub struct Def {
    /// The definition's name (and Rust type name).
    pub name: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// `x-null-as-default` on the definition: a `null` payload reads as the default.
    pub null_as_default: bool,
    /// The recognised shape.
    pub kind: DefKind,
}

/// The shapes the generator supports (numbered as in `CONVENTIONS.md`).
#[derive(Debug, Clone)]
pub enum DefKind {
    /// 1 and 8: an object, possibly embedding a tagged union.
    Object(ObjectDef),
    /// 2: a string newtype.
    StringNewtype,
    /// 3: an integer newtype.
    IntegerNewtype,
    /// 4: an open string enum.
    StringEnum(StringEnumDef),
    /// 5: an internally tagged union.
    TaggedUnion(TaggedUnionDef),
    /// 6: an untagged union.
    UntaggedUnion(Vec<UntaggedMember>),
    /// 7: an open integer code with named values.
    Code(CodeDef),
    /// 9: a payload that is always `null` (legacy dialects' parameterless methods and empty
    /// results).
    Null,
}

/// Shape 1 (and 8).
#[derive(Debug, Clone)]
pub struct ObjectDef {
    /// Properties in declaration order.
    pub props: Vec<Prop>,
    /// Shape 8: the embedded union's definition name and the Rust field that holds it.
    pub embedded: Option<(String, String)>,
}

/// One property of an object.
#[derive(Debug, Clone)]
pub struct Prop {
    /// The name on the wire.
    pub json_name: String,
    /// Its schema, as written.
    pub schema: Value,
    /// Listed in `required`.
    pub required: bool,
    /// The property may be `null` (`type` includes `"null"` or an `anyOf` with a null member).
    pub nullable: bool,
    /// A wrong value is replaced by the default instead of rejecting the message.
    pub lenient: bool,
    /// `x-skip-invalid-items`.
    pub skip_invalid_items: bool,
    /// `x-null-as-default`.
    pub null_as_default: bool,
    /// The property carries a `default`.
    pub has_default: bool,
    /// `x-null-clears`: absent, `null` and a value are three different states.
    pub null_clears: bool,
    /// `x-patch`: absent, `null` and a value are three states, typed `acp_types::Patch<T>`
    /// (v2's upserts: absent keeps, `null` clears, a value replaces). Strict: a value of the
    /// wrong type rejects the message.
    pub patch: bool,
}

impl Prop {
    /// The definition this property refers to, looking through a nullable `anyOf`.
    pub fn referenced_def(&self) -> Option<&str> {
        if let Some(r) = self.schema.get("$ref").and_then(Value::as_str) {
            return ref_name(r);
        }
        self.schema
            .get("anyOf")
            .and_then(Value::as_array)?
            .iter()
            .find_map(|m| m.get("$ref").and_then(Value::as_str).and_then(ref_name))
    }
}

/// Shape 4.
#[derive(Debug, Clone)]
pub struct StringEnumDef {
    /// The known values with their descriptions.
    pub values: Vec<(String, Option<String>)>,
    /// The Rust variant name of each value, in the same order (`x-variant`, else the value in
    /// PascalCase). `Unknown` is taken by the variant that keeps unknown values.
    pub variants: Vec<String>,
    /// The value absent means, if any.
    pub default: Option<String>,
}

/// Shape 5.
#[derive(Debug, Clone)]
pub struct TaggedUnionDef {
    /// The property that carries the tag.
    pub tag: String,
    /// The variants in declaration order.
    pub variants: Vec<TaggedVariant>,
}

/// One variant of a tagged union.
#[derive(Debug, Clone)]
pub struct TaggedVariant {
    /// The tag value (`None` for the untagged fallback).
    pub tag_value: Option<String>,
    /// The body definition (`None` for a unit variant).
    pub body: Option<String>,
    /// Rust variant name.
    pub rust_name: String,
    /// Its description.
    pub description: Option<String>,
    /// `x-boxed`: the variant holds its body in a `Box` (a large, rare body that should not
    /// set the size of every value of the union).
    pub boxed: bool,
}

/// One member of an untagged union.
#[derive(Debug, Clone)]
pub struct UntaggedMember {
    /// Rust variant name (the member's `title`).
    pub title: String,
    /// The member's schema (a property schema).
    pub schema: Value,
    /// Its description.
    pub description: Option<String>,
}

/// Shape 7.
#[derive(Debug, Clone)]
pub struct CodeDef {
    /// The `format` of the integer.
    pub format: String,
    /// Named values: (constant name, value, description).
    pub known: Vec<(String, i64, Option<String>)>,
}

/// A parsed schema document.
#[derive(Debug, Clone)]
pub struct Schema {
    /// `x-dialect`.
    pub dialect: String,
    /// `title`.
    pub title: String,
    /// The methods of `x-methods`, in order.
    pub methods: Vec<Method>,
    /// The definitions, in document order.
    pub defs: Vec<Def>,
    /// The document as parsed (for typify).
    pub document: Value,
}

impl Schema {
    /// Looks a definition up by name.
    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs.iter().find(|d| d.name == name)
    }

    /// The entries of `x-methods` as written, in the order of [`Schema::methods`] (for the
    /// annotations a generator reads itself, such as v1's `x-rust`).
    pub fn raw_methods(&self) -> impl Iterator<Item = &Value> {
        self.document
            .get("x-methods")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
    }
}
