//! The JSON-RPC error object (`{code, message, data}`), its open code type, and why a
//! connection ended.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error code.
///
/// This is an *open* newtype: any `i32` is a valid code, the associated constants name the
/// ones this crate and ACP give a meaning to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// `-32700`: the line is not valid JSON (or not valid UTF-8). Replied with `id: null`.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// `-32600`: valid JSON that is not a well-formed request, response or notification;
    /// also used for batches, oversized lines and duplicate in-flight request ids.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// `-32601`: the method is not known to the handler.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// `-32602`: the params did not deserialize into the handler's type.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// `-32603`: an internal error, including a panicking handler.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// `-32000` (ACP): the agent requires authentication first.
    pub const AUTH_REQUIRED: ErrorCode = ErrorCode(-32000);
    /// `-32002` (ACP): a resource (file, session, ...) was not found.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// `-32800` (ACP / LSP): the request was cancelled.
    pub const REQUEST_CANCELLED: ErrorCode = ErrorCode(-32800);
    /// `-32099` (local): the connection closed before the response arrived. Produced by this
    /// crate for outgoing calls; never expected from a peer.
    pub const CONNECTION_CLOSED: ErrorCode = ErrorCode(-32099);
    /// `-32098` (local): an outgoing call timed out.
    pub const REQUEST_TIMED_OUT: ErrorCode = ErrorCode(-32098);

    /// The name of a known code (`"PARSE_ERROR"`, ...), or `None`.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::PARSE_ERROR => "PARSE_ERROR",
            Self::INVALID_REQUEST => "INVALID_REQUEST",
            Self::METHOD_NOT_FOUND => "METHOD_NOT_FOUND",
            Self::INVALID_PARAMS => "INVALID_PARAMS",
            Self::INTERNAL_ERROR => "INTERNAL_ERROR",
            Self::AUTH_REQUIRED => "AUTH_REQUIRED",
            Self::RESOURCE_NOT_FOUND => "RESOURCE_NOT_FOUND",
            Self::REQUEST_CANCELLED => "REQUEST_CANCELLED",
            Self::CONNECTION_CLOSED => "CONNECTION_CLOSED",
            Self::REQUEST_TIMED_OUT => "REQUEST_TIMED_OUT",
            _ => return None,
        })
    }
}

impl From<i32> for ErrorCode {
    fn from(code: i32) -> Self {
        ErrorCode(code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// A JSON-RPC error object: what a failed request answers, and what every fallible call in
/// this crate returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Error {
    /// The error code.
    pub code: ErrorCode,
    /// A short human-readable description.
    pub message: String,
    /// Optional structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The schema's error object (data inside a message) as the error handlers answer with.
/// Fields the schema does not name (`extra`) are dropped. (Feature `v1`.)
#[cfg(feature = "v1")]
impl From<acp_types::v1::Error> for Error {
    fn from(e: acp_types::v1::Error) -> Self {
        Error {
            code: ErrorCode(e.code.0),
            message: e.message,
            data: e.data,
        }
    }
}

/// An error as the schema's error object, to hold it as data. (Feature `v1`.)
#[cfg(feature = "v1")]
impl From<Error> for acp_types::v1::Error {
    fn from(e: Error) -> Self {
        let mut out = acp_types::v1::Error::new(acp_types::v1::ErrorCode(e.code.0), e.message);
        out.data = e.data;
        out
    }
}

impl Error {
    /// An error with the given code and message and no data.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> Self {
        Error {
            code: code.into(),
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700` parse error.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, message)
    }

    /// `-32600` invalid request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }

    /// `-32601` method not found, with `data: {"method": method}`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
        .with_data(serde_json::json!({ "method": method }))
    }

    /// `-32602` invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32603` internal error.
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// `-32000` authentication required (ACP).
    pub fn auth_required(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::AUTH_REQUIRED, message)
    }

    /// `-32002` resource not found (ACP).
    pub fn resource_not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::RESOURCE_NOT_FOUND, message)
    }

    /// `-32800` request cancelled.
    pub fn request_cancelled() -> Self {
        Self::new(ErrorCode::REQUEST_CANCELLED, "request cancelled")
    }

    /// The local "connection closed" error given to calls that can no longer be answered.
    pub fn connection_closed(reason: &CloseReason) -> Self {
        Self::new(
            ErrorCode::CONNECTION_CLOSED,
            format!("connection closed: {reason}"),
        )
    }

    /// The local "timed out" error.
    pub fn timed_out(after: std::time::Duration) -> Self {
        Self::new(
            ErrorCode::REQUEST_TIMED_OUT,
            format!("request timed out after {after:?}"),
        )
    }

    /// Whether this is the local connection-closed error.
    pub fn is_connection_closed(&self) -> bool {
        self.code == ErrorCode::CONNECTION_CLOSED
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code.0, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " ({data})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Why a connection ended; see [`crate::Connection::closed`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CloseReason {
    /// The peer closed its end (EOF on our reader).
    #[error("the peer closed the stream (EOF)")]
    Eof,
    /// Reading failed.
    #[error("read error: {0}")]
    ReadError(String),
    /// Writing failed (typically: the peer closed its input).
    #[error("write error: {0}")]
    WriteError(String),
    /// The peer stopped reading: output waited and not one byte of it could be written for
    /// [`Config::write_stall_timeout`](crate::Config::write_stall_timeout).
    #[error(
        "the peer stopped reading: nothing could be written to it for {} ms (the write stall timeout)",
        .0.as_millis()
    )]
    WriteStalled(std::time::Duration),
    /// [`crate::Connection::close`] or [`crate::Peer::close`] was called.
    #[error("closed locally")]
    Local,
}

/// The message of a caught panic (a handler's, a hook's, a serializer's), for logs and
/// `-32603` answers.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

#[cfg(all(test, feature = "v1"))]
mod tests {
    use super::*;

    #[test]
    fn the_schema_error_object_and_the_engine_error_convert_both_ways() {
        let engine = Error::resource_not_found("session not found: s1")
            .with_data(serde_json::json!({ "sessionId": "s1" }));
        let object: acp_types::v1::Error = engine.clone().into();
        assert_eq!(object.code.0, -32002);
        assert_eq!(object.message, "session not found: s1");
        assert_eq!(object.data, engine.data);
        assert_eq!(Error::from(object), engine);
    }
}
