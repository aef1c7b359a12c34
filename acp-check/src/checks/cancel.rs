//! Cancellation: `session/cancel` ends a turn with `cancelled`, `$/cancel_request` gets the
//! request answered, each within the cancel bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_types::v1::{CancelNotification, CancelRequestNotification, PromptRequest};
use serde_json::Value;

use super::{Conn, Run, broke, first_sign, to_value};
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

async fn cancel_request(run: &mut Run<'_>) -> Outcome {
    let text = run.options.script.hold.clone();
    let Started { conn, id, rx, .. } = match start_turn(run, &text).await {
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
    let reply = conn.wire.wait(id, rx, run.options.bounds.cancel).await;
    let after = millis(cancelled_at.elapsed());
    match reply {
        Ok(r) => Outcome::pass(format!(
            "answered with {} {after} ms after $/cancel_request",
            r.describe()
        )),
        Err(e) => {
            broke(&conn, &e);
            Outcome::fail(format!("the prompt whose request was cancelled: {e}"))
        }
    }
}
