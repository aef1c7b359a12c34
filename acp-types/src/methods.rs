//! What every dialect's generated `methods` module builds on: who serves a method, the method
//! table entries, the traits that bind a params type to its wire name and result, and the
//! error returned when a message cannot be decoded.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Which side of a connection serves (receives and handles) a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The agent serves it; clients send it.
    Agent,
    /// The client serves it; agents send it.
    Client,
    /// Either side may send it (protocol-level, such as `$/cancel_request`).
    Protocol,
}

/// Whether a method is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MethodKind {
    /// The receiver answers with a result or an error.
    Request,
    /// Never answered.
    Notification,
}

/// One row of a dialect's method table (`METHODS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodInfo {
    /// The wire name, e.g. `session/prompt`.
    pub name: &'static str,
    /// Who serves it.
    pub served_by: Side,
    /// Request or notification.
    pub kind: MethodKind,
    /// The Rust name of the params type.
    pub params_type: &'static str,
    /// The Rust name of the result type (requests only).
    pub result_type: Option<&'static str>,
    /// What the method is for.
    pub description: &'static str,
}

/// Binds a request's params type to its wire name and result type, so a connection can offer
/// `request(params) -> Result<P::Response, _>` without the caller naming the method.
pub trait RequestMethod: Serialize + DeserializeOwned {
    /// The wire name.
    const METHOD: &'static str;
    /// The side that serves it.
    const SERVED_BY: Side;
    /// Whether `null` params are read as the default value (peers send `null` for empty ones).
    const PARAMS_NULL_AS_DEFAULT: bool;
    /// Whether a `null` result is read as the default value.
    const RESULT_NULL_AS_DEFAULT: bool;
    /// The result type.
    type Response: Serialize + DeserializeOwned;

    /// Reads this request's result, honouring [`Self::RESULT_NULL_AS_DEFAULT`].
    fn decode_response(payload: impl Payload) -> serde_json::Result<Self::Response> {
        payload.parse(Self::RESULT_NULL_AS_DEFAULT)
    }

    /// Reads this request's params, honouring [`Self::PARAMS_NULL_AS_DEFAULT`].
    fn decode_params(payload: impl Payload) -> serde_json::Result<Self> {
        payload.parse(Self::PARAMS_NULL_AS_DEFAULT)
    }
}

/// Binds a notification's params type to its wire name.
pub trait NotificationMethod: Serialize + DeserializeOwned {
    /// The wire name.
    const METHOD: &'static str;
    /// The side that receives it.
    const SERVED_BY: Side;
    /// Whether `null` params are read as the default value.
    const PARAMS_NULL_AS_DEFAULT: bool;

    /// Reads this notification's params, honouring [`Self::PARAMS_NULL_AS_DEFAULT`].
    fn decode_params(payload: impl Payload) -> serde_json::Result<Self> {
        payload.parse(Self::PARAMS_NULL_AS_DEFAULT)
    }
}

/// Where a message payload comes from: JSON text, a `RawValue` kept by the RPC layer, or a
/// parsed `Value`.
pub trait Payload {
    /// Whether the payload is JSON `null`.
    fn is_null(&self) -> bool;
    /// Parses the payload as `T`. When `null_as_default` is set, a `null` payload is read as an
    /// empty object, so a type whose fields are all optional comes out as its default.
    fn parse<T: DeserializeOwned>(self, null_as_default: bool) -> serde_json::Result<T>;
}

impl Payload for &str {
    fn is_null(&self) -> bool {
        self.trim() == "null"
    }
    fn parse<T: DeserializeOwned>(self, null_as_default: bool) -> serde_json::Result<T> {
        if null_as_default && Payload::is_null(&self) {
            serde_json::from_str("{}")
        } else {
            serde_json::from_str(self)
        }
    }
}

impl Payload for &RawValue {
    fn is_null(&self) -> bool {
        Payload::is_null(&self.get())
    }
    fn parse<T: DeserializeOwned>(self, null_as_default: bool) -> serde_json::Result<T> {
        Payload::parse(self.get(), null_as_default)
    }
}

impl Payload for serde_json::Value {
    fn is_null(&self) -> bool {
        serde_json::Value::is_null(self)
    }
    fn parse<T: DeserializeOwned>(self, null_as_default: bool) -> serde_json::Result<T> {
        if null_as_default && self.is_null() {
            serde_json::from_value(serde_json::Value::Object(serde_json::Map::new()))
        } else {
            serde_json::from_value(self)
        }
    }
}

/// Why a message could not be turned into a typed message enum.
#[derive(Debug)]
pub enum DecodeError {
    /// The method is not part of this dialect (and is not an `_`-prefixed extension).
    UnknownMethod(String),
    /// The payload does not match the method's params or result type.
    InvalidPayload {
        /// The method whose payload failed.
        method: String,
        /// serde's account of what is wrong (it names the field).
        error: serde_json::Error,
    },
}

impl DecodeError {
    /// Builds [`DecodeError::InvalidPayload`] (used by generated code).
    pub fn invalid(method: &str, error: serde_json::Error) -> Self {
        Self::InvalidPayload {
            method: method.to_owned(),
            error,
        }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownMethod(method) => write!(f, "unknown method `{method}`"),
            Self::InvalidPayload { method, error } => {
                write!(f, "invalid payload for `{method}`: {error}")
            }
        }
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::UnknownMethod(_) => None,
            Self::InvalidPayload { error, .. } => Some(error),
        }
    }
}

/// `{"method": ..., "params": ...}` as read by the message enums' `Deserialize`.
#[derive(Deserialize)]
pub struct RawMessage {
    /// The wire name.
    pub method: String,
    /// The payload (`null` when absent).
    #[serde(default)]
    pub params: serde_json::Value,
}
