//! Running the matrix: each cell is a client process that spawns the tap, which spawns the
//! agent; afterwards the wire transcript and both sides' events are checked ([`crate::checks`])
//! and every message is validated against the official schema (`peers/ts/validate.mjs`).
//!
//! Cells: our client against the TypeScript, Python and official Rust agents; the TypeScript,
//! Python and official Rust clients against our agent; and our client against our agent as the
//! baseline. A cell's files (`wire.jsonl`, `client.stdout.jsonl`, `client.stderr`,
//! `agent.report.jsonl`, `agent.stderr`, `checks.txt`, its workspace) stay in
//! `<out>/<cell>/` when it fails (or with `--keep`).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::cache::{self, Installed};
use crate::checks::{self, CellRun, Check, Sdk};
use crate::peers::remote::AgentTarget;
use crate::script::script;
use crate::server::ServerProcess;

use crate::transcript::{Wire, events, read_events};

/// The bearer token of the remote cells' servers.
pub const REMOTE_TOKEN: &str = "interop-token";

/// How long one cell may run before its processes are killed.
pub const CELL_TIMEOUT: Duration = Duration::from_secs(90);

/// How a cell's client reaches its agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// The client spawns the agent (through the tap) and speaks over its stdio.
    Stdio,
    /// Streamable HTTP to the agent SDK's server, which spawns the agent (through the tap) per
    /// connection: acp-remote's gateway for our agent, `agent-client-protocol-http`'s server
    /// for the official Rust agent.
    Http,
    /// The WebSocket profile of the same server.
    WebSocket,
    /// Streamable HTTP to acp-remote's server serving our agent in process (what `acp serve`
    /// does with its built-in agent); the recording relay sits in the server's pipe.
    HttpInProcess,
    /// The WebSocket profile of that server.
    WebSocketInProcess,
    /// Over stdio to acp-agent's conductor, which runs two proxies and the agent
    /// ([`crate::chain`]).
    ViaOursConductor,
    /// Over stdio to the official `agent-client-protocol-conductor`, running the same.
    ViaRustConductor,
}

impl Transport {
    /// The cell-name suffix (empty for stdio).
    pub fn suffix(self) -> &'static str {
        match self {
            Transport::Stdio => "",
            Transport::Http => "-over-http",
            Transport::WebSocket => "-over-ws",
            Transport::HttpInProcess => "-over-http-in-process",
            Transport::WebSocketInProcess => "-over-ws-in-process",
            Transport::ViaOursConductor => "-via-ours-conductor",
            Transport::ViaRustConductor => "-via-rust-conductor",
        }
    }

    /// The conductor of a proxy-chain cell.
    pub fn conductor(self) -> Option<Sdk> {
        match self {
            Transport::ViaOursConductor => Some(Sdk::Ours),
            Transport::ViaRustConductor => Some(Sdk::Rust),
            _ => None,
        }
    }

    /// Whether the client connects over WebSocket.
    pub fn websocket(self) -> bool {
        matches!(self, Transport::WebSocket | Transport::WebSocketInProcess)
    }
}

/// One cell: a client SDK against an agent SDK, over a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Who wrote the client.
    pub client: Sdk,
    /// Who wrote the agent (and, over the network, the server in front of it).
    pub agent: Sdk,
    /// How they meet.
    pub transport: Transport,
}

impl Cell {
    /// A stdio cell.
    pub fn stdio(client: Sdk, agent: Sdk) -> Cell {
        Cell {
            client,
            agent,
            transport: Transport::Stdio,
        }
    }

    /// `<client>-client-x-<agent>-agent[-over-http|-over-ws|-via-<sdk>-conductor|...]`.
    pub fn name(&self) -> String {
        format!(
            "{}-client-x-{}-agent{}",
            self.client.name(),
            self.agent.name(),
            self.transport.suffix()
        )
    }

    /// Whether both peers are Rust (no npm/PyPI install needed).
    pub fn is_rust_only(&self) -> bool {
        self.client.is_rust() && self.agent.is_rust()
    }
}

/// The remote cells: the official Rust and TypeScript clients against our server (acp-remote's
/// gateway, what `acp serve -- <command>` runs), our client against the official Rust server
/// and the TypeScript SDK's server, and ours against ours, over both profiles.
pub fn remote_cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for transport in [Transport::Http, Transport::WebSocket] {
        for (client, agent) in [
            (Sdk::Rust, Sdk::Ours),
            (Sdk::Ours, Sdk::Rust),
            (Sdk::TypeScript, Sdk::Ours),
            (Sdk::Ours, Sdk::TypeScript),
            (Sdk::Ours, Sdk::Ours),
        ] {
            cells.push(Cell {
                client,
                agent,
                transport,
            });
        }
    }
    for transport in [Transport::HttpInProcess, Transport::WebSocketInProcess] {
        for client in [Sdk::Rust, Sdk::TypeScript] {
            cells.push(Cell {
                client,
                agent: Sdk::Ours,
                transport,
            });
        }
    }
    cells
}

/// The proxy-chain cells ([`crate::chain`]): our client through the official conductor
/// (proxies ours, then theirs) to our agent; our client and the official client through
/// ours (proxies theirs, then ours) to the official agent and to ours.
pub fn chain_cells() -> Vec<Cell> {
    [
        (Sdk::Ours, Sdk::Ours, Transport::ViaRustConductor),
        (Sdk::Ours, Sdk::Rust, Transport::ViaOursConductor),
        (Sdk::Rust, Sdk::Ours, Transport::ViaOursConductor),
    ]
    .into_iter()
    .map(|(client, agent, transport)| Cell {
        client,
        agent,
        transport,
    })
    .collect()
}

/// Every cell, in the order they run.
pub fn all_cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for agent in [Sdk::TypeScript, Sdk::Python, Sdk::Rust] {
        cells.push(Cell::stdio(Sdk::Ours, agent));
    }
    for client in [Sdk::TypeScript, Sdk::Python, Sdk::Rust] {
        cells.push(Cell::stdio(client, Sdk::Ours));
    }
    cells.push(Cell::stdio(Sdk::Ours, Sdk::Ours));
    cells.extend(remote_cells());
    cells.extend(chain_cells());
    cells
}

/// How to start every peer.
#[derive(Clone, Debug)]
pub struct Peers {
    /// The `acp-interop` binary (the tap and the Rust peers).
    pub exe: PathBuf,
    /// The npm and PyPI installs (`None`: only Rust cells can run).
    pub installed: Option<Installed>,
}

fn os(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_owned()).collect()
}

impl Peers {
    fn installed(&self, sdk: Sdk) -> Result<&Installed, String> {
        self.installed.as_ref().ok_or_else(|| {
            format!(
                "the {} peers need the npm/PyPI installs: run `cargo xtask interop`",
                sdk.name()
            )
        })
    }

    /// The command line of an agent writing its report to `report`.
    pub fn agent_command(&self, sdk: Sdk, report: &Path) -> Result<Vec<OsString>, String> {
        let peers = cache::peers_dir();
        let script = peers.join("script.json");
        Ok(match sdk {
            Sdk::Ours => os(&[&self.exe, &"ours-agent", &"--report", &report]),
            Sdk::Rust => os(&[&self.exe, &"rust-agent", &"--report", &report]),
            Sdk::TypeScript => {
                let npm = &self.installed(sdk)?.npm;
                let agent = peers.join("ts/agent.mjs");
                os(&[
                    &"node",
                    &agent,
                    &"--modules",
                    npm,
                    &"--script",
                    &script,
                    &"--report",
                    &report,
                ])
            }
            Sdk::Python => {
                let python = &self.installed(sdk)?.python;
                let agent = peers.join("py/agent.py");
                os(&[python, &agent, &"--script", &script, &"--report", &report])
            }
        })
    }

    /// The command line of the server in front of an `sdk` agent spawned by `agent`, for the
    /// remote cells: acp-remote's gateway (ours), `agent-client-protocol-http`'s server (Rust),
    /// the TypeScript SDK's `experimental/server` (`peers/ts/server.mjs`).
    pub fn server_command(&self, sdk: Sdk, agent: Vec<OsString>) -> Result<Vec<OsString>, String> {
        let which = match sdk {
            Sdk::Ours => "ours-server",
            Sdk::Rust => "rust-server",
            Sdk::TypeScript => {
                let npm = &self.installed(sdk)?.npm;
                let server = cache::peers_dir().join("ts/server.mjs");
                let mut command = os(&[
                    &"node",
                    &server,
                    &"--modules",
                    npm,
                    &"--listen",
                    &"0",
                    &"--",
                ]);
                command.extend(agent);
                return Ok(command);
            }
            Sdk::Python => return Err("the Python SDK's server is not in the matrix".into()),
        };
        let mut command = os(&[
            &self.exe,
            &which,
            &"--listen",
            &"127.0.0.1:0",
            &"--token",
            &REMOTE_TOKEN,
            &"--",
        ]);
        command.extend(agent);
        Ok(command)
    }

    /// The command line of a client working in `cwd` and reaching its agent at `target`.
    pub fn client_command(
        &self,
        sdk: Sdk,
        cwd: &Path,
        target: &AgentTarget,
    ) -> Result<Vec<OsString>, String> {
        let peers = cache::peers_dir();
        let script = peers.join("script.json");
        let mut command = match sdk {
            Sdk::Ours => os(&[&self.exe, &"ours-client", &"--cwd", &cwd]),
            Sdk::Rust => os(&[&self.exe, &"rust-client", &"--cwd", &cwd]),
            Sdk::TypeScript => {
                let npm = &self.installed(sdk)?.npm;
                let client = peers.join("ts/client.mjs");
                let mut command = os(&[&"node"]);
                // Node 20's WebSocket (for the SDK's ws-client) is behind a flag.
                if matches!(target, AgentTarget::Remote { url, .. } if url.starts_with("ws://")) {
                    command.push("--experimental-websocket".into());
                }
                command.extend(os(&[
                    &client,
                    &"--modules",
                    npm,
                    &"--script",
                    &script,
                    &"--cwd",
                    &cwd,
                ]));
                command
            }
            Sdk::Python => {
                let python = &self.installed(sdk)?.python;
                let client = peers.join("py/client.py");
                os(&[python, &client, &"--script", &script, &"--cwd", &cwd])
            }
        };
        command.extend(target.to_args());
        Ok(command)
    }
}

/// How the client of `cell` reaches the agent command `tap`: directly (stdio), or through a
/// server started here (the remote cells).
fn reach(
    cell: Cell,
    peers: &Peers,
    dir: &Path,
    tap: Vec<OsString>,
) -> Result<(AgentTarget, Option<ServerProcess>), String> {
    if cell.transport == Transport::Stdio || cell.transport.conductor().is_some() {
        return Ok((AgentTarget::Spawn(tap), None));
    }
    let command = match cell.transport {
        Transport::HttpInProcess | Transport::WebSocketInProcess if cell.agent == Sdk::Ours => {
            os(&[
                &peers.exe,
                &"ours-server",
                &"--listen",
                &"127.0.0.1:0",
                &"--token",
                &REMOTE_TOKEN,
                &"--in-process",
                &dir,
            ])
        }
        Transport::HttpInProcess | Transport::WebSocketInProcess => {
            return Err("only our agent is served in process".into());
        }
        Transport::Stdio
        | Transport::Http
        | Transport::WebSocket
        | Transport::ViaOursConductor
        | Transport::ViaRustConductor => peers.server_command(cell.agent, tap)?,
    };
    let server = ServerProcess::start(&command, &dir.join("server.stderr"))?;
    let url = if cell.transport.websocket() {
        server.url.replacen("http://", "ws://", 1)
    } else {
        server.url.clone()
    };
    let target = AgentTarget::Remote {
        url,
        token: REMOTE_TOKEN.to_owned(),
    };
    Ok((target, Some(server)))
}

/// What a cell produced.
#[derive(Debug)]
pub struct CellOutcome {
    /// The cell.
    pub cell: Cell,
    /// Its files.
    pub dir: PathBuf,
    /// The assertions (schema validation is added by [`crate::validate::validate_schema`]).
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

/// Kills process group `pgid` (never 0 or 1).
pub fn kill_group(pgid: u32) {
    if pgid > 1 {
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
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
        .agent_command(cell.agent, &dir.join("agent.report.jsonl"))
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
    let command = match peers.client_command(cell.client, &workspace, &target) {
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
    let mut checks = checks::run(&run);
    if let Some(conductor) = cell.transport.conductor() {
        checks.push(crate::chain::check(&crate::chain::hops(
            conductor, cell.agent, dir,
        )));
    }
    let delivered = events(&client_events, "update")
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

pub(crate) fn write_checks(outcome: &CellOutcome) {
    let mut text = format!(
        "{} {} ({:.1}s)\n",
        if outcome.passed() { "PASS" } else { "FAIL" },
        outcome.cell.name(),
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

/// Options of `acp-interop matrix`.
#[derive(Debug)]
pub struct Options {
    /// The install cache.
    pub cache: PathBuf,
    /// Where cell directories go (default: `<target>/interop-transcripts`).
    pub out: Option<PathBuf>,
    /// Keep the files of passing cells too.
    pub keep: bool,
    /// Run only the cells that need no install (and skip schema validation).
    pub rust_only: bool,
    /// Cells to run (by name; empty: all).
    pub cells: Vec<String>,
}

impl Options {
    /// Parses `[--cache <dir>] [--out <dir>] [--keep] [--rust-only] [<cell>...]`.
    pub fn parse(args: &[OsString]) -> Result<Options, String> {
        let mut options = Options {
            cache: cache::dir(),
            out: None,
            keep: false,
            rust_only: false,
            cells: Vec::new(),
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.to_str() {
                Some("--cache") => {
                    options.cache = it.next().ok_or("--cache needs a directory")?.into()
                }
                Some("--out") => {
                    options.out = Some(it.next().ok_or("--out needs a directory")?.into())
                }
                Some("--keep") => options.keep = true,
                Some("--rust-only") => options.rust_only = true,
                Some(name) if !name.starts_with('-') => options.cells.push(name.to_owned()),
                _ => return Err(format!("unexpected argument {arg:?}")),
            }
        }
        let known: Vec<String> = all_cells().iter().map(Cell::name).collect();
        if let Some(bad) = options.cells.iter().find(|c| !known.contains(c)) {
            return Err(format!("unknown cell {bad}; cells: {}", known.join(", ")));
        }
        Ok(options)
    }
}

/// `acp-interop matrix`: installs (unless `--rust-only`), runs the cells, validates, prints a
/// per-cell summary, keeps the files of failed cells; fails if any cell failed.
pub fn main(options: Options) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("interop: cannot find my own binary: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = options.out.clone().unwrap_or_else(|| {
        exe.parent().and_then(Path::parent).map_or_else(
            || PathBuf::from("interop-transcripts"),
            |t| t.join("interop-transcripts"),
        )
    });
    let installed = if options.rust_only {
        None
    } else {
        let started = Instant::now();
        match cache::install(&options.cache) {
            Ok(i) => {
                println!(
                    "interop: installs ready in {:.1}s",
                    started.elapsed().as_secs_f64()
                );
                Some(i)
            }
            Err(e) => {
                eprintln!("interop: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let peers = Peers { exe, installed };
    let cells: Vec<Cell> = all_cells()
        .into_iter()
        .filter(|c| options.cells.is_empty() || options.cells.contains(&c.name()))
        .filter(|c| !options.rust_only || c.is_rust_only())
        .collect();
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("interop: cannot create {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for cell in cells {
        let outcome = run_cell(cell, &peers, &out.join(cell.name()));
        println!(
            "interop: {} {} ({:.1}s)",
            if outcome.passed() { "pass" } else { "FAIL" },
            cell.name(),
            outcome.elapsed.as_secs_f64()
        );
        outcomes.push(outcome);
    }
    match &peers.installed {
        Some(installed) => {
            if let Err(e) = crate::validate::validate_schema(&mut outcomes, installed, &out) {
                eprintln!("interop: {e}");
                for o in &mut outcomes {
                    o.checks.push(Check {
                        name: "schema",
                        ok: false,
                        detail: e.clone(),
                    });
                }
            }
        }
        None => println!(
            "interop: schema validation skipped (--rust-only); `cargo xtask interop` runs it"
        ),
    }
    let summary = summarize(&outcomes, started.elapsed());
    print!("{summary}");
    let _ = std::fs::write(out.join("summary.txt"), &summary);
    let mut failed = false;
    for o in &outcomes {
        if o.passed() && !options.keep {
            let _ = std::fs::remove_dir_all(&o.dir);
        }
        failed |= !o.passed();
    }
    if failed {
        println!(
            "interop: transcripts of the failed cells are in {}",
            out.display()
        );
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The per-cell summary, every check with what it saw, and the update kinds covered.
pub fn summarize(outcomes: &[CellOutcome], elapsed: Duration) -> String {
    let mut text = String::from("\n== interop matrix ==\n");
    for o in outcomes {
        let _ = writeln!(
            text,
            "{} {} ({:.1}s)",
            if o.passed() { "PASS" } else { "FAIL" },
            o.cell.name(),
            o.elapsed.as_secs_f64()
        );
        for c in &o.checks {
            let _ = writeln!(
                text,
                "  {} {}: {}",
                if c.ok { "ok  " } else { "FAIL" },
                c.name,
                c.detail
            );
        }
        for n in &o.notes {
            let _ = writeln!(text, "  note {n}");
        }
    }
    let covered: BTreeSet<&String> = outcomes.iter().flat_map(|o| &o.delivered).collect();
    let missing: Vec<&str> = script()
        .update_kinds()
        .into_iter()
        .filter(|k| !covered.iter().any(|c| c == k))
        .collect();
    let _ = writeln!(
        text,
        "session/update kinds delivered across the matrix: {}/{}{}",
        covered.len(),
        script().updates.len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(" (never: {missing:?})")
        }
    );
    let passed = outcomes.iter().filter(|o| o.passed()).count();
    let _ = writeln!(
        text,
        "{passed}/{} cells passed in {:.1}s",
        outcomes.len(),
        elapsed.as_secs_f64()
    );
    text
}
