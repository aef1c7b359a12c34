//! `acp-check`: a conformance kit that grades an Agent Client Protocol agent.
//!
//! It plays the editor: it starts the agent (a command as a child process, or an agent in
//! this process), speaks ACP v1 or draft v2 to it ([`Options::protocol`], `acp check
//! --protocol 1|2`; unpinned, it offers v2 and grades the version the agent answers, and
//! [`Report::protocol`] says which), and grades what it sees, check by check, as pass,
//! fail (with the evidence: the line, the code), skip (with the reason, e.g. a capability
//! the agent does not advertise) or timing miss (a timing check over its bound; counted apart
//! from protocol failures, see [`Report::timing_misses`], because a loaded machine misses
//! bounds a healthy agent meets). [`CHECKS`] lists every check and what passing
//! means; `acp check` (in `acp-cli`) prints the same report as a table or as JSON.
//!
//! ```no_run
//! # async fn demo() {
//! use acp_check::{Options, Target};
//!
//! let report = acp_check::run(&Target::command(["my-agent", "--acp"]), &Options::default()).await;
//! print!("{}", report.table(None));
//! assert!(!report.failed(), "{:?}", report.failures());
//! # }
//! ```
//!
//! An agent built with `acp-agent` can be graded in process from `cargo test`:
//! `Target::in_process(|r, w| { acp_agent::Builder::new(MyAgent::default()).io(r, w); })`.
//!
//! # Why a crate of its own
//!
//! The kit is a library first (agent authors run it from their own tests) and a command
//! second; neither `acp-client` (a client, not a judge of agents) nor `acp-cli` (a binary,
//! not published) is a place a library user could depend on for it. It sits on top of
//! `acp-client`: the kit's client is an `acp_client::Client` with the sandboxed file system
//! and the terminal manager of that crate, and agents are spawned with
//! `acp_client::process::AgentProcess`.
//!
//! # How it sees the wire
//!
//! The kit runs no JSON-RPC engine of its own: it talks to the agent through acp-rpc's, the
//! one its client (an `acp_client::ClientConnection`) runs on, and watches every line
//! through that engine's observer (its raw lines), where each is numbered and timed in one
//! order for both directions (the order checks like "no update after the answer" need).
//! The kit sends its own requests untyped, so it sees the exact answer (an error code, an
//! `id: null`), and a deliberately broken line goes out through the engine's raw-send escape
//! hatch (`acp_rpc::Peer::send_raw`). The agent's own requests go to the typed client. With
//! [`Options::trace`] every line is also handed to a sink; [`TraceEvent::record`] turns it
//! into the workspace's one wire record (`acp_rpc::record`), which `acp check --trace FILE`
//! writes and `acp trace view` reads.
//!
//! # Schema validation: through acp-types, not a JSON Schema validator
//!
//! Every message the agent sends is read with the generated types of `acp-types` of the
//! version graded (the v1 names below; v2's are `acp_types::v2`'s, on the kit's v2 client,
//! `acp_client::v2`) (by
//! method: `AgentRequest::decode`, `AgentNotification::decode`, and `AgentResponse::decode`
//! with the method of the request it answers), which are generated from `acp-schema`'s v1
//! schema, plus the JSON-RPC envelope (`"jsonrpc": "2.0"`, id types, an error with an
//! integer code and a message). That catches what breaks a real client: a missing required
//! field, a wrong type, a malformed union (an unknown content block shape, a tool call
//! without an id), an unknown method. It does not catch what the generated types accept on
//! purpose, as the official SDKs do: unknown fields are ignored, unknown enum values and
//! union variants are kept (so a stop reason outside the set reads fine here and is graded
//! by `prompt.stop_reason` instead), and an odd optional field falls back to its default.
//! Pattern and format constraints the types do not encode (URIs, date-times) are not
//! checked either. A JSON Schema validator crate would add those, at the cost of a large
//! dependency tree and of a second reading of the schema that can disagree with the one our
//! own client uses; grading against the types means "validates" here is exactly "our client
//! can read it". The interop suite validates our own output against the official schema
//! with a real validator (ajv) where strictness is the point.
//!
//! # Bounds
//!
//! Every wait is bounded ([`Bounds`]); a step that times out marks its agent broken and the
//! next check starts a fresh one, so a hung agent costs one check's bound, not the run.
//! The timing checks use the bounds of the OpenCode/Zed message-flow notes by default.

#![deny(missing_docs)]

mod checks;
mod client;
mod options;
mod report;
mod target;
mod text;
mod trace;
mod wire;

pub use checks::{CHECKS, CheckInfo};
pub use options::{Bounds, Offer, Options, PromptScript};
pub use report::{CheckResult, Outcome, Report, Stopped};
pub use target::{InProcess, Target};
pub use wire::{MAX_LINE, TraceEvent, TraceSink};

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Grades `target` with `options`. Must be called inside a Tokio runtime (the multi-thread
/// one: in-process agents and the kit's client run as tasks beside the checks).
///
/// Only a run that cannot start at all (a scratch directory that cannot be made, an
/// `--only` naming no check) is reported as a failed pseudo-check; everything about the
/// agent is in the checks.
pub async fn run(target: &Target, options: &Options) -> Report {
    if let Err(e) = options.validate() {
        return setup_failure(target, e);
    }
    let workspace = match Workspace::new(&options.script.file) {
        Ok(w) => w,
        Err(e) => return setup_failure(target, format!("cannot prepare a scratch workspace: {e}")),
    };
    let run = match checks::Run::new(target, options, workspace.0.clone()) {
        Ok(run) => run,
        Err(e) => return setup_failure(target, format!("cannot open the workspace: {e}")),
    };
    checks::all(run).await
}

fn setup_failure(target: &Target, why: String) -> Report {
    Report {
        agent: target.describe(),
        checks: vec![CheckResult {
            name: "setup",
            outcome: Outcome::fail(why),
            millis: 0,
        }],
        stopped: None,
        protocol: None,
        protocol_note: String::new(),
    }
}

/// The sessions' working directory: a fresh directory holding the 1 MB file, removed when
/// the run ends.
struct Workspace(PathBuf);

impl Workspace {
    fn new(file: &str) -> std::io::Result<Workspace> {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "acp-check-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let dir = std::fs::canonicalize(&dir)?;
        let workspace = Workspace(dir);
        checks::write_megabyte(&workspace.0, file)?;
        Ok(workspace)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
