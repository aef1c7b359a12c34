//! Shared helpers for acp-types' integration tests.

#![allow(dead_code)]

pub mod official;

use acp_types::v1::{
    AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest,
    ClientResponse, METHODS,
};
use acp_types::{MethodKind, Side};
use serde_json::Value;

/// Reads a method's `"params"` or `"result"` payload with our generated message enums, exactly
/// as a connection reads it, and writes it back as JSON.
pub fn ours(method: &str, part: &str, value: &Value) -> Result<Value, String> {
    let info = METHODS
        .iter()
        .find(|m| m.name == method)
        .ok_or_else(|| format!("unknown method {method}"))?;
    let value = value.clone();
    let out = match (info.served_by, info.kind, part) {
        (Side::Agent, MethodKind::Request, "params") => {
            ClientRequest::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Agent, MethodKind::Request, "result") => {
            AgentResponse::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Client, MethodKind::Request, "params") => {
            AgentRequest::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Client, MethodKind::Request, "result") => {
            ClientResponse::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Agent, MethodKind::Notification, "params") => {
            ClientNotification::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Client | Side::Protocol, MethodKind::Notification, "params") => {
            AgentNotification::decode(method, value).map(|m| m.payload_to_value())
        }
        _ => return Err(format!("no {part} for {method}")),
    };
    out.map_err(|e| e.to_string())?.map_err(|e| e.to_string())
}
