//! The terminal transcript: [`Screen`], with tool-call lines rewritten in place and a
//! spinner when stdout is a terminal.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_types::v1::*;

use crate::sanitize::terminal_safe;

use super::View;
use super::term::{Block, DIM, RESET, SPINNER, Term, truncate};

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
                typed: String::new(),
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

impl Screen {
    /// Draws the spinner, the elapsed time and the line being typed (a follow-up) after the
    /// cursor (on the current line, where the next output will go), then moves the cursor
    /// back, so the next write starts by erasing it. `advance`: the next frame.
    fn draw_spinner(&self, advance: bool) {
        let mut t = self.term.lock().unwrap_or_else(|p| p.into_inner());
        let Some(start) = t.turn_start else { return };
        let current = t.spinner.unwrap_or(0);
        let frame = if advance {
            t.spinner.map_or(0, |f| (f + 1) % SPINNER.len())
        } else {
            current
        };
        let mut text = format!(
            " {} working {:.1}s (Ctrl-C cancels)",
            SPINNER[frame],
            start.elapsed().as_secs_f64()
        );
        if !t.typed.is_empty() {
            // The end of the line, where the typing is, when all of it does not fit.
            let room = t.size.0.saturating_sub(t.col + text.chars().count() + 10);
            let typed: Vec<char> = t.typed.chars().collect();
            let shown: String = typed[typed.len().saturating_sub(room)..].iter().collect();
            text.push_str(&format!("  next> {shown}"));
        }
        let width = text.chars().count();
        if !t.fancy || t.asking || t.col + width + 1 >= t.size.0 {
            return;
        }
        let line = format!("\x1b[K{DIM}{text}{RESET}\x1b[{width}D");
        let _ = t.out.write_all(line.as_bytes());
        let _ = t.out.flush();
        t.spinner = Some(frame);
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
        self.with(|t| t.update(update));
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
        self.draw_spinner(true);
    }

    fn typing(&self, text: &str) {
        {
            let mut t = self.term.lock().unwrap_or_else(|p| p.into_inner());
            t.typed = terminal_safe(text).replace('\n', " ");
        }
        self.draw_spinner(false);
    }

    fn turn_ended(&self, outcome: &str, elapsed: Duration) {
        self.with(|t| {
            t.turn_start = None;
            t.typed.clear();
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
mod tests;
