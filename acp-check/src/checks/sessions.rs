//! Sessions: creation (and its time), unknown ids, two sessions side by side, loading.

use std::time::Instant;

use acp_types::v1::{LoadSessionRequest, PromptRequest};

use super::run::{GRACE, Run, agent_lines_since, outcome_of, session_id, to_value, updates};
use crate::report::Outcome;
use crate::wire::Kind;

/// A session id no agent gave out.
const UNKNOWN_SESSION: &str = "acp-check-no-such-session";

/// `sessions.new` and `timing.session_new`.
pub(crate) async fn new(run: &mut Run<'_>) {
    let started = Instant::now();
    let conn = match run.ready().await {
        Ok(conn) => conn,
        Err(e) => {
            run.record("sessions.new", started, Outcome::skip(e.clone()));
            run.record("timing.session_new", started, Outcome::skip(e));
            return;
        }
    };
    let reply = match run.new_session_authenticated(&conn).await {
        Ok(reply) => reply,
        Err(e) => {
            run.record("sessions.new", started, Outcome::skip(e.clone()));
            run.record("timing.session_new", started, Outcome::skip(e));
            return;
        }
    };
    let bound = run.options.bounds.session_new;
    run.record_timing("timing.session_new", started, &reply, bound);
    let outcome = match reply.as_ref().ok().and_then(session_id) {
        Some(id) => {
            let result = reply
                .as_ref()
                .ok()
                .and_then(|r| r.result().cloned())
                .unwrap_or_default();
            *crate::wire::lock(&conn.session) = Some((id.clone(), result));
            Outcome::pass(format!("session {id}"))
        }
        None => Outcome::fail(format!("no session id: {}", outcome_of(&reply))),
    };
    run.record("sessions.new", started, outcome);
}

/// `sessions.separate`: a second session, a turn in it, nothing for the first.
pub(crate) async fn separate(run: &mut Run<'_>) {
    const NAME: &str = "sessions.separate";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let (conn, first) = match run.session().await {
        Ok(s) => s,
        Err(e) => {
            return run.record(
                NAME,
                started,
                Outcome::skip(format!("no first session: {e}")),
            );
        }
    };
    let reply = run.new_session(&conn).await;
    let Some(second) = reply.as_ref().ok().and_then(session_id) else {
        return run.record(
            NAME,
            started,
            Outcome::skip(format!("no second session: {}", outcome_of(&reply))),
        );
    };
    if second == first {
        return run.record(
            NAME,
            started,
            Outcome::fail(format!("both sessions got the id {first}")),
        );
    }
    let text = run.options.script.prompts[0].clone();
    let turn = super::prompt::turn(run, &conn, &second, &text).await;
    let stray = updates(&turn.during)
        .chain(updates(&turn.after))
        .find(|(_, id)| *id != Some(second.as_str()))
        .map(|(e, _)| e.evidence());
    let outcome = match (stray, &turn.reply) {
        (Some(line), _) => Outcome::fail(format!(
            "during a turn of session {second}, an update for another session ({first} is the first): {line}"
        )),
        (None, Ok(_)) => Outcome::pass(format!(
            "{first} and {second}: the turn in {second} sent updates to it alone"
        )),
        (None, Err(_)) => Outcome::skip(format!(
            "the turn in the second session: {}",
            super::prompt::describe(&turn)
        )),
    };
    run.record(NAME, started, outcome);
}

/// `sessions.unknown_id`: a prompt for a session that does not exist.
pub(crate) async fn unknown_id(run: &mut Run<'_>) {
    const NAME: &str = "sessions.unknown_id";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let conn = match run.ready().await {
        Ok(conn) => conn,
        Err(e) => return run.record(NAME, started, Outcome::skip(e)),
    };
    conn.wire.know_session(UNKNOWN_SESSION);
    let mark = conn.wire.mark();
    let request = PromptRequest::new(UNKNOWN_SESSION, ["hello".into()]);
    let reply = run.call(&conn, "session/prompt", to_value(&request)).await;
    // Refused means refused at once: no work done in the session that does not exist.
    let worked = agent_lines_since(&conn, mark)
        .into_iter()
        .find(|e| match &e.kind {
            Kind::Request { session, .. } | Kind::Notification { session, .. } => {
                session.as_deref() == Some(UNKNOWN_SESSION)
            }
            _ => false,
        });
    let outcome = match &reply {
        Ok(r) if worked.is_some() => Outcome::fail(format!(
            "a prompt for session `{UNKNOWN_SESSION}` (never given out) was worked on before it ended with {}: {}",
            r.describe(),
            worked.map(|e| e.evidence()).unwrap_or_default()
        )),
        Ok(r) => match r.error() {
            Some((-32002, _)) => Outcome::pass("refused with -32002 (resource not found)"),
            Some(_) => Outcome::pass(format!("refused with {}", r.describe())),
            None => Outcome::fail(format!(
                "a prompt for session `{UNKNOWN_SESSION}` was answered with {}",
                r.describe()
            )),
        },
        Err(e) => Outcome::fail(format!("a prompt for an unknown session: {e}")),
    };
    run.record(NAME, started, outcome);
}

/// `sessions.load`: with `loadSession`, the history comes before the answer.
pub(crate) async fn load(run: &mut Run<'_>) {
    const NAME: &str = "sessions.load";
    if !run.wants(&[NAME]) {
        return;
    }
    let started = Instant::now();
    let (conn, session) = match run.session().await {
        Ok(s) => s,
        Err(e) => return run.record(NAME, started, Outcome::skip(format!("no session: {e}"))),
    };
    if conn.advertises(&["loadSession"]).is_none() {
        return run.record(NAME, started, Outcome::skip("loadSession not advertised"));
    }
    // Something to replay: a turn, unless the session already has updates.
    let history = updates(&agent_lines_since(&conn, 0)).any(|(_, id)| id == Some(session.as_str()));
    if !history {
        let text = run.options.script.prompts[0].clone();
        super::prompt::turn(run, &conn, &session, &text).await;
    }
    let mark = conn.wire.mark();
    let request = LoadSessionRequest::new([], run.cwd(), session.as_str());
    let reply = run.call(&conn, "session/load", to_value(&request)).await;
    let reply = match reply {
        Ok(r) if r.error().is_none() => r,
        other => {
            return run.record(
                NAME,
                started,
                Outcome::fail(format!("session/load of {session}: {}", outcome_of(&other))),
            );
        }
    };
    tokio::time::sleep(GRACE).await;
    let lines = agent_lines_since(&conn, mark);
    let before = updates(&lines)
        .filter(|(e, id)| e.seq < reply.seq && *id == Some(session.as_str()))
        .count();
    // Session metadata (commands, a title...) may come at any time; replayed content may not.
    let late = updates(&lines)
        .find(|(e, _)| e.seq > reply.seq && super::run::carries_turn_content(e))
        .map(|(e, _)| e.evidence());
    let outcome = match late {
        Some(line) => Outcome::fail(format!(
            "turn content after the session/load answer: {line}"
        )),
        None if before == 0 => Outcome::fail(format!(
            "session/load of {session} (which had prompt turns) replayed nothing before its answer"
        )),
        None => Outcome::pass(format!("{before} updates replayed before the answer")),
    };
    run.record(NAME, started, outcome);
}
