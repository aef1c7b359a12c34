//! The assertions of a cell that settled on protocol v2 ([`crate::script::ScriptV2`]: one
//! turn): the whole-cell ones of v1 (exits, framing, one answer per request), then v2's
//! handshake, the turn (the prompt inserted as the script's message, every update sent and
//! delivered in order, the idle `state_update` ending it) and the permission request.

use serde_json::{Value, json};

use crate::script::script_v2;
use crate::tap::Side;
use crate::transcript::events;

use super::cell::{CellRun, Check, kinds_of};
use super::conduct::{exits, framing, one_response_each};

/// Runs every assertion of a v2 cell.
pub fn run(cell: &CellRun<'_>) -> Vec<Check> {
    vec![
        exits(cell),
        framing(cell),
        one_response_each(cell),
        handshake(cell),
        turn(cell),
        permission(cell),
    ]
}

/// The first message is the client's `initialize` asking 2, answered 2 with the agent's
/// `info`; the client reports version 2.
fn handshake(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let first = cell.wire.messages.first();
    match first {
        Some(init) if init.method() == Some("initialize") && init.from == Side::Client => {
            if init.params()["protocolVersion"] != json!(2) {
                problems.push(format!(
                    "initialize asked protocolVersion {}",
                    init.params()["protocolVersion"]
                ));
            }
            if !init.params()["info"]["name"].is_string() {
                problems.push("initialize has no info.name (v2's role-neutral shape)".into());
            }
            match cell.wire.response_to(init) {
                Some(answer) => {
                    if answer.result()["protocolVersion"] != json!(2) {
                        problems.push(format!(
                            "initialize answered protocolVersion {}",
                            answer.result()["protocolVersion"]
                        ));
                    }
                    if !answer.result()["info"]["name"].is_string() {
                        problems.push("the answer has no info.name".into());
                    }
                }
                None => problems.push("initialize was not answered".into()),
            }
        }
        _ => problems.push("the first message is not the client's initialize".into()),
    }
    let reported = events(cell.client_events, "initialized")
        .next()
        .map(|e| e["protocolVersion"].clone());
    if reported != Some(json!(2)) {
        problems.push(format!("the client reported protocol version {reported:?}"));
    }
    Check::new(
        "handshake",
        problems,
        "initialize: version 2 asked and answered, info on both sides".into(),
    )
}

/// The prompt carries the script's text and is answered with the inserted message's id; the
/// agent sends the script's updates in order (the `user_message` echoing the prompt under
/// that id), the client receives each, and the last is the idle `state_update` with
/// `end_turn`.
fn turn(cell: &CellRun<'_>) -> Check {
    let sc = script_v2();
    let mut problems = Vec::new();
    let prompt = cell.wire.requests(Side::Client, "session/prompt").next();
    match prompt {
        Some(p) => {
            let text = &p.params()["prompt"][0]["text"];
            if text != sc.prompt.as_str() {
                problems.push(format!("the prompt's text is {text}"));
            }
            let inserted = cell
                .wire
                .response_to(p)
                .map(|r| r.result()["messageId"].clone());
            if inserted != Some(json!(sc.user_message_id)) {
                problems.push(format!(
                    "the prompt was answered {inserted:?}, not the inserted message id"
                ));
            }
        }
        None => problems.push("no session/prompt on the wire".into()),
    }
    let sent: Vec<&Value> = cell
        .wire
        .notifications(Side::Agent, "session/update")
        .map(|m| &m.params()["update"])
        .collect();
    let expected = sc.update_kinds();
    let sent_kinds = kinds_of(sent.iter().copied());
    if sent_kinds != expected {
        problems.push(format!(
            "the agent sent {sent_kinds:?}, the script says {expected:?}"
        ));
    }
    if let (Some(p), Some(user)) = (
        prompt,
        sent.iter().find(|u| u["sessionUpdate"] == "user_message"),
    ) && (user["messageId"] != sc.user_message_id.as_str()
        || user["content"] != p.params()["prompt"])
    {
        problems.push(format!(
            "the user_message update {user} does not echo the prompt under its id"
        ));
    }
    if sent.last().map(|u| (&u["state"], &u["stopReason"]))
        != Some((&json!("idle"), &json!("end_turn")))
    {
        problems.push("the last update is not the idle state_update with end_turn".into());
    }
    let delivered = kinds_of(events(cell.client_events, "update").map(|e| &e["update"]));
    if delivered != expected {
        problems.push(format!("the client received {delivered:?}"));
    }
    let stop = events(cell.client_events, "stop")
        .next()
        .map(|e| e["stopReason"].clone());
    if stop != Some(json!("end_turn")) {
        problems.push(format!("the client saw the turn end with {stop:?}"));
    }
    Check::new(
        "turn",
        problems,
        format!(
            "prompt inserted as {}, {} updates sent and received in order, idle end_turn last",
            sc.user_message_id,
            expected.len()
        ),
    )
}

/// The agent's `session/request_permission` has the script's title and subject and is
/// answered with the script's allow option, which both sides report.
fn permission(cell: &CellRun<'_>) -> Check {
    let sc = script_v2();
    let mut problems = Vec::new();
    let requests: Vec<_> = cell
        .wire
        .requests(Side::Agent, "session/request_permission")
        .collect();
    let selected = json!({"outcome": "selected", "optionId": sc.allow_option});
    match requests.as_slice() {
        [request] => {
            for field in ["title", "subject", "options"] {
                if request.params()[field] != sc.permission[field] {
                    problems.push(format!(
                        "the request's {field} is {}",
                        request.params()[field]
                    ));
                }
            }
            let answer = cell
                .wire
                .response_to(request)
                .map(|r| r.result()["outcome"].clone());
            if answer != Some(selected.clone()) {
                problems.push(format!("answered {answer:?}"));
            }
        }
        other => problems.push(format!(
            "{} permission requests on the wire, not 1",
            other.len()
        )),
    }
    let client_saw = events(cell.client_events, "permission")
        .next()
        .map(|e| (e["title"].clone(), e["optionId"].clone()));
    if client_saw != Some((sc.permission["title"].clone(), json!(sc.allow_option))) {
        problems.push(format!("the client reported {client_saw:?}"));
    }
    let agent_saw = events(cell.agent_events, "permission")
        .next()
        .map(|e| e["outcome"].clone());
    if agent_saw != Some(selected) {
        problems.push(format!("the agent reported {agent_saw:?}"));
    }
    Check::new(
        "permission",
        problems,
        format!(
            "one request with its title and tool-call subject, {} selected and seen by both",
            sc.allow_option
        ),
    )
}
