//! The keyboard: a rustyline editor on its own thread (it blocks), asked for one line at a
//! time from async code, with completion of slash commands and `@path` attachments
//! ([`complete`]); while a turn runs the same thread reads the keys itself
//! ([`turn_keys`]), so a line typed then is a follow-up.

mod complete;
mod turn_keys;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustyline::Editor;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use tokio::sync::{mpsc, oneshot};

use complete::ChatHelper;
pub use turn_keys::TurnKey;
use turn_keys::{LineBuffer, Ready, TurnMode, Wake};

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

/// What the keyboard thread is asked to do.
enum Request {
    /// Read one line with the editor (`initial`: text already on the line).
    Read {
        prompt: String,
        kind: LineKind,
        initial: Option<String>,
        reply: oneshot::Sender<Answer>,
    },
    /// Read the keys of a turn, until [`Request::Stop`].
    Collect(mpsc::UnboundedSender<TurnKey>),
    /// The turn is over.
    Stop,
}

/// The keyboard, shared by the chat loop and its questions.
#[derive(Clone)]
pub struct Keyboard {
    /// Set while the prompt line (not an answer) is being edited.
    editing: Arc<std::sync::atomic::AtomicBool>,
    tx: std::sync::mpsc::Sender<Request>,
    /// Wakes the thread out of its wait on the keys of a turn.
    wake: Arc<Wake>,
    /// Serialises questions: one prompt on screen at a time.
    turn: Arc<tokio::sync::Mutex<()>>,
}

/// The keys of a turn, read until this is dropped (then what was typed and not finished
/// starts the next prompt line).
pub struct TurnKeys {
    rx: mpsc::UnboundedReceiver<TurnKey>,
    keyboard: Keyboard,
}

impl TurnKeys {
    /// The next key event.
    pub async fn recv(&mut self) -> Option<TurnKey> {
        self.rx.recv().await
    }
}

impl Drop for TurnKeys {
    fn drop(&mut self) {
        self.keyboard.send(Request::Stop);
    }
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
        let wake = Arc::new(Wake::new().map_err(|e| format!("cannot make a pipe: {e}"))?);
        // Only a terminal has one; without it output is simply written.
        let editing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        let thread = KeyboardThread {
            editor,
            kind,
            history,
            editing: editing.clone(),
            wake: wake.clone(),
            typed: LineBuffer::default(),
        };
        std::thread::Builder::new()
            .name("acp-keyboard".into())
            .spawn(move || thread.run(rx))
            .map_err(|e| format!("cannot start the keyboard thread: {e}"))?;
        Ok(Keyboard {
            editing,
            tx,
            wake,
            turn: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    /// The flag that is set while the prompt line is being edited.
    pub fn editing(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.editing.clone()
    }

    fn send(&self, request: Request) -> bool {
        let sent = self.tx.send(request).is_ok();
        self.wake.wake();
        sent
    }

    /// Reads one line.
    pub async fn read(&self, prompt: &str, kind: LineKind) -> Answer {
        self.read_with(prompt, kind, None).await
    }

    /// Reads one line that starts as `initial` (else, on the prompt line, as what was typed
    /// and not finished during the last turn).
    pub async fn read_with(&self, prompt: &str, kind: LineKind, initial: Option<String>) -> Answer {
        let _one_at_a_time = self.turn.lock().await;
        let (reply, answer) = oneshot::channel();
        let request = Request::Read {
            prompt: prompt.to_owned(),
            kind,
            initial,
            reply,
        };
        if !self.send(request) {
            return Answer::Eof;
        }
        answer.await.unwrap_or(Answer::Eof)
    }

    /// Reads the keys typed while a turn runs (they are not echoed into the agent's text),
    /// until the returned [`TurnKeys`] is dropped. Nothing is read when stdin is not a
    /// terminal.
    pub fn collect(&self) -> TurnKeys {
        let (tx, rx) = mpsc::unbounded_channel();
        self.send(Request::Collect(tx));
        TurnKeys {
            rx,
            keyboard: self.clone(),
        }
    }
}

/// The keyboard thread's own state.
struct KeyboardThread {
    editor: Editor<ChatHelper, DefaultHistory>,
    kind: Arc<Mutex<LineKind>>,
    history: Option<PathBuf>,
    editing: Arc<std::sync::atomic::AtomicBool>,
    wake: Arc<Wake>,
    /// The line typed during a turn and not finished.
    typed: LineBuffer,
}

impl KeyboardThread {
    fn run(mut self, rx: std::sync::mpsc::Receiver<Request>) {
        // The keys of the turn go here while one runs, with the terminal in its mode.
        let mut collecting: Option<(mpsc::UnboundedSender<TurnKey>, Option<TurnMode>)> = None;
        let mut stdin_open = true;
        loop {
            let request = match &collecting {
                None => match rx.recv() {
                    Ok(request) => request,
                    Err(_) => return,
                },
                Some((keys, mode)) => {
                    let from_stdin = stdin_open && mode.is_some();
                    match self.wake.wait(from_stdin) {
                        Ready::Stdin => {
                            match turn_keys::read_stdin() {
                                Some(bytes) => {
                                    for key in self.typed.feed(&bytes) {
                                        let _ = keys.send(key);
                                    }
                                }
                                None => stdin_open = false,
                            }
                            continue;
                        }
                        Ready::Woken => match rx.try_recv() {
                            Ok(request) => request,
                            Err(std::sync::mpsc::TryRecvError::Empty) => continue,
                            Err(std::sync::mpsc::TryRecvError::Disconnected) => return,
                        },
                    }
                }
            };
            match request {
                Request::Collect(keys) => collecting = Some((keys, TurnMode::enter())),
                // Dropping the mode restores the terminal.
                Request::Stop => collecting = None,
                Request::Read {
                    prompt,
                    kind,
                    initial,
                    reply,
                } => {
                    let initial = match (initial, kind) {
                        (Some(initial), _) => initial,
                        (None, LineKind::Prompt) => self.typed.take(),
                        (None, LineKind::Answer) => String::new(),
                    };
                    // The editor sets its own mode and puts back the one it found.
                    let _ = reply.send(self.read(&prompt, kind, &initial));
                }
            }
        }
    }

    fn read(&mut self, prompt: &str, kind: LineKind, initial: &str) -> Answer {
        *self.kind.lock().unwrap_or_else(|p| p.into_inner()) = kind;
        let at_prompt = kind == LineKind::Prompt;
        self.editing
            .store(at_prompt, std::sync::atomic::Ordering::SeqCst);
        let read = self.editor.readline_with_initial(prompt, (initial, ""));
        self.editing
            .store(false, std::sync::atomic::Ordering::SeqCst);
        match read {
            Ok(line) => {
                if at_prompt && !line.trim().is_empty() {
                    let _ = self.editor.add_history_entry(line.as_str());
                    if let Some(path) = &self.history
                        && let Err(e) = self.editor.append_history(path)
                    {
                        tracing::warn!(path = %path.display(), error = %e, "prompt history not saved");
                    }
                }
                Answer::Line(line)
            }
            Err(ReadlineError::Interrupted) => Answer::Interrupted,
            Err(_) => Answer::Eof,
        }
    }
}
