//! The minimal client with acp-client: spawns the agent command given on the command line,
//! initializes (offering file reads inside the current directory), creates a session, sends
//! one text prompt and prints every streamed text chunk and the stop reason.
//!
//! `cargo run -p acp-interop --example minimal_client_ours -- <agent command...>`; its twin on
//! the official crate is `minimal_client_official.rs`.

use acp_client::fs::SandboxedFs;
use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::{Client, Config, Error, PromptEvent};
use acp_types::v1::*;

struct Reader {
    fs: SandboxedFs,
}

#[acp_client::async_trait]
impl Client for Reader {
    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.fs.read_text_file(p).await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let program = args
        .next()
        .ok_or("usage: minimal_client_ours <agent command...>")?;
    let dir = std::env::current_dir()?;
    let mut process = AgentProcess::spawn(&AgentCommand::new(program).args(args))?;
    let connection = process.connect(
        Reader {
            fs: SandboxedFs::new([&dir])?,
        },
        Config::default(),
    )?;
    let agent = connection.agent();
    let init = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true)),
        )
        .client_info(Implementation::new("minimal-client", "0.1.0"));
    agent.initialize(init).await?;
    let session = agent
        .new_session(NewSessionRequest::new(dir.to_string_lossy(), []))
        .await?;
    let mut turn = agent.prompt_stream(PromptRequest::new(session.session_id, ["Hello".into()]));
    while let Some(event) = turn.next().await {
        match event {
            PromptEvent::Update(SessionUpdate::AgentMessageChunk(chunk)) => {
                if let ContentBlock::Text(text) = chunk.content {
                    print!("{}", text.text);
                }
            }
            PromptEvent::Update(_) => {}
            PromptEvent::Done(result) => println!("\nstop: {:?}", result?.stop_reason),
        }
    }
    Ok(())
}
