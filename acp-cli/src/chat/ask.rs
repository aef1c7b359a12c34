//! The agent's questions (permission requests, terminal commands) as the chat's loop puts
//! them: shown on the view, answered from the keyboard (asked again until the answer is
//! one) or by the `--yes` policy, and the answer sent back to the client's handler.

use std::collections::HashMap;

use acp_client::permission::{PermissionPolicy, choose_permission};
use acp_types::v1::*;
use tokio::sync::oneshot;

use crate::client::{Question, pick_option};
use crate::input::Answer;
use crate::sanitize::terminal_safe;
use crate::view::View;

/// A question on screen, waiting for its answer.
#[derive(Debug)]
pub(super) enum Asking {
    /// Which option of a permission request.
    Permission {
        options: Vec<PermissionOption>,
        reply: oneshot::Sender<Option<usize>>,
    },
    /// Whether to run a terminal command.
    Terminal {
        reply: oneshot::Sender<Option<bool>>,
    },
}

/// What a keyboard answer did.
#[derive(Debug)]
pub(super) enum Step {
    /// Not an answer: ask again.
    Again(Asking),
    /// Answered; `interrupted` when the user pressed Ctrl-C (the turn is to be cancelled).
    Done { interrupted: bool },
}

impl Asking {
    /// Shows `question` on `view`; returns it waiting, and the prompt for the keyboard.
    pub(super) fn show(
        question: Question,
        tool_titles: &HashMap<String, String>,
        view: &dyn View,
    ) -> (Asking, String) {
        match question {
            Question::Permission { request, reply } => {
                let id = &request.tool_call.tool_call_id.0;
                let title = request
                    .tool_call
                    .title
                    .clone()
                    .or_else(|| tool_titles.get(id).cloned())
                    .unwrap_or_else(|| id.clone());
                let mut lines = vec![format!(
                    "the agent asks permission: {}",
                    terminal_safe(&title).replace('\n', " ")
                )];
                for (i, option) in request.options.iter().enumerate() {
                    lines.push(format!(
                        "{}) {} ({})",
                        i + 1,
                        terminal_safe(&option.name).replace('\n', " "),
                        option.kind
                    ));
                }
                view.question(&lines);
                let prompt = format!("choose 1-{} > ", request.options.len());
                let options = request.options.clone();
                (Asking::Permission { options, reply }, prompt)
            }
            Question::Terminal { lines, reply } => {
                view.question(&lines);
                (Asking::Terminal { reply }, "[y]es / [n]o > ".to_owned())
            }
        }
    }

    /// Answers by the policy (no keyboard: `--prompt`, with or without `--yes`).
    pub(super) fn answer_by_policy(self, allow: PermissionPolicy, view: &dyn View) {
        let why = match allow {
            PermissionPolicy::AllowOnce => "--yes",
            PermissionPolicy::AllowAlways => "--yes-always",
            PermissionPolicy::Refuse => "no --yes",
        };
        match self {
            Asking::Permission { options, reply } => {
                let choice = choose_permission(&options, allow);
                if choice.no_allow_offered {
                    view.info(match allow {
                        PermissionPolicy::AllowOnce => "the agent offers no one-time allow (allow_once): refused, since --yes grants one action at a time (--yes-always may grant an allow_always option)",
                        _ => "the agent offers no allow option: refused",
                    });
                }
                match choice.option {
                    Some(i) => {
                        view.info(&format!("{} ({why})", terminal_safe(&options[i].name)));
                        view.answered("permission", &options[i].option_id.0);
                    }
                    None => {
                        view.info(&format!("no option to refuse with: cancelled ({why})"));
                        view.answered("permission", "cancelled");
                    }
                }
                let _ = reply.send(choice.option);
            }
            Asking::Terminal { reply } => {
                view.info(if allow.allows() {
                    "yes (--yes)"
                } else {
                    "no (no --yes)"
                });
                view.answered("terminal", if allow.allows() { "yes" } else { "no" });
                let _ = reply.send(Some(allow.allows()));
            }
        }
    }

    /// Takes a keyboard answer.
    pub(super) fn answer(self, answer: Answer, view: &dyn View) -> Step {
        let interrupted = answer == Answer::Interrupted;
        let line = match answer {
            Answer::Line(line) => Some(line),
            Answer::Interrupted | Answer::Eof => None,
        };
        match self {
            Asking::Permission { options, reply } => {
                let choice = match &line {
                    Some(line) => match pick_option(&options, line) {
                        Some(i) => Some(i),
                        None => return Step::Again(Asking::Permission { options, reply }),
                    },
                    None => None,
                };
                match choice {
                    Some(i) => view.answered("permission", &options[i].option_id.0),
                    None => view.answered("permission", "cancelled"),
                }
                let _ = reply.send(choice);
            }
            Asking::Terminal { reply } => {
                let yes = match line.as_deref().map(|l| l.trim().to_ascii_lowercase()) {
                    Some(l) if l == "y" || l == "yes" => Some(true),
                    Some(l) if l == "n" || l == "no" || l.is_empty() => Some(false),
                    Some(_) => return Step::Again(Asking::Terminal { reply }),
                    None => None,
                };
                let text = match yes {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "interrupted",
                };
                view.answered("terminal", text);
                let _ = reply.send(yes);
            }
        }
        Step::Done { interrupted }
    }
}
