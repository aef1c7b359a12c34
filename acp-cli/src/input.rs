//! The keyboard: a rustyline editor on its own thread (it blocks), asked for one line at a
//! time from async code, with completion of slash commands and `@path` attachments.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use tokio::sync::oneshot;

/// What the user did at a prompt.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// A line (without its newline).
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the keyboard is gone.
    Eof,
}

/// What to complete while reading a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// The prompt line: slash commands and `@path`, kept in history.
    Prompt,
    /// An answer to a question: no completion, no history.
    Answer,
}

/// Commands offered for completion: name and description.
pub type CommandList = Arc<Mutex<Vec<(String, String)>>>;

/// The choices (id and name) offered for the first argument of one of the CLI's own
/// commands (`/mode `, `/model `), asked at every completion so they are always current;
/// empty for a command without choices.
pub type ArgumentChoices = Arc<dyn Fn(&str) -> Vec<(String, String)> + Send + Sync>;

/// The CLI's commands whose first argument completes from [`ArgumentChoices`].
const COMMANDS_WITH_CHOICES: [&str; 2] = ["mode", "model"];

/// Where the prompt history is kept across runs: `$ACP_HISTORY`, else `acp/history` in the
/// user's data directory (`$XDG_DATA_HOME`, else `~/.local/share`). `None` without either
/// (no history file is written then).
pub fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ACP_HISTORY").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })?;
    Some(data.join("acp").join("history"))
}

type Request = (String, LineKind, oneshot::Sender<Answer>);

/// The keyboard, shared by the chat loop and the client's questions.
#[derive(Clone)]
pub struct Keyboard {
    /// Set while the prompt line (not an answer) is being edited.
    editing: Arc<std::sync::atomic::AtomicBool>,
    tx: std::sync::mpsc::Sender<Request>,
    /// Serialises questions: one prompt on screen at a time.
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl Keyboard {
    /// Starts the editor thread. `commands` and `choices` are read at every completion;
    /// `cwd` is where `@path` completion starts.
    pub fn start(
        commands: CommandList,
        choices: ArgumentChoices,
        local: impl IntoIterator<Item = (&'static str, &'static str)>,
        cwd: PathBuf,
    ) -> Result<Keyboard, String> {
        let mut editor: Editor<ChatHelper, DefaultHistory> =
            Editor::new().map_err(|e| format!("cannot open the terminal for input: {e}"))?;
        // The prompts of earlier runs (Up recalls them); a missing or unreadable file is an
        // empty history, never an error.
        let history = history_path();
        if let Some(path) = &history {
            if let Err(e) = editor.load_history(path) {
                tracing::debug!(path = %path.display(), error = %e, "no prompt history loaded");
            }
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
        }
        let kind = Arc::new(Mutex::new(LineKind::Prompt));
        editor.set_helper(Some(ChatHelper {
            commands,
            choices,
            local: local
                .into_iter()
                .map(|(n, d)| (n.to_owned(), d.to_owned()))
                .collect(),
            cwd,
            kind: kind.clone(),
        }));
        // Only a terminal has one; without it output is simply written.
        let editing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let editing_flag = editing.clone();
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("acp-keyboard".into())
            .spawn(move || {
                for (prompt, line_kind, reply) in rx {
                    *kind.lock().unwrap_or_else(|p| p.into_inner()) = line_kind;
                    let at_prompt = line_kind == LineKind::Prompt;
                    editing_flag.store(at_prompt, std::sync::atomic::Ordering::SeqCst);
                    let read = editor.readline(&prompt);
                    editing_flag.store(false, std::sync::atomic::Ordering::SeqCst);
                    let answer = match read {
                        Ok(line) => {
                            if line_kind == LineKind::Prompt && !line.trim().is_empty() {
                                let _ = editor.add_history_entry(line.as_str());
                                if let Some(path) = &history
                                    && let Err(e) = editor.append_history(path)
                                {
                                    tracing::warn!(path = %path.display(), error = %e, "prompt history not saved");
                                }
                            }
                            Answer::Line(line)
                        }
                        Err(ReadlineError::Interrupted) => Answer::Interrupted,
                        Err(_) => Answer::Eof,
                    };
                    let _ = reply.send(answer);
                }
            })
            .map_err(|e| format!("cannot start the keyboard thread: {e}"))?;
        let keyboard = Keyboard {
            editing,
            tx,
            turn: Arc::new(tokio::sync::Mutex::new(())),
        };
        Ok(keyboard)
    }

    /// The flag that is set while the prompt line is being edited.
    pub fn editing(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.editing.clone()
    }

    /// Reads one line.
    pub async fn read(&self, prompt: &str, kind: LineKind) -> Answer {
        let _one_at_a_time = self.turn.lock().await;
        let (reply, answer) = oneshot::channel();
        if self.tx.send((prompt.to_owned(), kind, reply)).is_err() {
            return Answer::Eof;
        }
        answer.await.unwrap_or(Answer::Eof)
    }
}

/// While a turn streams, keys typed ahead are not echoed by the terminal (they would land in
/// the middle of the agent's text); they wait in the terminal's input queue and appear on
/// the next prompt line, intact, when the editor takes the keyboard back (it switches modes
/// without flushing input). Ctrl-C still interrupts. Restored on drop; does nothing when
/// stdin is not a terminal.
pub struct TypeAhead {
    saved: Option<libc::termios>,
}

impl TypeAhead {
    /// Turns the echo off for the duration of a turn.
    pub fn hold() -> TypeAhead {
        // SAFETY: tcgetattr fills a termios we own; failure (not a terminal) leaves it unused.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut termios) } != 0 {
            return TypeAhead { saved: None };
        }
        let mut quiet = termios;
        quiet.c_lflag &= !(libc::ECHO | libc::ECHONL);
        // TCSANOW: nothing typed so far is discarded.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) } != 0 {
            return TypeAhead { saved: None };
        }
        TypeAhead {
            saved: Some(termios),
        }
    }
}

impl Drop for TypeAhead {
    fn drop(&mut self) {
        if let Some(termios) = &self.saved {
            // SAFETY: restores the attributes read in `hold`.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, termios) };
        }
    }
}

/// Completion for the prompt line.
struct ChatHelper {
    commands: CommandList,
    choices: ArgumentChoices,
    /// The CLI's own commands, offered after the agent's.
    local: Vec<(String, String)>,
    cwd: PathBuf,
    kind: Arc<Mutex<LineKind>>,
}

impl Completer for ChatHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if *self.kind.lock().unwrap_or_else(|p| p.into_inner()) != LineKind::Prompt {
            return Ok((pos, Vec::new()));
        }
        let mut commands = self
            .commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        commands.extend(self.local.iter().cloned());
        let choices = |command: &str| (self.choices)(command);
        Ok(complete(line, pos, &commands, &choices, &self.cwd))
    }
}

/// Completions for `line` at `pos`: a slash command at the start of the line, a choice
/// (mode id, model id) after `/mode ` or `/model `, or a path after `@` anywhere. Returns
/// where the replaced word starts and the candidates.
pub fn complete(
    line: &str,
    pos: usize,
    commands: &[(String, String)],
    choices: &dyn Fn(&str) -> Vec<(String, String)>,
    cwd: &Path,
) -> (usize, Vec<Pair>) {
    let before = &line[..pos];
    let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word = &before[start..];
    for command in COMMANDS_WITH_CHOICES {
        if let Some(partial) = before
            .strip_prefix('/')
            .and_then(|rest| rest.strip_prefix(command))
            .and_then(|rest| rest.strip_prefix(' '))
            && !partial.contains(char::is_whitespace)
        {
            let pairs = choices(command)
                .into_iter()
                .filter(|(id, _)| id.starts_with(partial))
                .map(|(id, name)| Pair {
                    display: format!(
                        "{}  {}",
                        crate::sanitize::terminal_safe(&id),
                        crate::sanitize::terminal_safe(&name)
                    ),
                    replacement: id,
                })
                .collect();
            return (start, pairs);
        }
    }
    if start == 0 && word.starts_with('/') {
        let prefix = &word[1..];
        let pairs = commands
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(name, description)| Pair {
                display: format!("/{name}  {description}"),
                replacement: format!("/{name} "),
            })
            .collect();
        return (0, pairs);
    }
    if let Some(path) = word.strip_prefix('@') {
        return (start, complete_path(path, cwd));
    }
    (pos, Vec::new())
}

/// Files and directories starting with `partial` (relative to `cwd` unless absolute);
/// directories end with `/` so completion can go on.
fn complete_path(partial: &str, cwd: &Path) -> Vec<Pair> {
    let (dir_part, file_part) = match partial.rfind('/') {
        Some(i) => (&partial[..=i], &partial[i + 1..]),
        None => ("", partial),
    };
    let dir = if dir_part.starts_with('/') {
        PathBuf::from(dir_part)
    } else {
        cwd.join(dir_part)
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut pairs: Vec<Pair> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with(file_part)
                || (name.starts_with('.') && !file_part.starts_with('.'))
            {
                return None;
            }
            let is_dir = entry.file_type().ok()?.is_dir();
            let suffix = if is_dir { "/" } else { " " };
            Some(Pair {
                display: format!("{name}{}", if is_dir { "/" } else { "" }),
                replacement: format!("@{dir_part}{name}{suffix}"),
            })
        })
        .collect();
    pairs.sort_by(|a, b| a.display.cmp(&b.display));
    pairs
}

impl Hinter for ChatHelper {
    type Hint = String;
}
impl Highlighter for ChatHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}
impl Validator for ChatHelper {}
impl Helper for ChatHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn replacements(pairs: &[Pair]) -> Vec<&str> {
        pairs.iter().map(|p| p.replacement.as_str()).collect()
    }

    #[test]
    fn slash_commands_complete_at_the_start_only() {
        let commands = vec![
            ("count".to_owned(), "Count".to_owned()),
            ("clear".to_owned(), "Clear".to_owned()),
            ("echo".to_owned(), "Echo".to_owned()),
        ];
        let (start, pairs) = complete("/c", 2, &commands, &no_choices, Path::new("/"));
        assert_eq!(start, 0);
        assert_eq!(replacements(&pairs), ["/count ", "/clear "]);
        let (_, pairs) = complete("say /c", 6, &commands, &no_choices, Path::new("/"));
        assert!(pairs.is_empty());
    }

    fn no_choices(_: &str) -> Vec<(String, String)> {
        Vec::new()
    }

    fn choices(command: &str) -> Vec<(String, String)> {
        let list: &[(&str, &str)] = match command {
            "mode" => &[("ask", "Ask"), ("architect", "Architect"), ("code", "Code")],
            "model" => &[
                ("demo-fast", "Fast"),
                ("demo-slow", "Slow"),
                ("big\u{1b}[2J", "Big"),
            ],
            _ => &[],
        };
        list.iter()
            .map(|(id, name)| ((*id).to_owned(), (*name).to_owned()))
            .collect()
    }

    #[test]
    fn mode_ids_complete_after_the_mode_command() {
        let (start, pairs) = complete("/mode a", 7, &[], &choices, Path::new("/"));
        assert_eq!(start, 6);
        assert_eq!(replacements(&pairs), ["ask", "architect"]);
        let (_, pairs) = complete("/mode ", 6, &[], &choices, Path::new("/"));
        assert_eq!(pairs.len(), 3);
        // Only the first argument, and only of /mode.
        let (_, pairs) = complete("/mode ask a", 11, &[], &choices, Path::new("/"));
        assert!(pairs.is_empty());
        let (_, pairs) = complete("say a", 5, &[], &choices, Path::new("/"));
        assert!(pairs.is_empty());
    }

    #[test]
    fn model_ids_complete_after_the_model_command() {
        let (start, pairs) = complete("/model demo-s", 13, &[], &choices, Path::new("/"));
        assert_eq!(start, 7);
        assert_eq!(replacements(&pairs), ["demo-slow"]);
        let (_, pairs) = complete("/model ", 7, &[], &choices, Path::new("/"));
        assert_eq!(
            replacements(&pairs),
            ["demo-fast", "demo-slow", "big\u{1b}[2J"]
        );
        // What the list shows is terminal-safe; the id is sent as the agent gave it.
        assert_eq!(pairs[2].display, "big  Big");
        // `/modelx` is not `/model`, and `/mode` offers modes, not models.
        let (_, pairs) = complete("/modelx d", 9, &[], &choices, Path::new("/"));
        assert!(pairs.is_empty());
        let (_, pairs) = complete("/mode d", 7, &[], &choices, Path::new("/"));
        assert!(pairs.is_empty());
        // Without a model list, nothing.
        let (_, pairs) = complete("/model ", 7, &[], &no_choices, Path::new("/"));
        assert!(pairs.is_empty());
    }

    #[test]
    fn at_paths_complete_from_the_working_directory() {
        let dir = std::env::temp_dir().join(format!("acp-complete-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("notes.md"), "x").unwrap();
        std::fs::write(dir.join("src/main.rs"), "x").unwrap();
        let (start, pairs) = complete("look at @no", 11, &[], &no_choices, &dir);
        assert_eq!(start, 8);
        assert_eq!(replacements(&pairs), ["@notes.md "]);
        let (_, pairs) = complete("@s", 2, &[], &no_choices, &dir);
        assert_eq!(replacements(&pairs), ["@src/"]);
        let (_, pairs) = complete("@src/m", 6, &[], &no_choices, &dir);
        assert_eq!(replacements(&pairs), ["@src/main.rs "]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
