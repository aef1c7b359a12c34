//! Reading what came back: an answer's outcome and session id, the updates among the
//! agent's lines, and a measured time against its bound.

use std::time::Duration;

use serde_json::Value;

use crate::report::{Outcome, millis};
use crate::wire::{Entry, Kind, NoReply, Reply, is_turn_content};

/// A measured time against its bound: `N ms (note), bound B ms`, or a timing miss `...,
/// over the bound`.
pub(crate) fn within(measured: Duration, bound: Duration, note: &str) -> Outcome {
    let note = if note.is_empty() {
        String::new()
    } else {
        format!(" ({note})")
    };
    let text = format!("{} ms{note}", millis(measured));
    if measured <= bound {
        Outcome::pass(format!("{text}, bound {} ms", millis(bound)))
    } else {
        Outcome::timing_miss(format!("{text}, over the bound of {} ms", millis(bound)))
    }
}

/// Serializes a request built with the acp-types constructors.
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The `sessionId` of a `session/new` answer.
pub(crate) fn session_id(reply: &Reply) -> Option<String> {
    reply
        .result()?
        .get("sessionId")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Whether `entry` is a `session/update` carrying turn content.
pub(crate) fn carries_turn_content(entry: &Entry) -> bool {
    match &entry.kind {
        Kind::Notification { update, .. } => is_turn_content(update.as_deref()),
        _ => false,
    }
}

/// `session/update`s in `lines`, with their session ids.
pub(crate) fn updates(lines: &[Entry]) -> impl Iterator<Item = (&Entry, Option<&str>)> {
    lines.iter().filter_map(|e| match &e.kind {
        Kind::Notification {
            method, session, ..
        } if method == "session/update" => Some((e, session.as_deref())),
        _ => None,
    })
}

/// A describe for a call that got no answer or an answer.
pub(crate) fn outcome_of(reply: &Result<Reply, NoReply>) -> String {
    match reply {
        Ok(reply) => reply.describe(),
        Err(e) => e.to_string(),
    }
}
