//! The demo's `--protocol 2`: offer draft protocol v2 first (falling back to v1 when the
//! agent answers 1), open a session, run one prompt turn and print the session as
//! `acp_client::v2::SessionState` folds it.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::process::AgentProcess;
use acp_client::v2::types as v2;
use acp_client::v2::{Connected, Offer, SessionState};
use acp_client::{Error, async_trait};
use acp_types::v1;

type BoxError = Box<dyn std::error::Error>;

/// Prints each v2 update and folds it into the session state.
#[derive(Clone, Default)]
struct Printer(Arc<Mutex<SessionState>>);

#[async_trait]
impl acp_client::v2::Client for Printer {
    async fn session_update(&self, params: v2::UpdateSessionNotification) -> Result<(), Error> {
        let kind = serde_json::to_value(&params.update)
            .ok()
            .and_then(|v| v["sessionUpdate"].as_str().map(str::to_string))
            .unwrap_or_default();
        println!("  < {kind}");
        self.0.lock().unwrap().apply(&params.update);
        Ok(())
    }
}

/// The v1 fallback's client: prints each update's kind.
struct V1Printer;

#[async_trait]
impl acp_client::Client for V1Printer {
    async fn session_update(&self, params: v1::SessionNotification) -> Result<(), Error> {
        let kind = serde_json::to_value(&params.update)
            .ok()
            .and_then(|v| v["sessionUpdate"].as_str().map(str::to_string))
            .unwrap_or_default();
        println!("  < {kind} (v1)");
        Ok(())
    }
}

/// Runs the v2 (or fallen-back v1) conversation with the spawned agent.
pub async fn converse(agent: &mut AgentProcess, root: &Path) -> Result<(), BoxError> {
    let (stdout, stdin) = agent.take_stdio().ok_or("the agent's stdio is taken")?;
    let info = v2::Implementation::new("acp-rs demo client", env!("CARGO_PKG_VERSION"));
    let v1_init = v1::InitializeRequest::new(v1::ProtocolVersion::V1);
    let mut offer = Offer::both(v2::InitializeRequest::new(2, info), v1_init);
    offer.timeout = Duration::from_secs(60);
    let printer = Printer::default();
    let connected = acp_client::Builder::new(V1Printer)
        .v2(printer.clone(), offer)
        .io(stdout, stdin)
        .await?;
    let prompt = "Please say hi";
    match connected {
        Connected::V2 {
            connection,
            initialize,
        } => {
            println!(
                "initialized: protocol {}, agent {}",
                initialize.protocol_version.0, initialize.info.name
            );
            let agent = connection.agent();
            let session = agent
                .session_new(v2::NewSessionRequest::new(root.to_string_lossy().as_ref()))
                .await?;
            println!("session {}", session.session_id.0);
            println!("user: {prompt}");
            let text = v2::ContentBlock::Text(v2::TextContent::new(prompt));
            let inserted = agent
                .session_prompt(v2::PromptRequest::new(session.session_id, [text]))
                .await?;
            println!("inserted as message {}", inserted.message_id.0);
            // The turn ends with an idle state update, which may follow the answer.
            for _ in 0..50 {
                if matches!(
                    printer.0.lock().unwrap().foreground,
                    v2::StateUpdate::Idle(_)
                ) && printer.0.lock().unwrap().messages.len() > 1
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let state = printer.0.lock().unwrap().clone();
            for message in &state.messages {
                println!("{:?}: {}", message.role, message.text().trim_end());
            }
            println!("foreground: {:?}", state.foreground);
            connection.close();
        }
        Connected::V1 {
            connection,
            initialize,
        } => {
            println!(
                "the agent answered protocol {}: continuing in v1",
                initialize.protocol_version.0
            );
            let agent = connection.agent();
            let session = agent
                .new_session(v1::NewSessionRequest::new(root.to_string_lossy(), []))
                .await?;
            let answer = agent
                .prompt(v1::PromptRequest::new(
                    session.session_id,
                    [v1::ContentBlock::text(prompt)],
                ))
                .await?;
            println!("stop reason: {}", answer.stop_reason);
            connection.close();
        }
    }
    Ok(())
}
