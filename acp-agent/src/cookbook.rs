//! Cookbook: a whole agent in about forty lines.
//!
//! Every protocol value below is built with the generated constructors of `acp-types`
//! (`Type::new(required...)` plus one builder method per optional field), so a typo is a
//! compile error, not a message the editor refuses at run time. The client side of the same
//! conversation is in the `acp-client` crate's `cookbook` module.
//!
//! # An agent that streams, asks, and reads a file
//!
//! For every prompt the agent announces a tool call that reads `notes.md` from the session's
//! directory, asks the user for permission, reads the file *through the client* (the editor
//! may hold unsaved changes the disk does not), and streams a reply in pieces. Only
//! `initialize` is required of an [`Agent`](crate::Agent); the connection answers every other
//! method with "method not found" until you implement it, and refuses client methods the
//! client did not advertise.
//!
//! ```no_run
//! use acp_agent::types::*;
//! use acp_agent::{Agent, AgentContext, Builder, Error, PromptContext};
//!
//! struct Reader;
//!
//! #[acp_agent::async_trait]
//! impl Agent for Reader {
//!     async fn initialize(&self, _: InitializeRequest, _: &AgentContext)
//!         -> Result<InitializeResponse, Error> {
//!         Ok(InitializeResponse::new(ProtocolVersion::V1)
//!             .agent_info(Implementation::new("reader", "0.1.0")))
//!     }
//!
//!     async fn new_session(&self, p: NewSessionRequest, _: &AgentContext)
//!         -> Result<NewSessionResponse, Error> {
//!         // The cwd doubles as the session id: one session per directory is enough here.
//!         Ok(NewSessionResponse::new(p.cwd))
//!     }
//!
//!     async fn prompt(&self, p: PromptRequest, cx: &PromptContext)
//!         -> Result<PromptResponse, Error> {
//!         let session = cx.session();
//!         let path = format!("{}/notes.md", p.session_id);
//!         let tool = session
//!             .start_tool_call(ToolCall::new("read-1", "Read notes.md")
//!                 .kind(ToolKind::Read)
//!                 .locations([ToolCallLocation::new(path.as_str())]))
//!             .await?;
//!         let options = vec![
//!             PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
//!             PermissionOption::new("deny", "Deny", PermissionOptionKind::RejectOnce),
//!         ];
//!         match session.request_permission(tool.blank(), options).await? {
//!             RequestPermissionOutcome::Selected(s) if s.option_id.0 == "allow" => {}
//!             RequestPermissionOutcome::Cancelled => {
//!                 return Ok(PromptResponse::new(StopReason::Cancelled));
//!             }
//!             _ => {
//!                 tool.fail(vec![ToolCallContent::content("not allowed")]).await?;
//!                 return Ok(PromptResponse::new(StopReason::EndTurn));
//!             }
//!         }
//!         let file = cx.client()
//!             .read_text_file(ReadTextFileRequest::new(p.session_id.clone(), path))
//!             .await?;
//!         tool.complete(vec![ToolCallContent::content(file.content.clone())]).await?;
//!         for line in file.content.lines().take(3) {
//!             session.message_chunk(format!("{line}\n")).await?;
//!         }
//!         Ok(PromptResponse::new(StopReason::EndTurn))
//!     }
//! }
//!
//! # async fn run() {
//! Builder::new(Reader).stdio().closed().await;
//! # }
//! ```
//!
//! # What each piece is for
//!
//! - [`SessionHandle::start_tool_call`](crate::SessionHandle::start_tool_call) sends the
//!   `tool_call` update and gives a [`ToolCallHandle`](crate::ToolCallHandle) whose
//!   `complete`/`fail`/`status` send the `tool_call_update`s.
//! - [`SessionHandle::request_permission`](crate::SessionHandle::request_permission) resolves
//!   as `Cancelled` when the client cancels the turn, so a turn never waits on a person who has
//!   moved on.
//! - [`ClientHandle`](crate::ClientHandle) methods (`read_text_file`, `create_terminal`, ...)
//!   are refused locally with `-32601` when the client did not advertise them.
//! - Updates of a prompt are written before its response, and an update for a new session
//!   never before `session/new`'s answer: no ordering code in the agent.
