//! A request handler's result as the writer takes it: raw JSON, or a value serialized
//! straight into the writer's buffer.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::error::Error;

/// A successful request result: raw JSON, or a value serialized only when its response
/// is written (straight into the writer's reused buffer).
///
/// A value that fails to serialize (or panics doing so) is answered with `-32603`
/// ("result failed to serialize"), like [`to_raw`](crate::to_raw) in a handler would.
pub struct Reply(pub(crate) ReplyBody);

pub(crate) enum ReplyBody {
    Raw(Box<RawValue>),
    Value(Box<dyn WriteJson>),
}

/// A value that can write itself as JSON into the writer's buffer.
pub(crate) trait WriteJson: Send {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
    fn to_raw(&self) -> serde_json::Result<Box<RawValue>>;
}

impl<T: Serialize + Send> WriteJson for T {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(crate::message::JsonOut(out), self)
    }
    fn to_raw(&self) -> serde_json::Result<Box<RawValue>> {
        serde_json::value::to_raw_value(self)
    }
}

impl Reply {
    /// A value to be serialized when the response is written.
    pub fn new<T: Serialize + Send + 'static>(value: T) -> Reply {
        Reply(ReplyBody::Value(Box::new(value)))
    }

    /// Raw JSON, written as it is (line breaks turned into spaces).
    pub fn raw(raw: Box<RawValue>) -> Reply {
        Reply(ReplyBody::Raw(raw))
    }

    /// The result as raw JSON (`-32603` if the value does not serialize).
    pub fn into_raw(self) -> Result<Box<RawValue>, Error> {
        match self.0 {
            ReplyBody::Raw(raw) => Ok(raw),
            ReplyBody::Value(value) => value
                .to_raw()
                .map_err(|e| Error::internal_error(format!("result failed to serialize: {e}"))),
        }
    }
}

impl From<Box<RawValue>> for Reply {
    fn from(raw: Box<RawValue>) -> Self {
        Reply::raw(raw)
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            ReplyBody::Raw(raw) => f.debug_tuple("Reply").field(raw).finish(),
            ReplyBody::Value(_) => f.write_str("Reply(<value>)"),
        }
    }
}
