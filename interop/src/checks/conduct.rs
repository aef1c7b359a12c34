//! The cell as a whole: both sides exit cleanly, every line is one JSON-RPC message, every
//! request gets one answer, and the handshake.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::tap::Side;
use crate::transcript::{Kind, Message, Wire, events};

use super::cell::{CellRun, Check};

pub(super) fn exits(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    if cell.client_exit != Some(0) {
        problems.push(format!("client exit {:?}", cell.client_exit));
    }
    if events(cell.client_events, "done").next().is_none() {
        problems.push("the client never reached the end of its script".into());
    }
    let killed = cell.agent_killed_by_server && cell.agent_exit.is_none();
    if cell.agent_exit != Some(0) && !killed {
        problems.push(format!("agent exit {:?}", cell.agent_exit));
    }
    let seen = if killed {
        "client finished its script and exited 0; the server killed the agent at the connection's end"
    } else {
        "client finished its script; both exited 0"
    };
    Check::new("exits", problems, seen.into())
}

pub(super) fn framing(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    for m in &cell.wire.messages {
        if m.kind == Kind::Invalid || m.json.get("jsonrpc") != Some(&Value::from("2.0")) {
            problems.push(format!(
                "#{} from {}: not a JSON-RPC 2.0 message: {}",
                m.seq, m.from, m.raw
            ));
        }
    }
    if cell.wire.partial > 0 {
        problems.push(format!(
            "{} line(s) without a final newline",
            cell.wire.partial
        ));
    }
    let seen = format!(
        "{} lines, each one JSON-RPC 2.0 object ending in \\n",
        cell.wire.messages.len()
    );
    Check::new("framing", problems, seen)
}

pub(super) fn one_response_each(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let mut requests = 0;
    let mut unanswered_withdrawn = 0;
    for side in [Side::Client, Side::Agent] {
        let mut ids = BTreeSet::new();
        for m in cell.wire.from(side) {
            match &m.kind {
                Kind::Request { id, method } => {
                    requests += 1;
                    if !ids.insert(id.to_string()) {
                        problems.push(format!("{side} reused request id {id}"));
                    }
                    let n = cell.wire.responses_to(m).len();
                    if n == 0 && withdrawn(cell.wire, m) {
                        // Cancellation is cooperative: a peer that ignores `$/cancel_request`
                        // answers late, and the sender may have hung up by then.
                        unanswered_withdrawn += 1;
                    } else if n != 1 {
                        problems.push(format!("{side}'s {method} (id {id}) got {n} responses"));
                    }
                }
                Kind::Result { .. } | Kind::Error { .. } => {
                    let null_id = m.id() == Some(&Value::Null);
                    if !null_id && cell.wire.request_of(m).is_none() {
                        problems.push(format!("{side} answered an id nobody used: {}", m.raw));
                    }
                }
                _ => {}
            }
        }
    }
    let first_ids: Vec<String> = [Side::Client, Side::Agent]
        .iter()
        .filter_map(|side| {
            cell.wire.from(*side).find_map(|m| {
                matches!(m.kind, Kind::Request { .. }).then(|| {
                    format!(
                        "{side} ids start at {}",
                        m.id().cloned().unwrap_or_default()
                    )
                })
            })
        })
        .collect();
    let late = if unanswered_withdrawn > 0 {
        format!(
            " ({unanswered_withdrawn} withdrawn with $/cancel_request went unanswered before the connection closed)"
        )
    } else {
        String::new()
    };
    let seen = format!(
        "{requests} requests, each answered once{late}, ids unique per direction ({})",
        first_ids.join(", ")
    );
    Check::new("one-response-per-request", problems, seen)
}

/// Whether the sender of `request` withdrew it with `$/cancel_request`.
fn withdrawn(wire: &Wire, request: &Message) -> bool {
    let id = request.id();
    wire.notifications(request.from, "$/cancel_request")
        .any(|c| c.seq > request.seq && Some(&c.params()["requestId"]) == id)
}

pub(super) fn handshake(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let first = cell.wire.messages.first();
    if first.and_then(Message::method) != Some("initialize")
        || first.map(|m| m.from) != Some(Side::Client)
    {
        problems.push("the first message is not the client's initialize".into());
    }
    let inits: Vec<&Message> = cell.wire.requests(Side::Client, "initialize").collect();
    let asked = |m: &Message| m.params()["protocolVersion"].clone();
    let answered = |m: &Message| {
        cell.wire
            .response_to(m)
            .map(|r| r.result()["protocolVersion"].clone())
    };
    // A client speaking v2 and v1 (ours, `acp_client::v2::Offer::both`) offers 2 first; a v1
    // agent answers 1 and the client starts v1's own handshake with a second initialize.
    let fallback = match inits.as_slice() {
        [offer, v1] if asked(offer) == 2 => {
            if answered(offer) != Some(Value::from(1)) {
                problems.push(format!(
                    "the v2 offer was answered protocolVersion {:?}, yet a v1 initialize followed",
                    answered(offer)
                ));
            }
            Some(*v1)
        }
        _ => None,
    };
    let init = fallback.or(first);
    let version = init.and_then(answered);
    if init.map(asked) != Some(Value::from(1)) {
        problems.push("initialize did not ask for protocolVersion 1".into());
    }
    if version != Some(Value::from(1)) {
        problems.push(format!("initialize answered protocolVersion {version:?}"));
    }
    let initialized = events(cell.client_events, "initialized").next();
    if initialized.map(|e| &e["protocolVersion"]) != Some(&Value::from(1)) {
        problems.push("the client did not report protocol version 1".into());
    }
    let seen = if fallback.is_some() {
        "initialize: version 2 offered and answered 1, then version 1 asked and answered"
    } else {
        "initialize: version 1 asked and answered"
    };
    Check::new("handshake", problems, seen.into())
}
