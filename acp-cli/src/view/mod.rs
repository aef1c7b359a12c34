//! How a session is shown: [`View`] and its two forms, [`Screen`] (a terminal transcript,
//! with in-place tool-call status and a spinner when stdout is a terminal) and [`JsonEvents`]
//! (one JSON object per line, for scripts).
//!
//! Every piece of agent text goes through [`crate::sanitize::terminal_safe`], and every line
//! of it starts with a gutter (`"  "`), so nothing the agent sends can reach column 0, where
//! the UI's own lines (`you>`, `⏺`, `?`) start: it cannot forge them.

use std::time::Duration;

use acp_types::v1::*;

mod json;
mod screen;
mod term;
mod updates;

pub use json::JsonEvents;
pub use screen::Screen;

/// Where the session is shown, by the chat's loop (which owns it: updates, questions, turn
/// boundaries all reach it there, in order).
pub trait View: Send + Sync {
    /// A `session/update` arrived.
    fn update(&self, update: &SessionUpdate);
    /// A UI line (a notice from the CLI itself, not from the agent).
    fn info(&self, text: &str);
    /// An error line.
    fn error(&self, text: &str);
    /// A question is about to be asked (permission, terminal); the lines say what.
    fn question(&self, lines: &[String]);
    /// The answer given to the last question.
    fn answered(&self, kind: &str, answer: &str);
    /// Output of a terminal the agent ran through us.
    fn terminal_output(&self, command: &str, output: &str, exit: Option<u32>);
    /// The user's prompt (for transcripts; the interactive line is already on screen).
    fn user(&self, text: &str);
    /// The turn started.
    fn turn_started(&self);
    /// Called every tick while the turn runs (spinner and elapsed time).
    fn tick(&self);
    /// The turn ended with this stop reason (or error text), after `elapsed`.
    fn turn_ended(&self, outcome: &str, elapsed: Duration);
    /// The line the user is typing while the turn runs (a follow-up not finished yet; empty
    /// when there is none).
    fn typing(&self, text: &str) {
        let _ = text;
    }
    /// A loaded session's history starts (`true`) or has been replayed (`false`): the
    /// updates in between are an earlier conversation, shown the way it looked live.
    fn replay(&self, replaying: bool) {
        let _ = replaying;
    }
}

/// The text of a content block (a placeholder for non-text blocks).
pub fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(_) => "[image]".to_owned(),
        ContentBlock::Audio(_) => "[audio]".to_owned(),
        ContentBlock::ResourceLink(l) => format!("[link {}]", l.uri),
        ContentBlock::Resource(r) => match &r.resource {
            EmbeddedResourceResource::TextResourceContents(t) => format!("[resource {}]", t.uri),
            EmbeddedResourceResource::BlobResourceContents(b) => format!("[resource {}]", b.uri),
        },
        ContentBlock::Unknown(_) => "[unknown block]".to_owned(),
    }
}

/// A line diff of `old` -> `new`: the common head and tail once as context (`' '`, at most
/// two lines each), the changed middle as `-` then `+` lines.
pub fn diff_lines(old: &str, new: &str) -> Vec<(char, String)> {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = Vec::new();
    for line in &old[head.saturating_sub(2)..head] {
        out.push((' ', (*line).to_owned()));
    }
    for line in &old[head..old.len() - tail] {
        out.push(('-', (*line).to_owned()));
    }
    for line in &new[head..new.len() - tail] {
        out.push(('+', (*line).to_owned()));
    }
    for line in old[old.len() - tail..].iter().take(2) {
        out.push((' ', (*line).to_owned()));
    }
    out
}
