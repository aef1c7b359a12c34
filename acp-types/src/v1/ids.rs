//! `From` for the request id, an untagged union the generator leaves alone (its members are a
//! number and a string, for which `From` cannot be derived from the schema without ambiguity).
//! The string identifiers (`SessionId`, `ToolCallId`, ...) get `From<&str>` from the generator.

use super::*;

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        Self::Number(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        Self::Str(value.to_owned())
    }
}
