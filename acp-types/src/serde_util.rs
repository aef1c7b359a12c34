//! Deserializers behind the schema's leniency annotations (see acp-schema's `CONVENTIONS.md`),
//! and the tag-first reading of internally tagged unions ([`deserialize_tag_first`]).
//!
//! Generated fields name these functions in `#[serde(deserialize_with = "...")]`. They buffer
//! the field as a `serde_json::Value` first, so a bad value can be dropped without the parser
//! losing its place in the message.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Appends `s` as a JSON string, exactly as serde_json writes it. A string with nothing to
/// escape (no control character, quote or backslash: nearly every method name, id and
/// chunk of text) is copied between its quotes in one pass; serde_json looks up every byte
/// in its escape table and writes the runs between escapes one by one, which for the short
/// strings of a message costs several times the copy. Anything else goes through
/// serde_json itself.
pub fn write_json_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, s).expect("writing a string to a Vec cannot fail");
    }
}

/// Appends the JSON of a streamed text chunk's `session/update` params as serde_json writes
/// them for both versions' types: `{"sessionId":…,"update":{"sessionUpdate":<tag>,
/// ["messageId":…,]"content":{"type":"text","text":…}}}` (v2's chunks carry `messageId`
/// before `content`; v1's plain chunk has none). The callers (`write_text_chunk` of v1's
/// `SessionNotification` and v2's `UpdateSessionNotification`) check that nothing else is
/// set.
#[cfg(any(feature = "v1", feature = "v2"))]
pub(crate) fn write_text_chunk_params(
    out: &mut Vec<u8>,
    session_id: &str,
    tag: &str,
    message_id: Option<&str>,
    text: &str,
) {
    out.extend_from_slice(br#"{"sessionId":"#);
    write_json_str(out, session_id);
    out.extend_from_slice(br#","update":{"sessionUpdate":""#);
    out.extend_from_slice(tag.as_bytes());
    out.push(b'"');
    if let Some(message_id) = message_id {
        out.extend_from_slice(br#","messageId":"#);
        write_json_str(out, message_id);
    }
    out.extend_from_slice(br#","content":{"type":"text","text":"#);
    write_json_str(out, text);
    out.extend_from_slice(b"}}}");
}

/// An optional field whose bad value means "absent": any value that does not parse as `T`
/// becomes `T::default()` instead of failing the whole message.
pub fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).unwrap_or_default())
}

/// A lenient `_meta`: an object is read straight into [`Meta`](crate::Meta), anything else
/// (`null`, a string, a number, an array) is absent. What [`lenient`] does for it, without
/// building the object twice (as a `Value`, then the map again from it): `_meta` is on every
/// message that carries a trace context, so this is on the hot path of a traced stream.
pub fn lenient_meta<'de, D>(deserializer: D) -> Result<Option<crate::Meta>, D::Error>
where
    D: Deserializer<'de>,
{
    struct MetaOrAbsent;

    impl<'de> Visitor<'de> for MetaOrAbsent {
        type Value = Option<crate::Meta>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a `_meta` object (anything else is read as absent)")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let object =
                serde_json::Map::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            Ok(Some(crate::Meta::from(object)))
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(None)
        }

        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }

        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_i128<E>(self, _: i128) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_u128<E>(self, _: u128) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
    }

    deserializer.deserialize_any(MetaOrAbsent)
}

/// A lenient list whose bad items are dropped one by one; anything but an array is empty.
pub fn lenient_vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::Array(items) => parse_items(items),
        _ => Vec::new(),
    })
}

/// A lenient nullable list: bad items are dropped; anything but an array is `None`.
pub fn lenient_option_vec<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::Array(items) => Some(parse_items(items)),
        _ => None,
    })
}

/// A strict list (it must be an array, or null where allowed) whose bad items are dropped.
pub fn skip_invalid_items<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let items = Option::<Vec<Value>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(parse_items(items))
}

/// A strict nullable list whose bad items are dropped.
pub fn skip_invalid_option_items<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(Option::<Vec<Value>>::deserialize(deserializer)?.map(parse_items))
}

/// A field that accepts `null` as its default value (and is otherwise strict).
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn parse_items<T: DeserializeOwned>(items: Vec<Value>) -> Vec<T> {
    items
        .into_iter()
        .filter_map(|item| T::deserialize(item).ok())
        .collect()
}

/// A property where absent, `null` and a value differ (`x-null-clears`): absent is `None`
/// (never reaches this function), `null` is `Some(None)`, a value is `Some(Some(value))`, and
/// a wrong value counts as absent.
pub fn null_clears<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::Null => Some(None),
        value => T::deserialize(value).ok().map(Some),
    })
}

/// [`null_clears`] for a list whose bad items are dropped one by one.
pub fn null_clears_vec<'de, D, T>(deserializer: D) -> Result<Option<Option<Vec<T>>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::Null => Some(None),
        Value::Array(items) => Some(Some(parse_items(items))),
        _ => None,
    })
}

/// The payload of a parameterless method or an empty result in the legacy dialects: `null`,
/// or any object (ignored), as the peers of those dialects sent both. Anything else (a number,
/// a string, an array) is rejected.
pub fn deserialize_null_payload<'de, D>(deserializer: D) -> Result<(), D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Null | Value::Object(_) => Ok(()),
        other => Err(serde::de::Error::custom(format_args!(
            "expected null (or an object, ignored), found {}",
            match other {
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                _ => "an array",
            }
        ))),
    }
}

/// An internally tagged union that can be read without buffering when its tag comes first
/// (implemented by the generated unions; see [`deserialize_tag_first`]).
pub trait TagFirst: Sized {
    /// The tag's key.
    const TAG: &'static str;
    /// What the deserializer expected, for "invalid type" errors.
    const EXPECTING: &'static str;
    /// Reads the variant named `tag` from `rest` (the object after its tag), or gives `rest`
    /// back when that variant must be read from the whole object.
    fn direct<'de, A: MapAccess<'de>>(tag: &str, rest: A) -> Result<Result<Self, A::Error>, A>;
    /// Reads the union from the whole object, buffered.
    fn from_value<E: serde::de::Error>(value: Value) -> Result<Self, E>;
}

/// Deserializes a [`TagFirst`] union: straight from the input when the object's first key
/// is the tag and [`TagFirst::direct`] takes it, else by buffering the object as a
/// [`Value`] and calling [`TagFirst::from_value`].
pub fn deserialize_tag_first<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TagFirst,
{
    deserializer.deserialize_map(TagFirstVisitor(PhantomData))
}

struct TagFirstVisitor<T>(PhantomData<T>);

impl<'de, T: TagFirst> Visitor<'de> for TagFirstVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut object = serde_json::Map::new();
        match map.next_key_seed(KeyUnlessTag(T::TAG))? {
            None => {}
            Some(None) => {
                let tag = match map.next_value_seed(TagValue)? {
                    TagRead::Name(name) => match T::direct(&name, map) {
                        Ok(result) => return result,
                        Err(rest) => {
                            map = rest;
                            Value::String(name.into_owned())
                        }
                    },
                    TagRead::Other(value) => value,
                };
                object.insert(T::TAG.to_owned(), tag);
            }
            Some(Some(key)) => {
                let value = map.next_value()?;
                object.insert(key, value);
            }
        }
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            object.insert(key, value);
        }
        T::from_value(Value::Object(object))
    }
}

/// The tag's value as read by [`TagValue`]: a name (borrowed from the input unless it has
/// escapes), or anything else as a [`Value`] for [`TagFirst::from_value`] to report.
enum TagRead<'de> {
    Name(Cow<'de, str>),
    Other(Value),
}

/// Reads the tag's value without allocating when it is a string without escapes: every
/// tagged union read (each `session/update` holds two) used to allocate its tag's name.
struct TagValue;

impl<'de> DeserializeSeed<'de> for TagValue {
    type Value = TagRead<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TagValue {
    type Value = TagRead<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(TagRead::Name(Cow::Borrowed(v)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(TagRead::Name(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(TagRead::Name(Cow::Owned(v)))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(TagRead::Other(Value::Bool(v)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(TagRead::Other(Value::from(v)))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(TagRead::Other(Value::from(v)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(TagRead::Other(Value::from(v)))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(TagRead::Other(Value::Null))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(TagRead::Other(Value::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(TagRead::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(TagRead::Other)
    }
}

/// A map key: `None` when it is the tag (read without allocating), else the key.
struct KeyUnlessTag(&'static str);

impl<'de> DeserializeSeed<'de> for KeyUnlessTag {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyUnlessTag {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok((key != self.0).then(|| key.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok((key != self.0).then_some(key))
    }
}
