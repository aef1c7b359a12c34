//! What `acp trace` costs per message, side by side with no proxy.
//!
//! ```sh
//! cargo build --release -p acp-cli --example trace_overhead
//! target/release/examples/trace_overhead [--acp target/release/acp] [--runs 5]
//! ```
//!
//! The "agent" is `cat`: it sends every line straight back, so all the time measured is
//! pipes, process wake-ups and (through the proxy) the proxy's work. Two measures, each run
//! directly against `cat` and through `acp trace --out FILE -- cat`, alternating, with the
//! median of the runs reported:
//!
//! * latency: one 200-byte JSON-RPC line out, wait for it to come back, 5,000 times. A round
//!   trip crosses the proxy twice (once each way), so the overhead per message is half the
//!   difference of the round trips.
//! * throughput: 100,000 lines written while a thread reads them back (a stream of
//!   `session/update`s): the difference per line.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let acp = value("--acp").map(PathBuf::from).unwrap_or_else(|| {
        let exe = std::env::current_exe().expect("own path");
        exe.parent()
            .and_then(|p| p.parent())
            .expect("target dir")
            .join("acp")
    });
    assert!(
        acp.exists(),
        "{} not found: build it (cargo build --release -p acp-cli) or pass --acp",
        acp.display()
    );
    let runs: usize = value("--runs").and_then(|r| r.parse().ok()).unwrap_or(5);
    let trace =
        std::env::temp_dir().join(format!("acp-trace-overhead-{}.ndjson", std::process::id()));
    let (mut lat_direct, mut lat_proxy, mut thr_direct, mut thr_proxy) =
        (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        lat_direct.push(latency(None, &trace, 5_000));
        lat_proxy.push(latency(Some(&acp), &trace, 5_000));
        thr_direct.push(throughput(None, &trace, 100_000));
        thr_proxy.push(throughput(Some(&acp), &trace, 100_000));
    }
    let recorded = std::fs::read_to_string(&trace)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let _ = std::fs::remove_file(&trace);
    let (ld, lp, td, tp) = (
        median(lat_direct),
        median(lat_proxy),
        median(thr_direct),
        median(thr_proxy),
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "acp trace overhead ({runs} runs, medians; the agent is `cat`; {} bytes per line)",
        LINE.len() + 1
    );
    println!(
        "  round trip    direct {:>8.2} us   through acp trace {:>8.2} us   overhead per message {:>7.2} us",
        us(ld),
        us(lp),
        (us(lp) - us(ld)) / 2.0
    );
    println!(
        "  stream        direct {:>8.2} us   through acp trace {:>8.2} us   overhead per message {:>7.2} us",
        us(td),
        us(tp),
        us(tp) - us(td)
    );
    println!(
        "  last trace file held {recorded} records (every line, both directions, plus start and exit)"
    );
}
