//! Cancellation: `session/cancel` ends a turn with `cancelled`, `$/cancel_request` gets the
//! request answered, each within the cancel bound.

use std::time::{Duration, Instant};

use acp_types::v1::{CancelNotification, CancelRequestNotification, PromptRequest};
use serde_json::Value;

use super::{Run, broke, first_sign, to_value};
use crate::client::Permissions;
use crate::report::{Outcome, millis};

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

async fn session_cancel(run: &mut Run<'_>) -> Outcome {
    let (conn, session) = match run.session().await {
        Ok(s) => s,
        Err(e) => return Outcome::skip(format!("no session: {e}")),
    };
    run.client.permissions(Permissions::Hold);
    let mark = conn.wire.mark();
    let request = PromptRequest::new(
        session.as_str(),
        [run.options.script.cancel.as_str().into()],
    );
    let (id, rx) = match conn
        .wire
        .send_request("session/prompt", to_value(&request))
        .await
    {
        Ok(sent) => sent,
        Err(e) => return Outcome::fail(format!("could not send the prompt: {e}")),
    };
    first_sign(&conn, mark, START).await;
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
                "stopReason cancelled {after} ms after session/cancel"
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
    let (conn, session) = match run.session().await {
        Ok(s) => s,
        Err(e) => return Outcome::skip(format!("no session: {e}")),
    };
    let mark = conn.wire.mark();
    let request = PromptRequest::new(session.as_str(), [run.options.script.hold.as_str().into()]);
    let (id, rx) = match conn
        .wire
        .send_request("session/prompt", to_value(&request))
        .await
    {
        Ok(sent) => sent,
        Err(e) => return Outcome::fail(format!("could not send the prompt: {e}")),
    };
    first_sign(&conn, mark, START).await;
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
