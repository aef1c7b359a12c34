//! v2's handshake: the version answer and `info`, a later version offered, and the
//! negotiation of a run that pins no version (offer 2, grade v1 when the agent answers 1).

use std::time::Instant;

use serde_json::Value;

use crate::checks::run::{Run, outcome_of};
use crate::report::Outcome;
use crate::wire::{NoReply, Reply, lock};

/// A version no agent speaks (the largest the field holds).
const LATER: u16 = u16::MAX;

/// What the agent made of the v2 offer.
pub(crate) enum Answer {
    /// It answered 2: the run grades v2 (the handshake is recorded, its agent kept).
    V2,
    /// Anything else: how the run came to grade v1 instead, for the report.
    Other(String),
}

/// The negotiation of a run that pins no version: offers 2 (`initialize` in v2's shape, as
/// `acp chat` and `acp_client::Builder::v2` do first) and grades v2 when the agent answers 2.
/// An answer of 1, an error or no answer leaves the run to v1 (whose own handshake checks
/// then say what went wrong, if anything).
pub(crate) async fn offer(run: &mut Run<'_>) -> Answer {
    initialize(run, false).await
}

/// `v2.handshake.initialize` and `timing.handshake` on a fresh agent offered 2, which the
/// following checks use. With `pinned` (`--protocol 2`) an answer other than 2 fails the
/// check and stops the run, naming both versions; without it, nothing is recorded and the
/// run goes on in v1 ([`Answer::Other`]).
pub(crate) async fn initialize(run: &mut Run<'_>, pinned: bool) -> Answer {
    const NAME: &str = "v2.handshake.initialize";
    let started = Instant::now();
    let conn = match run.fresh_for(2).await {
        Ok(conn) => conn,
        Err(e) => {
            let why = format!("cannot start the agent: {e}");
            if pinned {
                run.record(NAME, started, Outcome::fail(why.clone()));
                run.record("timing.handshake", started, Outcome::skip(why.clone()));
            }
            return Answer::Other(why);
        }
    };
    let reply = run.initialize_v2(&conn, 2).await;
    let version = reply
        .as_ref()
        .ok()
        .and_then(Reply::result)
        .and_then(|r| r.get("protocolVersion"))
        .cloned();
    if version.as_ref().and_then(Value::as_u64) == Some(2) {
        run.record_timing(
            "timing.handshake",
            started,
            &reply,
            run.options.bounds.handshake,
        );
        let result = reply
            .as_ref()
            .ok()
            .and_then(Reply::result)
            .cloned()
            .unwrap_or_default();
        run.record(NAME, started, info(&result));
        *lock(&conn.init) = Some(result);
        if !pinned {
            run.protocol_note = "offered 2 and 1, the agent answered 2".into();
        }
        return Answer::V2;
    }
    let answered = match (&reply, &version) {
        (_, Some(v)) => format!("answered protocol version {v}"),
        (Ok(r), None) => format!("answered {}", r.describe()),
        (Err(NoReply::Closed), None) => match conn.exit().await {
            Some(exit) => exit.before_initialize(),
            None => NoReply::Closed.to_string(),
        },
        (Err(e), None) => e.to_string(),
    };
    if !pinned {
        run.retire().await;
        return Answer::Other(format!(
            "offered 2 and 1, the agent {}",
            match &version {
                Some(v) => format!("answered {v}"),
                None => format!("did not take v2's `initialize` ({})", outcome_of(&reply)),
            }
        ));
    }
    let story = format!(
        "--protocol 2: offered protocol version 2 (only), the agent {answered}: it does not speak \
         v2 as acp check grades it (`--protocol 1` grades v1, or leave `--protocol` out to grade \
         the version the agent answers)"
    );
    run.record(NAME, started, Outcome::fail(story.clone()));
    run.record_timing(
        "timing.handshake",
        started,
        &reply,
        run.options.bounds.handshake,
    );
    let because = match &version {
        Some(v) => format!("offered protocol version 2, the agent answered {v}"),
        None => "the agent did not answer v2's `initialize`".into(),
    };
    run.stop_because(story, because);
    Answer::Other(String::new())
}

/// The `info` of an `initialize` answer: an object with a non-empty name and a version.
fn info(result: &Value) -> Outcome {
    let info = result.get("info");
    let name = info.and_then(|i| i.get("name")).and_then(Value::as_str);
    let version = info.and_then(|i| i.get("version")).and_then(Value::as_str);
    match (name, version) {
        (Some(name), Some(version)) if !name.is_empty() => {
            Outcome::pass(format!("protocolVersion 2, info {name} {version}"))
        }
        _ => Outcome::fail(format!(
            "protocolVersion 2, but `info` is not a name and a version: {}",
            info.map_or_else(|| "missing".into(), Value::to_string)
        )),
    }
}

/// `v2.handshake.unsupported_version`, on an agent of its own: v2's `initialize` offering a
/// later version must be answered with a version the agent speaks (the schema: "the highest
/// protocol version supported by the agent that is at or below the version requested").
pub(crate) async fn unsupported_version(run: &mut Run<'_>) {
    const NAME: &str = "v2.handshake.unsupported_version";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let conn = match run.fresh_for(2).await {
        Ok(conn) => conn,
        Err(e) => {
            let why = format!("cannot start the agent: {e}");
            return run.record(NAME, started, Outcome::fail(why));
        }
    };
    let reply = run.initialize_v2(&conn, LATER).await;
    let outcome = match &reply {
        Ok(r) => match r.result().map(|res| res.get("protocolVersion")) {
            Some(Some(Value::Number(v)))
                if v.as_u64()
                    .is_some_and(|v| (2..u64::from(LATER)).contains(&v)) =>
            {
                Outcome::pass(format!("offered {LATER}, answered with its version {v}"))
            }
            Some(v) => Outcome::fail(format!(
                "offered {LATER}, answered protocolVersion {} (expected the agent's latest, 2 or later, which it speaks)",
                v.map(Value::to_string).unwrap_or_else(|| "missing".into())
            )),
            None => Outcome::fail(format!(
                "offered {LATER}, got {} instead of the agent's latest version",
                r.describe()
            )),
        },
        Err(e) => Outcome::fail(format!("offered {LATER}: {e}")),
    };
    run.record(NAME, started, outcome);
    run.retire().await;
}
