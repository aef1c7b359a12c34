//! The one-pass readings behind [`Envelope::read`] and [`Envelope::read_detailed`]: serde
//! visitors that borrow the fields they keep and skip everything else unparsed.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Details, Envelope};

/// The one-pass reading: each field borrowed, of any type, the others skipped. A field
/// that is `null` is present (`Some`), as it is to a full parse.
#[derive(Deserialize)]
pub(super) struct Wire<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<AnyString<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<SessionOf<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<SessionOf<'a>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<CodeOf>,
}

impl<'a> Wire<'a> {
    pub(super) fn envelope(self) -> Envelope<'a> {
        Envelope {
            method: self.method.map(|m| m.0),
            id: self.id.map(|raw| Cow::Borrowed(raw.get())),
            params_session: self.params.and_then(|p| p.0),
            has_result: self.result.is_some(),
            result_session: self.result.and_then(|r| r.0),
            error: self.error.map(|e| e.0),
        }
    }
}

/// [`Wire`] with the [`Details`] too: the params' update kind beside their session, the
/// error's message beside its code. (A type of its own, so [`Wire`] skips those fields.)
#[derive(Deserialize)]
pub(super) struct DetailedWire<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<AnyString<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<ParamsOf<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<SessionOf<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<ErrorOf<'a>>,
}

impl<'a> DetailedWire<'a> {
    pub(super) fn split(self) -> (Envelope<'a>, Details<'a>) {
        let (params_session, update_kind) =
            self.params.map_or((None, None), |p| (p.session, p.kind));
        let (code, error_message) = match self.error {
            Some(e) => (Some(e.code), e.message),
            None => (None, None),
        };
        let envelope = Envelope {
            method: self.method.map(|m| m.0),
            id: self.id.map(|raw| Cow::Borrowed(raw.get())),
            params_session,
            has_result: self.result.is_some(),
            result_session: self.result.and_then(|r| r.0),
            error: code,
        };
        let details = Details {
            update_kind,
            error_message,
        };
        (envelope, details)
    }
}

/// A field that is there, `null` or not (`Option`'s own reading takes `null` for absent).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The arms of a visitor that reads every other kind of JSON value (an array, a number, a
/// boolean, `null`) as `$none`, consuming it.
macro_rules! other_kinds_read_as {
    ($none:expr) => {
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($none)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

/// A value that is kept as its string when it is one.
struct AnyString<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for AnyString<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyString<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(AnyString(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(AnyString(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(AnyString(Some(Cow::Owned(s))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(AnyString(None))
            }
            other_kinds_read_as!(AnyString(None));
        }
        d.deserialize_any(V)
    }
}

/// The `sessionId` string of an object (of anything else: none).
struct SessionOf<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for SessionOf<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SessionOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                string_field(map, "sessionId").map(SessionOf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(SessionOf(None))
            }
            other_kinds_read_as!(SessionOf(None));
        }
        d.deserialize_any(V)
    }
}

/// The integer `code` of an object (of anything else: none).
struct CodeOf(Option<i64>);

impl<'de> Deserialize<'de> for CodeOf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(CodeOf(value.get("code").and_then(Value::as_i64)))
    }
}

/// The string at `key` of a map (the others skipped); an error on a duplicate `key`, for
/// the full parse to decide.
fn string_field<'de, A: MapAccess<'de>>(
    mut map: A,
    field: &'static str,
) -> Result<Option<Cow<'de, str>>, A::Error> {
    let mut found = None;
    while let Some(key) = map.next_key::<Cow<'de, str>>()? {
        if key == field {
            if found.is_some() {
                return Err(serde::de::Error::duplicate_field(field));
            }
            found = Some(map.next_value::<AnyString<'de>>()?.0);
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(found.flatten())
}

/// The `sessionUpdate` string of an object (of anything else: none).
struct UpdateKindOf<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for UpdateKindOf<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UpdateKindOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                string_field(map, "sessionUpdate").map(UpdateKindOf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(UpdateKindOf(None))
            }
            other_kinds_read_as!(UpdateKindOf(None));
        }
        d.deserialize_any(V)
    }
}

/// The `sessionId` string of the params and the `sessionUpdate` string of their `update`
/// (of anything but an object: neither).
#[derive(Default)]
struct ParamsOf<'a> {
    session: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ParamsOf<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ParamsOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut session, mut update) = (None, None);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "sessionId" if session.is_some() => {
                            return Err(serde::de::Error::duplicate_field("sessionId"));
                        }
                        "sessionId" => session = Some(map.next_value::<AnyString<'de>>()?.0),
                        "update" if update.is_some() => {
                            return Err(serde::de::Error::duplicate_field("update"));
                        }
                        "update" => update = Some(map.next_value::<UpdateKindOf<'de>>()?.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(ParamsOf {
                    session: session.flatten(),
                    kind: update.flatten(),
                })
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(ParamsOf::default())
            }
            other_kinds_read_as!(ParamsOf::default());
        }
        d.deserialize_any(V)
    }
}

/// The integer `code` and the string `message` of an error object (of anything else:
/// neither).
#[derive(Default)]
struct ErrorOf<'a> {
    code: Option<i64>,
    message: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ErrorOf<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ErrorOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut code, mut message) = (None, None);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "code" if code.is_some() => {
                            return Err(serde::de::Error::duplicate_field("code"));
                        }
                        // A code is small: its full parse is what reads it as a full parse does.
                        "code" => code = Some(map.next_value::<Value>()?.as_i64()),
                        "message" if message.is_some() => {
                            return Err(serde::de::Error::duplicate_field("message"));
                        }
                        "message" => message = Some(map.next_value::<AnyString<'de>>()?.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(ErrorOf {
                    code: code.flatten(),
                    message: message.flatten(),
                })
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(ErrorOf::default())
            }
            other_kinds_read_as!(ErrorOf::default());
        }
        d.deserialize_any(V)
    }
}
