//! Initialization: the version answer, an unsupported version, authentication methods and
//! what an agent that needs authentication refuses before it.

use std::collections::HashSet;
use std::time::Instant;

use serde_json::Value;

use super::run::{Run, outcome_of};
use crate::report::Outcome;
use crate::wire::NoReply;

/// A version no agent speaks (the largest the field holds).
const UNSUPPORTED: u16 = u16::MAX;

/// `handshake.unsupported_version`, on an agent of its own (the offer is its first message).
pub(crate) async fn unsupported_version(run: &mut Run<'_>) {
    const NAME: &str = "handshake.unsupported_version";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let conn = match run.fresh().await {
        Ok(conn) => conn,
        Err(e) => {
            return run.record(
                NAME,
                started,
                Outcome::fail(format!("cannot start the agent: {e}")),
            );
        }
    };
    let reply = run.initialize(&conn, UNSUPPORTED).await;
    let outcome = match &reply {
        Ok(r) => match r.result().map(|res| res.get("protocolVersion")) {
            Some(Some(Value::Number(v)))
                if v.as_u64().is_some_and(|v| v < u64::from(UNSUPPORTED)) =>
            {
                Outcome::pass(format!(
                    "offered {UNSUPPORTED}, answered with its version {v}"
                ))
            }
            Some(v) => Outcome::fail(format!(
                "offered {UNSUPPORTED}, answered with protocolVersion {} (expected the agent's latest, an integer it speaks)",
                v.map(Value::to_string).unwrap_or_else(|| "missing".into())
            )),
            None => Outcome::fail(format!(
                "offered {UNSUPPORTED}, got {} instead of the agent's latest version",
                r.describe()
            )),
        },
        Err(NoReply::Closed) => match conn.exit().await {
            Some(exit) => Outcome::fail(format!(
                "offered {UNSUPPORTED}: the agent exited before answering ({})",
                exit.status
            )),
            None => Outcome::fail(format!("offered {UNSUPPORTED}: {}", NoReply::Closed)),
        },
        Err(e) => Outcome::fail(format!("offered {UNSUPPORTED}: {e}")),
    };
    run.record(NAME, started, outcome);
    run.retire().await;
}

/// `handshake.initialize`, `timing.handshake`, `handshake.auth_methods`,
/// `handshake.auth_required`, on the agent the following checks use.
pub(crate) async fn run(run: &mut Run<'_>) {
    let started = Instant::now();
    let conn = match run.fresh().await {
        Ok(conn) => conn,
        Err(e) => {
            let why = format!("cannot start the agent: {e}");
            run.record("handshake.initialize", started, Outcome::fail(why.clone()));
            run.record("timing.handshake", started, Outcome::skip(why));
            return;
        }
    };
    let reply = run.initialize(&conn, 1).await;
    // An agent that exited before answering (a missing key, a bad flag): nothing else can
    // run. Say how it exited, once, and stop.
    if let Err(NoReply::Closed) = &reply
        && let Some(exit) = conn.exit().await
    {
        run.record(
            "handshake.initialize",
            started,
            Outcome::fail(format!(
                "the agent exited before answering ({})",
                exit.status
            )),
        );
        run.stop_after(exit.before_initialize());
        return;
    }
    let bound = run.options.bounds.handshake;
    run.record_timing("timing.handshake", started, &reply, bound);
    let result = reply.as_ref().ok().and_then(|r| r.result().cloned());
    let outcome = match (&reply, &result) {
        (Ok(_), Some(result)) => match result.get("protocolVersion") {
            Some(v) if v.as_u64() == Some(1) => Outcome::pass("protocolVersion 1"),
            v => Outcome::fail(format!(
                "offered 1, answered protocolVersion {}",
                v.map(Value::to_string).unwrap_or_else(|| "missing".into())
            )),
        },
        _ => Outcome::fail(outcome_of(&reply)),
    };
    if let Err(e) = &reply {
        run.dead(format!("the agent did not answer `initialize`: {e}"));
    }
    let initialized = outcome.is_pass();
    run.record("handshake.initialize", started, outcome);
    let Some(result) = result.filter(|_| initialized) else {
        let why = "`initialize` did not succeed";
        run.record("handshake.auth_methods", started, Outcome::skip(why));
        run.record("handshake.auth_required", started, Outcome::skip(why));
        return;
    };
    *crate::wire::lock(&conn.init) = Some(result.clone());

    let started = Instant::now();
    let methods = result.get("authMethods").cloned().unwrap_or(Value::Null);
    let outcome = auth_methods(&methods);
    run.record("handshake.auth_methods", started, outcome);

    let started = Instant::now();
    let advertised = methods.as_array().is_some_and(|m| !m.is_empty());
    if !advertised {
        run.record(
            "handshake.auth_required",
            started,
            Outcome::skip("no authMethods advertised"),
        );
        return;
    }
    if !run.wants(&["handshake.auth_required"]) {
        return;
    }
    let reply = run.new_session(&conn).await;
    let outcome = match &reply {
        Ok(r) => match r.error() {
            None => {
                Outcome::pass("session/new works before authenticate (authentication is optional)")
            }
            Some((-32000, _)) => Outcome::pass("session/new before authenticate: -32000"),
            Some(_) => Outcome::fail(format!(
                "session/new before authenticate: {} (expected -32000 auth_required)",
                r.describe()
            )),
        },
        Err(e) => Outcome::fail(format!("session/new before authenticate: {e}")),
    };
    if let Ok(r) = &reply {
        match super::run::session_id(r) {
            Some(id) => {
                *crate::wire::lock(&conn.session) =
                    Some((id, r.result().cloned().unwrap_or_default()));
            }
            // Refused: authenticate now, so the checks that follow get their sessions.
            None if r.error().is_some() => {
                if let Err(e) = run.authenticate(&conn).await {
                    tracing::debug!("{e}");
                }
            }
            None => {}
        }
    }
    run.record("handshake.auth_required", started, outcome);
}

fn auth_methods(methods: &Value) -> Outcome {
    let list = match methods {
        Value::Null => return Outcome::pass("none advertised"),
        Value::Array(list) => list,
        other => return Outcome::fail(format!("authMethods is not a list: {other}")),
    };
    let mut ids = HashSet::new();
    for m in list {
        let id = m.get("id").and_then(Value::as_str).unwrap_or("");
        let name = m.get("name").and_then(Value::as_str).unwrap_or("");
        if id.is_empty() || name.is_empty() {
            return Outcome::fail(format!("an auth method without an id or a name: {m}"));
        }
        if !ids.insert(id) {
            return Outcome::fail(format!("auth method id `{id}` is listed twice"));
        }
    }
    Outcome::pass(format!("{} advertised", list.len()))
}
