//! The terminal's state as the transcript wrote it ([`Term`]): the line being streamed,
//! tool-call lines to rewrite in place, the spinner, and how each kind of update is drawn.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use acp_types::v1::*;
use unicode_width::UnicodeWidthChar;

use crate::sanitize::terminal_safe;

use super::{block_text, diff_lines};

/// Status of a tool call as last shown.
#[derive(Clone, Debug)]
pub(super) struct Tool {
    pub(super) title: String,
    pub(super) kind: String,
    pub(super) status: ToolCallStatus,
    /// The row its header line is on (see [`Term::row`]).
    pub(super) row: u64,
    /// Its content as last shown, one entry per row (see [`Term::content_lines`]): an
    /// update that repeats it shows nothing new.
    pub(super) content: Vec<String>,
    /// How many rows right under the header at `row` hold its content (0 once the header
    /// was printed again below them): the rows a redraw in place rewrites. More than
    /// `content` has when a shorter content was rewritten over a longer one (the rest blank).
    pub(super) below: usize,
}

impl Tool {
    /// A tool call not shown yet, whose header will go on `row`.
    pub(super) fn new(title: String, kind: String, status: ToolCallStatus, row: u64) -> Tool {
        Tool {
            title,
            kind,
            status,
            row,
            content: Vec::new(),
            below: 0,
        }
    }
}

/// What is being streamed on the current line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Block {
    None,
    Message,
    Thought,
    User,
}

/// The terminal's state as far as we wrote it.
pub(super) struct Term {
    pub(super) out: Box<dyn Write + Send>,
    /// Escape sequences allowed (stdout is a terminal): colours, in-place rewrites, spinner.
    pub(super) fancy: bool,
    /// Terminal width and height.
    pub(super) size: (usize, usize),
    /// Rows written so far (each newline and each wrap counts).
    pub(super) row: u64,
    /// Display width written on the current row.
    pub(super) col: usize,
    pub(super) block: Block,
    pub(super) tools: HashMap<String, Tool>,
    pub(super) last_plan: Vec<(String, String)>,
    pub(super) spinner: Option<usize>,
    pub(super) turn_start: Option<Instant>,
    /// The last command list shown, so repeats are not.
    pub(super) commands: Vec<String>,
    /// A question is waiting for its answer: no spinner over its prompt.
    pub(super) asking: bool,
    /// Set while the user edits the prompt line: output is held back meanwhile (see
    /// [`Screen::hold_while_editing`](super::Screen::hold_while_editing)).
    pub(super) editing: Option<Arc<AtomicBool>>,
    /// Output being collected while the prompt line is edited.
    pub(super) capture: Option<Vec<u8>>,
    /// Output held back until the line is submitted.
    pub(super) held: Vec<u8>,
    /// A loaded session's history is being shown: the user's earlier prompts count.
    pub(super) replayed_turns: Option<usize>,
    /// The line the user is typing during the turn (shown beside the spinner).
    pub(super) typed: String,
}

pub(super) const DIM: &str = "\x1b[2m";
pub(super) const RESET: &str = "\x1b[0m";
pub(super) const RED: &str = "\x1b[31m";
pub(super) const GREEN: &str = "\x1b[32m";
pub(super) const YELLOW: &str = "\x1b[33m";
pub(super) const CYAN: &str = "\x1b[36m";
pub(super) const BOLD: &str = "\x1b[1m";
pub(super) const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl Term {
    /// Writes bytes to the terminal, or to the capture held while the prompt is edited.
    pub(super) fn emit(&mut self, bytes: &[u8]) {
        match self.capture.as_mut() {
            Some(capture) => capture.extend_from_slice(bytes),
            None => {
                let _ = self.out.write_all(bytes);
            }
        }
    }

    pub(super) fn style(&self, style: &str) -> &'static str {
        if !self.fancy {
            return "";
        }
        match style {
            "dim" => DIM,
            "red" => RED,
            "green" => GREEN,
            "yellow" => YELLOW,
            "cyan" => CYAN,
            "bold" => BOLD,
            _ => RESET,
        }
    }

    /// Writes text that is already safe, counting rows. `\n` ends a row.
    pub(super) fn raw(&mut self, text: &str) {
        self.emit(text.as_bytes());
        let mut in_escape = false;
        for c in text.chars() {
            if in_escape {
                // Our own escapes are CSI sequences ending in a letter.
                if c.is_ascii_alphabetic() {
                    in_escape = false;
                }
                continue;
            }
            match c {
                '\x1b' => in_escape = true,
                '\n' => {
                    self.row += 1;
                    self.col = 0;
                }
                '\r' => self.col = 0,
                c => {
                    let w = if c == '\t' { 8 } else { c.width().unwrap_or(0) };
                    if self.col + w > self.size.0 {
                        self.row += 1;
                        self.col = 0;
                    }
                    self.col += w;
                }
            }
        }
    }

    /// Ends the current row if anything is on it.
    pub(super) fn newline_if_needed(&mut self) {
        if self.col > 0 {
            self.raw("\n");
        }
    }

    /// Starts a UI line at column 0 (ending any streamed block).
    pub(super) fn ui_line(&mut self, text: &str) {
        self.newline_if_needed();
        self.block = Block::None;
        self.raw(text);
        self.raw("\n");
    }

    /// Streams agent text in `block`, with the gutter at the start of every row.
    pub(super) fn stream(&mut self, block: Block, text: &str) {
        let text = terminal_safe(text);
        if text.is_empty() {
            return;
        }
        if self.block != block {
            self.newline_if_needed();
            self.block = block;
        }
        let (style, gutter) = match block {
            Block::Thought => (self.style("dim"), "  ┊ "),
            Block::User => (self.style("cyan"), "  > "),
            _ => ("", "  "),
        };
        let reset = if style.is_empty() {
            ""
        } else {
            self.style("reset")
        };
        let mut out = String::new();
        let width = self.size.0.max(8);
        let mut col = self.col;
        for c in text.chars() {
            if col == 0 {
                out.push_str(gutter);
                col = gutter.chars().count();
            }
            if c == '\n' {
                out.push('\n');
                col = 0;
                continue;
            }
            let w = if c == '\t' { 8 } else { c.width().unwrap_or(0) };
            // Wrap ourselves so every row, wrapped or not, starts with the gutter.
            if col + w >= width {
                out.push('\n');
                out.push_str(gutter);
                col = gutter.chars().count();
            }
            out.push(c);
            col += w;
        }
        self.raw(style);
        self.raw(&out);
        self.raw(reset);
    }

    pub(super) fn tool_header(&self, tool: &Tool) -> String {
        let (style, mark) = match tool.status {
            ToolCallStatus::Pending => ("yellow", "… pending"),
            ToolCallStatus::InProgress => ("yellow", "⟳ running"),
            ToolCallStatus::Completed => ("green", "✓ completed"),
            ToolCallStatus::Failed => ("red", "✗ failed"),
            ToolCallStatus::Unknown(_) => ("yellow", "? unknown status"),
        };
        let title = truncate(
            &terminal_safe(&tool.title).replace('\n', " "),
            self.size.0.saturating_sub(30).max(10),
        );
        let kind = terminal_safe(&tool.kind);
        format!(
            "⏺ {}{title}{} ({kind}) {}{mark}{}",
            self.style("bold"),
            self.style("reset"),
            self.style(style),
            self.style("reset")
        )
    }

    /// Shows a tool call's header after an update: rewritten in place when it is still on
    /// screen, else printed again, as a new line, only when `status_changed` (agents send
    /// several updates per call with the same status: Claude three or four, each adding
    /// content or raw input; a transcript shows a call once per status).
    pub(super) fn tool_status(&mut self, id: &str, status_changed: bool) {
        let Some(tool) = self.tools.get(id).cloned() else {
            return;
        };
        let header = self.tool_header(&tool);
        let distance = self.row.saturating_sub(tool.row);
        let in_place = self.capture.is_none();
        if in_place
            && self.fancy
            && distance > 0
            && (distance as usize) < self.size.1.saturating_sub(1)
        {
            // Save the cursor, go up to the header, rewrite it, come back.
            let seq = format!("\x1b7\x1b[{distance}A\r\x1b[2K{header}\x1b8");
            self.emit(seq.as_bytes());
        } else if status_changed {
            self.newline_if_needed();
            self.block = Block::None;
            let row = self.row;
            self.raw(&header);
            self.raw("\n");
            if let Some(t) = self.tools.get_mut(id) {
                t.row = row;
                t.below = 0;
            }
        }
    }

    /// The rows a tool call's content is shown in: each line cut to the terminal's width
    /// (so one line is one row), behind the content's indent.
    pub(super) fn content_lines(&self, content: &[ToolCallContent]) -> Vec<String> {
        let mut lines = Vec::new();
        for item in content {
            match item {
                ToolCallContent::Content(c) => {
                    let text = block_text(&c.content);
                    for line in terminal_safe(&text).lines() {
                        lines.push(format!(
                            "    {}",
                            truncate(line, self.size.0.saturating_sub(5))
                        ));
                    }
                }
                ToolCallContent::Diff(d) => {
                    let path = terminal_safe(&d.path);
                    lines.push(format!(
                        "    {}diff {path}{}",
                        self.style("bold"),
                        self.style("reset")
                    ));
                    for (sign, line) in diff_lines(d.old_text.as_deref().unwrap_or(""), &d.new_text)
                    {
                        let style = match sign {
                            '-' => self.style("red"),
                            '+' => self.style("green"),
                            _ => self.style("dim"),
                        };
                        let line = truncate(&terminal_safe(&line), self.size.0.saturating_sub(7));
                        let reset = self.style("reset");
                        lines.push(format!("    {style}{sign} {line}{reset}"));
                    }
                }
                ToolCallContent::Terminal(t) => {
                    let id = terminal_safe(&t.terminal_id.0);
                    lines.push(format!(
                        "    {}[terminal {id}]{}",
                        self.style("dim"),
                        self.style("reset")
                    ));
                }
                ToolCallContent::Unknown(_) => {
                    lines.push("    (content of a kind this client does not know)".to_owned())
                }
            }
        }
        lines
    }

    /// Shows the content a tool call now has (an update's `content` replaces the call's
    /// content). A tool call's content is on screen once, as it is now: agents repeat it
    /// with each status (OpenCode sends the same output with `in_progress` and again with
    /// `completed`), and a repeat shows nothing. A change is shown
    ///
    /// - under the header, as the rows added, when the old content is the start of the new
    ///   one and nothing was written after it (output that grows);
    /// - on a terminal, redrawn in place while its rows are on screen: erased and written
    ///   again when nothing was written after it, rewritten row by row when it needs no
    ///   more rows than it had (rows it no longer fills are left blank);
    /// - otherwise (a transcript, or rows out of reach) under the header printed again, so
    ///   it is clear whose content it is. Content that is emptied prints nothing.
    pub(super) fn tool_content(&mut self, id: &str, content: &[ToolCallContent]) {
        let lines = self.content_lines(content);
        let Some(tool) = self.tools.get(id).cloned() else {
            return;
        };
        if lines == tool.content {
            return;
        }
        let start = tool.row + 1;
        let end = start + tool.below as u64;
        let last = self.col == 0 && self.row == end;
        let reachable = self.fancy
            && self.capture.is_none()
            && ((self.row.saturating_sub(start)) as usize) < self.size.1.saturating_sub(1);
        // The rows under the header hold exactly the content's first rows (not when a
        // shorter content was rewritten over a longer one, leaving blank rows).
        let exact = tool.below <= tool.content.len();
        let below = if last && exact && lines.starts_with(&tool.content[..tool.below]) {
            for line in &lines[tool.below..] {
                self.ui_line(line);
            }
            lines.len()
        } else if reachable && last {
            // Up to the first row under the header, erase to the end of the screen, write.
            let seq = format!("\x1b[{}A\r\x1b[J", tool.below);
            self.emit(seq.as_bytes());
            self.row = start;
            self.col = 0;
            for line in &lines {
                self.ui_line(line);
            }
            lines.len()
        } else if reachable && tool.below > 0 && lines.len() <= tool.below {
            // Row by row, the rows it no longer fills left blank (output follows them).
            for i in 0..tool.below {
                let line = lines.get(i).map_or("", String::as_str);
                let distance = self.row - (start + i as u64);
                let seq = format!("\x1b7\x1b[{distance}A\r\x1b[2K{line}\x1b8");
                self.emit(seq.as_bytes());
            }
            tool.below
        } else if lines.is_empty() {
            0
        } else {
            self.newline_if_needed();
            self.block = Block::None;
            let row = self.row;
            let header = self.tool_header(&tool);
            self.raw(&header);
            self.raw("\n");
            if let Some(t) = self.tools.get_mut(id) {
                t.row = row;
            }
            for line in &lines {
                self.ui_line(line);
            }
            lines.len()
        };
        if let Some(t) = self.tools.get_mut(id) {
            t.content = lines;
            t.below = below;
        }
    }

    pub(super) fn plan(&mut self, plan: &Plan) {
        let entries: Vec<(String, String)> = plan
            .entries
            .iter()
            .map(|e| {
                (
                    e.status.to_string(),
                    terminal_safe(&e.content).replace('\n', " "),
                )
            })
            .collect();
        if entries == self.last_plan {
            return;
        }
        self.last_plan = entries.clone();
        self.ui_line(&format!(
            "{}plan{}",
            self.style("bold"),
            self.style("reset")
        ));
        for (status, content) in entries {
            let mark = match status.as_str() {
                "completed" => "☑",
                "in_progress" => "◐",
                _ => "☐",
            };
            let content = truncate(&content, self.size.0.saturating_sub(6));
            self.ui_line(&format!("  {mark} {content}"));
        }
    }

    /// Erases the spinner: the cursor was left where it was drawn, so erasing to the end of
    /// the line removes it and nothing else.
    pub(super) fn clear_spinner(&mut self) {
        if self.spinner.is_some() {
            self.emit(b"\x1b[K");
            self.spinner = None;
        }
    }
}

/// Cuts `text` to `max` characters, with an ellipsis.
pub(super) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}
