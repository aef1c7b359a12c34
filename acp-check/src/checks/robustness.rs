//! Bad input: an unknown method, wrong params, a line that is not JSON; and the round trip
//! of a request any agent can answer at once.
//!
//! The requests here are wrong on purpose, so their params are written as raw JSON rather
//! than built with the acp-types constructors (which cannot build them): a method that does
//! not exist has no params type, wrongly typed params cannot be built, and a malformed line is
//! bytes. `xtask`'s tidy scan covers this file; none of it decodes JSON into a protocol value.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::run::{Run, agent_lines_since, broke};
use crate::report::{Outcome, millis};
use crate::wire::{Kind, NoReply};

/// A method no agent serves (not an extension: those start with `_`).
const UNKNOWN_METHOD: &str = "acp_check/no_such_method";
/// A line cut off in the middle of a message.
const MALFORMED: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

pub(crate) async fn run(run: &mut Run<'_>) {
    if run.wants(&["robustness.unknown_method", "timing.round_trip"]) {
        unknown_method(run).await;
    }
    if run.wants(&["robustness.invalid_params"]) {
        let started = Instant::now();
        let outcome = invalid_params(run).await;
        run.record("robustness.invalid_params", started, outcome);
    }
    if run.wants(&["robustness.malformed_line"]) {
        let started = Instant::now();
        let outcome = malformed_line(run).await;
        run.record("robustness.malformed_line", started, outcome);
    }
}

/// `robustness.unknown_method` and `timing.round_trip` (three unknown-method calls: the
/// cheapest answer an agent gives).
async fn unknown_method(run: &mut Run<'_>) {
    let started = Instant::now();
    let conn = match run.ready().await {
        Ok(conn) => conn,
        Err(e) => {
            run.record(
                "robustness.unknown_method",
                started,
                Outcome::skip(e.clone()),
            );
            run.record("timing.round_trip", started, Outcome::skip(e));
            return;
        }
    };
    let mut times = Vec::new();
    let mut first = None;
    for _ in 0..3 {
        // Raw on purpose: the unknown method has no params type.
        let reply = run.call(&conn, UNKNOWN_METHOD, json!({})).await;
        if let Ok(r) = &reply {
            times.push(r.elapsed);
        }
        let failed = reply.is_err();
        first.get_or_insert(reply);
        if failed {
            break;
        }
    }
    let outcome = match first {
        Some(Ok(r)) => match r.error() {
            Some((-32601, _)) => Outcome::pass("-32601"),
            _ => Outcome::fail(format!(
                "`{UNKNOWN_METHOD}` got {} (expected error -32601)",
                r.describe()
            )),
        },
        Some(Err(e)) => Outcome::fail(format!("`{UNKNOWN_METHOD}`: {e}")),
        None => Outcome::fail("no request was sent"),
    };
    run.record("robustness.unknown_method", started, outcome);
    times.sort();
    let bound = run.options.bounds.round_trip;
    let outcome = match times.get(times.len() / 2) {
        Some(median) if times.len() == 3 => super::run::within(
            *median,
            bound,
            &format!("median of 3, {} us", median.as_micros()),
        ),
        _ => Outcome::skip("fewer than 3 answers to time"),
    };
    let ms = times.get(times.len() / 2).map_or(0, |m| millis(*m));
    run.record_ms("timing.round_trip", ms, outcome);
}

async fn invalid_params(run: &mut Run<'_>) -> Outcome {
    let conn = match run.ready().await {
        Ok(conn) => conn,
        Err(e) => return Outcome::skip(e),
    };
    // `cwd` must be a string and `mcpServers` a list: wrong on purpose, so raw JSON.
    let reply = run
        .call(
            &conn,
            "session/new",
            json!({"cwd": 42, "mcpServers": "none"}),
        )
        .await;
    match reply {
        Ok(r) => match r.error() {
            Some((-32602, _)) => Outcome::pass("-32602"),
            _ => Outcome::fail(format!(
                "session/new with a number for cwd got {} (expected error -32602)",
                r.describe()
            )),
        },
        Err(e) => Outcome::fail(format!("session/new with wrong params: {e}")),
    }
}

async fn malformed_line(run: &mut Run<'_>) -> Outcome {
    let conn = match run.ready().await {
        Ok(conn) => conn,
        Err(e) => return Outcome::skip(e),
    };
    let mark = conn.wire.mark();
    if let Err(e) = conn.wire.send_line(MALFORMED.to_vec()).await {
        return Outcome::fail(format!("could not send the line: {e}"));
    }
    let bound = run.options.bounds.check;
    let until = Instant::now() + bound;
    let answer = loop {
        let found = agent_lines_since(&conn, mark).into_iter().find(|e| {
            matches!(
                &e.kind,
                Kind::Response {
                    id: Value::Null,
                    ..
                }
            )
        });
        if found.is_some() || Instant::now() >= until || conn.wire.is_closed() {
            break found;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let problem = match &answer {
        Some(e) => match &e.kind {
            Kind::Response {
                error: Some(-32700),
                ..
            } => None,
            _ => Some(format!(
                "the answer to `{}` was {} (expected error -32700 with id null)",
                String::from_utf8_lossy(MALFORMED),
                e.evidence()
            )),
        },
        None if conn.wire.is_closed() => Some(format!(
            "the agent closed the connection after `{}`",
            String::from_utf8_lossy(MALFORMED)
        )),
        None => {
            broke(&conn, &NoReply::Timeout(bound));
            Some(format!(
                "no answer with id null within {} ms to `{}`",
                millis(bound),
                String::from_utf8_lossy(MALFORMED)
            ))
        }
    };
    // Still serving? Any answer to a well-formed request will do (raw: no params type).
    let reply = run.call(&conn, UNKNOWN_METHOD, json!({})).await;
    match (problem, reply) {
        (Some(problem), _) => Outcome::fail(problem),
        (None, Ok(_)) => Outcome::pass("-32700 with id null, and the next request was answered"),
        (None, Err(e)) => Outcome::fail(format!("answered -32700, then the next request: {e}")),
    }
}
