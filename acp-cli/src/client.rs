//! The CLI's [`Client`]: reads files inside the working directory, runs the terminals the
//! user agreed to, and hands everything the user is to see or answer (permission requests,
//! terminal commands, their output) to the chat's loop as [`ClientEvent`]s, in the order the
//! agent sent them. The loop owns the screen and the keyboard; the client owns neither.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use acp_client::fs::SandboxedFs;
use acp_client::terminal::{TerminalConfig, TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, Error, async_trait};
use acp_types::v1::*;
use tokio::sync::{mpsc, oneshot};

use crate::proto;
use crate::sanitize::terminal_safe;

/// A question of the agent's, for the user (or the `--yes` policy) to answer.
#[derive(Debug)]
pub enum Question {
    /// `session/request_permission`: answered with the index of an option, or `None`
    /// (cancelled).
    Permission {
        /// The request as the agent sent it (boxed: it is most of the event's size).
        request: Box<RequestPermissionRequest>,
        /// The answer.
        reply: oneshot::Sender<Option<usize>>,
    },
    /// A terminal command to run: the lines say what, where and with which environment;
    /// answered yes or no, or `None` (cancelled).
    Terminal {
        /// What would run.
        lines: Vec<String>,
        /// The answer.
        reply: oneshot::Sender<Option<bool>>,
    },
}

/// What the client hands to the chat's loop.
#[derive(Debug)]
pub enum ClientEvent {
    /// A question; the loop shows it and sends the answer back.
    Ask(Question),
    /// A notice from the CLI about what the agent does (a file read).
    Info(String),
    /// The output of a terminal the agent ran through us, once it exited.
    TerminalOutput {
        /// The command line, for the user.
        command: String,
        /// What it wrote.
        output: String,
        /// Its exit code.
        exit: Option<u32>,
    },
}

/// The CLI's client.
pub struct CliClient {
    /// To the chat's loop; `None` (or a loop that is gone): questions are refused.
    events: Option<mpsc::UnboundedSender<ClientEvent>>,
    fs: SandboxedFs,
    terminals: Terminals,
    /// Terminal id -> the command line, for showing its output.
    terminal_commands: Mutex<HashMap<String, String>>,
}

impl CliClient {
    /// A client that hands its events to `events` and reads files under `cwd`.
    pub fn new(
        events: Option<mpsc::UnboundedSender<ClientEvent>>,
        cwd: &Path,
    ) -> Result<CliClient, String> {
        let fs = SandboxedFs::new([cwd])
            .map_err(|e| format!("cannot use {} as the working directory: {e}", cwd.display()))?;
        Ok(CliClient {
            events,
            fs,
            // The user is shown the cwd and the environment and decides, so neither is
            // refused before asking; commands without a cwd run in `cwd`.
            terminals: Terminals::new().with_workspace(cwd).with_config(
                TerminalConfig::default()
                    .with_env_allowed(true)
                    .with_cwd_outside_roots_allowed(true),
            ),
            terminal_commands: Mutex::new(HashMap::new()),
        })
    }

    fn send(&self, event: ClientEvent) -> bool {
        self.events
            .as_ref()
            .is_some_and(|tx| tx.send(event).is_ok())
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
        let options = p.options.clone();
        let (reply, answer) = oneshot::channel();
        let asked = self.send(ClientEvent::Ask(Question::Permission {
            request: Box::new(p),
            reply,
        }));
        let choice = if asked {
            answer.await.ok().flatten()
        } else {
            None
        };
        let outcome = match choice.and_then(|i| options.get(i)) {
            Some(option) => RequestPermissionOutcome::selected(option.option_id.clone()),
            None => RequestPermissionOutcome::Cancelled,
        };
        Ok(proto::permission_response(outcome))
    }

    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.send(ClientEvent::Info(format!(
            "the agent reads {}",
            terminal_safe(&p.path)
        )));
        self.fs.read_text_file(p).await
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
        let (reply, answer) = oneshot::channel();
        let asked = self.send(ClientEvent::Ask(Question::Terminal { lines, reply }));
        let answer = if asked {
            answer.await.ok().flatten()
        } else {
            None
        };
        match answer {
            Some(true) => TerminalDecision::Allow,
            Some(false) => TerminalDecision::deny(format!("the user refused to run `{command}`")),
            None => TerminalDecision::deny("the user cancelled the question"),
        }
    }

    /// `terminal/output` and `terminal/kill` go to the terminals as they are; create, wait
    /// and release (below) also keep the command line the view shows with its output.
    fn terminals(&self) -> Option<&Terminals> {
        Some(&self.terminals)
    }

    async fn create_terminal(
        &self,
        p: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        // Without a cwd the command runs in the session's directory (`Terminals` does it).
        let command = describe_command(&p);
        let created = self.terminals.create(p, self).await?;
        self.terminal_commands
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
        let exit = self.terminals.wait_for_exit(p).await?;
        let output = self
            .terminals
            .output(proto::terminal_output(&session_id, &terminal_id))
            .await;
        let command = self
            .terminal_commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&terminal_id.0)
            .cloned()
            .unwrap_or_default();
        if let Ok(output) = output {
            self.send(ClientEvent::TerminalOutput {
                command,
                output: output.output,
                exit: exit.exit_code,
            });
        }
        Ok(exit)
    }

    async fn release_terminal(
        &self,
        p: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        self.terminal_commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&p.terminal_id.0);
        self.terminals.release(p).await
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
