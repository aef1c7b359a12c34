//! Prompt turns: whose updates arrive, when, how the turn stops, and tool call ids.

use std::collections::HashSet;
use std::time::Instant;

use acp_types::v1::PromptRequest;
use serde_json::Value;

use super::run::{Conn, GRACE, Run, agent_lines_since, outcome_of, to_value, updates};
use crate::report::Outcome;
use crate::wire::{Entry, Kind, NoReply, Reply, cut};

/// The stop reasons of the protocol.
const STOP_REASONS: &[&str] = &[
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];

/// One prompt turn as the wire saw it.
pub(crate) struct Turn {
    pub reply: Result<Reply, NoReply>,
    /// What the agent sent during the turn (up to its answer).
    pub during: Vec<Entry>,
    /// What the agent sent within [`GRACE`] after its answer.
    pub after: Vec<Entry>,
}

/// Sends `text` as a prompt in `session` and watches the turn.
pub(crate) async fn turn(run: &Run<'_>, conn: &Conn, session: &str, text: &str) -> Turn {
    let mark = conn.wire.mark();
    let request = PromptRequest::new(session, [text.into()]);
    let turn = run.options.bounds.turn;
    let reply = run
        .call_within(conn, "session/prompt", to_value(&request), turn)
        .await;
    let end = match &reply {
        Ok(r) => r.seq,
        Err(_) => u64::MAX,
    };
    if reply.is_ok() {
        tokio::time::sleep(GRACE).await;
    }
    let lines = agent_lines_since(conn, mark);
    let (during, after) = lines.into_iter().partition(|e| e.seq < end);
    Turn {
        reply,
        during,
        after,
    }
}

/// The prompt group: each scripted prompt in the first session.
pub(crate) async fn run(run: &mut Run<'_>) {
    let names = [
        "prompt.session_ids",
        "prompt.no_late_updates",
        "prompt.stop_reason",
        "prompt.tool_call_ids",
    ];
    let started = Instant::now();
    let (conn, session) = match run.session().await {
        Ok(s) => s,
        Err(e) => {
            for name in names {
                run.record(name, started, Outcome::skip(format!("no session: {e}")));
            }
            return;
        }
    };
    let mut turns = Vec::new();
    for text in run.options.script.prompts.clone() {
        let t = turn(run, &conn, &session, &text).await;
        let stop = t.reply.is_err();
        turns.push(t);
        if stop {
            break;
        }
    }
    run.record("prompt.session_ids", started, session_ids(&turns, &session));
    run.record(
        "prompt.no_late_updates",
        started,
        no_late_updates(&turns, &session),
    );
    run.record("prompt.stop_reason", started, stop_reasons(&turns));
    run.record("prompt.tool_call_ids", started, tool_call_ids(&turns));
}

/// Every update of turn content during the turns names `session`. Session metadata (a
/// command list, a title) for another session of the connection may come at any time,
/// also during this turn: a real agent sends a late `available_commands_update` for the
/// session an earlier check opened.
pub(crate) fn session_ids(turns: &[Turn], session: &str) -> Outcome {
    let mut count = 0;
    let mut others = 0;
    for t in turns {
        for (e, id) in updates(&t.during) {
            if id == Some(session) {
                count += 1;
                continue;
            }
            if id.is_some() && !super::run::carries_turn_content(e) {
                others += 1;
                continue;
            }
            return Outcome::fail(format!(
                "turn content during a turn of session {session} names session {}: {}",
                id.unwrap_or("(none)"),
                e.evidence()
            ));
        }
    }
    let metadata = match others {
        0 => String::new(),
        n => format!(" (and {n} metadata updates for other sessions, which may come at any time)"),
    };
    Outcome::pass(format!(
        "{count} updates, all turn content for the prompt's session{metadata}"
    ))
}

fn no_late_updates(turns: &[Turn], session: &str) -> Outcome {
    for t in turns {
        // Session metadata (commands, a title...) may come at any time; turn content may not.
        if let Some((e, _)) = updates(&t.after)
            .find(|(e, id)| *id == Some(session) && super::run::carries_turn_content(e))
        {
            return Outcome::fail(format!(
                "turn content arrived after the turn's answer: {}",
                e.evidence()
            ));
        }
    }
    if turns.iter().all(|t| t.reply.is_err()) {
        return Outcome::skip("no turn was answered");
    }
    Outcome::pass(format!(
        "no turn content within {} ms of each of {} answers",
        GRACE.as_millis(),
        turns.len()
    ))
}

fn stop_reasons(turns: &[Turn]) -> Outcome {
    let mut seen = Vec::new();
    for t in turns {
        let reply = match &t.reply {
            Ok(r) => r,
            Err(e) => return Outcome::fail(format!("a prompt turn: {e}")),
        };
        let Some(result) = reply.result() else {
            return Outcome::fail(format!("a prompt turn failed: {}", reply.describe()));
        };
        match result.get("stopReason").and_then(Value::as_str) {
            Some(reason) if STOP_REASONS.contains(&reason) => seen.push(reason.to_owned()),
            other => {
                return Outcome::fail(format!(
                    "stopReason {} is not one of {}",
                    other.map_or_else(|| "missing".into(), |r| format!("`{}`", cut(r, 40))),
                    STOP_REASONS.join(", ")
                ));
            }
        }
    }
    Outcome::pass(seen.join(", "))
}

/// Tool call ids in the turns of one session: unique, and updates name known ones. A
/// `session/request_permission` introduces the id it asks about too (the request carries
/// the tool call; gemini-cli asks before it starts a call that needs confirmation, and
/// editors such as Zed show the call from the question).
pub(crate) fn tool_call_ids(turns: &[Turn]) -> Outcome {
    let mut known = HashSet::new();
    let mut asked = HashSet::new();
    for t in turns {
        for e in &t.during {
            if let Kind::Request {
                method,
                tool_call: Some(id),
                ..
            } = &e.kind
                && method == "session/request_permission"
            {
                asked.insert(id.clone());
                continue;
            }
            let Kind::Notification {
                update: Some(update),
                tool_call: Some(id),
                ..
            } = &e.kind
            else {
                continue;
            };
            match update.as_str() {
                "tool_call" if !known.insert(id.clone()) => {
                    return Outcome::fail(format!(
                        "tool call id `{id}` started twice: {}",
                        e.evidence()
                    ));
                }
                "tool_call_update" if !known.contains(id) && !asked.contains(id) => {
                    return Outcome::fail(format!(
                        "a tool_call_update for `{id}`, which no tool_call started: {}",
                        e.evidence()
                    ));
                }
                _ => {}
            }
        }
    }
    if known.is_empty() && asked.is_empty() {
        return Outcome::skip("the turns started no tool call (a prompt script can ask for tools)");
    }
    Outcome::pass(format!("{} tool calls, ids unique and known", known.len()))
}

/// Evidence for a turn that did not end well.
pub(crate) fn describe(turn: &Turn) -> String {
    outcome_of(&turn.reply)
}
