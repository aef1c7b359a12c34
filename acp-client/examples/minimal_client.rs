//! The minimal client: spawns the agent command given as arguments, sends one prompt, prints
//! the streamed text and the stop reason. Twin: interop's `minimal_client_official.rs`.

use acp_client::process::AgentCommand;
use acp_client::types::*;
use acp_client::{Builder, Client, PromptEvent};

struct Printer;
impl Client for Printer {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let program = args
        .next()
        .ok_or("usage: minimal_client <agent command...>")?;
    let (_process, conn) = Builder::new(Printer).spawn(&AgentCommand::new(program).args(args))?;
    let agent = conn.agent();
    agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await?;
    let cwd = std::env::current_dir()?;
    let session = agent
        .new_session(NewSessionRequest::new(cwd.to_string_lossy(), []))
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
