//! Bridge to the official `agent-client-protocol-schema` crate (version 1.17.0) for
//! differential tests.
//!
//! [`official_roundtrip`] deserializes a JSON value into the official params or result type
//! for an ACP v1 method and re-serializes it, so that callers can compare the official
//! normalisation with ours. [`corpus_files`] lists the example messages under
//! `tests/corpus/v1`.
//!
//! Each corpus file is a JSON object
//! `{ "method", "part": "params" | "result", "expect": "accept" | "reject", "note", "value" }`.
//! Notifications (`session/cancel`, `session/update`, `elicitation/complete`,
//! `$/cancel_request`) only have a `params` part.

#![allow(dead_code)]

use agent_client_protocol_schema::v1;
use serde_json::Value;
use std::path::PathBuf;

/// Deserialize `value` as the given official type and serialize it back to a JSON value.
///
/// A macro rather than a generic function so that this file needs no direct `serde`
/// dependency (only `serde_json` and the official crate).
macro_rules! roundtrip {
    ($ty:ty, $value:expr) => {{
        match serde_json::from_value::<$ty>($value.clone()) {
            Ok(typed) => {
                serde_json::to_value(&typed).map_err(|e| format!("re-serialization failed: {e}"))
            }
            Err(e) => Err(e.to_string()),
        }
    }};
}

/// Round-trips `value` through the official crate's type for `method` and `part`.
///
/// `part` is `"params"` (request or notification params) or `"result"` (response result).
/// Returns `Err` with the serde error message if the official type rejects the value, or if
/// the method or part is unknown (notifications have no `"result"` part).
pub fn official_roundtrip(method: &str, part: &str, value: &Value) -> Result<Value, String> {
    match (method, part) {
        // ---- Agent-side requests (client -> agent) ----
        ("initialize", "params") => roundtrip!(v1::InitializeRequest, value),
        ("initialize", "result") => roundtrip!(v1::InitializeResponse, value),
        ("authenticate", "params") => roundtrip!(v1::AuthenticateRequest, value),
        ("authenticate", "result") => roundtrip!(v1::AuthenticateResponse, value),
        ("logout", "params") => roundtrip!(v1::LogoutRequest, value),
        ("logout", "result") => roundtrip!(v1::LogoutResponse, value),
        ("session/new", "params") => roundtrip!(v1::NewSessionRequest, value),
        ("session/new", "result") => roundtrip!(v1::NewSessionResponse, value),
        ("session/load", "params") => roundtrip!(v1::LoadSessionRequest, value),
        ("session/load", "result") => roundtrip!(v1::LoadSessionResponse, value),
        ("session/list", "params") => roundtrip!(v1::ListSessionsRequest, value),
        ("session/list", "result") => roundtrip!(v1::ListSessionsResponse, value),
        ("session/resume", "params") => roundtrip!(v1::ResumeSessionRequest, value),
        ("session/resume", "result") => roundtrip!(v1::ResumeSessionResponse, value),
        ("session/close", "params") => roundtrip!(v1::CloseSessionRequest, value),
        ("session/close", "result") => roundtrip!(v1::CloseSessionResponse, value),
        ("session/delete", "params") => roundtrip!(v1::DeleteSessionRequest, value),
        ("session/delete", "result") => roundtrip!(v1::DeleteSessionResponse, value),
        ("session/set_mode", "params") => roundtrip!(v1::SetSessionModeRequest, value),
        ("session/set_mode", "result") => roundtrip!(v1::SetSessionModeResponse, value),
        ("session/set_config_option", "params") => {
            roundtrip!(v1::SetSessionConfigOptionRequest, value)
        }
        ("session/set_config_option", "result") => {
            roundtrip!(v1::SetSessionConfigOptionResponse, value)
        }
        ("session/prompt", "params") => roundtrip!(v1::PromptRequest, value),
        ("session/prompt", "result") => roundtrip!(v1::PromptResponse, value),

        // ---- Agent-side notifications ----
        ("session/cancel", "params") => roundtrip!(v1::CancelNotification, value),

        // ---- Client-side requests (agent -> client) ----
        ("session/request_permission", "params") => {
            roundtrip!(v1::RequestPermissionRequest, value)
        }
        ("session/request_permission", "result") => {
            roundtrip!(v1::RequestPermissionResponse, value)
        }
        ("fs/read_text_file", "params") => roundtrip!(v1::ReadTextFileRequest, value),
        ("fs/read_text_file", "result") => roundtrip!(v1::ReadTextFileResponse, value),
        ("fs/write_text_file", "params") => roundtrip!(v1::WriteTextFileRequest, value),
        ("fs/write_text_file", "result") => roundtrip!(v1::WriteTextFileResponse, value),
        ("terminal/create", "params") => roundtrip!(v1::CreateTerminalRequest, value),
        ("terminal/create", "result") => roundtrip!(v1::CreateTerminalResponse, value),
        ("terminal/output", "params") => roundtrip!(v1::TerminalOutputRequest, value),
        ("terminal/output", "result") => roundtrip!(v1::TerminalOutputResponse, value),
        ("terminal/release", "params") => roundtrip!(v1::ReleaseTerminalRequest, value),
        ("terminal/release", "result") => roundtrip!(v1::ReleaseTerminalResponse, value),
        ("terminal/wait_for_exit", "params") => {
            roundtrip!(v1::WaitForTerminalExitRequest, value)
        }
        ("terminal/wait_for_exit", "result") => {
            roundtrip!(v1::WaitForTerminalExitResponse, value)
        }
        ("terminal/kill", "params") => roundtrip!(v1::KillTerminalRequest, value),
        ("terminal/kill", "result") => roundtrip!(v1::KillTerminalResponse, value),
        ("elicitation/create", "params") => roundtrip!(v1::CreateElicitationRequest, value),
        ("elicitation/create", "result") => roundtrip!(v1::CreateElicitationResponse, value),

        // ---- Client-side notifications ----
        ("session/update", "params") => roundtrip!(v1::SessionNotification, value),
        ("elicitation/complete", "params") => {
            roundtrip!(v1::CompleteElicitationNotification, value)
        }

        // ---- Protocol-level notifications ----
        ("$/cancel_request", "params") => roundtrip!(v1::CancelRequestNotification, value),

        (method, part) => Err(format!(
            "no official type for method `{method}` part `{part}`"
        )),
    }
}

/// All corpus files under `tests/corpus/v1`, sorted by path.
pub fn corpus_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/v1"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read corpus dir {}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}
