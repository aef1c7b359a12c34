//! A notification's params as a value: what [`Peer::notify_value`](crate::Peer::notify_value)
//! hands the engine at the other end of a [`memory_pair`](crate::transport::memory_pair),
//! so that a notification sent and handled in one process is neither written as JSON nor
//! parsed again (see [`Handler::start_notification_value`](crate::Handler::start_notification_value)).

use std::any::Any;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::write::reply::WriteJson;

/// The params of a notification as the sender gave them: a Rust value of the sender's
/// type, written as JSON only if somebody needs the text (a handler that takes no value, an
/// observer, a transport that carries text).
///
/// A handler takes the value with [`ParamsValue::downcast`] when the sender used the type
/// it expects (two crates built against the same `acp-types`, say), and otherwise reads
/// its text ([`ParamsValue::to_raw`]) like any other params.
pub struct ParamsValue(Box<dyn Erased>);

/// A value that can write itself as JSON (as a handler's reply value can) and be taken
/// back as its own type.
trait Erased: WriteJson {
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn type_name(&self) -> &'static str;
}

impl<T: Serialize + Send + 'static> Erased for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}

impl ParamsValue {
    /// Wraps `value` (what [`Peer::notify_value`](crate::Peer::notify_value) does with its
    /// params; public so that a handler's value path can be tested by hand).
    pub fn new<T: Serialize + Send + 'static>(value: T) -> Self {
        ParamsValue(Box::new(value))
    }

    /// Whether the value is a `T`.
    pub fn is<T: 'static>(&self) -> bool {
        self.0.as_any().is::<T>()
    }

    /// The value as a `T`, or the value back when it is of another type.
    pub fn downcast<T: 'static>(self) -> Result<T, ParamsValue> {
        self.downcast_box().map(|value| *value)
    }

    /// The value as a `T` still in the box it crossed in, or the value back when it is of
    /// another type: for a handler that moves it into a future it boxes (as every started
    /// notification is), where the box is 8 bytes and the value may be hundreds, which the
    /// future would otherwise hold beside the callee's own copy.
    pub fn downcast_box<T: 'static>(self) -> Result<Box<T>, ParamsValue> {
        if !self.is::<T>() {
            return Err(self);
        }
        match self.0.into_any().downcast::<T>() {
            Ok(value) => Ok(value),
            Err(_) => unreachable!("the type was checked above"),
        }
    }

    /// The value written as JSON text (`-32603` if it does not serialize).
    pub fn to_raw(&self) -> Result<Box<RawValue>, Error> {
        self.0
            .to_raw()
            .map_err(|e| Error::internal_error(format!("params failed to serialize: {e}")))
    }
}

impl std::fmt::Debug for ParamsValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ParamsValue")
            .field(&self.0.type_name())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Debug, PartialEq)]
    struct Chunk {
        text: String,
    }

    #[test]
    fn a_value_is_taken_back_as_its_own_type_and_only_as_it() {
        let value = ParamsValue::new(Chunk { text: "hi".into() });
        assert!(value.is::<Chunk>());
        let value = value.downcast::<String>().expect_err("not a String");
        let value = value
            .downcast_box::<String>()
            .expect_err("not a String either");
        assert_eq!(
            value.downcast::<Chunk>().unwrap(),
            Chunk { text: "hi".into() }
        );
        let boxed = ParamsValue::new(Chunk { text: "b".into() });
        assert_eq!(
            *boxed.downcast_box::<Chunk>().unwrap(),
            Chunk { text: "b".into() }
        );
    }

    #[test]
    fn its_text_is_the_json_of_the_value() {
        let value = ParamsValue::new(Chunk {
            text: "a\"b".into(),
        });
        assert_eq!(value.to_raw().unwrap().get(), r#"{"text":"a\"b"}"#);
        assert!(format!("{value:?}").contains("Chunk"), "{value:?}");
    }
}
