//! Upserts, custom values and retries in v2: ids keep their identity (a message id belongs
//! to one role; content chunks and permission subjects name a tool call that was announced),
//! the updates fold into what the prompt said under the schema's patch rules (folded with
//! the client's own reducer, `acp_client::v2::SessionState`), a custom content block is
//! taken and kept, and a prompt retried with its `idempotencyKey` is not a second turn.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use acp_client::v2::{MessageRole, SessionState, new_idempotency_key};
use serde_json::{Value, json};

use super::turn::{Turn, client, custom_block, prompt, session, text_prompt};
use crate::checks::run::{Conn, GRACE, Run};
use crate::report::Outcome;
use crate::wire::{Dir, Kind, cut};

/// `v2.upserts.ids` and `v2.upserts.patches` over the scripted turns of `conn`.
pub(crate) fn grade(run: &mut Run<'_>, started: Instant, conn: &Conn, turns: &[(String, Turn)]) {
    run.record("v2.upserts.ids", started, ids(conn, turns));
    run.record("v2.upserts.patches", started, patches(turns));
}

/// The role a message update gives its `messageId`.
fn role(kind: &str) -> Option<&'static str> {
    match kind {
        "user_message" | "user_message_chunk" => Some("user"),
        "agent_message" | "agent_message_chunk" => Some("agent"),
        "agent_thought" | "agent_thought_chunk" => Some("thought"),
        _ => None,
    }
}

fn ids(conn: &Conn, turns: &[(String, Turn)]) -> Outcome {
    let mut roles: HashMap<String, &'static str> = HashMap::new();
    let mut announced: HashSet<String> = HashSet::new();
    for (_, t) in turns {
        for u in t.own() {
            if let (Some(role), Some(id)) = (role(u.kind()), u.field("messageId")) {
                match roles.get(id) {
                    Some(had) if *had != role => {
                        return Outcome::fail(format!(
                            "message `{}` was a {had} message, then carried {role} content: {}",
                            cut(id, 60),
                            u.evidence()
                        ));
                    }
                    _ => {
                        roles.insert(id.to_owned(), role);
                    }
                }
            }
            let tool = u.field("toolCallId");
            match (u.kind(), tool) {
                // An upsert: a new id creates the call (the schema: omitted fields start at
                // their defaults), a known one patches it.
                ("tool_call_update", Some(id)) => {
                    announced.insert(id.to_owned());
                }
                ("tool_call_content_chunk", Some(id)) if !announced.contains(id) => {
                    return Outcome::fail(format!(
                        "a tool_call_content_chunk for `{}`, which no tool_call_update announced (a chunk appends to a call; it does not create one): {}",
                        cut(id, 60),
                        u.evidence()
                    ));
                }
                _ => {}
            }
        }
    }
    let asked = conn.wire.with_log(|log| {
        log.entries
            .iter()
            .filter(|e| e.dir == Dir::FromAgent)
            .filter_map(|e| match &e.kind {
                Kind::Request {
                    method,
                    tool_call: Some(id),
                    ..
                } if method == "session/request_permission" => Some((id.clone(), e.evidence())),
                _ => None,
            })
            .collect::<Vec<_>>()
    });
    if let Some((id, evidence)) = asked.iter().find(|(id, _)| !announced.contains(id)) {
        return Outcome::fail(format!(
            "a permission request about tool call `{}`, which no tool_call_update announced: {evidence}",
            cut(id, 60)
        ));
    }
    Outcome::pass(format!(
        "{} messages, {} tool calls, {} permission subjects; ids keep their identity",
        roles.len(),
        announced.len(),
        asked.len()
    ))
}

fn patches(turns: &[(String, Turn)]) -> Outcome {
    let mut state = SessionState::default();
    let mut checked = 0;
    for (text, t) in turns {
        for u in t.own() {
            state.apply(&u.typed);
        }
        let Some(id) = t.message_id() else {
            continue;
        };
        let Some(message) = state.messages.iter().find(|m| m.id.0 == id) else {
            return Outcome::fail(format!(
                "folded, the session has no message `{}` (the id the prompt's answer named)",
                cut(id, 60)
            ));
        };
        if message.role != MessageRole::User {
            return Outcome::fail(format!(
                "folded, message `{}` is a {:?} message, not the user's",
                cut(id, 60),
                message.role
            ));
        }
        if !message.text().contains(text.as_str()) {
            return Outcome::fail(format!(
                "folded, user message `{}` reads `{}`, not the prompt `{}`",
                cut(id, 60),
                cut(&message.text(), 120),
                cut(text, 60)
            ));
        }
        checked += 1;
    }
    if checked == 0 {
        return Outcome::skip("no prompt was answered with a message id to fold");
    }
    Outcome::pass(format!(
        "{checked} user messages folded to their prompts; {} messages, {} tool calls in all",
        state.messages.len(),
        state.tool_calls.len()
    ))
}

/// `v2.extension.custom_values`: a prompt with a custom content block beside its text.
pub(crate) async fn custom_values(run: &mut Run<'_>) {
    const NAME: &str = "v2.extension.custom_values";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let (conn, session) = match session(run, false).await {
        Ok(s) => s,
        Err(e) => return run.record(NAME, started, Outcome::skip(format!("no session: {e}"))),
    };
    let custom = custom_block();
    // Raw on purpose: the block's type is one no constructor builds.
    let params = json!({
        "sessionId": session,
        "prompt": [{"type": "text", "text": "acp check: a prompt with a custom content block"}, custom],
    });
    let t = prompt(run, &conn, &session, params).await;
    let outcome = match &t.reply {
        Err(e) => Outcome::fail(format!("a prompt with a custom content block: {e}")),
        Ok(r) => match r.error() {
            Some((code, message)) => Outcome::fail(format!(
                "a prompt with a content block of type `_acp_check/custom` was refused with {code} ({}): the schema keeps custom content block types",
                cut(&message, 120)
            )),
            None => echoed(&t, &custom),
        },
    };
    run.record(NAME, started, outcome);
}

/// Whether the echo of the prompt's user message kept `custom` as sent.
fn echoed(t: &Turn, custom: &Value) -> Outcome {
    let Some(id) = t.message_id() else {
        return Outcome::pass("taken (the answer names no message to look for an echo of)");
    };
    let echoes: Vec<_> = t
        .own()
        .filter(|u| matches!(u.kind(), "user_message" | "user_message_chunk"))
        .filter(|u| u.field("messageId") == Some(id))
        .collect();
    if echoes.is_empty() {
        return Outcome::pass(
            "taken (the agent did not echo the message: v2.prompt.inserted grades that)",
        );
    }
    let kept = echoes.iter().any(|u| match u.json.get("content") {
        Some(Value::Array(blocks)) => blocks.contains(custom),
        Some(block) => block == custom,
        None => false,
    });
    if kept {
        Outcome::pass("taken, and the echo of the user message keeps the custom block as sent")
    } else {
        Outcome::fail(format!(
            "the echo of the user message lost or changed the custom block {custom}: {}",
            echoes[0].evidence()
        ))
    }
}

/// `v2.prompt.idempotency`: a prompt, then the same prompt with the same key once its work
/// ended; the retry must get the first answer's `messageId` and start nothing.
pub(crate) async fn idempotency(run: &mut Run<'_>) {
    const NAME: &str = "v2.prompt.idempotency";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let outcome = retry(run).await;
    run.record(NAME, started, outcome);
}

async fn retry(run: &mut Run<'_>) -> Outcome {
    let (conn, session) = match session(run, false).await {
        Ok(s) => s,
        Err(e) => return Outcome::skip(format!("no session: {e}")),
    };
    let client = match client(&conn) {
        Ok(c) => c.clone(),
        Err(o) => return o,
    };
    let key = new_idempotency_key();
    let text = run.options.script.prompts[0].clone();
    let params = text_prompt(&session, &text, Some(key.clone()));
    let first = prompt(run, &conn, &session, params.clone()).await;
    let Some(id) = first.message_id().map(str::to_owned) else {
        return Outcome::skip(format!(
            "the first attempt was not answered with a message id: {}",
            crate::checks::run::outcome_of(&first.reply)
        ));
    };
    let mark = client.mark();
    let reply = run
        .call_within(&conn, "session/prompt", params, run.options.bounds.turn)
        .await;
    tokio::time::sleep(GRACE * 2).await;
    let again: Vec<_> = client
        .since(mark)
        .into_iter()
        .filter(|u| u.session == session)
        .collect();
    let second = reply
        .as_ref()
        .ok()
        .and_then(|r| r.result())
        .and_then(|r| r.get("messageId"))
        .and_then(Value::as_str);
    let started_again = again.iter().find(|u| {
        (u.kind() == "state_update" && u.field("state") == Some("running"))
            || matches!(u.kind(), "user_message" | "user_message_chunk")
                && u.field("messageId") != Some(id.as_str())
    });
    let problem = if second != Some(id.as_str()) {
        Some(format!(
            "the retry with idempotencyKey `{}` was answered {} (expected the first answer's messageId `{}`)",
            key.as_str(),
            crate::checks::run::outcome_of(&reply),
            cut(&id, 60)
        ))
    } else {
        started_again.map(|u| {
            format!(
                "the retry was answered with the first messageId but started work again: {}",
                u.evidence()
            )
        })
    };
    let Some(problem) = problem else {
        return Outcome::pass(format!(
            "the retry got messageId `{}` and started no second turn",
            cut(&id, 40)
        ));
    };
    let promises = conn
        .init()
        .pointer("/capabilities/session")
        .is_some_and(|s| !s.is_null());
    if promises {
        Outcome::fail(problem)
    } else {
        // Let the second turn (if one started) end before the next check.
        let _ = client
            .wait_for(mark, Duration::from_secs(2), |u| {
                super::is_idle(u, &session)
            })
            .await;
        Outcome::skip(format!(
            "the agent does not advertise `capabilities.session`, so the key is not required of it ({problem})"
        ))
    }
}
