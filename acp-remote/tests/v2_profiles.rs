//! Draft protocol v2 over both remote profiles: a stdio agent that speaks v1 and v2 behind
//! the gateway (this binary, run as that agent with `ACP_REMOTE_V2_AGENT=1`), and a client
//! that offers both versions over Streamable HTTP and over WebSocket. Each negotiates v2 and
//! runs a whole v2 turn: `session/new`, `session/prompt` answered `{messageId}`, the
//! streamed updates folded by `SessionState` to the agent's message and `idle` (end_turn).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::v2 as agent2;
use acp_client::process::AgentCommand;
use acp_client::v2::types as v2;
use acp_client::v2::{self as client2, Connected, Offer, SessionState};
use acp_remote::{BearerToken, ConnectOptions, Server};
use acp_rpc::Error;
use acp_rpc::async_trait;
use acp_types::v1;

const TOKEN: &str = "test-token-0123456789";

fn main() {
    if std::env::var_os("ACP_REMOTE_V2_AGENT").is_some() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(agent());
        return;
    }
    type Test = fn() -> Pin<Box<dyn Future<Output = ()>>>;
    let tests: [(&str, Test); 2] = [
        ("a_v2_turn_over_streamable_http", || Box::pin(turn("http"))),
        ("a_v2_turn_over_websocket", || Box::pin(turn("ws"))),
    ];
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        runtime.block_on(test());
        println!("test {name} ... ok");
    }
}

/// The stdio agent: both versions, v2 an echo of the prompt word by word.
async fn agent() {
    let served = acp_agent::Builder::new(V1Agent)
        .v2(EchoV2)
        .io(tokio::io::stdin(), tokio::io::stdout())
        .await;
    match served {
        Ok(agent2::Served::V2(conn)) => {
            conn.closed().await;
        }
        Ok(agent2::Served::V1(conn)) => {
            conn.closed().await;
        }
        Err(e) => eprintln!("v2 test agent: {e}"),
    }
}

struct V1Agent;

#[async_trait]
impl acp_agent::Agent for V1Agent {
    async fn initialize(
        &self,
        _p: v1::InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<v1::InitializeResponse, Error> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion::V1))
    }
}

struct EchoV2;

#[async_trait]
impl agent2::Agent for EchoV2 {
    async fn initialize(
        &self,
        _p: v2::InitializeRequest,
        _cx: &agent2::Context,
    ) -> Result<v2::InitializeResponse, Error> {
        Ok(v2::InitializeResponse::new(
            2,
            v2::Implementation::new("remote v2", "0.1.0"),
        ))
    }

    async fn session_new(
        &self,
        _p: v2::NewSessionRequest,
        _cx: &agent2::Context,
    ) -> Result<v2::NewSessionResponse, Error> {
        Ok(v2::NewSessionResponse::new("s-1"))
    }

    async fn session_prompt(
        &self,
        p: v2::PromptRequest,
        cx: &agent2::Context,
    ) -> Result<v2::PromptResponse, Error> {
        use v2::*;
        let session = p.session_id.clone();
        let mut updates = vec![
            SessionUpdate::StateUpdate(Box::new(SessionStateUpdate::new(StateUpdate::Running(
                RunningStateUpdate::new(),
            )))),
            SessionUpdate::UserMessage(Box::new(UserMessage::new("u-1").content(p.prompt))),
        ];
        for word in ["alpha ", "beta ", "gamma"] {
            updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                "a-1",
                ContentBlock::Text(TextContent::new(word)),
            )));
        }
        updates.push(SessionUpdate::StateUpdate(Box::new(
            SessionStateUpdate::new(StateUpdate::Idle(
                IdleStateUpdate::new().stop_reason(IdleStopReason::EndTurn),
            )),
        )));
        for update in updates {
            cx.client()
                .session_update(UpdateSessionNotification::new(session.clone(), update))
                .await?;
        }
        Ok(PromptResponse::new("u-1"))
    }
}

struct V1Client;
impl acp_client::Client for V1Client {}

#[derive(Clone, Default)]
struct Folder(Arc<Mutex<SessionState>>);

#[async_trait]
impl client2::Client for Folder {
    async fn session_update(&self, params: v2::UpdateSessionNotification) -> Result<(), Error> {
        self.0.lock().unwrap().apply(&params.update);
        Ok(())
    }
}

async fn turn(scheme: &str) {
    let command =
        AgentCommand::new(std::env::current_exe().unwrap()).env("ACP_REMOTE_V2_AGENT", "1");
    let server = Server::gateway(command)
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = server.url().replace("http://", &format!("{scheme}://"));
    let link = acp_remote::connect(&url, &ConnectOptions::new().token(TOKEN))
        .await
        .unwrap();
    let folder = Folder::default();
    let offer = Offer::both(
        v2::InitializeRequest::new(2, v2::Implementation::new("remote client", "0.1.0")),
        v1::InitializeRequest::new(v1::ProtocolVersion::V1),
    );
    let connected = tokio::time::timeout(
        Duration::from_secs(20),
        acp_client::Builder::new(V1Client)
            .v2(folder.clone(), offer)
            .io(link.reader, link.writer),
    )
    .await
    .expect("negotiated in time")
    .unwrap();
    let Connected::V2 {
        connection,
        initialize,
    } = connected
    else {
        panic!("{scheme}: the agent speaks v2, so v2 is chosen");
    };
    assert_eq!(initialize.info.name, "remote v2");
    let agent = connection.agent();
    let run = async {
        let session = agent
            .session_new(v2::NewSessionRequest::new("/tmp"))
            .await
            .unwrap();
        let text = v2::ContentBlock::Text(v2::TextContent::new("hello"));
        let inserted = agent
            .session_prompt(v2::PromptRequest::new(session.session_id, [text]))
            .await
            .unwrap();
        assert_eq!(inserted.message_id.0, "u-1");
        // The updates were sent before the answer, and arrive in order before it.
        let state = folder.0.lock().unwrap().clone();
        assert!(
            matches!(
                &state.foreground,
                v2::StateUpdate::Idle(idle)
                    if matches!(idle.stop_reason, Some(v2::IdleStopReason::EndTurn))
            ),
            "{scheme}: {:?}",
            state.foreground
        );
        let texts: Vec<String> = state.messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, ["hello", "alpha beta gamma"], "{scheme}");
    };
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the turn in time");
    connection.close();
    server.shutdown();
}
