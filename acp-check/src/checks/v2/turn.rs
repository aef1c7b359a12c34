//! A prompt's work in v2: `session/new`, the prompt's answer (the inserted user message's
//! id), the `state_update` lifecycle that reports the work (`running` before the `idle` that
//! ends it, with its stop reason), whose sessions the updates name, and `session/cancel`.
//!
//! In v2 the answer to `session/prompt` says the prompt was inserted, not that the work
//! ended: updates may come before or after it, and the work ends with an `idle` state. So a
//! turn here is the answer plus every update up to that `idle` (bounded by the turn bound).

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_types::v2::{CancelSessionNotification, ContentBlock, PromptRequest};
use serde_json::{Value, json};

use super::is_idle;
use crate::checks::run::{Conn, GRACE, Run, outcome_of, session_id, to_value};
use crate::client::{CheckClientV2, Permissions, Update};
use crate::report::{Outcome, millis};
use crate::wire::{Dir, Kind, NoReply, Reply, cut, lock};

/// The stop reasons of v2's `idle` (`IdleStopReason`); `_`-prefixed ones are custom.
const STOP_REASONS: &[&str] = &[
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
    "error",
];

/// One prompt's work as the kit saw it.
pub(crate) struct Turn {
    /// The answer to `session/prompt`.
    pub reply: Result<Reply, NoReply>,
    /// Every update from the prompt on, up to [`GRACE`] after the `idle` that ended the work
    /// (or up to the bound, when none came).
    pub updates: Vec<Update>,
    /// The prompt's session.
    pub session: String,
}

impl Turn {
    /// The `messageId` of the answer, when it is a result naming one.
    pub fn message_id(&self) -> Option<&str> {
        self.reply
            .as_ref()
            .ok()?
            .result()?
            .get("messageId")?
            .as_str()
            .filter(|s| !s.is_empty())
    }

    /// The updates for the prompt's session.
    pub fn own(&self) -> impl Iterator<Item = &Update> {
        self.updates.iter().filter(|u| u.session == self.session)
    }
}

/// The kit's v2 client on `conn` (every v2 connection has one).
pub(crate) fn client(conn: &Conn) -> Result<&Arc<CheckClientV2>, Outcome> {
    conn.v2
        .as_ref()
        .ok_or_else(|| Outcome::skip("the connection is not a v2 one"))
}

/// Sends `params` (a `session/prompt`'s, as JSON) and watches the work until its `idle`.
pub(crate) async fn prompt(run: &Run<'_>, conn: &Conn, session: &str, params: Value) -> Turn {
    let bound = run.options.bounds.turn;
    let Some(client) = conn.v2.clone() else {
        return Turn {
            reply: Err(NoReply::Closed),
            updates: Vec::new(),
            session: session.to_owned(),
        };
    };
    let started = Instant::now();
    let mark = client.mark();
    let reply = run.call_within(conn, "session/prompt", params, bound).await;
    let left = bound.saturating_sub(started.elapsed());
    if let Ok(r) = &reply
        && r.error().is_none()
    {
        client.wait_for(mark, left, |u| is_idle(u, session)).await;
    }
    if reply.is_ok() {
        tokio::time::sleep(GRACE).await;
    }
    Turn {
        reply,
        updates: client.since(mark),
        session: session.to_owned(),
    }
}

/// A text prompt's params, with an `idempotencyKey` when given.
pub(crate) fn text_prompt(
    session: &str,
    text: &str,
    key: Option<acp_types::v2::IdempotencyKey>,
) -> Value {
    let mut request = PromptRequest::new(session, [ContentBlock::text(text)]);
    if let Some(key) = key {
        request = request.idempotency_key(key);
    }
    to_value(&request)
}

/// A v2 session on the current agent (made now, with `timing.session_new` and
/// `v2.sessions.new` recorded, when `record`).
pub(crate) async fn session(
    run: &mut Run<'_>,
    record: bool,
) -> Result<(Arc<Conn>, String), String> {
    if !record {
        return run.session().await;
    }
    let started = Instant::now();
    let conn = run.ready().await?;
    let reply = run.new_session_authenticated(&conn).await?;
    run.record_timing(
        "timing.session_new",
        started,
        &reply,
        run.options.bounds.session_new,
    );
    let outcome = match &reply {
        Ok(r) => match session_id(r) {
            Some(id) => Outcome::pass(format!("session {}", cut(&id, 60))),
            None => Outcome::fail(format!("no session id: {}", r.describe())),
        },
        Err(e) => Outcome::fail(format!("`session/new`: {e}")),
    };
    let made = outcome.is_pass();
    run.record("v2.sessions.new", started, outcome);
    let reply = reply.map_err(|e| format!("`session/new`: {e}"))?;
    let id = session_id(&reply)
        .filter(|_| made)
        .ok_or_else(|| format!("`session/new` gave no session id: {}", reply.describe()))?;
    conn.wire.know_session(&id);
    *lock(&conn.session) = Some((id.clone(), reply.result().cloned().unwrap_or_default()));
    Ok((conn, id))
}

/// `v2.sessions.new`, then each scripted prompt in that session: `v2.prompt.inserted`,
/// `v2.prompt.session_ids`, `v2.state.lifecycle`, `v2.state.stop_reason`, and the upsert
/// checks over the same turns (the caller hands what this returns to `upserts::grade`).
pub(crate) async fn run(
    run: &mut Run<'_>,
    sessions: &mut Vec<String>,
) -> Option<(Instant, Arc<Conn>, Vec<(String, Turn)>)> {
    let names = [
        "v2.prompt.inserted",
        "v2.prompt.session_ids",
        "v2.state.lifecycle",
        "v2.state.stop_reason",
        "v2.upserts.ids",
        "v2.upserts.patches",
    ];
    let started = Instant::now();
    let (conn, session) = match session(run, true).await {
        Ok(s) => s,
        Err(e) => {
            for name in names {
                run.record(name, started, Outcome::skip(format!("no session: {e}")));
            }
            return None;
        }
    };
    sessions.push(session.clone());
    let mut turns = Vec::new();
    for text in run.options.script.prompts.clone() {
        let t = prompt(run, &conn, &session, text_prompt(&session, &text, None)).await;
        let stop = t.reply.is_err();
        turns.push((text, t));
        if stop {
            break;
        }
    }
    run.record("v2.prompt.inserted", started, inserted(&turns));
    run.record(
        "v2.prompt.session_ids",
        started,
        session_ids(&turns, sessions),
    );
    run.record(
        "v2.state.lifecycle",
        started,
        lifecycle(&turns, run.options.bounds.turn),
    );
    run.record("v2.state.stop_reason", started, stop_reasons(&turns));
    Some((started, conn, turns))
}

fn inserted(turns: &[(String, Turn)]) -> Outcome {
    let mut ids = Vec::new();
    for (_, t) in turns {
        let reply = match &t.reply {
            Ok(r) => r,
            Err(e) => return Outcome::fail(format!("`session/prompt`: {e}")),
        };
        let Some(id) = t.message_id() else {
            return Outcome::fail(format!(
                "`session/prompt` was answered {} (expected a result naming the inserted message's `messageId`)",
                reply.describe()
            ));
        };
        let echoed = t.own().any(|u| {
            matches!(u.kind(), "user_message" | "user_message_chunk")
                && u.field("messageId") == Some(id)
        });
        if !echoed {
            return Outcome::fail(format!(
                "the answer names message `{}`, but no `user_message` (or chunk) with that id came in the live session ({} updates seen)",
                cut(id, 60),
                t.updates.len()
            ));
        }
        ids.push(cut(id, 40));
    }
    Outcome::pass(format!("inserted and echoed: {}", ids.join(", ")))
}

fn session_ids(turns: &[(String, Turn)], sessions: &[String]) -> Outcome {
    let mut count = 0;
    for (_, t) in turns {
        for u in &t.updates {
            if !sessions.contains(&u.session) {
                return Outcome::fail(format!(
                    "an update during a turn of session {} names session {}, which the kit never opened: {}",
                    t.session,
                    cut(&u.session, 60),
                    u.evidence()
                ));
            }
            count += 1;
        }
    }
    Outcome::pass(format!(
        "{count} updates, all for sessions of the connection"
    ))
}

/// The `state_update`s of the prompt's session, in order, as their `state`.
fn states(t: &Turn) -> Vec<(&str, &Update)> {
    t.own()
        .filter(|u| u.kind() == "state_update")
        .map(|u| (u.field("state").unwrap_or("?"), u))
        .collect()
}

fn lifecycle(turns: &[(String, Turn)], bound: Duration) -> Outcome {
    let mut seen = Vec::new();
    for (_, t) in turns {
        if let Err(e) = &t.reply {
            return Outcome::fail(format!("`session/prompt`: {e}"));
        }
        let states = states(t);
        let Some(idle) = states.iter().position(|(s, _)| *s == "idle") else {
            return Outcome::fail(format!(
                "no `idle` state_update ended the prompt's work within {} ms (states seen: [{}])",
                millis(bound),
                states
                    .iter()
                    .map(|(s, _)| *s)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let before: Vec<&str> = states[..idle].iter().map(|(s, _)| *s).collect();
        if !before
            .iter()
            .any(|s| matches!(*s, "running" | "requires_action"))
        {
            return Outcome::fail(format!(
                "the work ended with `idle` but was never reported `running` (or `requires_action`) before it: {}",
                states[idle].1.evidence()
            ));
        }
        seen.push(format!("{} -> idle", before.join(" -> ")));
    }
    Outcome::pass(seen.join("; "))
}

/// The stop reason of a turn's `idle`, checked against the protocol's set.
pub(crate) fn stop_reason(t: &Turn) -> Result<String, String> {
    let states = states(t);
    let Some((_, idle)) = states.iter().find(|(s, _)| *s == "idle") else {
        return Err("no `idle` ended the work".into());
    };
    match idle.json.get("stopReason").and_then(Value::as_str) {
        Some(r) if STOP_REASONS.contains(&r) || r.starts_with('_') => Ok(r.to_owned()),
        other => Err(format!(
            "the `idle` that ended the work has stopReason {} (expected one of {}, or a `_`-prefixed custom one): {}",
            other.map_or_else(|| "missing".into(), |r| format!("`{}`", cut(r, 40))),
            STOP_REASONS.join(", "),
            idle.evidence()
        )),
    }
}

fn stop_reasons(turns: &[(String, Turn)]) -> Outcome {
    let mut seen = Vec::new();
    for (_, t) in turns {
        match stop_reason(t) {
            Ok(r) => seen.push(r),
            Err(e) => return Outcome::fail(e),
        }
    }
    Outcome::pass(seen.join(", "))
}

/// `v2.cancel.session_cancel`: a prompt whose permission requests are held, cancelled with
/// `session/cancel` once its work is under way; the work must end with `idle` `cancelled`.
pub(crate) async fn cancel(run: &mut Run<'_>) {
    const NAME: &str = "v2.cancel.session_cancel";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let outcome = session_cancel(run).await;
    run.client.permissions(Permissions::Allow);
    run.record(NAME, started, outcome);
}

async fn session_cancel(run: &mut Run<'_>) -> Outcome {
    let (conn, session) = match session(run, false).await {
        Ok(s) => s,
        Err(e) => return Outcome::skip(format!("no session: {e}")),
    };
    let client = match client(&conn) {
        Ok(c) => c.clone(),
        Err(o) => return o,
    };
    run.client.permissions(Permissions::Hold);
    let mark = client.mark();
    let from = conn.wire.mark();
    let text = run.options.script.cancel.clone();
    let params = text_prompt(&session, &text, None);
    let (id, rx) = match conn.wire.send_request("session/prompt", params).await {
        Ok(sent) => sent,
        Err(e) => return Outcome::fail(format!("`session/prompt`: {e}")),
    };
    // The work is under way at its first state (or, failing that, any update).
    let check = run.options.bounds.check;
    let (began, seen) = client
        .wait_for(mark, check, |u| {
            u.session == session && u.kind() == "state_update"
        })
        .await;
    if seen.iter().any(|u| is_idle(u, &session)) {
        let _ = conn.wire.wait(id, rx, check).await;
        return Outcome::skip(
            "the work ended before it could be cancelled (a prompt script's `cancel` can hold it open)",
        );
    }
    if !began && seen.is_empty() {
        let _ = conn.wire.wait(id, rx, check).await;
        return Outcome::skip(format!(
            "the prompt's work sent nothing within {} ms to cancel",
            millis(check)
        ));
    }
    let cancelled_at = Instant::now();
    let cancel_seq = conn.wire.mark();
    let notice = to_value(&CancelSessionNotification::new(session.clone()));
    if let Err(e) = conn.wire.notify("session/cancel", notice).await {
        return Outcome::fail(format!("`session/cancel` could not be sent: {e}"));
    }
    run.client.permissions(Permissions::Cancelled);
    let bound = run.options.bounds.cancel;
    let (ended, updates) = client.wait_for(mark, bound, |u| is_idle(u, &session)).await;
    let reply = conn.wire.wait(id, rx, check).await;
    let t = Turn {
        reply: reply.clone(),
        updates,
        session: session.clone(),
    };
    if !ended {
        crate::checks::run::broke(&conn, &NoReply::Timeout(bound));
        return Outcome::fail(format!(
            "no `idle` within {} ms of `session/cancel` (the prompt: {})",
            millis(bound),
            outcome_of(&reply)
        ));
    }
    if idle_before(&conn, &session, from, cancel_seq) {
        return Outcome::skip(
            "the work ended before the cancel reached the agent (a prompt script's `cancel` can hold it open)",
        );
    }
    let waited = millis(cancelled_at.elapsed());
    match stop_reason(&t) {
        Ok(r) if r == "cancelled" => Outcome::pass(format!(
            "idle `cancelled` {waited} ms after `session/cancel`"
        )),
        Ok(r) => Outcome::fail(format!(
            "after `session/cancel` the work ended with stop reason `{r}` (expected `cancelled`)"
        )),
        Err(e) => Outcome::fail(e),
    }
}

/// Whether the agent wrote an `idle` for `session` between the wire marks `from` and `to`
/// (the work ended on its own before the kit's cancel was on the wire).
fn idle_before(conn: &Conn, session: &str, from: u64, to: u64) -> bool {
    conn.wire.with_log(|log| {
        log.entries.iter().any(|e| {
            let Kind::Notification {
                update: Some(update),
                session: Some(s),
                ..
            } = &e.kind
            else {
                return false;
            };
            if e.dir != Dir::FromAgent
                || e.seq < from
                || e.seq >= to
                || update != "state_update"
                || s != session
            {
                return false;
            }
            // The evidence keeps the start of the line; a state update is short.
            match serde_json::from_str::<Value>(&e.text) {
                Ok(line) => {
                    line.pointer("/params/update/state").and_then(Value::as_str) == Some("idle")
                }
                Err(_) => e.text.contains("\"idle\""),
            }
        })
    })
}

/// A content block of a custom type, for `v2.extension.custom_values`.
pub(crate) fn custom_block() -> Value {
    json!({"type": "_acp_check/custom", "note": "acp check: a custom content block", "kept": [1, true, null]})
}

/// `v2.cancel.tool_call`: `tool_call/cancel` of a tool call the session never had is refused,
/// not accepted.
pub(crate) async fn tool_call_cancel(run: &mut Run<'_>) {
    const NAME: &str = "v2.cancel.tool_call";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let outcome = unknown_tool_call(run).await;
    run.record(NAME, started, outcome);
}

/// The id the kit asks to cancel: no agent gives a tool call this one.
const NO_SUCH_TOOL_CALL: &str = "acp-check-no-such-tool-call";

/// The schema: "The Agent responds with `-32602` if the tool call is unknown, already final,
/// or not cancellable". An agent that cancels no single tool call (it never advertises
/// `capabilities.cancel` on one) may not implement the method at all: `-32601` then passes,
/// unless a tool call of the run did advertise it.
async fn unknown_tool_call(run: &mut Run<'_>) -> Outcome {
    let (conn, session) = match run.session().await {
        Ok(s) => s,
        Err(e) => return Outcome::skip(format!("no session: {e}")),
    };
    let advertised_cancel = client(&conn).is_ok_and(|client| {
        client.since(0).iter().any(|u| {
            // A tool call's (a terminal's `capabilities.cancel` is `terminal/cancel`'s).
            u.kind() == "tool_call_update"
                && u.json
                    .pointer("/capabilities/cancel")
                    .is_some_and(Value::is_object)
        })
    });
    let params = json!({ "sessionId": session, "toolCallId": NO_SUCH_TOOL_CALL });
    let reply = run.call(&conn, "tool_call/cancel", params).await;
    let answer = match &reply {
        Ok(r) => r,
        Err(e) => return Outcome::fail(format!("`tool_call/cancel`: {e}")),
    };
    match answer.error() {
        Some((-32602, _)) => Outcome::pass("an unknown tool call refused with -32602"),
        Some((-32601, _)) if !advertised_cancel => Outcome::pass(
            "refused with -32601: the agent cancels no single tool call (none of the run's advertised `capabilities.cancel`)",
        ),
        Some((-32601, _)) => Outcome::fail(
            "a tool call of the run advertised `capabilities.cancel`, yet `tool_call/cancel` is not implemented (-32601)",
        ),
        Some((code, _)) => Outcome::fail(format!(
            "an unknown tool call refused with {code}; the schema asks -32602: {}",
            answer.describe()
        )),
        None => Outcome::fail(format!(
            "`tool_call/cancel` of `{NO_SUCH_TOOL_CALL}`, a tool call the session never had, was accepted: {}",
            answer.describe()
        )),
    }
}
