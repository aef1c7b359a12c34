//! Completion of the prompt line: the agent's slash commands and the CLI's own, the ids a
//! command takes (`/mode `, `/model `), and `@path` attachments.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::{ArgumentChoices, COMMANDS_WITH_CHOICES, CommandList, LineKind};

/// Completion for the prompt line.
pub(super) struct ChatHelper {
    pub(super) commands: CommandList,
    pub(super) choices: ArgumentChoices,
    /// The CLI's own commands, offered after the agent's.
    pub(super) local: Vec<(String, String)>,
    pub(super) cwd: PathBuf,
    pub(super) kind: Arc<Mutex<LineKind>>,
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
