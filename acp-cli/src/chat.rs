//! `acp chat`: the interactive loop and one scripted turn, on a [`Link`] to the agent
//! (`crate::link`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_types::v1::*;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::attach;
use crate::client::{Answerer, CliClient, SessionView};
use crate::input::{Answer, ArgumentChoices, CommandList, Keyboard, LineKind};
use crate::offers::ModelChoice;
use crate::proto;
use crate::view::{JsonEvents, Screen, View};

pub use crate::link::{AgentSpec, RemoteSpec, working_directory};
use crate::link::{Link, connect};

/// Exit status of a failed run (the agent could not be started, the turn errored).
pub const EXIT_FAILED: i32 = 1;

/// What `acp chat` was asked to do.
#[derive(Clone, Debug)]
pub struct ChatRequest {
    /// The agent.
    pub agent: AgentSpec,
    /// One prompt, non-interactively.
    pub prompt: Option<String>,
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

/// How a turn ended.
enum TurnEnd {
    Stopped(StopReason),
    Failed,
    /// The user pressed Ctrl-C twice.
    Quit,
}

/// A chat session in progress.
struct Chat {
    link: Link,
    client: CliClient,
    view: Arc<dyn View>,
    session: SessionId,
    state: Arc<Mutex<SessionView>>,
    sigint: Signal,
    cwd: PathBuf,
    /// The terminal transcript (not with `--json`), for output held while the user types.
    screen: Option<Arc<Screen>>,
}

impl Chat {
    /// Runs one prompt turn: streams (through the client), ticks the spinner, and turns
    /// Ctrl-C into `session/cancel` (a second one quits).
    async fn turn(&mut self, blocks: Vec<ContentBlock>) -> TurnEnd {
        // A Ctrl-C from before the turn is not meant for it.
        let _ = tokio::time::timeout(Duration::ZERO, self.sigint.recv()).await;
        let agent = self.link.agent().clone();
        let interrupt = self.client.interrupt();
        // Keys typed while the agent streams wait for the next prompt line.
        let _type_ahead = self.screen.is_some().then(crate::input::TypeAhead::hold);
        self.view.turn_started();
        let start = Instant::now();
        tracing::info!(session = %self.session, "turn started");
        let prompt = agent.prompt(proto::prompt_request(&self.session, blocks));
        tokio::pin!(prompt);
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        let mut cancelling = false;
        loop {
            let ctrl_c = tokio::select! {
                result = &mut prompt => {
                    return match result {
                        Ok(response) => {
                            tracing::info!(
                                session = %self.session,
                                stop_reason = %response.stop_reason,
                                duration_ms = start.elapsed().as_millis() as u64,
                                "turn ended"
                            );
                            if let Some(usage) = &response.usage {
                                self.view.info(&crate::offers::usage_line(usage));
                            }
                            self.view.turn_ended(response.stop_reason.as_str(), start.elapsed());
                            TurnEnd::Stopped(response.stop_reason)
                        }
                        Err(e) => {
                            // The agent answered with an error: it is alive, and the error
                            // says it all. The connection closed: how the agent exited
                            // (status, stderr) says more.
                            let death = if e.is_connection_closed() {
                                self.link.death().await
                            } else {
                                None
                            };
                            let why = death.unwrap_or_else(|| prompt_failure(&e));
                            // The user reads the error in the transcript; the log has it
                            // only when asked for (RUST_LOG), not as a second message.
                            tracing::info!(session = %self.session, error = %e, "turn failed");
                            self.report(&why);
                            self.view.turn_ended("error", start.elapsed());
                            TurnEnd::Failed
                        }
                    };
                }
                _ = self.sigint.recv() => true,
                _ = interrupt.notified() => true,
                _ = ticker.tick() => false,
            };
            if !ctrl_c {
                self.view.tick();
                continue;
            }
            if cancelling {
                self.view.info("second Ctrl-C: quitting");
                return TurnEnd::Quit;
            }
            cancelling = true;
            tracing::info!(session = %self.session, "cancelling the turn (Ctrl-C)");
            self.view.info("cancelling (Ctrl-C again to quit)");
            if let Err(e) = agent.cancel(proto::cancel(&self.session)).await {
                self.view
                    .error(&format!("session/cancel could not be sent: {e}"));
            }
        }
    }

    /// An error, first line as the error and the rest (an agent's stderr) as context.
    fn report(&self, text: &str) {
        let mut lines = text.lines();
        self.view.error(lines.next().unwrap_or("unknown error"));
        for line in lines {
            self.view
                .info(&format!("  {}", crate::sanitize::terminal_safe(line)));
        }
    }

    /// The blocks for a typed prompt (with its `@path` attachments).
    fn blocks(&self, text: &str) -> Vec<ContentBlock> {
        let embed = self
            .link
            .init
            .agent_capabilities
            .prompt_capabilities
            .embedded_context;
        let (blocks, problems) = attach::prompt_blocks(text, &self.cwd, embed);
        for problem in problems {
            self.view.info(&problem);
        }
        blocks
    }

    /// `/mode [id]`: lists the modes or switches to one.
    async fn mode(&self, arg: &str) {
        let (modes, current) = {
            let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            (state.modes.clone(), state.mode.clone())
        };
        if modes.is_empty() {
            self.view.info("this agent offers no modes");
            return;
        }
        if arg.is_empty() {
            for (id, name) in modes {
                let mark = if current.as_deref() == Some(id.as_str()) {
                    "*"
                } else {
                    " "
                };
                self.view.info(&format!("{mark} {id}  {name}"));
            }
            return;
        }
        match self
            .link
            .agent()
            .set_session_mode(proto::set_mode(&self.session, arg))
            .await
        {
            Ok(_) => {
                self.state.lock().unwrap_or_else(|p| p.into_inner()).mode = Some(arg.to_owned());
                self.view.info(&format!("mode set to {arg}"));
            }
            Err(e) => self.view.error(&format!("mode not changed: {}", e.message)),
        }
    }

    /// `/model [id]`: lists the models or switches to one, through `session/set_model` when
    /// the agent listed `models`, else through its config option of category `model`.
    async fn model(&self, arg: &str) {
        let choice = self.session_view().model_choice();
        let nothing = match choice {
            ModelChoice::None => Some("this agent offers no model choice"),
            ModelChoice::NotAList => Some("the agent's model option is not a list to pick from"),
            _ => None,
        };
        if let Some(nothing) = nothing {
            self.view.info(nothing);
            return;
        }
        if arg.is_empty() {
            for line in choice.listing() {
                self.view.info(&line);
            }
            return;
        }
        let shown = crate::sanitize::terminal_safe(arg);
        match choice {
            ModelChoice::None | ModelChoice::NotAList => {}
            ModelChoice::Models(_) => {
                let request = SetSessionModelRequest::new(self.session.clone(), arg);
                match self.link.agent().set_session_model(request).await {
                    Ok(_) => {
                        if let Some(models) = &mut self.session_view().models {
                            models.current_model_id = ModelId(arg.to_owned());
                        }
                        self.view.info(&format!("model set to {shown}"));
                    }
                    Err(e) => self
                        .view
                        .error(&format!("model not changed: {}", e.message)),
                }
            }
            ModelChoice::ConfigOption { id, .. } => {
                let request = proto::set_config_value(&self.session, &id.0, arg);
                match self.link.agent().set_session_config_option(request).await {
                    Ok(response) => {
                        self.session_view().config = response.config_options;
                        self.view.info(&format!("model set to {shown}"));
                    }
                    Err(e) => self
                        .view
                        .error(&format!("model not changed: {}", e.message)),
                }
            }
        }
    }

    /// `/title [text]`: shows the session's title or, where the agent lets clients set it
    /// (`sessionCapabilities.title`), renames the session with `session/set_title`.
    async fn title(&self, arg: &str) {
        if arg.is_empty() {
            let title = self.session_view().title.clone();
            match title {
                Some(title) => self
                    .view
                    .info(&format!("title: {}", crate::offers::title_text(&title))),
                None => self.view.info("the agent has not titled this session"),
            }
            return;
        }
        let settable = self
            .link
            .init
            .agent_capabilities
            .session_capabilities
            .title
            .is_some();
        if !settable {
            self.view
                .info("this agent does not let clients set titles (no sessionCapabilities.title)");
            return;
        }
        let request = SetSessionTitleRequest::new(self.session.clone(), arg);
        match self.link.agent().set_session_title(request).await {
            Ok(response) => {
                let shown = crate::offers::title_text(&response.title);
                self.session_view().title = Some(response.title);
                self.view.info(&format!("title set to {shown}"));
            }
            Err(e) => self
                .view
                .error(&format!("title not changed: {}", e.message)),
        }
    }

    /// The session's state as the updates left it.
    fn session_view(&self) -> std::sync::MutexGuard<'_, SessionView> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The interactive loop; returns the exit status.
    async fn interactive(&mut self, keyboard: Keyboard) -> i32 {
        self.view.info(
            "type a prompt (@path attaches a file, Tab completes); /mode, /model, /title, \
             /quit; Ctrl-C cancels a turn, Ctrl-D quits",
        );
        loop {
            // A Ctrl-C right after a cancelled turn (before the editor took the keyboard
            // back) is the second Ctrl-C: quit.
            if let Ok(Some(())) = tokio::time::timeout(Duration::ZERO, self.sigint.recv()).await {
                return 130;
            }
            let answer = keyboard.read("you> ", LineKind::Prompt).await;
            if let Some(screen) = &self.screen {
                screen.release_held();
            }
            let line = match answer {
                Answer::Line(line) => line,
                Answer::Interrupted | Answer::Eof => return 0,
            };
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            let (word, arg) = text.split_once(' ').unwrap_or((text, ""));
            match word {
                "/quit" | "/exit" => return 0,
                "/mode" => self.mode(arg.trim()).await,
                "/model" => self.model(arg.trim()).await,
                "/title" => self.title(arg.trim()).await,
                _ => {
                    let blocks = self.blocks(text);
                    if let TurnEnd::Quit = self.turn(blocks).await {
                        return 130;
                    }
                }
            }
        }
    }
}

/// The commands the CLI handles itself, for completion.
pub const LOCAL_COMMANDS: [(&str, &str); 4] = [
    ("mode", "list or switch the agent's modes"),
    ("model", "list or switch the agent's models"),
    ("title", "show or set the session's title"),
    ("quit", "leave acp"),
];

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
    let commands: CommandList = Arc::default();
    let state: Arc<Mutex<SessionView>> = Arc::default();
    let choices: ArgumentChoices = {
        let state = state.clone();
        Arc::new(move |command: &str| {
            let state = state.lock().unwrap_or_else(|p| p.into_inner());
            match command {
                "mode" => state.modes.clone(),
                "model" => state.model_choice().values(),
                _ => Vec::new(),
            }
        })
    };
    let keyboard = match request.prompt {
        Some(_) => None,
        None => {
            let keyboard = Keyboard::start(commands.clone(), choices, LOCAL_COMMANDS, cwd.clone())?;
            if let Some(screen) = &screen {
                screen.hold_while_editing(keyboard.editing());
            }
            Some(keyboard)
        }
    };
    let answerer = match &keyboard {
        Some(keyboard) => Answerer::Keyboard(keyboard.clone()),
        None => Answerer::Policy {
            allow: request.allow,
        },
    };
    let client = CliClient::new(
        view.clone(),
        answerer,
        commands.clone(),
        state.clone(),
        &cwd,
    )?;
    let sigint =
        signal(SignalKind::interrupt()).map_err(|e| format!("cannot catch Ctrl-C: {e}"))?;
    let link = connect(&request.agent, client.clone()).await?;
    let agent = link.agent().clone();
    let name = link
        .init
        .agent_info
        .as_ref()
        .map(|i| format!("{} {}", i.name, i.version))
        .unwrap_or_else(|| "an unnamed agent".to_owned());
    view.info(&format!(
        "connected to {} ({})",
        crate::sanitize::terminal_safe(&name),
        link.dialect
    ));
    let cwd_text = cwd.to_string_lossy().into_owned();
    let (mcp_servers, warning) = crate::mcp_config::supported(
        request.mcp_servers.clone(),
        &link.init.agent_capabilities.mcp_capabilities,
    );
    if let Some(warning) = warning {
        view.info(&format!("warning: {warning}"));
    }
    let (session, modes, config, models) = match &request.load {
        Some(id) => {
            if !link.init.agent_capabilities.load_session {
                link.shutdown().await;
                return Err(format!(
                    "the agent cannot load sessions (no loadSession capability); {id} not loaded"
                ));
            }
            // The replay reaches the view through the client before the answer is
            // delivered (the connection's ordering guarantee), so it is all inside these two
            // calls.
            view.replay(true);
            let loaded = agent
                .load_session(proto::load_session_request(id, &cwd_text))
                .await;
            view.replay(false);
            match loaded {
                Ok(loaded) => (
                    SessionId(id.clone()),
                    loaded.modes,
                    loaded.config_options,
                    loaded.models,
                ),
                Err(e) => {
                    link.shutdown().await;
                    return Err(format!("session {id} could not be loaded: {}", e.message));
                }
            }
        }
        None => match agent
            .new_session(proto::new_session_request(&cwd_text, mcp_servers))
            .await
        {
            Ok(created) => (
                created.session_id,
                created.modes,
                created.config_options,
                created.models,
            ),
            Err(e) => {
                link.shutdown().await;
                return Err(format!("the agent did not start a session: {}", e.message));
            }
        },
    };
    {
        let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(modes) = modes {
            state.mode = Some(modes.current_mode_id.0.clone());
            state.modes = modes
                .available_modes
                .iter()
                .map(|m| (m.id.0.clone(), crate::sanitize::terminal_safe(&m.name)))
                .collect();
        }
        state.config = config.unwrap_or_default();
        state.models = models;
    }
    // Agents send their slash commands with or right after the session's answer: wait a
    // moment for them, so they are shown before the first prompt rather than over it.
    let deadline = Instant::now() + Duration::from_millis(500);
    while commands
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_empty()
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (title, models) = {
        let state = state.lock().unwrap_or_else(|p| p.into_inner());
        (state.title.clone(), state.model_choice())
    };
    let id = crate::sanitize::terminal_safe(&session.0);
    view.info(&match title {
        Some(title) => format!("session {id}: {}", crate::offers::title_text(&title)),
        None => format!("session {id}"),
    });
    if let Some(line) = crate::offers::models_line(&models) {
        view.info(&line);
    }
    let mut chat = Chat {
        link,
        client,
        view: view.clone(),
        session,
        state,
        sigint,
        cwd,
        screen,
    };
    let status = match (request.prompt, keyboard) {
        (Some(prompt), _) => {
            view.user(&prompt);
            let blocks = chat.blocks(&prompt);
            match chat.turn(blocks).await {
                TurnEnd::Stopped(stop) => exit_status(&stop),
                TurnEnd::Failed => EXIT_FAILED,
                TurnEnd::Quit => 130,
            }
        }
        (None, Some(keyboard)) => chat.interactive(keyboard).await,
        (None, None) => unreachable!("a keyboard is started whenever there is no --prompt"),
    };
    chat.link.shutdown().await;
    Ok(status)
}
