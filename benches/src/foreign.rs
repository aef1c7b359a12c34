//! The TypeScript and Python columns: the official TypeScript SDK (`@agentclientprotocol/sdk`)
//! and Python SDK (`agent-client-protocol`), each as an agent and a client written as their
//! docs show (`benches/peers/ts`, `benches/peers/py`), doing the same jobs with the same texts
//! and reports as the Rust columns (`msg.rs`).
//!
//! One measurement runs the foreign client as a child process with the plan on its command
//! line; it spawns the foreign agent, times the measured step itself (like the Rust clients
//! do) and prints the outcome as one JSON line. The SDKs come from the interop install cache
//! (`acp_interop::cache`, filled by `cargo xtask interop`), so the versions are the pinned ones
//! of the interop matrix.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::msg::{ManyFigures, Report};
use crate::plan::{Outcome, Plan};
use crate::table::Impl;

/// The installed SDKs, if the interop cache holds them.
pub fn installed() -> Option<acp_interop::cache::Installed> {
    let installed = acp_interop::cache::Installed::at(&acp_interop::cache::dir());
    installed.is_complete().then_some(installed)
}

/// Why the foreign columns cannot run here (for the skip note and the error).
pub fn missing_note() -> String {
    format!(
        "the TypeScript and Python columns need the SDKs of the interop matrix in {} \
         (run `cargo xtask interop` once; it installs them)",
        acp_interop::cache::dir().display()
    )
}

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// What the foreign client prints.
#[derive(Deserialize)]
struct Printed {
    elapsed_ns: u64,
    report: Option<Report>,
    after: Option<Report>,
    chunks: [u64; 2],
    many: Option<ManyFigures>,
}

/// The plan as the foreign client's `--plan` argument.
fn plan_arg(plan: Plan) -> Result<String, String> {
    Ok(match plan {
        Plan::Handshake => "handshake".to_owned(),
        Plan::Job(job) => format!("job {}", job.to_text()),
        Plan::Many { sessions, chunks } => format!("many {sessions} {chunks}"),
        Plan::Exchange => "exchange".to_owned(),
        Plan::Sessions(_) => return Err("e is not measured for this column".to_owned()),
    })
}

/// The client and agent command lines of a column.
fn commands(imp: Impl, plan: &str) -> Result<Command, String> {
    let installed = installed().ok_or_else(missing_note)?;
    let dir = peers();
    let mut command = match imp {
        Impl::Ts => {
            let modules = installed.npm.to_string_lossy().into_owned();
            let mut c = Command::new("node");
            c.arg(dir.join("ts/client.mjs"))
                .args(["--modules", &modules, "--plan", plan, "--", "node"])
                .arg(dir.join("ts/agent.mjs"))
                .args(["--modules", &modules]);
            c
        }
        Impl::Py => {
            let mut c = Command::new(&installed.python);
            c.arg(dir.join("py/client.py"))
                .args(["--plan", plan, "--"])
                .arg(&installed.python)
                .arg(dir.join("py/agent.py"));
            c
        }
        other => return Err(format!("{} is not a foreign column", other.name())),
    };
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    Ok(command)
}

/// Runs one measurement of `plan` with the foreign pair `imp`, within `timeout`.
pub fn over_stdio(imp: Impl, plan: Plan, timeout: Duration) -> Result<Outcome, String> {
    let plan_text = plan_arg(plan)?;
    let mut child = commands(imp, &plan_text)?
        .spawn()
        .map_err(|e| format!("cannot start the {} client: {e}", imp.name()))?;
    let mut stdout = child.stdout.take().expect("piped above");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the {} client timed out", imp.name()));
            }
            Err(e) => return Err(format!("waiting for the {} client: {e}", imp.name())),
        }
    };
    let text = reader
        .join()
        .map_err(|_| "the output reader panicked".to_owned())?
        .map_err(|e| format!("reading the {} client's output: {e}", imp.name()))?;
    if !status.success() {
        return Err(format!("the {} client failed ({status})", imp.name()));
    }
    let line = text.lines().last().unwrap_or_default();
    let printed: Printed = serde_json::from_str(line)
        .map_err(|e| format!("the {} client printed {line:?}: {e}", imp.name()))?;
    Ok(Outcome {
        elapsed: Duration::from_nanos(printed.elapsed_ns),
        report: printed.report.unwrap_or_default(),
        before: Report::default(),
        after: printed.after.unwrap_or_default(),
        chunks: (printed.chunks[0], printed.chunks[1]),
        many: printed.many,
        marks: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::Job;

    #[test]
    fn plans_are_spelled_as_the_foreign_clients_read_them() {
        assert_eq!(plan_arg(Plan::Handshake).unwrap(), "handshake");
        assert_eq!(
            plan_arg(Plan::Job(Job::Big { n: 3, size: 10 })).unwrap(),
            "job big 3 10"
        );
        assert_eq!(
            plan_arg(Plan::Many {
                sessions: 2,
                chunks: 5
            })
            .unwrap(),
            "many 2 5"
        );
        assert_eq!(plan_arg(Plan::Exchange).unwrap(), "exchange");
        assert!(plan_arg(Plan::Sessions(3)).is_err());
    }

    #[test]
    fn the_printed_outcome_reads_into_the_harness_types() {
        let line = r#"{"elapsed_ns":5,"report":{"count":1,"errors":0,"elapsed_ns":4,"p50_ns":0,"p99_ns":0,"bytes":0,"rss_kib":1,"hwm_kib":2},"after":null,"chunks":[1,0],"many":{"sessions":1,"in_order":1,"errors":0,"median_session_p99_ns":3,"worst_session_p99_ns":3,"worst_first_chunk_ns":9}}"#;
        let p: Printed = serde_json::from_str(line).unwrap();
        assert_eq!(p.elapsed_ns, 5);
        assert_eq!(p.report.unwrap().hwm_kib, 2);
        assert_eq!(p.many.unwrap().worst_first_chunk_ns, 9);
    }
}
