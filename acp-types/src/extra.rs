//! [`Extra`]: the fields of an object that this version of the schema does not know.
//!
//! Peers run ahead of the stable schema: gemini-cli answers `session/new` with `models`,
//! agents built on the official crate's unstable features add fields of their own. Every
//! generated object keeps such fields in its `extra` field instead of dropping them, so the
//! application can still read them, and writes them back unchanged after its own fields.
//!
//! The generated structs read their known fields with serde's derive (the fast path, no
//! buffering); [`deserialize_keeping_unknown`] wraps the deserializer so that a key the derive
//! would skip is read as a [`serde_json::Value`] into the map instead. On output, the map is
//! flattened after the known fields.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Unknown fields of a protocol object, kept as received (key and raw JSON value).
///
/// Empty unless the peer sent fields the schema does not name. Boxed, so an object without
/// unknown fields pays one pointer for it (values are moved while they are parsed, so their
/// size is parse time).
///
/// ```
/// use acp_types::v1::NewSessionResponse;
/// use serde_json::json;
///
/// // `quota` is in no schema (`models` would be, with `unstable_session_model` on).
/// let answer: NewSessionResponse =
///     serde_json::from_value(json!({"sessionId": "s1", "quota": {"left": 3}})).unwrap();
/// assert_eq!(answer.extra.get("quota"), Some(&json!({"left": 3})));
/// // Written back unchanged.
/// assert_eq!(
///     serde_json::to_value(&answer).unwrap(),
///     json!({"sessionId": "s1", "quota": {"left": 3}})
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extra(Option<Box<Map<String, Value>>>);

impl Extra {
    /// No unknown fields.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no unknown field was kept.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    /// How many unknown fields were kept.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    /// The raw value of the unknown field `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref()?.get(key)
    }

    /// The unknown field `key` read as `T`: `None` when absent, an error when it has another
    /// shape. This is how an application reads a field the peer offers before our schema
    /// names it (`extra.parse::<MyModels>("models")`).
    pub fn parse<'a, T: Deserialize<'a>>(
        &'a self,
        key: &str,
    ) -> Option<Result<T, serde_json::Error>> {
        self.get(key).map(T::deserialize)
    }

    /// Adds (or replaces) a field, returning the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.0
            .get_or_insert_with(Default::default)
            .insert(key.into(), value)
    }

    /// Removes a field, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let map = self.0.as_mut()?;
        let removed = map.remove(key);
        if map.is_empty() {
            // An empty map is stored as none, so that equal values compare equal.
            self.0 = None;
        }
        removed
    }

    /// The fields in the order they were kept.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().flat_map(|m| m.iter())
    }

    /// The fields as a JSON object.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|m| *m).unwrap_or_default()
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(map: Map<String, Value>) -> Self {
        if map.is_empty() {
            Self(None)
        } else {
            Self(Some(Box::new(map)))
        }
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for Extra {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Self {
        iter.into_iter()
            .map(|(k, v)| (k.into(), v))
            .collect::<Map<_, _>>()
            .into()
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::deserialize(deserializer).map(Self::from)
    }
}

/// A generated object with an [`Extra`] map: generic access to the fields the schema does not
/// know, whatever the type.
pub trait HasExtra {
    /// The unknown fields kept from the wire.
    fn extra_fields(&self) -> &Extra;
    /// The unknown fields, to add or remove some before writing the value.
    fn extra_fields_mut(&mut self) -> &mut Extra;
}

/// Reads an object with `read` (serde's derived, inherent `deserialize` of the type) while
/// keeping the keys it does not name in the object's [`Extra`]. The generated
/// `Deserialize` impls call this.
pub fn deserialize_keeping_unknown<'de, D, T, F>(deserializer: D, read: F) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: HasExtra,
    F: FnOnce(KeepUnknown<'_, D>) -> Result<T, D::Error>,
{
    let mut extra = Map::new();
    let mut value = read(KeepUnknown {
        inner: deserializer,
        extra: &mut extra,
    })?;
    if !extra.is_empty() {
        *value.extra_fields_mut() = Extra::from(extra);
    }
    Ok(value)
}

/// A deserializer that hands a struct visitor only the keys the struct names; the others are
/// read as raw JSON into a side map. Anything but a struct passes through untouched (objects
/// that embed a union read themselves as a map; their unknown keys reach the union's body).
pub struct KeepUnknown<'a, D> {
    inner: D,
    extra: &'a mut Map<String, Value>,
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.inner.$method($($arg,)* visitor)
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeepUnknown<'_, D> {
    type Error = D::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            CaptureVisitor {
                inner: visitor,
                fields,
                extra: self.extra,
            },
        )
    }

    forward! {
        deserialize_any(), deserialize_bool(), deserialize_i8(), deserialize_i16(),
        deserialize_i32(), deserialize_i64(), deserialize_i128(), deserialize_u8(),
        deserialize_u16(), deserialize_u32(), deserialize_u64(), deserialize_u128(),
        deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_bytes(), deserialize_byte_buf(),
        deserialize_option(), deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_seq(), deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(), deserialize_ignored_any(),
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

struct CaptureVisitor<'a, V> {
    inner: V,
    fields: &'static [&'static str],
    extra: &'a mut Map<String, Value>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for CaptureVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(CaptureMap {
            map,
            fields: self.fields,
            extra: self.extra,
        })
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }
}

struct CaptureMap<'a, A> {
    map: A,
    fields: &'static [&'static str],
    extra: &'a mut Map<String, Value>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for CaptureMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key_seed(KeySeed)? else {
                return Ok(None);
            };
            if self.fields.contains(&key.as_ref()) {
                return match key {
                    Cow::Borrowed(key) => seed
                        .deserialize(de::value::BorrowedStrDeserializer::new(key))
                        .map(Some),
                    Cow::Owned(key) => seed
                        .deserialize(de::value::StringDeserializer::new(key))
                        .map(Some),
                };
            }
            let value: Value = self.map.next_value()?;
            self.extra.insert(key.into_owned(), value);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A map key, borrowed from the input when the format allows it.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}
