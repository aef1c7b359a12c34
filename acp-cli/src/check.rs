//! `acp check [-- AGENT...]`: grade an agent with the `acp-check` conformance kit (the
//! built-in demo agent, in process, when no command is given; a remote agent with `--url`).
//!
//! The report is a table on stdout (or one JSON document with `--json`); the exit status is
//! 0 when no check failed (failures named with `--allow-fail` excepted), 1 otherwise, 2 for a
//! usage error. `--protocol 1|2` pins the version graded; without it the kit offers v2 and v1
//! and grades the version the agent answers (the report's second line names it). A timing miss (a timing check over its bound: a slow agent, or a loaded
//! machine) is reported apart from protocol failures and fails the run too, unless
//! `--timing-misses-ok` (or `--allow-fail NAME`): a CI job on shared runners can keep the
//! protocol strict and the clock lenient. `--trace FILE` keeps every line in the `acp trace` format, so `acp trace view`
//! opens a failed run at the message that broke it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acp_check::{Bounds, Offer, Options, PromptScript, Report, Target, TraceEvent};
use clap::Args;
use tokio::sync::mpsc;

use crate::trace::record::Record;

/// Arguments of `acp check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Print the report as one JSON document instead of a table.
    #[arg(long)]
    json: bool,
    /// Run only these checks or groups (repeatable or comma-separated). A group is any
    /// leading part of a name up to a dot: `robustness`, `v2`, `v2.handshake`. A run whose
    /// version leaves none of them (v1's `handshake` on a v2 run) fails, naming that
    /// version's names.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip these checks or groups (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
    /// Failures of these checks do not make the exit status non-zero (they are still shown).
    #[arg(long, value_delimiter = ',')]
    allow_fail: Vec<String>,
    /// Timing misses (a `timing.*` check over its bound, shown as SLOW and counted apart from
    /// protocol failures) do not make the exit status non-zero. Without it they do: exit 1.
    /// For CI on loaded machines, where a cold start can take longer than the bounds.
    #[arg(long)]
    timing_misses_ok: bool,
    /// What the client offers the agent: read, write, fs, terminal, none (comma-separated).
    #[arg(long, default_value = "fs")]
    offer: String,
    /// A JSON file with the prompts that drive the agent:
    /// {"prompts": [..], "cancel": "..", "hold": "..", "file": "hello.txt"}.
    #[arg(long)]
    prompt_script: Option<PathBuf>,
    /// Record every line in the `acp trace` format (NDJSON).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Change a time bound, in milliseconds (repeatable): check, turn, cancel, handshake,
    /// session_new, round_trip, fs_read, fs_write. Example: --bound cancel=2000.
    #[arg(long, value_name = "NAME=MS")]
    bound: Vec<String>,
    /// Pass the MCP servers of this file (the `{"mcpServers": {..}}` of `acp chat
    /// --mcp-config`) in every session/new; those of transports the agent does not
    /// advertise are left out.
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// The protocol version to grade: 1 or 2. Without it acp check offers v2 and v1, as
    /// `acp chat` does, and grades the version the agent answers; the report names it. With
    /// 2, an agent that answers 1 is refused (both versions named). With no agent command,
    /// `--protocol 2` grades the built-in v1 agent through the v1<->v2 translation.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2))]
    protocol: Option<u16>,
    /// List the checks and what each means, and exit.
    #[arg(long)]
    list: bool,
    /// Grade a remote agent at this endpoint (`http://HOST:PORT/acp`, or `ws://` for the
    /// WebSocket profile; `https://` and `wss://` over TLS), as `acp serve` prints it.
    #[arg(long, conflicts_with = "agent")]
    url: Option<String>,
    #[command(flatten)]
    remote: crate::remote::RemoteArgs,
    /// `--agent ID` (and `--yes`): an agent of the ACP registry instead of a command.
    #[command(flatten)]
    pub(crate) by_id: crate::agents::ByIdConfirmed,
    /// The agent's command line; none for the built-in demo agent (in process).
    #[arg(last = true)]
    pub(crate) agent: Vec<OsString>,
}

/// `--list`: each check, the protocol versions a run grades it on (`1`, `2` or `1,2`) and
/// what passing it means.
fn list() -> String {
    let mut out = format!("{:<34} {:<8} {}\n", "CHECK", "VERSION", "PASSING MEANS");
    for check in acp_check::CHECKS {
        let versions = match (check.graded_on(1), check.graded_on(2)) {
            (true, true) => "1,2",
            (false, true) => "2",
            _ => "1",
        };
        out.push_str(&format!(
            "{:<34} {versions:<8} {}\n",
            check.name, check.meaning
        ));
    }
    out
}

/// Runs `acp check`; returns the exit status.
pub async fn run(args: CheckArgs) -> i32 {
    if args.list {
        print!("{}", list());
        return 0;
    }
    let mut options = match options(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("acp check: {e}");
            return 2;
        }
    };
    let target = if let Some(url) = &args.url {
        match remote_target(url, &args.remote) {
            Ok(target) => target,
            Err(e) => {
                eprintln!("acp check: {e}");
                return 2;
            }
        }
    } else if args.agent.is_empty() && args.protocol == Some(2) {
        // The built-in v1 agent served as v2 through the translation, as `acp chat
        // --protocol 2` speaks to it (file calls answered by the translation in the
        // session's directory; no terminals).
        Target::in_process(|r, w| {
            let options = acp_agent::legacy::AdapterOptions::default();
            drop(acp_agent::v2::serve_v1(
                crate::builtin::BuiltinAgent::default(),
                r,
                w,
                options,
            ));
        })
    } else if args.agent.is_empty() {
        Target::in_process(|r, w| {
            acp_agent::Builder::new(crate::builtin::BuiltinAgent::default()).io(r, w);
        })
    } else {
        Target::Command(args.agent.clone())
    };
    let writer = match &args.trace {
        Some(path) => match TraceFile::create(path) {
            Ok((file, sink)) => {
                options.trace = Some(sink);
                Some(file)
            }
            Err(e) => {
                eprintln!("acp check: cannot write {}: {e}", path.display());
                return 2;
            }
        },
        None => None,
    };
    let mut report = acp_check::run(&target, &options).await;
    if let Some(url) = &args.url {
        report.agent = url.clone();
    } else if args.agent.is_empty() && args.protocol == Some(2) {
        report.agent = "built-in demo agent (in process, through the v1<->v2 translation)".into();
    } else if args.agent.is_empty() {
        report.agent = "built-in demo agent (in process)".into();
    }
    drop(options);
    if let Some(writer) = writer
        && let Err(e) = writer.finish().await
    {
        eprintln!("acp check: writing the trace failed: {e}");
    }
    print_report(&report, args.json);
    status(&report, &args.allow_fail, args.timing_misses_ok)
}

/// A remote agent as a check target: each connection the kit opens is a new remote
/// connection, its bytes copied both ways between the kit's pipe and the remote link.
fn remote_target(url: &str, remote: &crate::remote::RemoteArgs) -> Result<Target, String> {
    let connect = remote.connect_options()?;
    let url = url.to_owned();
    Ok(Target::in_process(
        move |mut agent_stdin, mut agent_stdout| {
            let (url, connect) = (url.clone(), connect.clone());
            tokio::spawn(async move {
                let link = match acp_remote::connect(&url, &connect).await {
                    Ok(link) => link,
                    Err(e) => {
                        tracing::error!("{url}: {e}");
                        return;
                    }
                };
                let (mut reader, mut writer) = (link.reader, link.writer);
                let to_remote = async move {
                    let _ = tokio::io::copy(&mut agent_stdin, &mut writer).await;
                    let _ = tokio::io::AsyncWriteExt::shutdown(&mut writer).await;
                };
                let from_remote = tokio::io::copy(&mut reader, &mut agent_stdout);
                let _ = tokio::join!(to_remote, from_remote);
            });
        },
    ))
}

fn options(args: &CheckArgs) -> Result<Options, String> {
    let options = Options {
        offer: Offer::parse(&args.offer)?,
        bounds: bounds(&args.bound)?,
        script: match &args.prompt_script {
            Some(path) => PromptScript::from_file(path)?,
            None => PromptScript::default(),
        },
        only: args.only.clone(),
        skip: args.skip.clone(),
        trace: None,
        mcp_servers: match &args.mcp_config {
            Some(path) => crate::mcp_config::read(path)?,
            None => Vec::new(),
        },
        protocol: args.protocol,
    };
    options.validate()?;
    for name in &args.allow_fail {
        if !acp_check::CHECKS.iter().any(|c| c.name == name) {
            return Err(format!("--allow-fail: no check is named `{name}`"));
        }
    }
    Ok(options)
}

fn bounds(list: &[String]) -> Result<Bounds, String> {
    let mut bounds = Bounds::default();
    for item in list {
        let (name, ms) = item
            .split_once('=')
            .ok_or_else(|| format!("--bound {item}: expected NAME=MS"))?;
        let ms: u64 = ms
            .parse()
            .ok()
            .filter(|ms| (1..=3_600_000).contains(ms))
            .ok_or_else(|| format!("--bound {item}: milliseconds from 1 to 3600000"))?;
        let slot = match name {
            "check" => &mut bounds.check,
            "turn" => &mut bounds.turn,
            "cancel" => &mut bounds.cancel,
            "handshake" => &mut bounds.handshake,
            "session_new" => &mut bounds.session_new,
            "round_trip" => &mut bounds.round_trip,
            "fs_read" => &mut bounds.file_read,
            "fs_write" => &mut bounds.file_write,
            other => return Err(format!("--bound: no bound is named `{other}`")),
        };
        *slot = Duration::from_millis(ms);
    }
    Ok(bounds)
}

fn print_report(report: &Report, json: bool) {
    if json {
        println!("{}", report.to_json());
    } else {
        let width = terminal_width();
        print!("{}", report.table(width));
        if !report.timing_misses().is_empty() {
            println!(
                "timing misses (SLOW) are answers that came, but later than a bound: a slow agent or a loaded machine, not a protocol failure (--bound NAME=MS changes a bound; --timing-misses-ok keeps them from failing the run)"
            );
        }
    }
}

/// 0 unless a check failed that is not allowed to: a protocol failure not named in
/// `allowed`, or a timing miss not named there unless `timing_misses_ok`.
fn status(report: &Report, allowed: &[String], timing_misses_ok: bool) -> i32 {
    let misses = report.timing_misses();
    let blocking: Vec<&str> = report
        .failures()
        .into_iter()
        .filter(|name| !allowed.iter().any(|a| a == name))
        .filter(|name| !(timing_misses_ok && misses.contains(name)))
        .collect();
    if blocking.is_empty() { 0 } else { 1 }
}

/// The terminal's width when stdout is one (the table is cut to it), else no limit.
fn terminal_width() -> Option<usize> {
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills a winsize struct for a terminal file descriptor.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// The trace file: records go through the `acp trace` writer.
struct TraceFile {
    forward: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl TraceFile {
    fn create(path: &std::path::Path) -> std::io::Result<(TraceFile, acp_check::TraceSink)> {
        let file = std::fs::File::create(path)?;
        let (tx, rx) = mpsc::channel::<Record>(4096);
        let writer = tokio::task::spawn_blocking(move || {
            crate::trace::proxy::write_records(Some(file), None, rx)
        });
        // The sink is called on the kit's tasks and must not block: an unbounded hop first.
        let (sink_tx, mut sink_rx) = mpsc::unbounded_channel::<Record>();
        let forward = tokio::spawn(async move {
            while let Some(record) = sink_rx.recv().await {
                if tx.send(record).await.is_err() {
                    break;
                }
            }
        });
        let sink: acp_check::TraceSink = Arc::new(move |event: TraceEvent<'_>| {
            let _ = sink_tx.send(event.record());
        });
        Ok((TraceFile { forward, writer }, sink))
    }

    /// Waits until every record is written (the sink must be dropped first).
    async fn finish(mut self) -> std::io::Result<()> {
        // A task of an agent that never closed may still hold a sink: stop waiting for it.
        if tokio::time::timeout(Duration::from_secs(2), &mut self.forward)
            .await
            .is_err()
        {
            self.forward.abort();
        }
        self.writer
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))?
    }
}
