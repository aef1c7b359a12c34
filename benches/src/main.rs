//! `acp-bench`: acp-rs side by side with the official `agent-client-protocol` crate (5.2.0)
//! and a raw serde_json baseline, in one run, printed as a table of medians and ratios.
//! Run it with `cargo xtask bench` (release build); `BENCHMARKS.md` explains the numbers.
//!
//! The two-process scenarios re-execute this binary as the agent (`acp-bench __peer
//! <ours|official|raw>`), so every column talks over real OS pipes to a real child process.

mod dialects;
mod floor;
mod foreign;
mod jobs;
mod msg;
mod official;
#[cfg(feature = "otel")]
mod otel;
mod ours;
mod phases;
mod plan;
mod raw;
mod remote;
mod serve;
mod store;
// The PostgreSQL server `acp-bench store` measures on: the tests' own (initdb and pg_ctl in a
// temporary directory, a free loopback port, stopped at exit).
#[path = "../../acp-store-postgres/tests/support/mod.rs"]
mod pg;
mod table;
mod trace;
mod v2;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::msg::Job;
use crate::plan::{Outcome, Plan};
use crate::table::{Impl, Results};

/// Buffer size of the in-process duplex pipes.
pub(crate) const DUPLEX_BUFFER: usize = 64 * 1024;
/// The argument that turns this binary into an agent process.
pub(crate) const PEER_ARG: &str = "__peer";
/// The runtime flavor of every tokio runtime in the benchmark processes
/// (`current` or `multi`), passed on to the agent processes.
const RT_ENV: &str = "ACP_BENCH_RT";
/// The most sessions g prompts at once (one measurement keeps every chunk's latency).
const MAX_MANY: u64 = 10_000;
/// How long one measurement may take before it counts as failed.
const MEASUREMENT_TIMEOUT: Duration = Duration::from_secs(600);

const USAGE: &str = "\
usage: acp-bench [options]
       acp-bench store [options]   (the session store figures; acp-bench store --help)
       acp-bench trace [options]   (the acp trace proxy's overhead; acp-bench trace --help)
       acp-bench serve [options]   (acp serve with metrics and dashboard on vs off)
       acp-bench floor [options]   (a line's round trip, blocking vs tokio: b's floor)
       acp-bench v2 [options]      (a and b over draft v2 beside v1, ours; in process)
       acp-bench otel [options]    (--features otel: a and b with the OTLP exporter off vs on)
       acp-bench remote [options]  (a and b over WebSocket and Streamable HTTP, ours and the
                                   official http crate's, and 1,000 idle connections)
  --runs N          runs per scenario and implementation; medians are reported (default 5)
  --quick           smaller sizes (a quick look, not for publishing)
  --smoke           tiny sizes, one run (what the test suite runs)
  --only LIST       scenarios to run, comma separated: a,b,c,d,e,f,g,h (default all)
  --impls LIST      columns to measure, comma separated: ours,official,ts,py,raw (default
                    all; ts and py when the interop cache holds their SDKs)
  --transport T     a: duplex or stdio only (default both; for profiling one of them)
  --rt FLAVOR       tokio runtime of both processes: current or multi (default current)
  --chunks N        a: notifications per prompt (default 200000)
  --requests N      b, c: requests (default 20000)
  --sessions N      e: sessions (default 10000)
  --many LIST       g: sessions prompted at once, comma separated (default 100,1000)
  --many-chunks N   g: chunks each of those prompts streams (default 2000)
  --exchanges N     h: full exchanges per run (default 5)
  --contend N       N busy threads in the harness for the whole run, the same for every
                    column: tails under load measured on purpose (default 0)
environment:
  ACP_BENCH_SHOW_SESSIONS=1   g: print the spread of the sessions' p99 chunk latencies and
                              the five worst sessions (when each got its first chunk)
  ACP_BENCH_DUMP_CHUNKS=FILE  g: write every chunk received to FILE, one line each:
                              session, arrival and latency (µs), the session's p99
  ACP_BENCH_SHOW_PHASES=1     h: print where each exchange's time went (spawn, initialize,
                              session/new, prompt, the agent's exit, the client's return)
                              and the medians per column at the end";

/// What to run.
#[derive(Clone, Debug)]
struct Options {
    runs: usize,
    only: Vec<char>,
    impls: Vec<Impl>,
    transports: Vec<Transport>,
    chunks: u64,
    requests: u64,
    outstanding: u64,
    big_count: u64,
    big_size: u64,
    sessions: u64,
    handshakes: usize,
    many: Vec<u64>,
    many_chunks: u64,
    exchanges: usize,
    contend: usize,
    flavor: String,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            runs: 5,
            only: "abcdefgh".chars().collect(),
            impls: table::COLUMNS.to_vec(),
            transports: vec![Transport::Duplex, Transport::Stdio],
            chunks: 200_000,
            requests: 20_000,
            outstanding: 64,
            big_count: 100,
            big_size: 1 << 20,
            sessions: 10_000,
            handshakes: 5,
            many: vec![100, 1000],
            many_chunks: 2000,
            exchanges: 5,
            contend: 0,
            flavor: "current".to_owned(),
        };
        let mut args = args.iter();
        let num = |v: Option<&String>| -> Result<u64, String> {
            v.ok_or("missing value")?
                .replace('_', "")
                .parse()
                .map_err(|e| format!("bad number: {e}"))
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--runs" => o.runs = num(args.next())?.max(1) as usize,
                "--chunks" => o.chunks = num(args.next())?,
                "--requests" => o.requests = num(args.next())?,
                "--sessions" => o.sessions = num(args.next())?,
                "--many" => {
                    let list = args.next().ok_or("missing value")?;
                    o.many = Vec::new();
                    for n in list.split(',') {
                        o.many
                            .push(num(Some(&n.trim().to_owned()))?.clamp(1, MAX_MANY));
                    }
                }
                "--many-chunks" => o.many_chunks = num(args.next())?,
                "--exchanges" => o.exchanges = num(args.next())?.max(1) as usize,
                "--contend" => o.contend = num(args.next())? as usize,
                "--only" => {
                    let list = args.next().ok_or("missing value")?;
                    o.only = Vec::new();
                    for name in list.split(',').map(str::trim) {
                        match name.chars().collect::<Vec<_>>()[..] {
                            [letter @ 'a'..='h'] => o.only.push(letter),
                            _ => return Err(format!("unknown scenario {name:?} (a to h)")),
                        }
                    }
                }
                "--impls" => {
                    let list = args.next().ok_or("missing value")?;
                    o.impls = Vec::new();
                    for name in list.split(',') {
                        o.impls.push(match name.trim() {
                            "ours" => Impl::Ours,
                            "official" => Impl::Official,
                            "ts" => Impl::Ts,
                            "py" => Impl::Py,
                            "raw" => Impl::Raw,
                            other => return Err(format!("unknown column {other}")),
                        });
                    }
                }
                "--transport" => {
                    o.transports = match args.next().map(String::as_str) {
                        Some("duplex") => vec![Transport::Duplex],
                        Some("stdio") => vec![Transport::Stdio],
                        other => return Err(format!("unknown transport {other:?}")),
                    };
                }
                "--rt" => {
                    let flavor = args.next().ok_or("missing value")?;
                    if flavor != "current" && flavor != "multi" {
                        return Err(format!("unknown runtime flavor {flavor}"));
                    }
                    o.flavor = flavor.clone();
                }
                "--quick" => {
                    o.runs = 3;
                    o.chunks = 20_000;
                    o.requests = 2_000;
                    o.big_count = 20;
                    o.sessions = 2_000;
                    o.handshakes = 3;
                    o.many = vec![100];
                    o.many_chunks = 200;
                    o.exchanges = 3;
                }
                "--smoke" => {
                    o.runs = 1;
                    o.chunks = 1_000;
                    o.requests = 200;
                    o.outstanding = 8;
                    o.big_count = 3;
                    o.big_size = 64 * 1024;
                    o.sessions = 100;
                    o.handshakes = 1;
                    o.many = vec![10];
                    o.many_chunks = 20;
                    o.exchanges = 1;
                }
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(o)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(PEER_ARG) {
        #[cfg(feature = "otel")]
        let _otel = otel::init();
        return peer(args.get(1).map_or("", String::as_str));
    }
    #[cfg(feature = "otel")]
    if args.first().map(String::as_str) == Some("otel") {
        return otel::compare(&args[1..]);
    }
    #[cfg(feature = "otel")]
    let _otel = otel::init_main();
    if args.first().map(String::as_str) == Some(store::STORE_PEER_ARG) {
        return store::peer(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("store") {
        return store::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some(remote::REMOTE_PEER_ARG) {
        return remote::peer(args.get(1).map_or("", String::as_str));
    }
    if args.first().map(String::as_str) == Some("remote") {
        return remote::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("serve") {
        return serve::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("v2") {
        return v2::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("dialects") {
        return dialects::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("trace") {
        return trace::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some(floor::FLOOR_PEER_ARG) {
        return floor::peer(args.get(1).map_or("", String::as_str));
    }
    if args.first().map(String::as_str) == Some("floor") {
        return floor::main(&args[1..]);
    }
    let options = match Options::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let _ = FLAVOR.set(options.flavor.clone());
    let mut options = options;
    let foreign_asked = args.iter().any(|a| a == "--impls");
    if foreign::installed().is_none()
        && options
            .impls
            .iter()
            .any(|i| matches!(i, Impl::Ts | Impl::Py))
    {
        if foreign_asked {
            eprintln!("error: {}", foreign::missing_note());
            return ExitCode::from(2);
        }
        eprintln!(
            "note: skipping the ts and py columns: {}",
            foreign::missing_note()
        );
        options.impls.retain(|i| !matches!(i, Impl::Ts | Impl::Py));
    }
    bench(&options)
}

/// The runtime flavor chosen on the command line (the parent process).
static FLAVOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The runtime flavor of this process: the command line's, or (in an agent process) the
/// one its parent passed in `ACP_BENCH_RT`.
fn flavor() -> String {
    FLAVOR
        .get()
        .cloned()
        .or_else(|| std::env::var(RT_ENV).ok())
        .unwrap_or_else(|| "current".to_owned())
}

/// A runtime of the chosen flavor.
fn runtime() -> tokio::runtime::Runtime {
    let multi = flavor() == "multi";
    let mut builder = if multi {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder.enable_all().build().expect("a tokio runtime")
}

/// The in-process runtime of the duplex scenario: both sides in one process, two workers
/// (what `#[tokio::main]` gives on this machine).
fn duplex_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Environment passed to agent processes.
pub(crate) fn child_env() -> Vec<(String, String)> {
    #[allow(unused_mut)] // added to with the `otel` feature
    let mut env = vec![(RT_ENV.to_owned(), flavor())];
    #[cfg(feature = "otel")]
    env.extend(otel::child_env());
    env
}

/// The body of an agent process.
fn peer(kind: &str) -> ExitCode {
    match kind {
        "ours" => runtime().block_on(ours::serve_stdio()),
        "official" => runtime().block_on(official::serve_stdio()),
        "raw" => {
            if let Err(e) = raw::peer(std::io::stdin().lock(), std::io::stdout().lock()) {
                eprintln!("raw peer: {e}");
                return ExitCode::FAILURE;
            }
        }
        other => {
            eprintln!("unknown peer {other:?}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    /// Both sides in this process over an in-memory pipe.
    Duplex,
    /// The agent in a child process, over its stdin/stdout.
    Stdio,
}

fn exe() -> PathBuf {
    std::env::current_exe().expect("the path of this binary")
}

/// Runs one measurement's future on `rt`, within [`MEASUREMENT_TIMEOUT`].
fn timed(
    rt: tokio::runtime::Runtime,
    fut: impl std::future::Future<Output = Result<Outcome, String>>,
) -> Result<Outcome, String> {
    rt.block_on(async {
        tokio::time::timeout(MEASUREMENT_TIMEOUT, fut)
            .await
            .map_err(|_| "timed out".to_owned())?
    })
}

/// One measurement.
fn measure(imp: Impl, transport: Transport, plan: Plan) -> Result<Outcome, String> {
    let program = exe();
    match (imp, transport) {
        (Impl::Ours, Transport::Duplex) => timed(duplex_runtime(), ours::over_duplex(plan)),
        (Impl::Official, Transport::Duplex) => timed(duplex_runtime(), official::over_duplex(plan)),
        (Impl::Raw, Transport::Duplex) => raw::in_process(plan),
        (Impl::Ours, Transport::Stdio) => {
            let mut command = acp_client::process::AgentCommand::new(&program)
                .arg(PEER_ARG)
                .arg("ours");
            for (k, v) in child_env() {
                command = command.env(k, v);
            }
            timed(
                runtime(),
                async move { ours::over_stdio(&command, plan).await },
            )
        }
        (Impl::Official, Transport::Stdio) => timed(
            runtime(),
            official::over_stdio(&program, &[PEER_ARG, "official"], plan),
        ),
        (Impl::Raw, Transport::Stdio) => raw::over_stdio(&program, &[PEER_ARG, "raw"], plan),
        (Impl::Ts | Impl::Py, Transport::Stdio) => {
            foreign::over_stdio(imp, plan, MEASUREMENT_TIMEOUT)
        }
        (Impl::Ts | Impl::Py, Transport::Duplex) => Err("no in-process duplex".to_owned()),
    }
}

/// The rows one outcome contributes, after checking it received what it should.
type Extract = fn(&Options, &Outcome) -> Result<Vec<(&'static str, f64)>, String>;

struct Scenario {
    letter: char,
    transport: Transport,
    plan: Plan,
    impls: &'static [Impl],
    repeat: usize,
    extract: Extract,
}

/// The Rust columns and the floor.
const ALL: &[Impl] = &[Impl::Ours, Impl::Official, Impl::Raw];
/// Every column: the Rust ones, the floor, and the TypeScript and Python SDK pairs.
const EVERY: &[Impl] = &[Impl::Ours, Impl::Official, Impl::Ts, Impl::Py, Impl::Raw];
/// The two Rust SDKs.
const SDKS: &[Impl] = &[Impl::Ours, Impl::Official];
/// Every SDK: Rust, TypeScript, Python.
const ALL_SDKS: &[Impl] = &[Impl::Ours, Impl::Official, Impl::Ts, Impl::Py];

fn check_calls(o: &Outcome, n: u64, bytes_each: u64) -> Result<(), String> {
    let r = &o.report;
    if r.count != n || r.errors != 0 || r.bytes != n * bytes_each {
        return Err(format!(
            "expected {n} good answers of {bytes_each} bytes, got {} calls, {} errors, {} bytes",
            r.count, r.errors, r.bytes
        ));
    }
    Ok(())
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

fn stream_rows(o: &Options, out: &Outcome) -> Result<(u64, f64), String> {
    let n = o.chunks;
    if out.chunks != (n, 0) || out.report.count != n {
        return Err(format!(
            "expected {n} chunks in order, got {} in order and {} wrong (agent sent {})",
            out.chunks.0, out.chunks.1, out.report.count
        ));
    }
    Ok((n, per_second(n, out.elapsed)))
}

fn scenarios(o: &Options) -> Vec<Scenario> {
    let stream = Plan::Job(Job::Stream { n: o.chunks });
    let mut all = vec![
        Scenario {
            letter: 'a',
            transport: Transport::Duplex,
            plan: stream,
            impls: ALL,
            repeat: 1,
            extract: |o, out| Ok(vec![("a_duplex", stream_rows(o, out)?.1)]),
        },
        Scenario {
            letter: 'a',
            transport: Transport::Stdio,
            plan: stream,
            impls: EVERY,
            repeat: 1,
            extract: |o, out| {
                let rate = stream_rows(o, out)?.1;
                Ok(vec![
                    ("a_stdio", rate),
                    ("a_rss", out.after.hwm_kib as f64 / 1024.0),
                ])
            },
        },
        Scenario {
            letter: 'b',
            transport: Transport::Stdio,
            plan: Plan::Job(Job::Sequential { n: o.requests }),
            impls: EVERY,
            repeat: 1,
            extract: |o, out| {
                check_calls(out, o.requests, msg::SMALL_CONTENT.len() as u64)?;
                let r = &out.report;
                Ok(vec![
                    ("b_p50", r.p50_ns as f64 / 1000.0),
                    ("b_p99", r.p99_ns as f64 / 1000.0),
                    ("b_rate", per_second(r.count, r.elapsed())),
                ])
            },
        },
        Scenario {
            letter: 'c',
            transport: Transport::Stdio,
            plan: Plan::Job(Job::Concurrent {
                n: o.requests,
                k: o.outstanding,
            }),
            impls: ALL,
            repeat: 1,
            extract: |o, out| {
                check_calls(out, o.requests, msg::SMALL_CONTENT.len() as u64)?;
                Ok(vec![(
                    "c_rate",
                    per_second(out.report.count, out.report.elapsed()),
                )])
            },
        },
        Scenario {
            letter: 'd',
            transport: Transport::Stdio,
            plan: Plan::Job(Job::Big {
                n: o.big_count,
                size: o.big_size,
            }),
            impls: EVERY,
            repeat: 1,
            extract: |o, out| {
                check_calls(out, o.big_count, o.big_size)?;
                let mb = out.report.bytes as f64 / 1e6;
                Ok(vec![(
                    "d_rate",
                    mb / out.report.elapsed().as_secs_f64().max(1e-9),
                )])
            },
        },
        Scenario {
            letter: 'e',
            transport: Transport::Stdio,
            plan: Plan::Sessions(o.sessions),
            impls: SDKS,
            repeat: 1,
            extract: |o, out| {
                let grown = out.after.rss_kib.saturating_sub(out.before.rss_kib);
                Ok(vec![
                    ("e_bytes", grown as f64 * 1024.0 / o.sessions.max(1) as f64),
                    ("e_rate", per_second(o.sessions, out.elapsed)),
                ])
            },
        },
        Scenario {
            letter: 'f',
            transport: Transport::Stdio,
            plan: Plan::Handshake,
            impls: EVERY,
            repeat: o.handshakes,
            extract: |_, out| Ok(vec![("f_ms", out.elapsed.as_secs_f64() * 1000.0)]),
        },
        Scenario {
            letter: 'h',
            transport: Transport::Stdio,
            plan: Plan::Exchange,
            impls: ALL_SDKS,
            repeat: o.exchanges,
            extract: |_, out| {
                // 5 updates + the permission + the read, every one answered as expected.
                let expected = msg::EXCHANGE_UPDATES + 2;
                if out.report.count != expected || out.report.errors != 0 {
                    return Err(format!(
                        "expected {expected} good steps, got {} and {} errors",
                        out.report.count, out.report.errors
                    ));
                }
                Ok(vec![("h_ms", out.elapsed.as_secs_f64() * 1000.0)])
            },
        },
    ];
    // g goes before h, in the order of its sizes.
    let exchange = all.pop();
    for &sessions in &o.many {
        all.push(Scenario {
            letter: 'g',
            transport: Transport::Stdio,
            plan: Plan::Many {
                sessions,
                chunks: o.many_chunks,
            },
            // The TypeScript and Python pairs stream slowly: they join where it is cheap.
            impls: if sessions <= 100 { ALL_SDKS } else { SDKS },
            repeat: 1,
            extract: many_rows(sessions),
        });
    }
    all.extend(exchange);
    all
}

/// The extractor of g for `sessions` (its rows are named after the size).
fn many_rows(sessions: u64) -> Extract {
    fn rows(
        o: &Options,
        out: &Outcome,
        keys: [&'static str; 5],
    ) -> Result<Vec<(&'static str, f64)>, String> {
        let figures = out.many.as_ref().ok_or("no per-session figures")?;
        let expected = figures.sessions * o.many_chunks;
        if figures.in_order != expected || figures.errors != 0 || out.report.errors != 0 {
            return Err(format!(
                "expected {expected} chunks in order, got {} and {} wrong (agent: {} sent, {} failed)",
                figures.in_order, figures.errors, out.report.count, out.report.errors
            ));
        }
        let median = figures.median_session_p99_ns.max(1) as f64;
        Ok(vec![
            (keys[0], per_second(expected, out.elapsed)),
            (keys[1], median / 1000.0),
            (keys[2], figures.worst_session_p99_ns as f64 / median),
            (keys[3], figures.worst_first_chunk_ns as f64 / 1e6),
            (keys[4], out.after.hwm_kib as f64 / 1024.0),
        ])
    }
    match sessions {
        100 => |o, out| {
            rows(
                o,
                out,
                [
                    "g100_rate",
                    "g100_p99",
                    "g100_fair",
                    "g100_first",
                    "g100_rss",
                ],
            )
        },
        1000 => |o, out| {
            rows(
                o,
                out,
                [
                    "g1000_rate",
                    "g1000_p99",
                    "g1000_fair",
                    "g1000_first",
                    "g1000_rss",
                ],
            )
        },
        _ => |o, out| {
            rows(
                o,
                out,
                ["gn_rate", "gn_p99", "gn_fair", "gn_first", "gn_rss"],
            )
        },
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// `n` threads that keep a core busy each until the returned guard is dropped (`--contend`).
fn contend(n: usize) -> impl Drop {
    struct Stop(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for _ in 0..n {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut x = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
        });
    }
    Stop(stop)
}

fn bench(o: &Options) -> ExitCode {
    let _contention = contend(o.contend);
    let load_before = load_average();
    let started = Instant::now();
    let mut results = Results::default();
    let mut failures = Vec::new();
    let scenarios: Vec<Scenario> = scenarios(o)
        .into_iter()
        .filter(|s| o.only.contains(&s.letter) && o.transports.contains(&s.transport))
        .collect();
    // Runs are interleaved (every implementation once, then again) so drift in the
    // machine's load hits every column alike.
    for run in 0..o.runs {
        for s in &scenarios {
            for _ in 0..s.repeat {
                for &imp in s.impls.iter().filter(|i| o.impls.contains(i)) {
                    let t = Instant::now();
                    let outcome =
                        measure(imp, s.transport, s.plan).and_then(|out| (s.extract)(o, &out));
                    match outcome {
                        Ok(rows) => {
                            eprintln!(
                                "run {}/{} {} {:?} {}: {} ({:.1}s)",
                                run + 1,
                                o.runs,
                                s.letter,
                                s.transport,
                                imp.name(),
                                rows.iter()
                                    .map(|(k, v)| format!("{k}={v:.1}"))
                                    .collect::<Vec<_>>()
                                    .join(" "),
                                t.elapsed().as_secs_f64()
                            );
                            for (key, value) in rows {
                                results.add(key, imp, value);
                            }
                        }
                        Err(e) => {
                            let what =
                                format!("{} {:?} {}: {e}", s.letter, s.transport, imp.name());
                            eprintln!("FAILED {what}");
                            failures.push(what);
                        }
                    }
                }
            }
        }
    }
    let load_after = load_average();
    println!(
        "acp-bench: {} run(s), medians; a: {} chunks; b, c: {} requests (c: {} outstanding); \
         d: {} x {} bytes; e: {} sessions; f: {} handshake(s) per run; g: {:?} sessions x {} \
         chunks; h: {} exchange(s) per run; runtime: {}; contending threads: {}; \
         load average {load_before} before, {load_after} after; {:.0}s\n",
        o.runs,
        o.chunks,
        o.requests,
        o.outstanding,
        o.big_count,
        o.big_size,
        o.sessions,
        o.handshakes,
        o.many,
        o.many_chunks,
        o.exchanges,
        o.flavor,
        o.contend,
        started.elapsed().as_secs_f64()
    );
    print!("{}", table::render(&results));
    println!();
    print!("{}", table::targets(&results));
    let phases = phases::summary();
    if !phases.is_empty() {
        println!();
        print!("{phases}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("\nFAILED measurements:");
        for f in &failures {
            println!("- {f}");
        }
        ExitCode::FAILURE
    }
}
