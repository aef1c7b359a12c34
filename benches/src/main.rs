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
mod official_v2;
mod options;
#[cfg(feature = "otel")]
mod otel;
mod ours;
mod phases;
mod plan;
mod raw;
mod remote;
mod scenarios;
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
use crate::options::{Options, USAGE};
use crate::plan::{Outcome, Plan};
use crate::scenarios::{Scenario, scenarios};
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
