//! Cancellation: `session/cancel` ends a turn with `cancelled`, `$/cancel_request` gets the
//! request answered (with -32800 or its normal result; it is optional), each within the
//! cancel bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_types::v1::{CancelNotification, CancelRequestNotification, PromptRequest};
use serde_json::Value;

use super::run::{Conn, Run, agent_lines_since, broke, to_value};
use crate::client::Permissions;
use crate::report::{Outcome, millis};
use crate::wire::Reply;

/// How long the kit waits for a turn to show it started before cancelling anyway.
const START: Duration = Duration::from_secs(1);

pub(crate) async fn run(run: &mut Run<'_>) {
    if run.wants(&["cancel.session_cancel"]) {
        let started = Instant::now();
        let outcome = session_cancel(run).await;
        run.client.permissions(Permissions::Allow);
        run.record("cancel.session_cancel", started, outcome);
    }
    if run.wants(&["cancel.cancel_request"]) {
        let started = Instant::now();
        let outcome = cancel_request(run).await;
        run.record("cancel.cancel_request", started, outcome);
    }
}

/// A turn under way: the prompt's request, sent, and the agent seen starting on it.
struct Started {
    conn: Arc<Conn>,
    session: String,
    id: i64,
    rx: tokio::sync::oneshot::Receiver<Reply>,
}

/// Starts a turn with `text` in the run's session and waits until the agent shows it started
/// (or [`START`] passed).
async fn start_turn(run: &mut Run<'_>, text: &str) -> Result<Started, Outcome> {
    let (conn, session) = run
        .session()
        .await
        .map_err(|e| Outcome::skip(format!("no session: {e}")))?;
    let mark = conn.wire.mark();
    let request = PromptRequest::new(session.as_str(), [text.into()]);
    let (id, rx) = conn
        .wire
        .send_request("session/prompt", to_value(&request))
        .await
        .map_err(|e| Outcome::fail(format!("could not send the prompt: {e}")))?;
    first_sign(&conn, mark, START).await;
    Ok(Started {
        conn,
        session,
        id,
        rx,
    })
}

async fn session_cancel(run: &mut Run<'_>) -> Outcome {
    run.client.permissions(Permissions::Hold);
    let answered_before = run.client.cancelled_permissions();
    let text = run.options.script.cancel.clone();
    let Started {
        conn,
        session,
        id,
        rx,
    } = match start_turn(run, &text).await {
        Ok(started) => started,
        Err(outcome) => return outcome,
    };
    let cancelled_at = Instant::now();
    if let Err(e) = conn
        .wire
        .notify(
            "session/cancel",
            to_value(&CancelNotification::new(session.as_str())),
        )
        .await
    {
        return Outcome::fail(format!("could not send session/cancel: {e}"));
    }
    // Every permission request of the turn is answered `cancelled`, held ones included.
    run.client.permissions(Permissions::Cancelled);
    let bound = run.options.bounds.cancel;
    let reply = conn.wire.wait(id, rx, bound).await;
    let after = millis(cancelled_at.elapsed());
    match reply {
        Ok(r) => match r
            .result()
            .and_then(|res| res.get("stopReason"))
            .and_then(Value::as_str)
        {
            Some("cancelled") => Outcome::pass(format!(
                "stopReason cancelled {after} ms after session/cancel ({} permission requests answered `cancelled`)",
                run.client.cancelled_permissions() - answered_before
            )),
            _ => Outcome::fail(format!(
                "after session/cancel the turn ended with {} (expected stopReason cancelled)",
                r.describe()
            )),
        },
        Err(e) => {
            broke(&conn, &e);
            Outcome::fail(format!("after session/cancel: {e}"))
        }
    }
}

/// `cancel.cancel_request`. `$/cancel_request` is optional: an agent may answer the withdrawn
/// request with `-32800` or with its normal result (the turn's stop reason). An agent that
/// does not implement it keeps the turn going; after the bound the kit sends `session/cancel`,
/// and a turn that then ends is a skip with that reason. Anything else fails: another error,
/// a result that is not a prompt's, or no answer even after the `session/cancel`.
async fn cancel_request(run: &mut Run<'_>) -> Outcome {
    let text = run.options.script.hold.clone();
    let Started {
        conn,
        session,
        id,
        rx,
    } = match start_turn(run, &text).await {
        Ok(started) => started,
        Err(outcome) => return outcome,
    };
    let cancelled_at = Instant::now();
    let notice = CancelRequestNotification::new(id);
    if let Err(e) = conn
        .wire
        .notify("$/cancel_request", to_value(&notice))
        .await
    {
        return Outcome::fail(format!("could not send $/cancel_request: {e}"));
    }
    let bound = run.options.bounds.cancel;
    let (reply, rx) = match conn.wire.wait_keeping(rx, bound).await {
        Ok(reply) => (Some(reply), None),
        Err(rx) => (None, Some(rx)),
    };
    if let Some(reply) = reply {
        let after = millis(cancelled_at.elapsed());
        return match withdrawn_answer(&reply) {
            Answer::Cancelled(how) => Outcome::pass(format!(
                "answered with {how} {after} ms after $/cancel_request"
            )),
            Answer::Normal(stop) => Outcome::skip(format!(
                "the agent does not implement `$/cancel_request` (optional): it answered the withdrawn prompt with its normal result, stopReason {stop}, {after} ms later"
            )),
            Answer::Wrong => Outcome::fail(format!(
                "the withdrawn prompt was answered with {} (expected -32800 or the prompt's normal result)",
                reply.describe()
            )),
        };
    }
    // No answer within the bound: end the turn the way every agent must support.
    let Some(rx) = rx else {
        return Outcome::fail("no answer and no way to wait for one");
    };
    if let Err(e) = conn
        .wire
        .notify(
            "session/cancel",
            to_value(&CancelNotification::new(session.as_str())),
        )
        .await
    {
        return Outcome::fail(format!(
            "no answer within {} ms of $/cancel_request, and session/cancel could not be sent: {e}",
            millis(bound)
        ));
    }
    match conn.wire.wait(id, rx, bound).await {
        Ok(reply) => match withdrawn_answer(&reply) {
            Answer::Cancelled(how) | Answer::Normal(how) => Outcome::skip(format!(
                "the agent does not implement `$/cancel_request` (optional): no answer within {} ms of it; the turn ended ({how}) at the session/cancel sent after",
                millis(bound)
            )),
            Answer::Wrong => Outcome::fail(format!(
                "no answer within {} ms of $/cancel_request; after session/cancel the prompt was answered with {}",
                millis(bound),
                reply.describe()
            )),
        },
        Err(e) => {
            broke(&conn, &e);
            Outcome::fail(format!(
                "the prompt whose request was cancelled, then the session cancelled: {e}"
            ))
        }
    }
}

/// How a withdrawn prompt was answered.
enum Answer {
    /// `-32800`, or the turn stopped `cancelled`: the agent acted on the cancellation.
    Cancelled(String),
    /// The prompt's normal result with another stop reason (the agent ignored it).
    Normal(String),
    /// Anything else: another error, or a result without a stop reason.
    Wrong,
}

fn withdrawn_answer(reply: &Reply) -> Answer {
    if let Some((code, _)) = reply.error() {
        return if code == -32800 {
            Answer::Cancelled("-32800".into())
        } else {
            Answer::Wrong
        };
    }
    match reply
        .result()
        .and_then(|r| r.get("stopReason"))
        .and_then(Value::as_str)
    {
        Some("cancelled") => Answer::Cancelled("stopReason cancelled".into()),
        Some(stop) => Answer::Normal(stop.to_owned()),
        None => Answer::Wrong,
    }
}

/// Waits until the agent has sent something since `from` (or `max` passed).
pub(crate) async fn first_sign(conn: &Conn, from: u64, max: Duration) {
    let until = Instant::now() + max;
    while Instant::now() < until && !conn.wire.is_closed() {
        if !agent_lines_since(conn, from).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
