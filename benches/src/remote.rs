//! `acp-bench remote`: the remote transport's figures, in one run, on loopback.
//!
//! Scenario a (a prompt streaming `--chunks` `agent_message_chunk` updates, chunks/s) and b
//! (`--requests` sequential `fs/read_text_file` calls from the agent, p99 latency) with our
//! client against our agent behind acp-remote's server over WebSocket and over Streamable
//! HTTP, with the official client against the official agent behind
//! `agent-client-protocol-http`'s server over both, and ours over stdio as the reference;
//! then `--idle` connections held open on one server of each (initialized, idle): the
//! server's memory per idle connection, and b's p99 on one more connection while they stay
//! open.
//!
//! Each server runs in a child process (`acp-bench __remote_peer ours|official`) on a free
//! 127.0.0.1 port, so the memory is the server's alone. Medians of `--runs` runs, after
//! `--warmup` runs per figure that are checked and not counted.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_remote::{BearerToken, BearerTokens, Limits, Server};
use agent_client_protocol_http::AcpHttpServer;

use crate::msg::{self, Job};
use crate::plan::{Outcome, Plan};
use crate::table::Impl;

/// The argument that turns this binary into a remote server process.
pub const REMOTE_PEER_ARG: &str = "__remote_peer";
/// The bearer token of the benchmark servers (ours checks it; the official one has none).
const TOKEN: &str = "acp-bench";
/// The server process of ours with the hosting checks on (`--hosting`).
const HOSTED: &str = "ours-hosted";
/// How long opening the idle connections may take in all.
const IDLE_OPEN_TIMEOUT: Duration = Duration::from_secs(120);

mod column;
mod server;

use column::Column;
use server::ServerChild;
pub use server::peer;

const USAGE: &str = "\
usage: acp-bench remote [options]
  --runs N       runs per figure; medians are reported (default 3)
  --warmup N     runs per figure before those, checked but not counted (default 1): the
                 first connection of a column pays for the client's cold start
  --chunks N     a: notifications per prompt (default 200000: ours streams that in about
                 0.15 s; at 50000, runs of 40 ms moved with every hiccup of the machine)
  --requests N   b: sequential requests (default 5000)
  --idle N       idle connections held open on one server (default 1000, at most 5000)
  --smoke        tiny sizes, one run (what the test suite runs)
  --only LIST    only these columns, comma-separated: ours-stdio, ours-ws, ours-http,
                 official-ws, official-http, ts-ws, ts-http (the others show `skipped`;
                 for profiling one path)
  --hosting      instead of the table: our server with the hosting checks off (one token,
                 no session guard) against on (a token file of two identities, the default
                 MCP policy, a served root), alternated run by run, a and b over both
                 profiles

The TypeScript server columns need the SDK the interop matrix installs (`cargo xtask interop`);
without it they are skipped.";

#[derive(Clone, Debug)]
struct Options {
    runs: usize,
    /// Runs made and judged before the counted ones, per figure and column.
    warmup: usize,
    chunks: u64,
    requests: u64,
    idle: usize,
    /// The columns to measure (`--only`); the others show `skipped`.
    only: Option<Vec<String>>,
    /// `--hosting`: the hosting checks off against on, instead of the table.
    hosting: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            runs: 3,
            warmup: 1,
            chunks: 200_000,
            requests: 5_000,
            idle: 1000,
            only: None,
            hosting: false,
        };
        let mut it = args.iter();
        let num = |it: &mut std::slice::Iter<'_, String>| -> Result<u64, String> {
            it.next()
                .ok_or("missing value")?
                .replace('_', "")
                .parse::<u64>()
                .map_err(|e| e.to_string())
        };
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--runs" => o.runs = num(&mut it)?.max(1) as usize,
                "--warmup" => o.warmup = num(&mut it)?.min(100) as usize,
                "--chunks" => o.chunks = num(&mut it)?.max(1),
                "--requests" => o.requests = num(&mut it)?.max(1),
                "--idle" => o.idle = num(&mut it)?.min(5000) as usize, // 0: none
                "--only" => {
                    let list = it.next().ok_or("missing value")?;
                    let names: Vec<String> = list.split(',').map(|c| c.trim().to_owned()).collect();
                    if let Some(bad) = names.iter().find(|n| Column::named(n).is_none()) {
                        return Err(format!("unknown column {bad:?}"));
                    }
                    o.only = Some(names);
                }
                "--hosting" => o.hosting = true,
                "--smoke" => {
                    o.runs = 1;
                    o.warmup = 0;
                    o.chunks = 200;
                    o.requests = 100;
                    o.idle = 20;
                }
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(o)
    }
}

/// One measurement of `plan` in `column` (a fresh server for each).
fn measure(column: Column, plan: Plan) -> Result<Outcome, String> {
    let Some(kind) = column.server() else {
        return crate::measure(Impl::Ours, crate::Transport::Stdio, plan);
    };
    measure_on(kind, column.websocket(), plan)
}

/// One measurement of `plan` on a fresh server process of `kind`.
fn measure_on(kind: &str, websocket: bool, plan: Plan) -> Result<Outcome, String> {
    let server = ServerChild::start(kind)?;
    let url = server.url(websocket);
    run_on(kind, &url, plan)
}

/// How a figure is read off one measurement (`a_rate`, `b_p99`).
type Judge = fn(&Options, &Outcome) -> Result<f64, String>;

/// `--hosting`: our server with the hosting checks off and on, alternated run by run (a
/// fresh server process each), medians of each; the ratio is on ÷ off.
fn hosting(o: &Options) -> ExitCode {
    let a = Plan::Job(Job::Stream { n: o.chunks });
    let b = Plan::Job(Job::Sequential { n: o.requests });
    println!("| profile, figure | checks off | checks on | on ÷ off |");
    println!("|---|---|---|---|");
    let mut failed = false;
    for websocket in [true, false] {
        let profile = if websocket {
            "WebSocket"
        } else {
            "Streamable HTTP"
        };
        let figures: [(&str, Plan, Judge); 2] = [("a chunks/s", a, a_rate), ("b p99 µs", b, b_p99)];
        for (name, plan, judge) in figures {
            let (mut off, mut on) = (Vec::new(), Vec::new());
            let measured: Result<(), String> = (|| {
                for run in 0..o.warmup + o.runs {
                    let x = judge(o, &measure_on("ours", websocket, plan)?)?;
                    let y = judge(o, &measure_on(HOSTED, websocket, plan)?)?;
                    if run >= o.warmup {
                        off.push(x);
                        on.push(y);
                    }
                }
                Ok(())
            })();
            if let Err(e) = measured {
                eprintln!("{profile} {name}: FAILED: {e}");
                failed = true;
            }
            let (off, on) = (median(off).ok_or("no run"), median(on).ok_or("no run"));
            let off = off.map_err(str::to_owned);
            let on = on.map_err(str::to_owned);
            println!(
                "| {profile}, {name} | {} | {} | {} |",
                cell(&off, 1),
                cell(&on, 1),
                ratio(&on, &off)
            );
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn run_on(kind: &str, url: &str, plan: Plan) -> Result<Outcome, String> {
    let url = url.to_owned();
    if kind != "official" {
        crate::timed(crate::runtime(), async move {
            crate::ours::over_remote(&url, TOKEN, plan).await
        })
    } else {
        crate::timed(crate::runtime(), async move {
            crate::official::over_remote(&url, TOKEN, plan).await
        })
    }
}

fn a_rate(o: &Options, out: &Outcome) -> Result<f64, String> {
    if out.chunks != (o.chunks, 0) || out.report.count != o.chunks {
        return Err(format!(
            "expected {} chunks in order, got {} in order and {} wrong",
            o.chunks, out.chunks.0, out.chunks.1
        ));
    }
    Ok(o.chunks as f64 / out.elapsed.as_secs_f64().max(1e-9))
}

fn b_p99(o: &Options, out: &Outcome) -> Result<f64, String> {
    let r = &out.report;
    let each = msg::SMALL_CONTENT.len() as u64;
    if r.count != o.requests || r.errors != 0 || r.bytes != o.requests * each {
        return Err(format!(
            "expected {} good answers, got {} calls, {} errors",
            o.requests, r.count, r.errors
        ));
    }
    Ok(r.p99_ns as f64 / 1000.0)
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    Some(values[values.len() / 2])
}

/// Medians of `runs` runs of `plan` in `column`, each judged by `figure`, after `warmup`
/// runs judged the same way and not counted.
fn figure(o: &Options, column: Column, plan: Plan, figure: Judge) -> Result<f64, String> {
    let mut values = Vec::new();
    for run in 0..o.warmup + o.runs {
        let out = measure(column, plan)?;
        let value = figure(o, &out)?;
        if run >= o.warmup {
            values.push(value);
        }
    }
    median(values).ok_or_else(|| "no run".to_owned())
}

/// What `--idle` open connections cost one server, and b's p99 beside them.
struct IdleFigures {
    kib_per_connection: f64,
    b_p99_us: f64,
}

fn idle(o: &Options, column: Column) -> Result<IdleFigures, String> {
    let kind = column.server().ok_or("no server")?;
    let server = ServerChild::start(kind)?;
    let url = server.url(column.websocket());
    let n = o.idle;
    let before = server.rss_kib();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let b = Plan::Job(Job::Sequential { n: o.requests });
    rt.block_on(async {
        let release = Arc::new(tokio::sync::Notify::new());
        let mut ours = Vec::new();
        let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(n.max(1));
        let deadline = Instant::now() + IDLE_OPEN_TIMEOUT;
        for _ in 0..n {
            if Instant::now() > deadline {
                return Err(format!(
                    "opening {n} connections took over {IDLE_OPEN_TIMEOUT:?}"
                ));
            }
            if kind == "ours" {
                ours.push(crate::ours::open_idle(&url, TOKEN).await?);
            } else {
                let transport = crate::official::http_client(&url, TOKEN)?;
                tokio::spawn(crate::official::hold_idle(
                    transport,
                    ready_tx.clone(),
                    release.clone(),
                ));
                tokio::time::timeout(Duration::from_secs(10), ready_rx.recv())
                    .await
                    .map_err(|_| "an idle connection did not open".to_owned())?
                    .ok_or("an idle connection ended")??;
            }
        }
        // Let the server settle (buffers, lazily grown tables) before reading its memory.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = server.rss_kib();
        let out = tokio::time::timeout(crate::MEASUREMENT_TIMEOUT, async {
            if kind == "ours" {
                crate::ours::over_remote(&url, TOKEN, b).await
            } else {
                crate::official::over_remote(&url, TOKEN, b).await
            }
        })
        .await
        .map_err(|_| "b timed out".to_owned())??;
        release.notify_waiters();
        for conn in ours {
            conn.close();
        }
        Ok(IdleFigures {
            kib_per_connection: after.saturating_sub(before) as f64 / n.max(1) as f64,
            b_p99_us: b_p99(o, &out)?,
        })
    })
}

/// What a column that could not run here shows.
const SKIPPED: &str = "skipped";

fn cell(v: &Result<f64, String>, digits: usize) -> String {
    match v {
        Ok(v) => format!("{v:.digits$}"),
        Err(e) if e == SKIPPED => SKIPPED.to_owned(),
        Err(_) => "FAILED".to_owned(),
    }
}

fn ratio(a: &Result<f64, String>, b: &Result<f64, String>) -> String {
    match (a, b) {
        (Ok(a), Ok(b)) if *b > 0.0 => format!("{:.2}x", a / b),
        _ => "–".to_owned(),
    }
}

/// `acp-bench remote`.
pub fn main(args: &[String]) -> ExitCode {
    let o = match Options::parse(args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if o.hosting {
        return hosting(&o);
    }
    let started = Instant::now();
    let a = Plan::Job(Job::Stream { n: o.chunks });
    let b = Plan::Job(Job::Sequential { n: o.requests });
    let mut failed = false;
    let mut rows_a = Vec::new();
    let mut rows_b = Vec::new();
    let mut skipped = None;
    for column in Column::ALL {
        let chosen = o
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| n == column.short_name()));
        if !chosen {
            rows_a.push(Err(SKIPPED.to_owned()));
            rows_b.push(Err(SKIPPED.to_owned()));
            continue;
        }
        if column.server() == Some("ts") && crate::foreign::installed().is_none() {
            // Not a failure: the SDK comes with the interop matrix's set-up.
            skipped = Some(crate::foreign::missing_note());
            rows_a.push(Err(SKIPPED.to_owned()));
            rows_b.push(Err(SKIPPED.to_owned()));
            continue;
        }
        let ra = figure(&o, column, a, a_rate);
        let rb = figure(&o, column, b, b_p99);
        for (what, r) in [("a", &ra), ("b", &rb)] {
            if let Err(e) = r {
                eprintln!("{what} {}: FAILED: {e}", column.title());
                failed = true;
            }
        }
        rows_a.push(ra);
        rows_b.push(rb);
    }
    if let Some(note) = &skipped {
        eprintln!("the TypeScript server columns are skipped: {note}");
    }
    println!(
        "\n## acp-bench remote (loopback; a: {} chunks, b: {} requests, medians of {} runs after {} warm-up)\n",
        o.chunks, o.requests, o.runs, o.warmup
    );
    let titles: Vec<&str> = Column::ALL.iter().map(|c| c.title()).collect();
    println!("| figure | {} |", titles.join(" | "));
    println!("|---|{}", "---|".repeat(titles.len()));
    let line = |name: &str, rows: &[Result<f64, String>], digits| {
        let cells: Vec<String> = rows.iter().map(|r| cell(r, digits)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    };
    line("a. chunks/s (higher is better)", &rows_a, 0);
    line("b. p99 µs (lower is better)", &rows_b, 1);
    // Column order: ours stdio, ours ws, ours http, official ws, official http, ts ws, ts http.
    println!("\nRatios:");
    println!(
        "- a over WebSocket: {} of ours over stdio (target >= 0.50x), {} the official crate's WebSocket (target >= 10x)",
        ratio(&rows_a[1], &rows_a[0]),
        ratio(&rows_a[1], &rows_a[3])
    );
    println!(
        "- a over Streamable HTTP: {} of ours over stdio, {} the official crate's HTTP",
        ratio(&rows_a[2], &rows_a[0]),
        ratio(&rows_a[2], &rows_a[4])
    );
    println!(
        "- b p99, ours / official (target <= 1.00x): WebSocket {}, Streamable HTTP {}",
        ratio(&rows_b[1], &rows_b[3]),
        ratio(&rows_b[2], &rows_b[4])
    );
    println!(
        "- a, our server / the TypeScript SDK's (each with its own SDK's agent, our client): WebSocket {}, Streamable HTTP {}",
        ratio(&rows_a[1], &rows_a[5]),
        ratio(&rows_a[2], &rows_a[6])
    );
    println!(
        "- b p99, ours / the TypeScript SDK's server: WebSocket {}, Streamable HTTP {}",
        ratio(&rows_b[1], &rows_b[5]),
        ratio(&rows_b[2], &rows_b[6])
    );
    println!(
        "\n{} idle connections on one server (each initialized; not the TypeScript server's, \
         which starts an agent process per connection):\n",
        o.idle
    );
    println!("| server, profile | server RSS per idle connection (KiB) | b p99 beside them (µs) |");
    println!("|---|---|---|");
    for column in [
        Column::OursWs,
        Column::OursHttp,
        Column::OfficialWs,
        Column::OfficialHttp,
    ] {
        if o.idle == 0
            || o.only
                .as_ref()
                .is_some_and(|only| !only.iter().any(|n| n == column.short_name()))
        {
            println!("| {} | skipped | skipped |", column.title());
            continue;
        }
        match idle(&o, column) {
            Ok(f) => println!(
                "| {} | {:.1} | {:.1} |",
                column.title(),
                f.kib_per_connection,
                f.b_p99_us
            ),
            Err(e) => {
                eprintln!("idle {}: FAILED: {e}", column.title());
                println!("| {} | FAILED | FAILED |", column.title());
                failed = true;
            }
        }
    }
    println!("\n(took {:.1}s)", started.elapsed().as_secs_f64());
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
