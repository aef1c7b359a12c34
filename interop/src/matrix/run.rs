//! Running one cell: the client process spawns the tap, which spawns the agent; afterwards
//! the wire transcript and both sides' events are checked ([`crate::checks`]) and the
//! outcome is written to the cell's `checks.txt`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::checks::{self, CellRun, Check, Sdk};
use crate::peers::ours_v2::Versions;
use crate::script::script;
use crate::server::kill_group;
use crate::tap::Side;
use crate::transcript::{Wire, events, read_events};
use serde_json::Value;

use super::cells::{CELL_TIMEOUT, Cell, Transport};
use super::launch::{Peers, os, reach};

/// What a cell produced.
#[derive(Debug)]
pub struct CellOutcome {
    /// The cell.
    pub cell: Cell,
    /// Its files.
    pub dir: PathBuf,
    /// The assertions (schema validation is added by [`super::validate::validate_schema`]).
    pub checks: Vec<Check>,
    /// What the official SDKs put on the wire that their own schema rejects (information,
    /// not failures: they are not ours to fix).
    pub notes: Vec<String>,
    /// The `session/update` kinds the client received.
    pub delivered: BTreeSet<String>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl CellOutcome {
    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    fn failed(cell: Cell, dir: &Path, why: String, elapsed: Duration) -> CellOutcome {
        CellOutcome {
            cell,
            dir: dir.to_owned(),
            checks: vec![Check {
                name: "run",
                ok: false,
                detail: why,
            }],
            notes: Vec::new(),
            delivered: BTreeSet::new(),
            elapsed,
        }
    }
}

/// Runs one cell in `dir` (emptied first) and checks it.
pub fn run_cell(cell: Cell, peers: &Peers, dir: &Path) -> CellOutcome {
    let start = Instant::now();
    let sc = script();
    let _ = std::fs::remove_dir_all(dir);
    let workspace = dir.join("workspace");
    if let Err(e) = std::fs::create_dir_all(&workspace).and_then(|()| {
        std::fs::write(
            workspace.join(&sc.workspace.read_file),
            &sc.workspace.read_content,
        )
    }) {
        return CellOutcome::failed(
            cell,
            dir,
            format!("cannot prepare {}: {e}", workspace.display()),
            start.elapsed(),
        );
    }
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    let tap = peers
        .agent_command(cell.agent, cell.speaks.1, &dir.join("agent.report.jsonl"))
        .and_then(|agent| match cell.transport.conductor() {
            // A chain: the client's tap wraps the conductor, which runs the agent.
            Some(conductor) => crate::chain::command(&peers.exe, conductor, cell.agent, agent, dir),
            None => Ok(agent),
        })
        .map(|agent| {
            let mut tap = os(&[
                &peers.exe,
                &"tap",
                &"--wire",
                &dir.join("wire.jsonl"),
                &"--stderr",
                &dir.join("agent.stderr"),
                &"--status",
                &dir.join("agent.status"),
                &"--",
            ]);
            tap.extend(agent);
            tap
        });
    let (target, server) = match tap.and_then(|tap| reach(cell, peers, dir, tap)) {
        Ok(t) => t,
        Err(e) => return CellOutcome::failed(cell, dir, e, start.elapsed()),
    };
    let command = match peers.client_command(cell.client, cell.speaks.0, &workspace, &target) {
        Ok(c) => c,
        Err(e) => return CellOutcome::failed(cell, dir, e, start.elapsed()),
    };
    let _ = std::fs::write(
        dir.join("command.txt"),
        command
            .iter()
            .map(|c| c.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
    );
    let files = File::create(dir.join("client.stdout.jsonl"))
        .and_then(|out| File::create(dir.join("client.stderr")).map(|err| (out, err)));
    let (out, err) = match files {
        Ok(f) => f,
        Err(e) => {
            return CellOutcome::failed(
                cell,
                dir,
                format!("cannot create output files: {e}"),
                start.elapsed(),
            );
        }
    };
    let child = Command::new(&command[0])
        .args(&command[1..])
        .current_dir(&workspace)
        // The Python peers must not write bytecode into the source tree.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return CellOutcome::failed(
                cell,
                dir,
                format!("cannot start {:?}: {e}", command[0]),
                start.elapsed(),
            );
        }
    };
    let client_exit = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if start.elapsed() > CELL_TIMEOUT => {
                kill_group(child.id());
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    // Agents outlive a crashed client only until their stdin closes; never let one linger.
    kill_group(child.id());
    let agent_killed_by_server =
        matches!(cell.transport, Transport::Http | Transport::WebSocket) && cell.agent == Sdk::Rust;
    if let Some(server) = server {
        // The client's goodbye ended the remote connection; the server is ending the agent
        // (EOF first), and the tap writes its exit status: wait for it, bounded. (The
        // official Rust server kills it instead: no status will come.)
        let status = dir.join("agent.status");
        let waiting = Instant::now();
        while !agent_killed_by_server
            && !status.exists()
            && waiting.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        server.stop();
    }
    let elapsed = start.elapsed();
    let wire = match Wire::read(&dir.join("wire.jsonl")) {
        Ok(w) => w,
        Err(e) => {
            return CellOutcome::failed(
                cell,
                dir,
                format!("{e} (client exit {client_exit:?})"),
                elapsed,
            );
        }
    };
    let client_events = read_events(&dir.join("client.stdout.jsonl"));
    let agent_events = read_events(&dir.join("agent.report.jsonl"));
    let agent_exit = std::fs::read_to_string(dir.join("agent.status"))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let run = CellRun {
        client: cell.client,
        agent: cell.agent,
        wire: &wire,
        client_events: &client_events,
        agent_events: &agent_events,
        client_exit,
        agent_exit,
        agent_killed_by_server,
        workspace: &workspace,
    };
    let settles = cell.speaks.settles();
    let mut checks = if settles == 2 {
        checks::v2::run(&run)
    } else {
        checks::run(&run)
    };
    checks.push(protocol(cell, &wire, &client_events, &agent_events));
    if let Some(conductor) = cell.transport.conductor() {
        checks.push(crate::chain::check(&crate::chain::hops(
            conductor, cell.agent, dir,
        )));
    }
    // The v1 kinds the matrix covers (the v2 cells' are checked per cell).
    let delivered = events(&client_events, "update")
        .filter(|_| settles == 1)
        .filter_map(|e| e["update"]["sessionUpdate"].as_str().map(str::to_owned))
        .collect();
    let outcome = CellOutcome {
        cell,
        dir: dir.to_owned(),
        checks,
        notes: Vec::new(),
        delivered,
        elapsed,
    };
    write_checks(&outcome);
    outcome
}

/// The version the cell's peers settled on is the one its [`Speaks`] calls for: the last
/// `initialize` on the wire (after a both-versions client's fallback) answers it, the client
/// reports it, and our agent says it served it.
fn protocol(cell: Cell, wire: &Wire, client_events: &[Value], agent_events: &[Value]) -> Check {
    let settles = cell.speaks.settles();
    let mut problems = Vec::new();
    let answered = wire
        .requests(Side::Client, "initialize")
        .last()
        .and_then(|init| wire.response_to(init))
        .map(|r| r.result()["protocolVersion"].clone());
    if answered != Some(Value::from(settles)) {
        problems.push(format!("the last initialize was answered {answered:?}"));
    }
    let reported = events(client_events, "initialized")
        .next()
        .map(|e| e["protocolVersion"].clone());
    if reported != Some(Value::from(settles)) {
        problems.push(format!("the client reported {reported:?}"));
    }
    if cell.agent == Sdk::Ours && cell.speaks.1 != Versions::V1 {
        let served = events(agent_events, "served")
            .next()
            .map(|e| e["protocolVersion"].clone());
        if served != Some(Value::from(settles)) {
            problems.push(format!("our agent served {served:?}"));
        }
    }
    Check::new("protocol", problems, cell.speaks.label())
}

pub(crate) fn write_checks(outcome: &CellOutcome) {
    let mut text = format!(
        "{} {} ({}, {:.1}s)\n",
        if outcome.passed() { "PASS" } else { "FAIL" },
        outcome.cell.name(),
        outcome.cell.speaks.label(),
        outcome.elapsed.as_secs_f64()
    );
    for c in &outcome.checks {
        let _ = writeln!(
            text,
            "  {} {}: {}",
            if c.ok { "ok  " } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    for n in &outcome.notes {
        let _ = writeln!(text, "  note {n}");
    }
    let _ = std::fs::write(outcome.dir.join("checks.txt"), text);
}
