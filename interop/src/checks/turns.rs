//! A prompt turn: the prompt's content blocks, and the session updates sent and delivered.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::script::script;
use crate::tap::Side;
use crate::transcript::{Wire, events};

use super::cell::{CellRun, Check, kinds_of, prompt_of};

pub(super) fn prompt_blocks(cell: &CellRun<'_>) -> Check {
    let sc = script();
    let mut problems = Vec::new();
    let expected = ["text", "image", "resource"];
    match prompt_of(cell.wire, &sc.prompts.work) {
        Some(p) => {
            let blocks: Vec<&str> = p.params()["prompt"]
                .as_array()
                .map(|b| b.iter().filter_map(|b| b["type"].as_str()).collect())
                .unwrap_or_default();
            if blocks != expected {
                problems.push(format!("the first prompt sent blocks {blocks:?}"));
            }
        }
        None => problems.push("no first prompt on the wire".into()),
    }
    let seen = events(cell.agent_events, "prompt")
        .find(|e| e["text"] == sc.prompts.work.as_str())
        .map(|e| e["blocks"].clone());
    if seen != Some(serde_json::json!(expected)) {
        problems.push(format!("the agent saw blocks {seen:?}"));
    }
    Check::new(
        "prompt-blocks",
        problems,
        "text, image and resource blocks sent and seen by the agent".into(),
    )
}

/// The update kinds the agent should send in turn 1, given both SDKs.
fn expected_kinds(cell: &CellRun<'_>) -> Vec<&'static str> {
    let extras = cell.client.client_advertises_session_extras();
    script()
        .update_kinds()
        .into_iter()
        .filter(|k| cell.agent.knows_update(k))
        .filter(|k| extras || !(*k == "notice" || k.starts_with("compaction_")))
        .collect()
}

fn wire_updates(wire: &Wire) -> Vec<&Value> {
    wire.notifications(Side::Agent, "session/update")
        .map(|m| &m.params()["update"])
        .collect()
}

pub(super) fn updates_sent(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let sent: BTreeSet<String> = kinds_of(wire_updates(cell.wire).into_iter())
        .into_iter()
        .collect();
    let expected = expected_kinds(cell);
    let missing: Vec<&&str> = expected.iter().filter(|k| !sent.contains(**k)).collect();
    if !missing.is_empty() {
        problems.push(format!("never sent: {missing:?}"));
    }
    let unknown: Vec<&String> = sent
        .iter()
        .filter(|k| !cell.client.knows_update(k))
        .collect();
    if !unknown.is_empty() {
        problems.push(format!(
            "sent kinds the {} client cannot know: {unknown:?}",
            cell.client.name()
        ));
    }
    if !cell.client.client_advertises_session_extras()
        && sent
            .iter()
            .any(|k| k == "notice" || k.starts_with("compaction_"))
    {
        problems
            .push("sent notice/compaction updates to a client that did not advertise them".into());
    }
    let seen = format!(
        "{} kinds sent: {}",
        sent.len(),
        sent.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    Check::new("updates-sent", problems, seen)
}

pub(super) fn updates_delivered(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let on_wire = kinds_of(wire_updates(cell.wire).into_iter());
    let received = kinds_of(events(cell.client_events, "update").map(|e| &e["update"]));
    if on_wire != received {
        let dropped: Vec<&String> = on_wire.iter().filter(|k| !received.contains(k)).collect();
        problems.push(format!(
            "the client received {} of {} updates in a different order or dropped some (missing kinds: {dropped:?})",
            received.len(),
            on_wire.len()
        ));
    }
    let seen = format!(
        "all {} updates on the wire reached the client, in order",
        on_wire.len()
    );
    Check::new("updates-delivered", problems, seen)
}
