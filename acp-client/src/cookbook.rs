//! Cookbook: a whole client in about forty lines.
//!
//! Every protocol value below is built with the generated constructors of `acp-types`
//! (`Type::new(required...)` plus one builder method per optional field). The agent side of
//! the same conversation is in the `acp-agent` crate's `cookbook` module.
//!
//! # A client that spawns an agent, negotiates, prompts and prints the stream
//!
//! The client offers file reading inside one directory (through [`SandboxedFs`], which
//! refuses paths outside it), allows every permission request once, negotiates the dialect
//! (v1 first, then the legacy ones this build has), and prints the turn as it streams.
//!
//! [`SandboxedFs`]: crate::fs::SandboxedFs
//!
//! ```no_run
//! use acp_client::fs::SandboxedFs;
//! use acp_client::negotiate::NegotiateOptions;
//! use acp_client::process::AgentCommand;
//! use acp_client::{Builder, Client, Error, PromptEvent};
//! use acp_client::types::*;
//!
//! struct Editor { fs: SandboxedFs }
//!
//! #[acp_client::async_trait]
//! impl Client for Editor {
//!     async fn request_permission(&self, p: RequestPermissionRequest)
//!         -> Result<RequestPermissionResponse, Error> {
//!         let allow = p.options.iter().find(|o| o.kind == PermissionOptionKind::AllowOnce);
//!         Ok(RequestPermissionResponse::new(match allow {
//!             Some(option) => RequestPermissionOutcome::selected(option.option_id.clone()),
//!             None => RequestPermissionOutcome::Cancelled,
//!         }))
//!     }
//!     async fn read_text_file(&self, p: ReadTextFileRequest)
//!         -> Result<ReadTextFileResponse, Error> {
//!         self.fs.read_text_file(p).await
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::current_dir()?;
//! let init = InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
//!     ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true)),
//! );
//! let editor = Editor { fs: SandboxedFs::new([&dir])? };
//! let command = AgentCommand::new("my-agent");
//! let (_process, negotiated) =
//!     Builder::new(editor).negotiate(NegotiateOptions::new(init)).spawn(&command).await?;
//! println!("the agent speaks {}", negotiated.dialect);
//! let agent = negotiated.connection.agent();
//! let session = agent.new_session(NewSessionRequest::new(dir.to_string_lossy(), [])).await?;
//! let prompt = PromptRequest::new(session.session_id, ["Summarise notes.md".into()]);
//! let mut turn = agent.prompt_stream(prompt);
//! while let Some(event) = turn.next().await {
//!     match event {
//!         PromptEvent::Update(SessionUpdate::AgentMessageChunk(chunk)) => {
//!             if let ContentBlock::Text(text) = chunk.content { print!("{}", text.text) }
//!         }
//!         PromptEvent::Update(other) => eprintln!("[{other:?}]"),
//!         PromptEvent::Done(result) => println!("\nstop: {:?}", result?.stop_reason),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # What each piece is for
//!
//! - [`AgentProcess`](crate::process::AgentProcess) owns the child: its stderr goes to
//!   `tracing`, and its whole process group is killed when the value is dropped.
//! - [`negotiate`](crate::negotiate) offers the dialects in order; whatever the agent speaks,
//!   the connection you get is v1 (a legacy agent is driven through its adapter).
//! - [`AgentHandle::prompt_stream`](crate::AgentHandle::prompt_stream) delivers the turn's
//!   updates in order and ends with the prompt's result; nothing of the turn arrives after it.
