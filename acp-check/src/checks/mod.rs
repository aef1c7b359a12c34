//! The checks, one module per part of the protocol, and the run that drives them.
//!
//! A run keeps one initialized connection (one agent) for as long as it behaves and starts a
//! fresh one when a check needs a blank agent (the handshake) or when the last one stopped
//! answering: every step waits at most its bound, and a step that timed out marks its agent
//! broken, so a hung agent costs one check's bound and the next check starts clean.
//! Findings that concern every message (schema, stdout, what was asked of the client, order,
//! file timings) are made as lines pass ([`crate::wire`]) and graded at the end ([`wide`]).

mod cancel;
mod capabilities;
mod catalog;
mod handshake;
mod prompt;
mod robustness;
mod run;
mod sessions;
mod wide;

pub use catalog::{CHECKS, CheckInfo};
pub(crate) use run::{Run, write_megabyte};

use crate::report::Report;

/// Runs every selected check of `run`, in the order they run, and reports them.
pub(crate) async fn all(mut run: Run<'_>) -> Report {
    handshake::unsupported_version(&mut run).await;
    handshake::run(&mut run).await;
    if let Some(reason) = run.stopping() {
        return run.stop(reason).await;
    }
    sessions::new(&mut run).await;
    prompt::run(&mut run).await;
    sessions::separate(&mut run).await;
    sessions::unknown_id(&mut run).await;
    capabilities::run(&mut run).await;
    sessions::load(&mut run).await;
    cancel::run(&mut run).await;
    robustness::run(&mut run).await;
    capabilities::write_not_offered(&mut run).await;
    run.retire().await;
    wide::run(&mut run);
    run.report()
}
