//! The checks of draft protocol v2: the handshake (and the version negotiation of a run that
//! pins none), sessions and a prompt's work as `state_update`s tell it, upsert ids and patch
//! semantics, custom values, idempotency keys, the session baseline (`session/list`,
//! `session/resume`, `session/close`), MCP servers on `session/new`, and cancellation (of the
//! work, and of one tool call). The JSON-RPC robustness
//! checks, the schema check (against v2's types) and the timing of the handshake and a round
//! trip are v1's own ([`super::robustness`], [`super::wide`]), run on a v2 connection.
//!
//! The kit's v2 client ([`crate::client::CheckClientV2`]) keeps every `session/update`
//! whole, in arrival order; the checks read them from there, and the wire log (numbered
//! lines of both directions) for what the kit and the agent sent each other.

mod handshake;
mod sessions;
mod turn;
mod upserts;

pub(crate) use handshake::{Answer, offer};

use super::run::Run;
use crate::client::Update;
use crate::report::Report;

/// Every v2 check, after the handshake (made here unless [`offer`] made it: `handshaken`).
pub(crate) async fn all(mut run: Run<'_>, handshaken: bool) -> Report {
    run.protocol = 2;
    if !handshaken {
        handshake::initialize(&mut run, true).await;
    }
    if let Some(stop) = run.stopping() {
        return run.stop(stop).await;
    }
    handshake::unsupported_version(&mut run).await;
    let mut sessions = Vec::new();
    if let Some((started, conn, turns)) = turn::run(&mut run, &mut sessions).await {
        upserts::grade(&mut run, started, &conn, &turns);
    }
    upserts::custom_values(&mut run).await;
    upserts::idempotency(&mut run).await;
    sessions::baseline(&mut run).await;
    sessions::mcp(&mut run).await;
    turn::cancel(&mut run).await;
    turn::tool_call_cancel(&mut run).await;
    super::robustness::run(&mut run).await;
    run.retire().await;
    super::wide::run(&mut run);
    run.report()
}

/// Whether `update` is the `idle` state of `session`.
pub(crate) fn is_idle(update: &Update, session: &str) -> bool {
    update.session == session
        && update.kind() == "state_update"
        && update.field("state") == Some("idle")
}
