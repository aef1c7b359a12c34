//! The assertions of a cell, made on what crossed the wire (the tap's transcript) and on what
//! each side says it received (the client's events, the agent's report), never on exit codes
//! alone. Where the official SDKs differ from each other (a missing `$/cancel_request`, update
//! kinds an older schema lacks), the expectation is per SDK ([`Sdk`]) and documented there.
//!
//! `cell` holds what every assertion reads; the assertions are grouped by topic; [`v2`] holds
//! those of the cells that settle on protocol v2.

mod cell;
mod client_methods;
mod conduct;
mod errors;
mod sessions;
mod turns;
pub mod v2;

pub use cell::{CellRun, Check, Sdk, bad_call_messages};

use client_methods::{files, permissions, terminal};
use conduct::{exits, framing, handshake, one_response_each};
use errors::{errors_from_agent, errors_from_client};
use sessions::{cancel_request, session_cancel, session_load};
use turns::{prompt_blocks, updates_delivered, updates_sent};

/// Runs every assertion of a cell.
pub fn run(cell: &CellRun<'_>) -> Vec<Check> {
    vec![
        exits(cell),
        framing(cell),
        one_response_each(cell),
        handshake(cell),
        prompt_blocks(cell),
        updates_sent(cell),
        updates_delivered(cell),
        permissions(cell),
        files(cell),
        terminal(cell),
        errors_from_agent(cell),
        errors_from_client(cell),
        session_cancel(cell),
        cancel_request(cell),
        session_load(cell),
    ]
}
