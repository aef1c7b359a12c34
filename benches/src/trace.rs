//! `acp-bench trace`: what `acp trace` (the recording stdio proxy of the `acp` command line)
//! costs per message, side by side with the same work over a direct pipe.
//!
//! The "agent" is `cat`: it sends every line straight back, so all the time measured is
//! pipes, process wake-ups and (through the proxy) the proxy's work. Two measures, each run
//! directly against `cat` and through `acp trace --out FILE -- cat`, alternating, with the
//! median of the runs reported:
//!
//! - **round trip**: one 200-byte `session/update` line out, wait for it to come back,
//!   `--messages` times (after 200 to warm up). A round trip crosses the proxy twice (once
//!   each way), so the overhead per message is half the difference of the round trips.
//! - **stream**: `--lines` lines written while a thread reads them back (a stream of
//!   `session/update`s): the difference per line.
//!
//! The `acp` binary is taken from beside this one (`target/release/acp` when this is
//! `target/release/acp-bench`: build it with `cargo build --release -p acp-cli --bin acp`),
//! or from `--acp PATH`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "\
usage: acp-bench trace [options]
  --acp PATH     the acp binary (default: beside acp-bench)
  --runs N       runs of each measure, alternating direct and proxied (default 5)
  --messages N   round trip: messages per run (default 5000)
  --lines N      stream: lines per run (default 100000)
  --smoke        tiny sizes, one run";

const LINE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-0001","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello, this is one streamed chunk of text"}}}}"#;

fn spawn(acp: Option<&PathBuf>, trace: &std::path::Path) -> std::process::Child {
    let mut command = match acp {
        Some(acp) => {
            let mut c = Command::new(acp);
            c.args(["trace", "--out"]).arg(trace).args(["--", "cat"]);
            c
        }
        None => Command::new("cat"),
    };
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Mean round trip of one line.
fn latency(acp: Option<&PathBuf>, trace: &std::path::Path, n: usize) -> Duration {
    let mut child = spawn(acp, trace);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // Warm up.
    for _ in 0..200 {
        writeln!(stdin, "{LINE}").unwrap();
        stdin.flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
    }
    let start = Instant::now();
    for _ in 0..n {
        writeln!(stdin, "{LINE}").unwrap();
        stdin.flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
    }
    let elapsed = start.elapsed();
    drop(stdin);
    let _ = child.wait();
    elapsed / n as u32
}

/// Time per line of a stream of `n` lines.
fn throughput(acp: Option<&PathBuf>, trace: &std::path::Path, n: usize) -> Duration {
    let mut child = spawn(acp, trace);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let start = Instant::now();
    let reader = std::thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let mut count = 0;
        while count < n {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                break;
            }
            count += 1;
        }
        count
    });
    let mut out = std::io::BufWriter::new(&mut stdin);
    for _ in 0..n {
        writeln!(out, "{LINE}").unwrap();
    }
    out.flush().unwrap();
    drop(out);
    let got = reader.join().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(got, n, "lines lost");
    drop(stdin);
    let _ = child.wait();
    elapsed / n as u32
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

struct Options {
    acp: PathBuf,
    runs: usize,
    messages: usize,
    lines: usize,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        acp: std::env::current_exe()
            .map_err(|e| format!("own path: {e}"))?
            .with_file_name("acp"),
        runs: 5,
        messages: 5_000,
        lines: 100_000,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        let number = |v: &String| {
            v.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("bad number {v:?} for {arg}"))
        };
        match arg.as_str() {
            "--acp" => o.acp = PathBuf::from(value()?),
            "--runs" => o.runs = number(value()?)?,
            "--messages" => o.messages = number(value()?)?,
            "--lines" => o.lines = number(value()?)?,
            "--smoke" => {
                o.runs = 1;
                o.messages = 50;
                o.lines = 500;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(o)
}

/// `acp-bench trace ...`.
pub fn main(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if !o.acp.exists() {
        eprintln!(
            "error: {} not found: build it (cargo build --release -p acp-cli --bin acp) or pass --acp",
            o.acp.display()
        );
        return ExitCode::from(2);
    }
    let trace = std::env::temp_dir().join(format!("acp-bench-trace-{}.ndjson", std::process::id()));
    let (mut lat_direct, mut lat_proxy, mut thr_direct, mut thr_proxy) =
        (vec![], vec![], vec![], vec![]);
    for run in 0..o.runs {
        eprintln!("run {}/{}", run + 1, o.runs);
        lat_direct.push(latency(None, &trace, o.messages));
        lat_proxy.push(latency(Some(&o.acp), &trace, o.messages));
        thr_direct.push(throughput(None, &trace, o.lines));
        thr_proxy.push(throughput(Some(&o.acp), &trace, o.lines));
    }
    // The last proxied run's file: every line both ways, plus its start and exit records.
    let recorded = std::fs::read_to_string(&trace)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let _ = std::fs::remove_file(&trace);
    if recorded < 2 * o.lines {
        eprintln!(
            "FAILED: the trace file held {recorded} records, fewer than the {} lines that crossed",
            2 * o.lines
        );
        return ExitCode::FAILURE;
    }
    let (ld, lp, td, tp) = (
        median(lat_direct),
        median(lat_proxy),
        median(thr_direct),
        median(thr_proxy),
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "acp trace overhead ({} runs, medians; the agent is `cat`; {} bytes per line)\n",
        o.runs,
        LINE.len() + 1
    );
    println!("| measure | direct pipe | through acp trace | overhead per message |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| round trip | {:.2} us | {:.2} us | {:.2} us |",
        us(ld),
        us(lp),
        (us(lp) - us(ld)) / 2.0
    );
    println!(
        "| stream | {:.2} us | {:.2} us | {:.2} us |",
        us(td),
        us(tp),
        us(tp) - us(td)
    );
    ExitCode::SUCCESS
}
