//! Ending and resuming turns and sessions: `session/cancel`, `$/cancel_request` and
//! `session/load`.

use serde_json::Value;

use crate::script::script;
use crate::tap::Side;
use crate::transcript::{Kind, Message, events};

use super::cell::{CellRun, Check, kinds_of, prompt_of};

pub(super) fn session_cancel(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    match prompt_of(cell.wire, &script().prompts.cancel) {
        None => problems.push("no second prompt on the wire".into()),
        Some(prompt) => {
            let answer = cell.wire.response_to(prompt);
            let cancel = cell
                .wire
                .notifications(Side::Client, "session/cancel")
                .find(|c| c.seq > prompt.seq);
            match (cancel, answer) {
                (None, _) => problems.push("no session/cancel after the second prompt".into()),
                (Some(c), Some(a)) if c.seq > a.seq => {
                    problems.push("session/cancel came after the prompt's answer".into())
                }
                _ => {}
            }
            if answer.map(|a| &a.result()["stopReason"]) != Some(&Value::from("cancelled")) {
                problems.push(format!(
                    "the second prompt was answered {:?}",
                    answer.map(|a| &a.raw)
                ));
            }
        }
    }
    let stop = events(cell.client_events, "stop").find(|e| e["turn"] == "2");
    if stop.map(|e| &e["stopReason"]) != Some(&Value::from("cancelled")) {
        problems.push("the client did not see stopReason cancelled".into());
    }
    Check::new(
        "session-cancel",
        problems,
        "session/cancel during the second prompt; it stopped with `cancelled`".into(),
    )
}

pub(super) fn cancel_request(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let hold = prompt_of(cell.wire, &script().prompts.hold);
    let cancels: Vec<&Message> = cell
        .wire
        .notifications(Side::Client, "$/cancel_request")
        .collect();
    if !cell.client.client_sends_cancel_request() {
        if hold.is_some() || !cancels.is_empty() {
            problems.push("a client that cannot send $/cancel_request ran the third turn".into());
        }
        let seen = format!(
            "skipped: the {} client cannot send $/cancel_request",
            cell.client.name()
        );
        return Check::new("cancel-request", problems, seen);
    }
    let answer = hold.and_then(|p| cell.wire.response_to(p));
    match hold {
        None => problems.push("no third prompt on the wire".into()),
        Some(prompt) => {
            let id = prompt.id().cloned().unwrap_or_default();
            if !cancels
                .iter()
                .any(|c| c.params()["requestId"] == id && c.seq > prompt.seq)
            {
                problems.push(format!(
                    "no $/cancel_request for the third prompt (id {id})"
                ));
            }
            if cell.agent.agent_honours_cancel_request() {
                // A server that kills its agent at the connection's end (SIGKILL) may do so
                // before the agent writes the -32800 it is about to: the client does not wait
                // for the answer to a request it withdrew. Then the agent's own report that it
                // cancelled the turn (checked below) is the evidence; any other answer fails.
                let cut_short = answer.is_none() && cell.agent_killed_by_server;
                if !cut_short && answer.and_then(Message::error_code) != Some(-32800) {
                    problems.push(format!(
                        "the withdrawn prompt was answered {:?}",
                        answer.map(|a| &a.raw)
                    ));
                }
                if events(cell.agent_events, "request_cancelled")
                    .next()
                    .is_none()
                {
                    problems.push("the agent did not see the cancellation".into());
                }
            } else if let Some(answer) = answer
                && answer.result()["stopReason"] != "end_turn"
            {
                problems.push(format!(
                    "the {} agent ignores $/cancel_request and should end the turn normally (or not at all before the client hangs up); it answered {}",
                    cell.agent.name(),
                    answer.raw
                ));
            }
        }
    }
    if events(cell.client_events, "request_cancelled")
        .next()
        .is_none()
    {
        problems.push("the client did not withdraw the third prompt".into());
    }
    let seen = if cell.agent.agent_honours_cancel_request() {
        if answer.is_none() {
            "$/cancel_request for the third prompt; the agent cancelled it, and the server killed it before its -32800 was written".into()
        } else {
            "$/cancel_request for the third prompt; answered -32800".into()
        }
    } else {
        format!(
            "$/cancel_request sent; the {} agent ignores it ({})",
            cell.agent.name(),
            if answer.is_some() {
                "it answered end_turn"
            } else {
                "no answer before the client hung up"
            }
        )
    };
    Check::new("cancel-request", problems, seen)
}

pub(super) fn session_load(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    match cell.wire.requests(Side::Client, "session/load").next() {
        None => problems.push("no session/load".into()),
        Some(load) => match cell.wire.response_to(load) {
            Some(answer) if matches!(answer.kind, Kind::Result { .. }) => {
                let replayed = kinds_of(
                    cell.wire
                        .notifications(Side::Agent, "session/update")
                        .filter(|u| u.seq > load.seq && u.seq < answer.seq)
                        .map(|u| &u.params()["update"]),
                );
                let history = kinds_of(script().history.iter());
                if replayed != history {
                    problems.push(format!(
                        "replayed {replayed:?} before the answer, expected {history:?}"
                    ));
                }
            }
            other => problems.push(format!("session/load answered {:?}", other.map(|a| &a.raw))),
        },
    }
    let received = kinds_of(
        events(cell.client_events, "update")
            .filter(|e| e["turn"] == "load")
            .map(|e| &e["update"]),
    );
    if received != kinds_of(script().history.iter()) {
        problems.push(format!("the client received {received:?} during the load"));
    }
    Check::new(
        "session-load",
        problems,
        "history replayed before the load answer and received".into(),
    )
}
