//! `acp chat`: a session with an agent, in the terminal or scripted (`--prompt`, as often
//! as wanted), on a [`Link`] to the agent (`crate::link`).
//!
//! One loop owns the session ([`event_loop`]): the session's updates come to it as one
//! stream (acp-client's `SessionUpdates`: between turns too, each turn's end after its
//! updates), the client's questions and notices as events, finished work (a line read, a
//! command's request) as tasks. Lines typed during a turn are follow-ups ([`followup`]):
//! steered into the turn where the agent takes steering, else queued.

mod ask;
mod commands;
mod event_loop;
mod followup;
mod state;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use acp_client::SessionEvent;
use acp_types::v1::*;
use tokio::signal::unix::{SignalKind, signal};

use crate::client::CliClient;
use crate::input::Keyboard;
use crate::proto;
use crate::view::{JsonEvents, Screen, View};

pub use self::commands::LOCAL_COMMANDS;
pub use crate::link::{AgentSpec, RemoteSpec, working_directory};
use crate::link::{Link, connect};
use event_loop::{Chat, Setup};
use state::{Completions, SessionState};

/// Exit status of a failed run (the agent could not be started, the turn errored).
pub const EXIT_FAILED: i32 = 1;

/// What `acp chat` was asked to do.
#[derive(Clone, Debug)]
pub struct ChatRequest {
    /// The agent.
    pub agent: AgentSpec,
    /// Prompts to send in order, one turn each, non-interactively (none: interactive).
    pub prompts: Vec<String>,
    /// NDJSON events instead of a transcript.
    pub json: bool,
    /// Load this session instead of creating one.
    pub load: Option<String>,
    /// Without a keyboard: what to grant of what the agent asks.
    pub allow: acp_client::permission::PermissionPolicy,
    /// The MCP servers to pass in session/new (from `--mcp-config`).
    pub mcp_servers: Vec<McpServer>,
}

/// The exit status for a stop reason: 0 for `end_turn`, 130 for `cancelled` (as for
/// Ctrl-C), 3 `refusal`, 4 `max_tokens`, 5 `max_turn_requests`, 6 anything else.
pub fn exit_status(stop: &StopReason) -> i32 {
    match stop {
        StopReason::EndTurn => 0,
        StopReason::Cancelled => 130,
        StopReason::Refusal => 3,
        StopReason::MaxTokens => 4,
        StopReason::MaxTurnRequests => 5,
        StopReason::Unknown(_) => 6,
    }
}

/// The error line for a turn the agent failed: its message and code, and its `data` (where
/// agents put the detail) when there is any.
fn prompt_failure(e: &acp_client::Error) -> String {
    let mut text = format!("the prompt failed: {} ({})", e.message, e.code.0);
    if let Some(data) = &e.data {
        let data = match data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        text.push_str(": ");
        text.push_str(&data);
    }
    text
}

/// `acp chat`: returns the exit status.
pub async fn run(request: ChatRequest) -> i32 {
    let screen = (!request.json).then(|| Arc::new(Screen::stdout()));
    let view: Arc<dyn View> = match &screen {
        Some(screen) => screen.clone(),
        None => Arc::new(JsonEvents::stdout()),
    };
    match run_with(request, view.clone(), screen).await {
        Ok(status) => status,
        Err(e) => {
            let mut lines = e.lines();
            view.error(lines.next().unwrap_or("failed"));
            for line in lines {
                view.info(&format!("  {}", crate::sanitize::terminal_safe(line)));
            }
            EXIT_FAILED
        }
    }
}

async fn run_with(
    request: ChatRequest,
    view: Arc<dyn View>,
    screen: Option<Arc<Screen>>,
) -> Result<i32, String> {
    let cwd = request.agent.cwd.clone();
    let completions = Completions::default();
    let interactive = request.prompts.is_empty();
    let keyboard = if interactive {
        let keyboard = Keyboard::start(
            completions.commands.clone(),
            completions.choices(),
            LOCAL_COMMANDS,
            cwd.clone(),
        )?;
        if let Some(screen) = &screen {
            screen.hold_while_editing(keyboard.editing());
        }
        Some(keyboard)
    } else {
        None
    };
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let client = CliClient::new(Some(events_tx), &cwd)?;
    let sigint =
        signal(SignalKind::interrupt()).map_err(|e| format!("cannot catch Ctrl-C: {e}"))?;
    let link = connect(&request.agent, client).await?;
    let name = link
        .init
        .agent_info
        .as_ref()
        .map(|i| format!("{} {}", i.name, i.version))
        .unwrap_or_else(|| "an unnamed agent".to_owned());
    view.info(&format!(
        "connected to {} ({})",
        crate::sanitize::terminal_safe(&name),
        link.spoken()
    ));
    let mut state = SessionState::default();
    let (session, updates) = match open_session(&link, &request, &view, &mut state).await {
        Ok(opened) => opened,
        Err(e) => {
            link.shutdown().await;
            return Err(e);
        }
    };
    completions.publish(&state);
    let scripted = (!request.prompts.is_empty()).then(|| VecDeque::from(request.prompts));
    let mut chat = Chat::new(Setup {
        link,
        session: session.clone(),
        updates,
        state,
        completions,
        view: view.clone(),
        screen,
        keyboard,
        allow: request.allow,
        events,
        sigint,
        cwd,
        scripted,
    });
    chat.wait_for_commands(Duration::from_millis(500)).await;
    let id = crate::sanitize::terminal_safe(&session.0);
    view.info(&match &chat.state().title {
        Some(title) => format!("session {id}: {}", crate::offers::title_text(title)),
        None => format!("session {id}"),
    });
    if let Some(line) = crate::offers::models_line(&chat.state().model_choice()) {
        view.info(&line);
    }
    if interactive {
        view.info(
            "type a prompt (@path attaches a file, Tab completes); /mode, /model, /title, \
             /quit; Ctrl-C cancels a turn, Ctrl-D quits",
        );
        view.info("a line typed during a turn is a follow-up: steered into it, or queued");
    }
    let status = chat.run().await;
    chat.into_link().shutdown().await;
    Ok(status)
}

/// Starts the session (`session/new`) or loads one (`--load`, its history shown the way
/// it looked live); returns its id and its stream.
async fn open_session(
    link: &Link,
    request: &ChatRequest,
    view: &Arc<dyn View>,
    state: &mut SessionState,
) -> Result<(SessionId, acp_client::SessionUpdates), String> {
    let agent = link.agent();
    let cwd = request.agent.cwd.to_string_lossy().into_owned();
    let Some(id) = &request.load else {
        let (mcp_servers, warning) = crate::mcp_config::supported(
            request.mcp_servers.clone(),
            &link.init.agent_capabilities.mcp_capabilities,
        );
        if let Some(warning) = warning {
            view.info(&format!("warning: {warning}"));
        }
        let (created, updates) = agent
            .new_session_stream(proto::new_session_request(&cwd, mcp_servers))
            .await
            .map_err(|e| format!("the agent did not start a session: {}", e.message))?;
        state.set_modes(created.modes);
        state.config = created.config_options.unwrap_or_default();
        state.models = created.models;
        return Ok((created.session_id, updates));
    };
    if !link.init.agent_capabilities.load_session {
        return Err(format!(
            "the agent cannot load sessions (no loadSession capability); {id} not loaded"
        ));
    }
    // The route is in place before the request goes out: every replayed update is on the
    // stream, before the answer.
    let mut updates = agent.load_session_stream(proto::load_session_request(id, &cwd));
    view.replay(true);
    let loaded = loop {
        match updates.next().await {
            Some(SessionEvent::Update(update)) => {
                state.apply(&update);
                view.update(&update);
            }
            Some(SessionEvent::Loaded(result)) => break result,
            Some(SessionEvent::Prompted(_)) => {}
            None => break Err(acp_client::Error::internal_error("the load ended")),
        }
    };
    view.replay(false);
    let loaded = loaded.map_err(|e| format!("session {id} could not be loaded: {}", e.message))?;
    state.set_modes(loaded.modes);
    state.config = loaded.config_options.unwrap_or_default();
    state.models = loaded.models;
    Ok((SessionId(id.clone()), updates))
}
