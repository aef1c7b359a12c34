//! [`Patch`]: a field of an upsert that can be absent, `null` or a value.
//!
//! Protocol v2 reports messages, tool calls, terminals and other entities as upserts: an
//! update names the entity by id and carries only what changed. Each changed field has three
//! states on the wire, and they mean different things:
//!
//! | on the wire | [`Patch`] | meaning for the receiver |
//! | --- | --- | --- |
//! | field omitted | [`Patch::Absent`] | keep what you have |
//! | `null` | [`Patch::Null`] | clear it (back to the protocol default) |
//! | a value | [`Patch::Value`] | replace it |
//!
//! `Option<T>` cannot tell the first two apart, so the generated v2 types use `Patch<T>`
//! for every field the schema marks `x-patch`. With `#[serde(default, skip_serializing_if =
//! "Patch::is_absent")]` on the field (which the generator writes), every state round-trips.
//! A value of the wrong type is an error, not "absent": a patch that cannot be read must not
//! be applied as "keep".
//!
//! ```
//! use acp_types::Patch;
//!
//! let mut title = Some("old".to_string());
//! Patch::Absent.apply_to(&mut title);
//! assert_eq!(title.as_deref(), Some("old"));
//! Patch::Value("new".to_string()).apply_to(&mut title);
//! assert_eq!(title.as_deref(), Some("new"));
//! Patch::<String>::Null.apply_to(&mut title);
//! assert_eq!(title, None);
//! ```

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One field of an upsert: omitted (keep), `null` (clear) or a value (replace).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Patch<T> {
    /// The field was omitted: the receiver keeps its current value.
    #[default]
    Absent,
    /// The field was `null`: the receiver clears its value.
    Null,
    /// The field carried a value: the receiver replaces its value with it.
    Value(T),
}

impl<T> Patch<T> {
    /// Whether the field is omitted (used by generated code to skip it when writing).
    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }

    /// Whether the field is an explicit `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Patch::Null)
    }

    /// The value, when the field carries one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The value by value, when the field carries one.
    pub fn into_value(self) -> Option<T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }

    /// A patch of references to this patch's value.
    pub fn as_ref(&self) -> Patch<&T> {
        match self {
            Patch::Absent => Patch::Absent,
            Patch::Null => Patch::Null,
            Patch::Value(v) => Patch::Value(v),
        }
    }

    /// Maps the value, keeping absent and `null` as they are.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Patch::Absent => Patch::Absent,
            Patch::Null => Patch::Null,
            Patch::Value(v) => Patch::Value(f(v)),
        }
    }

    /// Applies the patch to the receiver's copy: absent keeps it, `null` clears it, a value
    /// replaces it.
    pub fn apply_to(self, current: &mut Option<T>) {
        match self {
            Patch::Absent => {}
            Patch::Null => *current = None,
            Patch::Value(v) => *current = Some(v),
        }
    }

    /// Applies the patch to a field that has a protocol default instead of "unset": `null`
    /// resets it to `T::default()` (a tool call's `kind` back to `other`, say).
    pub fn apply_to_default(self, current: &mut T)
    where
        T: Default,
    {
        match self {
            Patch::Absent => {}
            Patch::Null => *current = T::default(),
            Patch::Value(v) => *current = v,
        }
    }
}

impl<T> From<T> for Patch<T> {
    fn from(value: T) -> Self {
        Patch::Value(value)
    }
}

impl<T> From<Option<T>> for Patch<T> {
    /// `Some` is a value, `None` an explicit `null` (never absent).
    fn from(value: Option<T>) -> Self {
        match value {
            Some(v) => Patch::Value(v),
            None => Patch::Null,
        }
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            // Generated fields skip absent ones; written anyway (as a bare value), absent
            // has no representation but `null`.
            Patch::Absent | Patch::Null => serializer.serialize_none(),
            Patch::Value(v) => v.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    /// Reached only when the field is present (absence is `#[serde(default)]`): `null` is
    /// [`Patch::Null`], anything else must read as `T`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            Some(v) => Patch::Value(v),
            None => Patch::Null,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(default, skip_serializing_if = "Patch::is_absent")]
        title: Patch<String>,
    }

    #[test]
    fn each_state_round_trips() {
        for (text, state) in [
            ("{}", Patch::Absent),
            (r#"{"title":null}"#, Patch::Null),
            (r#"{"title":"x"}"#, Patch::Value("x".to_string())),
        ] {
            let read: Holder = serde_json::from_str(text).unwrap();
            assert_eq!(read.title, state, "{text}");
            assert_eq!(serde_json::to_string(&read).unwrap(), text);
        }
    }

    #[test]
    fn a_value_of_the_wrong_type_is_an_error() {
        let err = serde_json::from_str::<Holder>(r#"{"title":5}"#).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }
}
