//! [`Meta`], the type of every `_meta` field.

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Extension metadata: the JSON object of ACP's reserved `_meta` field.
///
/// Almost every protocol value may carry `_meta`, where implementations put data of their
/// own. Its keys are not part of the protocol: carry them along, but never infer protocol
/// meaning from them or rely on particular keys being present.
///
/// `Meta` is a JSON object (it derefs to [`serde_json::Map`]) behind a [`Box`], and reads and
/// writes exactly as the object itself. The box is there for speed: `_meta` is rarely sent,
/// yet every protocol value has a field for it, and an inline map would cost 32 to 72 bytes
/// (72 when serde_json's `preserve_order` feature is on anywhere in the build) at every
/// nesting level of every message. The parser moves values by value as it builds them, so
/// their size is parse time; boxed, an absent `_meta` (`Option<Meta>`) is one pointer.
///
/// ```
/// use acp_types::Meta;
/// use serde_json::json;
///
/// let mut meta = Meta::new();
/// meta.insert("vendor.example/trace".into(), json!("abc"));
/// assert_eq!(meta["vendor.example/trace"], "abc");
///
/// let meta: Meta = [("a".to_string(), json!(1))].into_iter().collect();
/// assert_eq!(meta.get("a"), Some(&json!(1)));
/// assert_eq!(serde_json::to_value(&meta).unwrap(), json!({"a": 1}));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meta(Box<Map<String, Value>>);

impl Meta {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    /// The object itself.
    pub fn into_inner(self) -> Map<String, Value> {
        *self.0
    }
}

impl Deref for Meta {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Meta {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl From<Map<String, Value>> for Meta {
    fn from(map: Map<String, Value>) -> Self {
        Self(Box::new(map))
    }
}

impl From<Meta> for Map<String, Value> {
    fn from(meta: Meta) -> Self {
        meta.into_inner()
    }
}

impl FromIterator<(String, Value)> for Meta {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Self(Box::new(Map::from_iter(iter)))
    }
}

impl IntoIterator for Meta {
    type Item = (String, Value);
    type IntoIter = serde_json::map::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.into_inner().into_iter()
    }
}

impl<'a> IntoIterator for &'a Meta {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_absent_meta_is_one_pointer() {
        assert_eq!(size_of::<Option<Meta>>(), size_of::<usize>());
    }

    #[test]
    fn reads_and_writes_as_the_object_itself() {
        let wire = json!({"a": 1, "b": {"c": [null, "d"]}});
        let meta: Meta = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(meta.len(), 2);
        assert_eq!(serde_json::to_value(&meta).unwrap(), wire);
        assert!(serde_json::from_value::<Meta>(json!([1])).is_err());
        let absent: Option<Meta> = serde_json::from_value(json!(null)).unwrap();
        assert_eq!(absent, None);
    }

    /// `lenient_meta` (what generated `_meta` fields use) reads what `lenient` reads: an object
    /// as itself, anything else as absent, and the rest of the message is read either way.
    #[test]
    fn a_lenient_meta_reads_as_the_generic_lenient_field_does() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Fast {
            #[serde(
                rename = "_meta",
                default,
                deserialize_with = "crate::serde_util::lenient_meta"
            )]
            meta: Option<Meta>,
            after: u8,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Generic {
            #[serde(
                rename = "_meta",
                default,
                deserialize_with = "crate::serde_util::lenient"
            )]
            meta: Option<Meta>,
            after: u8,
        }
        let values = [
            json!({"traceparent": "00-x", "n": {"deep": [1, {"a": null}]}}),
            json!({}),
            json!(null),
            json!(5),
            json!(-5),
            json!(1.5),
            json!("text"),
            json!(true),
            json!([1, [2, {"a": 3}], "x"]),
        ];
        for value in values {
            let text = format!(r#"{{"_meta":{value},"after":7}}"#);
            let fast: Fast = serde_json::from_str(&text).unwrap();
            let generic: Generic = serde_json::from_str(&text).unwrap();
            assert_eq!(fast.meta, generic.meta, "{text}");
            assert_eq!(fast.after, 7, "{text}");
            assert_eq!(fast.meta.is_some(), value.is_object(), "{text}");
        }
        let absent: Fast = serde_json::from_str(r#"{"after":1}"#).unwrap();
        assert_eq!(absent.meta, None);
    }

    #[test]
    fn derefs_to_the_map_and_converts_both_ways() {
        let mut meta: Meta = [("a".to_string(), json!(1))].into_iter().collect();
        meta.insert("b".into(), json!(true));
        assert_eq!(meta.get("a"), Some(&json!(1)));
        assert_eq!((&meta).into_iter().count(), 2);
        let map: Map<String, Value> = meta.clone().into();
        assert_eq!(Meta::from(map), meta);
        assert_eq!(Meta::new(), Meta::default());
        assert!(Meta::new().is_empty());
    }
}
