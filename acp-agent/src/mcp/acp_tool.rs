//! One MCP tool call shown to the client as an ACP tool call: `tool_call`, optionally
//! `session/request_permission`, then `tool_call_update` with the result or the failure.

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{McpConnector, McpError};
use crate::types::{
    Content, ContentBlock, PermissionOption, PermissionOptionId, PermissionOptionKind,
    RequestPermissionOutcome, ToolCall, ToolCallContent, ToolCallId, ToolCallStatus, ToolKind,
};
use crate::{Error, SessionHandle};

/// Whether [`run_as_tool_call`] asks the user first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpPermission {
    /// Call without asking.
    Skip,
    /// Ask through `session/request_permission` (allow once / reject) before calling.
    Ask,
}

/// Runs `tool` of `server` as the ACP tool call `call_id` of `session`: announces it (kind
/// `other`, title `server/tool`, the arguments as raw input), asks permission if told to,
/// calls it through `connector` and ends the tool call `completed` with the result's content
/// (and its structured content as raw output) or `failed` with the reason.
///
/// The outer `Err` is the ACP connection failing; the inner result is the MCP outcome, which
/// the client has already been shown either way. A result whose `isError` is set is shown as a
/// failed tool call and returned as `Ok`. A rejected permission is
/// [`McpError::Rejected`]; `cancel` firing is [`McpError::Cancelled`].
#[allow(clippy::too_many_arguments)]
pub async fn run_as_tool_call(
    session: &SessionHandle,
    connector: &McpConnector,
    call_id: impl Into<ToolCallId>,
    server: &str,
    tool: &str,
    arguments: Option<JsonObject>,
    permission: McpPermission,
    cancel: &CancellationToken,
) -> Result<Result<CallToolResult, McpError>, Error> {
    let raw_input = Value::Object(arguments.clone().unwrap_or_default());
    let call = ToolCall::new(call_id, format!("{server}/{tool}"))
        .kind(ToolKind::Other)
        .status(ToolCallStatus::Pending)
        .raw_input(raw_input);
    let handle = session.start_tool_call(call).await?;
    if permission == McpPermission::Ask {
        let options = vec![
            PermissionOption::new(
                PermissionOptionId("allow".into()),
                "Allow",
                PermissionOptionKind::AllowOnce,
            ),
            PermissionOption::new(
                PermissionOptionId("reject".into()),
                "Reject",
                PermissionOptionKind::RejectOnce,
            ),
        ];
        let outcome = tokio::select! {
            outcome = session.request_permission(handle.blank(), options) => outcome?,
            _ = cancel.cancelled() => RequestPermissionOutcome::Cancelled,
        };
        let refused = match outcome {
            RequestPermissionOutcome::Selected(sel) if sel.option_id.0 == "allow" => None,
            RequestPermissionOutcome::Cancelled => Some(McpError::Cancelled),
            _ => Some(McpError::Rejected),
        };
        if let Some(e) = refused {
            handle.fail(vec![text(e.to_string())]).await?;
            return Ok(Err(e));
        }
    }
    handle.status(ToolCallStatus::InProgress).await?;
    match connector.call_tool(server, tool, arguments, cancel).await {
        Ok(result) => {
            let mut update = handle.blank().content(result_content(&result));
            if let Some(structured) = &result.structured_content {
                update = update.raw_output(structured.clone());
            }
            let status = if result.is_error == Some(true) {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            };
            handle.update(update.status(status)).await?;
            Ok(Ok(result))
        }
        Err(e) => {
            handle.fail(vec![text(e.to_string())]).await?;
            Ok(Err(e))
        }
    }
}

/// A tool result as ACP tool-call content: each MCP content block (text, image, audio,
/// resource, resource link) as the ACP block of the same shape, and the structured content as
/// JSON text when the result has no other content.
pub fn result_content(result: &CallToolResult) -> Vec<ToolCallContent> {
    let mut out: Vec<ToolCallContent> = result
        .content
        .iter()
        .map(|block| {
            let value = serde_json::to_value(block).unwrap_or(Value::Null);
            match serde_json::from_value::<ContentBlock>(value.clone()) {
                Ok(block) => Content::new(block).into(),
                Err(_) => text(value.to_string()),
            }
        })
        .collect();
    if out.is_empty()
        && let Some(structured) = &result.structured_content
    {
        out.push(text(structured.to_string()));
    }
    out
}

fn text(text: impl Into<String>) -> ToolCallContent {
    Content::new(ContentBlock::text(text)).into()
}
