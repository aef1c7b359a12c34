//! The terminal transcript: [`Screen`], with tool-call lines rewritten in place and a
//! spinner when stdout is a terminal.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_types::v1::*;

use crate::sanitize::terminal_safe;

use super::term::{Block, DIM, RESET, SPINNER, Term, Tool, truncate};
use super::{View, block_text};

/// The terminal transcript.
pub struct Screen {
    term: Mutex<Term>,
}

impl Screen {
    /// A screen on stdout; fancy when stdout is a terminal.
    pub fn stdout() -> Screen {
        let fancy = std::io::IsTerminal::is_terminal(&std::io::stdout());
        Screen::new(Box::new(std::io::stdout()), fancy, terminal_size())
    }

    /// A screen on any writer (tests).
    pub fn new(out: Box<dyn Write + Send>, fancy: bool, size: (usize, usize)) -> Screen {
        Screen {
            term: Mutex::new(Term {
                out,
                fancy,
                size,
                row: 0,
                col: 0,
                block: Block::None,
                tools: HashMap::new(),
                last_plan: Vec::new(),
                spinner: None,
                turn_start: None,
                commands: Vec::new(),
                asking: false,
                editing: None,
                capture: None,
                held: Vec::new(),
                replayed_turns: None,
            }),
        }
    }

    /// Output that arrives while the user edits the prompt line (an update the agent sends
    /// between turns) is held back while `editing` is set and shown by
    /// [`Screen::release_held`] once the line is submitted: written into the line being
    /// edited it would garble it (and the editor would redraw over it).
    pub fn hold_while_editing(&self, editing: Arc<AtomicBool>) {
        self.term.lock().unwrap_or_else(|p| p.into_inner()).editing = Some(editing);
    }

    /// Shows the output held back while the prompt line was edited.
    pub fn release_held(&self) {
        let mut term = self.term.lock().unwrap_or_else(|p| p.into_inner());
        let held = std::mem::take(&mut term.held);
        if !held.is_empty() {
            let _ = term.out.write_all(&held);
            let _ = term.out.flush();
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Term) -> R) -> R {
        let mut term = self.term.lock().unwrap_or_else(|p| p.into_inner());
        term.clear_spinner();
        let editing = term
            .editing
            .as_ref()
            .is_some_and(|e| e.load(Ordering::SeqCst));
        if editing {
            term.capture = Some(Vec::new());
        }
        let r = f(&mut term);
        if editing {
            term.newline_if_needed();
            let captured = term.capture.take().unwrap_or_default();
            term.held.extend_from_slice(&captured);
        }
        let _ = term.out.flush();
        r
    }
}

/// The terminal's columns and rows (80x24 when unknown).
fn terminal_size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own; failure leaves it zeroed.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 && ws.ws_row > 0 {
        (ws.ws_col as usize, ws.ws_row as usize)
    } else {
        (80, 24)
    }
}

impl View for Screen {
    fn update(&self, update: &SessionUpdate) {
        self.with(|t| match update {
            SessionUpdate::AgentMessageChunk(c) => {
                t.stream(Block::Message, &block_text(&c.content))
            }
            SessionUpdate::AgentThoughtChunk(c) => {
                t.stream(Block::Thought, &block_text(&c.content))
            }
            SessionUpdate::UserMessageChunk(c) => match t.replayed_turns {
                // A prompt of the loaded conversation: shown as it was typed, after the
                // line that ended the turn before it.
                Some(turns) => {
                    if turns > 0 {
                        let line = format!("{}──{}", t.style("dim"), t.style("reset"));
                        t.ui_line(&line);
                    }
                    t.replayed_turns = Some(turns + 1);
                    let text = block_text(&c.content);
                    t.ui_line(&format!("you> {}", terminal_safe(&text).replace('\n', " ")));
                }
                None => t.stream(Block::User, &block_text(&c.content)),
            },
            SessionUpdate::ToolCall(call) => {
                let id = call.tool_call_id.0.clone();
                t.newline_if_needed();
                t.block = Block::None;
                let tool = Tool::new(
                    call.title.clone(),
                    call.kind.to_string(),
                    call.status.clone(),
                    t.row,
                );
                let header = t.tool_header(&tool);
                t.tools.insert(id.clone(), tool);
                t.raw(&header);
                t.raw("\n");
                t.tool_content(&id, &call.content);
            }
            SessionUpdate::ToolCallUpdate(u) => {
                let id = u.tool_call_id.0.clone();
                let known = t.tools.contains_key(&id);
                if !known {
                    // An update for a call never announced: show it as one.
                    t.newline_if_needed();
                    t.block = Block::None;
                    let tool = Tool::new(
                        u.title.clone().unwrap_or_else(|| id.clone()),
                        u.kind
                            .as_ref()
                            .map(|k| k.to_string())
                            .unwrap_or_else(|| "other".into()),
                        u.status.clone().unwrap_or(ToolCallStatus::Pending),
                        t.row,
                    );
                    let header = t.tool_header(&tool);
                    t.tools.insert(id.clone(), tool);
                    t.raw(&header);
                    t.raw("\n");
                } else {
                    let mut status_changed = false;
                    if let Some(tool) = t.tools.get_mut(&id) {
                        if let Some(title) = &u.title {
                            tool.title = title.clone();
                        }
                        if let Some(status) = &u.status {
                            status_changed = *status != tool.status;
                            tool.status = status.clone();
                        }
                    }
                    t.tool_status(&id, status_changed);
                }
                // `content` replaces the call's content; absent, it is unchanged.
                if let Some(content) = &u.content {
                    t.tool_content(&id, content);
                }
            }
            SessionUpdate::Plan(plan) => t.plan(plan),
            SessionUpdate::AvailableCommandsUpdate(c) => {
                let names: Vec<String> = c
                    .available_commands
                    .iter()
                    .map(|c| format!("/{}", terminal_safe(&c.name)))
                    .collect();
                if names != t.commands {
                    t.commands = names.clone();
                    let line = format!(
                        "{}commands: {}{}",
                        t.style("dim"),
                        names.join(" "),
                        t.style("reset")
                    );
                    t.ui_line(&line);
                }
            }
            SessionUpdate::CurrentModeUpdate(m) => {
                let line = format!(
                    "{}mode: {}{}",
                    t.style("cyan"),
                    terminal_safe(&m.current_mode_id.0),
                    t.style("reset")
                );
                t.ui_line(&line);
            }
            SessionUpdate::ConfigOptionUpdate(_) => {}
            SessionUpdate::SessionInfoUpdate(info) => {
                // Only a title change is worth a line (`updatedAt` moves with every turn).
                if let Some(title) = &info.title {
                    let text = match title {
                        Some(title) => format!("title: {}", crate::offers::title_text(title)),
                        None => "title cleared".to_owned(),
                    };
                    let line = format!("{}{text}{}", t.style("cyan"), t.style("reset"));
                    t.ui_line(&line);
                }
            }
            SessionUpdate::UsageUpdate(_) => {}
            SessionUpdate::Notice(n) => {
                let text = serde_json::to_value(n)
                    .ok()
                    .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
                    .unwrap_or_else(|| "notice".into());
                let line = format!(
                    "{}notice: {}{}",
                    t.style("yellow"),
                    terminal_safe(&text).replace('\n', " "),
                    t.style("reset")
                );
                t.ui_line(&line);
            }
            SessionUpdate::CompactionUpdate(_) | SessionUpdate::CompactionSummaryChunk(_) => {}
            SessionUpdate::Unknown(_) => {}
            // Kinds an unstable feature adds (e.g. `unstable_plan_operations`'s plan updates)
            // when something else in the build turns it on: not shown yet.
            #[allow(unreachable_patterns)]
            _ => {}
        });
    }

    fn info(&self, text: &str) {
        self.with(|t| {
            let line = format!("{}{}{}", t.style("dim"), text, t.style("reset"));
            t.ui_line(&line);
        });
    }

    fn error(&self, text: &str) {
        self.with(|t| {
            let line = format!(
                "{}error:{} {}",
                t.style("red"),
                t.style("reset"),
                terminal_safe(text)
            );
            t.ui_line(&line);
        });
    }

    fn question(&self, lines: &[String]) {
        self.with(|t| {
            t.asking = true;
            for (i, line) in lines.iter().enumerate() {
                let line = if i == 0 {
                    format!("{}?{} {line}", t.style("yellow"), t.style("reset"))
                } else {
                    format!("  {line}")
                };
                t.ui_line(&line);
            }
        });
    }

    fn answered(&self, _kind: &str, _answer: &str) {
        // The answer is on screen already (typed by the user); count its row.
        self.with(|t| {
            t.asking = false;
            t.row += 1;
            t.col = 0;
        });
    }

    fn terminal_output(&self, command: &str, output: &str, exit: Option<u32>) {
        self.with(|t| {
            let head = format!(
                "    {}$ {}{}",
                t.style("dim"),
                terminal_safe(command),
                t.style("reset")
            );
            t.ui_line(&head);
            for line in terminal_safe(output).lines().take(40) {
                let line = truncate(line, t.size.0.saturating_sub(7));
                t.ui_line(&format!("    │ {line}"));
            }
            if let Some(code) = exit.filter(|c| *c != 0) {
                t.ui_line(&format!("    exit code {code}"));
            }
        });
    }

    fn user(&self, text: &str) {
        self.with(|t| {
            let line = format!("you> {}", terminal_safe(text).replace('\n', " "));
            t.ui_line(&line);
        });
    }

    fn turn_started(&self) {
        self.with(|t| {
            t.turn_start = Some(Instant::now());
            t.last_plan.clear();
        });
    }

    /// Draws the spinner and the elapsed time after the cursor (on the current line, where
    /// the next output will go), then moves the cursor back, so the next write starts by
    /// erasing it.
    fn tick(&self) {
        let mut t = self.term.lock().unwrap_or_else(|p| p.into_inner());
        let Some(start) = t.turn_start else { return };
        let text = format!(
            " {} working {:.1}s (Ctrl-C cancels)",
            SPINNER[t.spinner.map_or(0, |f| (f + 1) % SPINNER.len())],
            start.elapsed().as_secs_f64()
        );
        let width = text.chars().count();
        if !t.fancy || t.asking || t.col + width + 1 >= t.size.0 {
            return;
        }
        let frame = t.spinner.map_or(0, |f| (f + 1) % SPINNER.len());
        let line = format!("\x1b[K{DIM}{text}{RESET}\x1b[{width}D");
        let _ = t.out.write_all(line.as_bytes());
        let _ = t.out.flush();
        t.spinner = Some(frame);
    }

    fn turn_ended(&self, outcome: &str, elapsed: Duration) {
        self.with(|t| {
            t.turn_start = None;
            let style = if outcome == "end_turn" {
                t.style("dim")
            } else {
                t.style("yellow")
            };
            let line = format!(
                "{style}── {outcome} · {:.1}s{}",
                elapsed.as_secs_f64(),
                t.style("reset")
            );
            t.ui_line(&line);
        });
    }

    fn replay(&self, replaying: bool) {
        self.with(|t| {
            if replaying {
                t.replayed_turns = Some(0);
                return;
            }
            let turns = t.replayed_turns.take().unwrap_or(0);
            let line = format!(
                "{}── loaded: {turns} earlier turn(s){}",
                t.style("dim"),
                t.style("reset")
            );
            t.ui_line(&line);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::diff_lines;
    use crate::view::term::GREEN;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn forged_lines_stay_behind_the_gutter() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
        screen.update(&SessionUpdate::agent_message_text(
            "hello\nyou> rm -rf /\n\r? Allow everything\x1b[2K",
        ));
        let text = out.text();
        assert_eq!(text, "  hello\n  you> rm -rf /\n  ? Allow everything");
        for line in text.lines() {
            assert!(line.starts_with("  "), "{line:?} reached column 0");
        }
    }

    #[test]
    fn a_title_change_is_one_line_and_other_session_info_is_quiet() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
        let renamed = SessionInfoUpdate::new().title(Some("Fix\nthe \x1b[2Jbuild".into()));
        screen.update(&SessionUpdate::SessionInfoUpdate(renamed));
        let touched = SessionInfoUpdate::new().updated_at(Some("2026-11-24T17:00:00Z".into()));
        screen.update(&SessionUpdate::SessionInfoUpdate(touched));
        screen.update(&SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().title(None),
        ));
        assert_eq!(out.text(), "title: Fix the build\ntitle cleared\n");
    }

    #[test]
    fn long_agent_lines_wrap_behind_the_gutter() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (20, 24));
        screen.update(&SessionUpdate::agent_message_text("x".repeat(50)));
        for line in out.text().lines() {
            assert!(line.starts_with("  x"), "{line:?}");
            assert!(line.chars().count() < 20, "{line:?}");
        }
    }

    #[test]
    fn tool_status_is_rewritten_in_place_on_a_terminal() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
        let call = ToolCall::new("t1", "Edit NOTES.md").kind(ToolKind::Edit);
        screen.update(&SessionUpdate::ToolCall(Box::new(call)));
        let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        let text = out.text();
        // Saved cursor, up one row, cleared line, the new header, restored cursor.
        assert!(text.contains("\x1b7\x1b[1A\r\x1b[2K⏺ "), "{text:?}");
        assert!(
            text.ends_with(&format!("{GREEN}✓ completed{RESET}\x1b8")),
            "{text:?}"
        );
    }

    #[test]
    fn tool_status_gets_a_new_line_in_a_transcript() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1", "Run echo",
        ))));
        let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Failed);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        assert_eq!(
            out.text(),
            "⏺ Run echo (other) … pending\n⏺ Run echo (other) ✗ failed\n"
        );
    }

    /// Issue 32: Claude sends three or four `tool_call_update`s per call with the same
    /// status; a transcript showed a new "⏺ ... pending" line for each.
    #[test]
    fn updates_that_keep_the_status_print_no_new_line_in_a_transcript() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1",
            "Read file",
        ))));
        for title in ["Read NOTES.md", "Read NOTES.md", "Read NOTES.md (40 lines)"] {
            let update = ToolCallUpdate::new("t1")
                .title(title)
                .status(ToolCallStatus::Pending);
            screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        }
        let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        assert_eq!(
            out.text(),
            "⏺ Read file (other) … pending\n⏺ Read NOTES.md (40 lines) (other) ✓ completed\n"
        );
    }

    /// On a terminal an update that keeps the status still refreshes the line in place (a
    /// new title shows), and adds no line.
    #[test]
    fn updates_that_keep_the_status_rewrite_the_line_in_place_on_a_terminal() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1",
            "Read file",
        ))));
        for _ in 0..3 {
            let update = ToolCallUpdate::new("t1")
                .title("Read NOTES.md")
                .status(ToolCallStatus::Pending);
            screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        }
        let text = out.text();
        assert_eq!(text.matches('\n').count(), 1, "{text:?}");
        assert_eq!(
            text.matches("\x1b7\x1b[1A\r\x1b[2K⏺ ").count(),
            3,
            "{text:?}"
        );
    }

    /// Once the line has scrolled off the screen it cannot be rewritten: updates that keep
    /// the status print nothing, a new status prints the line once more.
    #[test]
    fn a_scrolled_away_tool_line_is_printed_again_only_for_a_new_status() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), true, (100, 50));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1",
            "Read file",
        ))));
        for i in 0..60 {
            screen.update(&SessionUpdate::agent_message_text(format!("row {i}\n")));
        }
        for _ in 0..3 {
            let update = ToolCallUpdate::new("t1")
                .title("Read NOTES.md")
                .status(ToolCallStatus::Pending);
            screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        }
        let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
        let text = out.text();
        assert_eq!(text.matches("⏺ ").count(), 2, "{text:?}");
        assert!(
            !text.contains("\x1b7"),
            "no rewrite that cannot reach: {text:?}"
        );
    }

    /// A `tool_call_update` with `status` and, when given, `text` as its whole content.
    fn tool_update(status: ToolCallStatus, text: Option<&str>) -> SessionUpdate {
        let mut update = ToolCallUpdate::new("t1").status(status);
        if let Some(text) = text {
            update = update.content([ToolCallContent::content(text)]);
        }
        SessionUpdate::ToolCallUpdate(Box::new(update))
    }

    /// Issue 52: OpenCode sends a shell command's output with `in_progress` and the same
    /// output again with `completed`; the transcript printed it with each status line.
    #[test]
    fn repeated_tool_content_is_printed_once_in_a_transcript() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
        let call = ToolCall::new("t1", "ls").kind(ToolKind::Execute);
        screen.update(&SessionUpdate::ToolCall(Box::new(call)));
        let output = "NOTES.md\nsrc";
        screen.update(&tool_update(ToolCallStatus::InProgress, Some(output)));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some(output)));
        screen.update(&tool_update(ToolCallStatus::Completed, Some(output)));
        assert_eq!(
            out.text(),
            "⏺ ls (execute) … pending\n\
             ⏺ ls (execute) ⟳ running\n    NOTES.md\n    src\n\
             ⏺ ls (execute) ✓ completed\n"
        );
    }

    /// Content that grows is printed as the rows it gains; content that changes after other
    /// output is printed under its header again; emptied content prints nothing.
    #[test]
    fn changed_tool_content_is_printed_once_as_it_changes_in_a_transcript() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1", "ls",
        ))));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("one")));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("one\ntwo")));
        screen.update(&SessionUpdate::agent_message_text("meanwhile\n"));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("three")));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("")));
        screen.update(&tool_update(ToolCallStatus::Completed, Some("")));
        assert_eq!(
            out.text(),
            "⏺ ls (other) … pending\n\
             ⏺ ls (other) ⟳ running\n    one\n    two\n\
             \x20 meanwhile\n\
             ⏺ ls (other) ⟳ running\n    three\n\
             ⏺ ls (other) ✓ completed\n"
        );
    }

    /// On a terminal, content repeated with each status is written once; the status is
    /// rewritten in place.
    #[test]
    fn repeated_tool_content_is_written_once_on_a_terminal() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1", "ls",
        ))));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("NOTES.md")));
        screen.update(&tool_update(ToolCallStatus::Completed, Some("NOTES.md")));
        let text = out.text();
        assert_eq!(text.matches("NOTES.md").count(), 1, "{text:?}");
        assert_eq!(text.matches('\n').count(), 2, "{text:?}");
        assert!(
            text.ends_with(&format!("{GREEN}✓ completed{RESET}\x1b8")),
            "{text:?}"
        );
    }

    /// On a terminal, changed content is redrawn in place: erased and written again when it
    /// is the last thing on screen, rewritten row by row when output follows it and it keeps
    /// its number of rows.
    #[test]
    fn changed_tool_content_is_redrawn_in_place_on_a_terminal() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1", "ls",
        ))));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("a\nb")));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("c")));
        let text = out.text();
        // Up the two rows, erase to the end of the screen, the new row.
        assert!(text.ends_with("\x1b[2A\r\x1b[J    c\n"), "{text:?}");
        screen.update(&SessionUpdate::agent_message_text("after\n"));
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("d")));
        let text = out.text();
        assert!(
            text.ends_with("\x1b7\x1b[2A\r\x1b[2K    d\x1b8"),
            "{text:?}"
        );
        assert_eq!(text.matches("    d").count(), 1, "{text:?}");
        // More rows than it had, after other output: under the header printed again.
        screen.update(&tool_update(ToolCallStatus::InProgress, Some("e\nf")));
        let text = out.text();
        assert!(
            text.ends_with(&format!("⟳ running{RESET}\n    e\n    f\n")),
            "{text:?}"
        );
    }

    /// Content that needs fewer rows than it had, with output after it (a question), is
    /// rewritten in place and the rows it no longer fills are blanked: the call keeps one
    /// header.
    #[test]
    fn shorter_tool_content_is_rewritten_in_place_with_output_after_it_on_a_terminal() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
        screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1", "Edit",
        ))));
        screen.update(&tool_update(ToolCallStatus::Pending, Some("a\nb")));
        screen.info("a question");
        screen.update(&tool_update(ToolCallStatus::Completed, Some("applied")));
        let text = out.text();
        assert!(
            text.ends_with("\x1b7\x1b[3A\r\x1b[2K    applied\x1b8\x1b7\x1b[2A\r\x1b[2K\x1b8"),
            "{text:?}"
        );
        assert_eq!(text.matches('\n').count(), 4, "{text:?}");
    }

    #[test]
    fn diffs_show_the_changed_lines() {
        assert_eq!(
            diff_lines("a\nb\nc\n", "a\nB\nc\nd\n"),
            vec![
                (' ', "a".to_owned()),
                ('-', "b".to_owned()),
                ('-', "c".to_owned()),
                ('+', "B".to_owned()),
                ('+', "c".to_owned()),
                ('+', "d".to_owned()),
            ]
        );
        assert_eq!(
            diff_lines("x\n", "x\ny\n"),
            vec![(' ', "x".to_owned()), ('+', "y".to_owned())]
        );
    }

    #[test]
    fn a_plan_is_a_checklist() {
        let out = Shared::default();
        let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
        let plan = Plan::new(vec![
            crate::proto::plan_entry("one", PlanEntryStatus::Completed),
            crate::proto::plan_entry("two", PlanEntryStatus::InProgress),
            crate::proto::plan_entry("three", PlanEntryStatus::Pending),
        ]);
        screen.update(&SessionUpdate::Plan(plan));
        assert_eq!(out.text(), "plan\n  ☑ one\n  ◐ two\n  ☐ three\n");
    }
}
