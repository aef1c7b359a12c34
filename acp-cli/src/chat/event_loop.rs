//! The chat's one loop ([`Chat::run`]): it owns the session's state and the view, and
//! waits on everything that can happen at once, in this order of priority: the session's
//! stream (updates, and the end of each turn after its updates), the client's events
//! (questions, notices: after the updates they follow), finished tasks (a line read, a
//! command's request, a steering answer), keys typed during a turn, Ctrl-C, and the
//! spinner's tick while a turn runs. Nothing it waits on is polled, and it never awaits a
//! request to the agent itself (those run as tasks), so the stream is always read.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_client::permission::PermissionPolicy;
use acp_client::steering::SteeringOutcome;
use acp_client::{SessionEvent, SessionUpdates};
use acp_types::v1::*;
use tokio::signal::unix::Signal;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::ask::{Asking, Step};
use super::commands::{self, Apply, Target};
use super::followup::{Followups, Route};
use super::state::{Completions, SessionState};
use super::{EXIT_FAILED, exit_status};
use crate::client::ClientEvent;
use crate::input::{Answer, Keyboard, LineKind, TurnKey, TurnKeys};
use crate::link::Link;
use crate::proto;
use crate::sanitize::terminal_safe;
use crate::view::{Screen, View};

/// What a task hands back to the loop.
enum Done {
    /// The prompt line.
    Line(Answer),
    /// An answer to a question.
    Answer(Asking, String, Answer),
    /// A slash command's request finished.
    Command(Apply),
    /// The agent answered a steering message (the line, the answer).
    Steered(String, Result<SteeringOutcome, acp_client::Error>),
}

/// The turn in progress.
struct Turn {
    start: Instant,
    /// Ctrl-C was pressed once: `session/cancel` went out.
    cancelling: bool,
}

/// What the loop is made of (see [`super::run`]).
pub(super) struct Setup {
    pub(super) link: Link,
    pub(super) session: SessionId,
    pub(super) updates: SessionUpdates,
    pub(super) state: SessionState,
    pub(super) completions: Completions,
    pub(super) view: Arc<dyn View>,
    pub(super) screen: Option<Arc<Screen>>,
    pub(super) keyboard: Option<Keyboard>,
    pub(super) allow: PermissionPolicy,
    pub(super) events: mpsc::UnboundedReceiver<ClientEvent>,
    pub(super) sigint: Signal,
    pub(super) cwd: PathBuf,
    /// `--prompt`s, in order: a scripted chat (no keyboard).
    pub(super) scripted: Option<VecDeque<String>>,
}

/// A chat session in progress.
pub(super) struct Chat {
    s: Setup,
    followups: Followups,
    tasks: JoinSet<Done>,
    turn: Option<Turn>,
    /// The keys typed during the turn (interactive, on a terminal).
    keys: Option<TurnKeys>,
    /// The prompt line is being read.
    reading: bool,
    /// The held line on the prompt line, if one is.
    offered: Option<String>,
    /// A command's request is in flight.
    busy: bool,
    /// Questions on screen, not answered yet.
    asking: usize,
    /// Steering messages the agent has not answered yet (the next prompt waits for them:
    /// one it cannot take goes first).
    steering: usize,
    /// The status of the last turn (the exit status of a scripted chat).
    last_status: i32,
    exit: Option<i32>,
}

impl Chat {
    pub(super) fn new(setup: Setup) -> Chat {
        let steering = acp_client::steering::advertised(&setup.link.init);
        Chat {
            s: setup,
            followups: Followups::new(steering),
            tasks: JoinSet::new(),
            turn: None,
            keys: None,
            reading: false,
            offered: None,
            busy: false,
            asking: 0,
            steering: 0,
            last_status: 0,
            exit: None,
        }
    }

    /// The link to the agent, once the chat is over (to shut it down).
    pub(super) fn into_link(self) -> Link {
        self.s.link
    }

    /// Shows an update and keeps what it says of the session.
    pub(super) fn show_update(&mut self, update: SessionUpdate) {
        self.s.state.apply(&update);
        if matches!(
            update,
            SessionUpdate::AvailableCommandsUpdate(_)
                | SessionUpdate::CurrentModeUpdate(_)
                | SessionUpdate::ConfigOptionUpdate(_)
        ) {
            self.s.completions.publish(&self.s.state);
        }
        self.s.view.update(&update);
    }

    /// Waits up to `limit` for the agent's slash commands (agents send them with or right
    /// after the session's answer), so they are shown before the first prompt rather than
    /// over it. Other updates that come first are shown.
    pub(super) async fn wait_for_commands(&mut self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.s.state.commands.is_empty() {
            match tokio::time::timeout_at(deadline, self.s.updates.next()).await {
                Ok(Some(SessionEvent::Update(update))) => self.show_update(update),
                _ => break,
            }
        }
    }

    /// The session's state (for the lines shown before the first prompt).
    pub(super) fn state(&self) -> &SessionState {
        &self.s.state
    }

    /// Runs until the user leaves (or the scripted prompts are done); returns the exit
    /// status.
    pub(super) async fn run(&mut self) -> i32 {
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        loop {
            self.next_step();
            if let Some(status) = self.exit {
                return status;
            }
            let turn_running = self.turn.is_some();
            tokio::select! {
                biased;
                event = self.s.updates.next() => match event {
                    Some(SessionEvent::Update(update)) => self.show_update(update),
                    Some(SessionEvent::Prompted(result)) => self.turn_ended(result).await,
                    Some(SessionEvent::Loaded(_)) => {}
                    // Only a failed load ends the stream, and that is never run here.
                    None => return EXIT_FAILED,
                },
                Some(event) = self.s.events.recv() => self.client_event(event),
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    if let Ok(done) = done {
                        self.done(done).await;
                    }
                }
                Some(key) = next_key(&mut self.keys) => self.turn_key(key),
                _ = self.s.sigint.recv() => self.ctrl_c().await,
                _ = ticker.tick(), if turn_running => self.s.view.tick(),
            }
        }
    }

    /// Starts what is due when nothing runs: a queued line, the next scripted prompt, or
    /// the prompt line (with a held line on it).
    fn next_step(&mut self) {
        loop {
            if self.exit.is_some()
                || self.turn.is_some()
                || self.busy
                || self.reading
                || self.asking > 0
                || self.steering > 0
            {
                return;
            }
            if let Some(line) = self.followups.next_to_send() {
                self.s.view.user(&line);
                self.submit(line);
                continue;
            }
            if let Some(scripted) = &mut self.s.scripted {
                match scripted.pop_front() {
                    Some(prompt) => {
                        self.s.view.user(&prompt);
                        self.start_turn(&prompt);
                    }
                    None => self.exit = Some(self.last_status),
                }
                return;
            }
            let Some(keyboard) = self.s.keyboard.clone() else {
                self.exit = Some(self.last_status);
                return;
            };
            let offered = self.followups.next_to_offer();
            if let Some(line) = &offered {
                self.s.view.info(&format!(
                    "held: {} (Enter sends it, Ctrl-C drops it)",
                    terminal_safe(line)
                ));
            }
            self.offered = offered.clone();
            self.reading = true;
            self.tasks.spawn(async move {
                Done::Line(keyboard.read_with("you> ", LineKind::Prompt, offered).await)
            });
            return;
        }
    }

    /// A line from the prompt line (or the queue): a command of the CLI's, or a prompt.
    fn submit(&mut self, line: String) {
        let text = line.trim();
        if text.is_empty() {
            return;
        }
        let (word, arg) = text.split_once(' ').unwrap_or((text, ""));
        let titles_settable = self
            .s
            .link
            .init
            .agent_capabilities
            .session_capabilities
            .title
            .is_some();
        let target = Target {
            agent: self.s.link.agent(),
            session: &self.s.session,
            titles_settable,
        };
        let view = &*self.s.view;
        let pending = match word {
            "/quit" | "/exit" => {
                self.exit = Some(0);
                return;
            }
            "/mode" => commands::mode(arg.trim(), &self.s.state, &target, view),
            "/model" => commands::model(arg.trim(), &self.s.state, &target, view),
            "/title" => commands::title(arg.trim(), &self.s.state, &target, view),
            _ => {
                let text = text.to_owned();
                self.start_turn(&text);
                return;
            }
        };
        if let Some(pending) = pending {
            self.busy = true;
            self.tasks
                .spawn(async move { Done::Command(pending.await) });
        }
    }

    /// Sends a prompt: the turn's updates and its end come on the session's stream.
    fn start_turn(&mut self, text: &str) {
        let blocks = self.blocks(text);
        self.s.view.turn_started();
        tracing::info!(session = %self.s.session, "turn started");
        let request = proto::prompt_request(&self.s.session, blocks);
        let agent = self.s.link.agent().clone();
        agent.prompt_on(&mut self.s.updates, request);
        self.turn = Some(Turn {
            start: Instant::now(),
            cancelling: false,
        });
        // Keys typed while the agent streams are read by the keyboard (not echoed into the
        // agent's text): a finished line is a follow-up.
        if self.s.screen.is_some()
            && let Some(keyboard) = &self.s.keyboard
        {
            self.keys = Some(keyboard.collect());
        }
    }

    /// The turn is over (its every update was shown before).
    async fn turn_ended(&mut self, result: Result<PromptResponse, acp_client::Error>) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        // The keyboard goes back to the line editor; an unfinished line starts the next
        // prompt line.
        self.keys = None;
        let elapsed = turn.start.elapsed();
        let (status, normally) = match result {
            Ok(response) => {
                tracing::info!(
                    session = %self.s.session,
                    stop_reason = %response.stop_reason,
                    duration_ms = elapsed.as_millis() as u64,
                    "turn ended"
                );
                if let Some(usage) = &response.usage {
                    self.s.view.info(&crate::offers::usage_line(usage));
                }
                self.s
                    .view
                    .turn_ended(response.stop_reason.as_str(), elapsed);
                let normally = !turn.cancelling && response.stop_reason != StopReason::Cancelled;
                (exit_status(&response.stop_reason), normally)
            }
            Err(e) => {
                // The agent answered with an error: it is alive, and the error says it all.
                // The connection closed: how the agent exited (status, stderr) says more.
                let death = if e.is_connection_closed() {
                    self.s.link.death().await
                } else {
                    None
                };
                let why = death.unwrap_or_else(|| super::prompt_failure(&e));
                // The user reads the error in the transcript; the log has it only when
                // asked for (RUST_LOG), not as a second message.
                tracing::info!(session = %self.s.session, error = %e, "turn failed");
                self.report(&why);
                self.s.view.turn_ended("error", elapsed);
                (EXIT_FAILED, false)
            }
        };
        let held = self.followups.turn_ended(normally);
        if held > 0 {
            self.s.view.info(&format!(
                "{held} queued line(s) not sent: each is offered on the prompt line"
            ));
        }
        self.last_status = status;
        if self.s.scripted.is_some() && status != 0 {
            self.exit = Some(status);
        }
    }

    /// Ctrl-C: cancels the turn (a second one quits); between turns, before the line
    /// editor has the keyboard back, it quits.
    async fn ctrl_c(&mut self) {
        let Some(turn) = &mut self.turn else {
            self.exit = Some(130);
            return;
        };
        if turn.cancelling {
            self.s.view.info("second Ctrl-C: quitting");
            self.exit = Some(130);
            return;
        }
        turn.cancelling = true;
        tracing::info!(session = %self.s.session, "cancelling the turn (Ctrl-C)");
        self.s.view.info("cancelling (Ctrl-C again to quit)");
        let queued = self.followups.queued();
        if queued > 0 {
            self.s.view.info(&format!(
                "{queued} queued line(s) held, not sent: Enter sends each, Ctrl-C drops it"
            ));
        }
        // A notification: it waits on no answer, so the stream keeps being read.
        if let Err(e) = self
            .s
            .link
            .agent()
            .cancel(proto::cancel(&self.s.session))
            .await
        {
            self.s
                .view
                .error(&format!("session/cancel could not be sent: {e}"));
        }
    }

    fn client_event(&mut self, event: ClientEvent) {
        match event {
            ClientEvent::Info(text) => self.s.view.info(&text),
            ClientEvent::TerminalOutput {
                command,
                output,
                exit,
            } => self.s.view.terminal_output(&command, &output, exit),
            ClientEvent::Ask(question) => {
                let (asking, prompt) =
                    Asking::show(question, &self.s.state.tool_titles, &*self.s.view);
                match self.s.keyboard.clone() {
                    Some(keyboard) => {
                        self.asking += 1;
                        self.ask(keyboard, asking, prompt);
                    }
                    None => asking.answer_by_policy(self.s.allow, &*self.s.view),
                }
            }
        }
    }

    fn ask(&mut self, keyboard: Keyboard, asking: Asking, prompt: String) {
        self.tasks.spawn(async move {
            let answer = keyboard.read(&prompt, LineKind::Answer).await;
            Done::Answer(asking, prompt, answer)
        });
    }

    async fn done(&mut self, done: Done) {
        match done {
            Done::Line(answer) => {
                self.reading = false;
                if let Some(screen) = &self.s.screen {
                    screen.release_held();
                }
                let offered = self.offered.take();
                match answer {
                    Answer::Line(line) => self.submit(line),
                    Answer::Interrupted if offered.is_some() => {
                        let line = offered.unwrap_or_default();
                        self.s
                            .view
                            .info(&format!("dropped: {}", terminal_safe(&line)));
                    }
                    Answer::Interrupted | Answer::Eof => self.exit = Some(0),
                }
            }
            Done::Answer(asking, prompt, answer) => match asking.answer(answer, &*self.s.view) {
                Step::Again(asking) => {
                    if let Some(keyboard) = self.s.keyboard.clone() {
                        self.ask(keyboard, asking, prompt);
                    }
                }
                Step::Done { interrupted } => {
                    self.asking -= 1;
                    if interrupted {
                        self.ctrl_c().await;
                    }
                }
            },
            Done::Command(apply) => {
                self.busy = false;
                apply(&mut self.s.state, &*self.s.view);
                self.s.completions.publish(&self.s.state);
            }
            Done::Steered(line, outcome) => self.steered(line, outcome),
        }
    }

    /// A key event of the turn: the line being typed is shown; a finished one is steered
    /// into the turn or queued.
    fn turn_key(&mut self, key: TurnKey) {
        let line = match key {
            TurnKey::Typing(text) => {
                self.s.view.typing(&text);
                return;
            }
            TurnKey::Line(line) => line,
        };
        self.s.view.typing("");
        let shown = terminal_safe(line.trim());
        match self.followups.route() {
            Route::Steer => {
                self.s.view.info(&format!("steering: {shown}"));
                let blocks = self.blocks(line.trim());
                let agent = self.s.link.agent().clone();
                let session = self.s.session.clone();
                self.steering += 1;
                self.tasks.spawn(async move {
                    let outcome = agent.steer(&session, &blocks).await;
                    Done::Steered(line, outcome)
                });
            }
            Route::Queue => {
                self.s.view.info(&format!(
                    "queued: {shown} (sent when the turn ends; Ctrl-C cancels the turn and holds it)"
                ));
                self.followups.queue(line);
            }
        }
    }

    fn steered(&mut self, line: String, outcome: Result<SteeringOutcome, acp_client::Error>) {
        self.steering -= 1;
        let view = &self.s.view;
        match outcome {
            Ok(SteeringOutcome::Injected) => view.info("the agent took it into the running turn"),
            Ok(SteeringOutcome::StartedNewTurn) => {
                view.info("the turn had ended: the agent started a new one with it")
            }
            Ok(SteeringOutcome::PromptRequired) => {
                view.info("the turn had ended: it goes as the next prompt");
                self.followups.queue(line);
            }
            Ok(SteeringOutcome::Failed(why)) => {
                view.info(&format!(
                    "the agent did not take it ({}): queued",
                    terminal_safe(&why)
                ));
                self.followups.queue(line);
            }
            Err(e) => {
                view.info(&format!(
                    "steering failed ({}): queued",
                    terminal_safe(&e.message)
                ));
                self.followups.queue(line);
            }
        }
    }

    /// An error, first line as the error and the rest (an agent's stderr) as context.
    fn report(&self, text: &str) {
        let mut lines = text.lines();
        self.s.view.error(lines.next().unwrap_or("unknown error"));
        for line in lines {
            self.s.view.info(&format!("  {}", terminal_safe(line)));
        }
    }

    /// The blocks for a typed prompt (with its `@path` attachments).
    fn blocks(&self, text: &str) -> Vec<ContentBlock> {
        let embed = self
            .s
            .link
            .init
            .agent_capabilities
            .prompt_capabilities
            .embedded_context;
        let (blocks, problems) = crate::attach::prompt_blocks(text, &self.s.cwd, embed);
        for problem in problems {
            self.s.view.info(&problem);
        }
        blocks
    }
}

/// The next key of the turn; never, when no turn reads keys.
async fn next_key(keys: &mut Option<TurnKeys>) -> Option<TurnKey> {
    match keys {
        Some(keys) => keys.recv().await,
        None => std::future::pending().await,
    }
}
