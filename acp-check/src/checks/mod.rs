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
mod replies;
mod robustness;
mod run;
mod sessions;
mod support;
mod v2;
mod wide;

pub use catalog::{CHECKS, CheckInfo};
pub(crate) use run::{Run, write_megabyte};

use crate::report::Report;

/// Runs every selected check of `run` on the version [`crate::Options::protocol`] asks for
/// (offering v2 and falling back to v1 when it asks for none), in the order they run, and
/// reports them.
pub(crate) async fn all(mut run: Run<'_>) -> Report {
    match run.options.protocol {
        Some(1) => v1(run).await,
        Some(_) => v2::all(run, false).await,
        None => match v2::offer(&mut run).await {
            v2::Answer::V2 => match run.options.selects_some(2) {
                Ok(()) => v2::all(run, true).await,
                Err(why) => run.refuse(2, why).await,
            },
            v2::Answer::Other(note) => {
                run.protocol = 1;
                run.protocol_note = note;
                match run.options.selects_some(1) {
                    Ok(()) => v1(run).await,
                    Err(why) => run.refuse(1, why).await,
                }
            }
        },
    }
}

/// Every v1 check.
async fn v1(mut run: Run<'_>) -> Report {
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
