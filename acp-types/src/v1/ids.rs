//! `From<&str>` for the string identifiers, so `"sess-1".into()` works wherever an id is asked.

use super::*;

macro_rules! from_str_ref {
    ($($id:ident),* $(,)?) => {$(
        impl From<&str> for $id {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }
    )*};
}

from_str_ref!(
    SessionId,
    ToolCallId,
    TerminalId,
    MessageId,
    PermissionOptionId,
    SessionModeId,
    SessionConfigId,
    SessionConfigValueId,
    AuthMethodId,
    ElicitationId,
);

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
