//! The CLI's [`Client`]: shows every update on the [`View`], puts permission requests and
//! every terminal command to the user (or to the `--yes`/`--no` policy when not
//! interactive), reads files inside the working directory, and runs the terminals the user
//! agreed to.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use acp_client::fs::SandboxedFs;
use acp_client::permission::{PermissionPolicy, choose_permission};
use acp_client::terminal::{TerminalConfig, TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, Error, async_trait};
use acp_types::v1::*;
use tokio::sync::Notify;

use crate::input::{Answer, CommandList, Keyboard, LineKind};
use crate::proto;
use crate::sanitize::terminal_safe;
use crate::view::View;

/// Who answers the agent's questions.
#[derive(Clone)]
pub enum Answerer {
    /// The user, at the keyboard.
    Keyboard(Keyboard),
    /// A fixed policy (`--yes`, `--yes-always`, or neither): permission requests are
    /// answered by [`acp_client::permission::choose_permission`] (never more than a one-time
    /// allow unless `--yes-always`); terminal commands run when the policy allows.
    Policy {
        /// What to grant.
        allow: PermissionPolicy,
    },
}

/// What the session looks like, kept up to date from its updates.
#[derive(Default)]
pub struct SessionView {
    /// The current mode id.
    pub mode: Option<String>,
    /// The modes on offer: id and name.
    pub modes: Vec<(String, String)>,
    /// The configuration options (models among them).
    pub config: Vec<SessionConfigOption>,
    /// The models the agent listed in `models` (unstable; gemini-cli), if it did.
    pub models: Option<SessionModelState>,
    /// The session's title, as the agent last reported it.
    pub title: Option<String>,
}

impl SessionView {
    /// How the model is chosen in this session.
    pub fn model_choice(&self) -> crate::offers::ModelChoice {
        crate::offers::ModelChoice::of(self.models.as_ref(), &self.config)
    }
}

/// The CLI's client.
#[derive(Clone)]
pub struct CliClient {
    inner: Arc<Inner>,
}

struct Inner {
    view: Arc<dyn View>,
    answerer: Answerer,
    commands: CommandList,
    session: Arc<Mutex<SessionView>>,
    fs: SandboxedFs,
    terminals: Terminals,
    /// Terminal id -> the command line, for showing its output.
    terminal_commands: Mutex<HashMap<String, String>>,
    /// Signalled when the user presses Ctrl-C at a question: the turn is to be cancelled.
    interrupt: Arc<Notify>,
    /// Tool call id -> title, to name the call a permission request is about.
    tool_titles: Mutex<HashMap<String, String>>,
}

impl CliClient {
    /// A client showing on `view`, asking `answerer`, reading files under `cwd`.
    pub fn new(
        view: Arc<dyn View>,
        answerer: Answerer,
        commands: CommandList,
        session: Arc<Mutex<SessionView>>,
        cwd: &Path,
    ) -> Result<CliClient, String> {
        let fs = SandboxedFs::new([cwd])
            .map_err(|e| format!("cannot use {} as the working directory: {e}", cwd.display()))?;
        Ok(CliClient {
            inner: Arc::new(Inner {
                view,
                answerer,
                commands,
                session,
                fs,
                // The user is shown the cwd and the environment and decides, so neither is
                // refused before asking; commands without a cwd run in `cwd`.
                terminals: Terminals::new().with_workspace(cwd).with_config(
                    TerminalConfig::default()
                        .with_env_allowed(true)
                        .with_cwd_outside_roots_allowed(true),
                ),
                terminal_commands: Mutex::new(HashMap::new()),
                interrupt: Arc::new(Notify::new()),
                tool_titles: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Notified when the user interrupts a question with Ctrl-C.
    pub fn interrupt(&self) -> Arc<Notify> {
        self.inner.interrupt.clone()
    }

    /// Asks a yes/no question; `None` when the user pressed Ctrl-C or the keyboard is gone.
    async fn ask_yes_no(&self, kind: &str, lines: Vec<String>) -> Option<bool> {
        let inner = &self.inner;
        inner.view.question(&lines);
        let answer = match &inner.answerer {
            Answerer::Policy { allow } => {
                inner.view.info(if allow.allows() {
                    "yes (--yes)"
                } else {
                    "no (no --yes)"
                });
                Some(allow.allows())
            }
            Answerer::Keyboard(keyboard) => loop {
                match keyboard.read("[y]es / [n]o > ", LineKind::Answer).await {
                    Answer::Line(line) => match line.trim().to_ascii_lowercase().as_str() {
                        "y" | "yes" => break Some(true),
                        "n" | "no" | "" => break Some(false),
                        _ => continue,
                    },
                    Answer::Interrupted => {
                        inner.interrupt.notify_one();
                        break None;
                    }
                    Answer::Eof => break None,
                }
            },
        };
        let text = match answer {
            Some(true) => "yes",
            Some(false) => "no",
            None => "interrupted",
        };
        inner.view.answered(kind, text);
        answer
    }
}

/// The command line of a terminal request, for the user (`echo 'a b'`).
fn describe_command(p: &CreateTerminalRequest) -> String {
    let mut line = quote(&p.command);
    for arg in &p.args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    terminal_safe(&line)
}

/// Shell-style quoting for display.
fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Picks an option from a permission request's answer: a number, or the start of a name.
pub fn pick_option(options: &[PermissionOption], answer: &str) -> Option<usize> {
    let answer = answer.trim();
    if let Ok(n) = answer.parse::<usize>() {
        return (1..=options.len()).contains(&n).then(|| n - 1);
    }
    if answer.is_empty() {
        return None;
    }
    let lower = answer.to_lowercase();
    let matches: Vec<usize> = options
        .iter()
        .enumerate()
        .filter(|(_, o)| o.name.to_lowercase().starts_with(&lower))
        .map(|(i, _)| i)
        .collect();
    (matches.len() == 1).then(|| matches[0])
}

#[async_trait]
impl Client for CliClient {
    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let inner = &self.inner;
        let id = &p.tool_call.tool_call_id.0;
        let title = p.tool_call.title.clone().unwrap_or_else(|| {
            inner
                .tool_titles
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(id)
                .cloned()
                .unwrap_or_else(|| id.clone())
        });
        let mut lines = vec![format!(
            "the agent asks permission: {}",
            terminal_safe(&title).replace('\n', " ")
        )];
        for (i, option) in p.options.iter().enumerate() {
            lines.push(format!(
                "{}) {} ({})",
                i + 1,
                terminal_safe(&option.name).replace('\n', " "),
                option.kind
            ));
        }
        inner.view.question(&lines);
        let choice = match &inner.answerer {
            Answerer::Policy { allow } => {
                let choice = choose_permission(&p.options, *allow);
                if choice.no_allow_offered {
                    inner.view.info(match allow {
                        PermissionPolicy::AllowOnce => "the agent offers no one-time allow (allow_once): refused, since --yes grants one action at a time (--yes-always may grant an allow_always option)",
                        _ => "the agent offers no allow option: refused",
                    });
                }
                let why = match allow {
                    PermissionPolicy::AllowOnce => "--yes",
                    PermissionPolicy::AllowAlways => "--yes-always",
                    PermissionPolicy::Refuse => "no --yes",
                };
                match choice.option {
                    Some(i) => inner
                        .view
                        .info(&format!("{} ({why})", terminal_safe(&p.options[i].name))),
                    None => inner
                        .view
                        .info(&format!("no option to refuse with: cancelled ({why})")),
                }
                choice.option
            }
            Answerer::Keyboard(keyboard) => {
                let prompt = format!("choose 1-{} > ", p.options.len());
                loop {
                    match keyboard.read(&prompt, LineKind::Answer).await {
                        Answer::Line(line) => {
                            if let Some(i) = pick_option(&p.options, &line) {
                                break Some(i);
                            }
                        }
                        Answer::Interrupted => {
                            inner.interrupt.notify_one();
                            break None;
                        }
                        Answer::Eof => break None,
                    }
                }
            }
        };
        let outcome = match choice {
            Some(i) => {
                inner.view.answered("permission", &p.options[i].option_id.0);
                RequestPermissionOutcome::selected(p.options[i].option_id.clone())
            }
            None => {
                inner.view.answered("permission", "cancelled");
                RequestPermissionOutcome::Cancelled
            }
        };
        Ok(proto::permission_response(outcome))
    }

    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.inner
            .view
            .info(&format!("the agent reads {}", terminal_safe(&p.path)));
        self.inner.fs.read_text_file(p).await
    }

    /// The terminal policy hook: the user sees exactly what would run and answers.
    async fn approve_terminal(&self, r: &TerminalRequest) -> TerminalDecision {
        let mut line = quote(&r.command);
        for arg in &r.args {
            line.push(' ');
            line.push_str(&quote(arg));
        }
        let command = terminal_safe(&line);
        let mut lines = vec![format!("the agent wants to run: {command}")];
        let cwd = terminal_safe(&r.cwd.to_string_lossy());
        if r.cwd_inside_roots {
            lines.push(format!("in: {cwd}"));
        } else {
            lines.push(format!("in: {cwd} (outside the session's directory)"));
        }
        if r.env.is_empty() {
            lines.push("environment: inherited, nothing added".to_owned());
        } else {
            for (name, value) in &r.env {
                lines.push(format!(
                    "env: {}={}",
                    terminal_safe(name),
                    quote(&terminal_safe(value))
                ));
            }
        }
        match self.ask_yes_no("terminal", lines).await {
            Some(true) => TerminalDecision::Allow,
            Some(false) => TerminalDecision::deny(format!("the user refused to run `{command}`")),
            None => TerminalDecision::deny("the user cancelled the question"),
        }
    }

    /// `terminal/output` and `terminal/kill` go to the terminals as they are; create, wait
    /// and release (below) also keep the command line the view shows with its output.
    fn terminals(&self) -> Option<&Terminals> {
        Some(&self.inner.terminals)
    }

    async fn create_terminal(
        &self,
        p: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        // Without a cwd the command runs in the session's directory (`Terminals` does it).
        let command = describe_command(&p);
        let created = self.inner.terminals.create(p, self).await?;
        self.inner
            .terminal_commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(created.terminal_id.0.clone(), command);
        Ok(created)
    }

    async fn wait_for_terminal_exit(
        &self,
        p: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        let session_id = p.session_id.clone();
        let terminal_id = p.terminal_id.clone();
        let exit = self.inner.terminals.wait_for_exit(p).await?;
        let output = self
            .inner
            .terminals
            .output(proto::terminal_output(&session_id, &terminal_id))
            .await;
        let command = self
            .inner
            .terminal_commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&terminal_id.0)
            .cloned()
            .unwrap_or_default();
        if let Ok(output) = output {
            self.inner
                .view
                .terminal_output(&command, &output.output, exit.exit_code);
        }
        Ok(exit)
    }

    async fn release_terminal(
        &self,
        p: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        self.inner
            .terminal_commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&p.terminal_id.0);
        self.inner.terminals.release(p).await
    }

    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        let inner = &self.inner;
        match &n.update {
            SessionUpdate::ToolCall(call) => {
                inner
                    .tool_titles
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(call.tool_call_id.0.clone(), call.title.clone());
            }
            SessionUpdate::AvailableCommandsUpdate(c) => {
                let mut commands = inner.commands.lock().unwrap_or_else(|p| p.into_inner());
                *commands = c
                    .available_commands
                    .iter()
                    .map(|c| (terminal_safe(&c.name), terminal_safe(&c.description)))
                    .collect();
            }
            SessionUpdate::CurrentModeUpdate(m) => {
                inner.session.lock().unwrap_or_else(|p| p.into_inner()).mode =
                    Some(m.current_mode_id.0.clone());
            }
            SessionUpdate::ConfigOptionUpdate(c) => {
                inner
                    .session
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .config = c.config_options.clone();
            }
            SessionUpdate::SessionInfoUpdate(info) => {
                if let Some(title) = &info.title {
                    inner
                        .session
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .title = title.clone();
                }
            }
            _ => {}
        }
        inner.view.update(&n.update);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Vec<PermissionOption> {
        vec![
            proto::permission_option("allow", "Allow", PermissionOptionKind::AllowOnce),
            proto::permission_option("always", "Always allow", PermissionOptionKind::AllowAlways),
            proto::permission_option("reject", "Reject", PermissionOptionKind::RejectOnce),
        ]
    }

    #[test]
    fn options_are_picked_by_number_or_name() {
        let o = options();
        assert_eq!(pick_option(&o, "2"), Some(1));
        assert_eq!(pick_option(&o, " 3 "), Some(2));
        assert_eq!(pick_option(&o, "4"), None);
        assert_eq!(pick_option(&o, "0"), None);
        assert_eq!(pick_option(&o, "rej"), Some(2));
        // "a" starts both "Allow" and "Always allow": ambiguous, asked again.
        assert_eq!(pick_option(&o, "a"), None);
        assert_eq!(pick_option(&o, ""), None);
    }

    #[test]
    fn commands_are_shown_quoted_and_safe() {
        let session = SessionId("s".into());
        let p = proto::create_terminal(&session, "rm", &["-rf", "my dir", "it's"]);
        assert_eq!(describe_command(&p), "rm -rf 'my dir' 'it'\\''s'");
        let p = proto::create_terminal(&session, "ls\x1b]0;x\x07", &[]);
        assert_eq!(describe_command(&p), "'ls'");
    }
}
