//! The minimal client with the official crate (`agent-client-protocol` 5.2.0): spawns the
//! agent command given on the command line, initializes (offering file reads inside the
//! current directory), creates a session, sends one text prompt and prints every streamed text
//! chunk and the stop reason.
//!
//! `cargo run -p acp-interop --example minimal_client_official -- <agent command...>`; its
//! twin on acp-client is `acp-client/examples/minimal_client.rs`.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, ContentChunk, FileSystemCapabilities, Implementation,
    InitializeRequest, NewSessionRequest, PromptRequest, ReadTextFileRequest, ReadTextFileResponse,
    SessionNotification, SessionUpdate,
};
use agent_client_protocol::{AcpAgent, Client, Error, on_receive_notification, on_receive_request};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command: Vec<String> = std::env::args().skip(1).collect();
    let agent = AcpAgent::from_args(command)?;
    let dir = std::fs::canonicalize(std::env::current_dir()?)?;
    let root = dir.clone();
    Client
        .v1()
        .name("minimal-client")
        .on_receive_notification(
            async |n: SessionNotification, _cx| {
                if let SessionUpdate::AgentMessageChunk(ContentChunk {
                    content: ContentBlock::Text(text),
                    ..
                }) = n.update
                {
                    print!("{}", text.text);
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                let path =
                    std::fs::canonicalize(&request.path).map_err(Error::into_internal_error)?;
                if !path.starts_with(&root) {
                    return responder.respond_with_error(Error::invalid_params());
                }
                let content = std::fs::read_to_string(path).map_err(Error::into_internal_error)?;
                responder.respond(ReadTextFileResponse::new(content))
            },
            on_receive_request!(),
        )
        .connect_with(agent, async |cx| {
            let init = InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(
                    ClientCapabilities::new()
                        .fs(FileSystemCapabilities::new().read_text_file(true)),
                )
                .client_info(Implementation::new("minimal-client", "0.1.0"));
            cx.send_request(init).block_task().await?;
            let session = cx
                .send_request(NewSessionRequest::new(dir))
                .block_task()
                .await?;
            let prompt = PromptRequest::new(session.session_id, vec!["Hello".into()]);
            let done = cx.send_request(prompt).block_task().await?;
            println!("\nstop: {:?}", done.stop_reason);
            Ok(())
        })
        .await?;
    Ok(())
}
