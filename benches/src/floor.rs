//! `acp-bench floor`: the round trip of one line between two processes over pipes with no
//! JSON and no RPC layer, blocking threads against tokio's current-thread runtime. This is
//! what scenario b sits on: the gap between the two is what an async runtime costs per
//! round trip (a wake-up through epoll on each side instead of a blocking read), which no
//! RPC layer on tokio can win back. BENCHMARKS.md compares b's figures with it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::msg::percentile;

/// The argument that turns this binary into the echoing peer of the floor.
pub const FLOOR_PEER_ARG: &str = "__floor_peer";

/// A line the size of b's answer (a small `fs/read_text_file` result).
const LINE: &[u8] = br#"{"jsonrpc":"2.0","id":12345,"result":{"content":"fn main() {\n    println!(\"hello\");\n}\n"}}"#;

const USAGE: &str = "\
usage: acp-bench floor [--requests N] [--runs N]
  round trips of one line to a child process that echoes it, over its stdin/stdout:
  blocking threads on both sides, then tokio current-thread runtimes on both sides";

/// The echoing child: `blocking` or `tokio`.
pub fn peer(kind: &str) -> ExitCode {
    match kind {
        "blocking" => {
            let mut input = BufReader::new(std::io::stdin().lock());
            let mut output = std::io::stdout().lock();
            let mut line = Vec::new();
            loop {
                line.clear();
                match input.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return ExitCode::SUCCESS,
                    Ok(_) => {
                        if output
                            .write_all(&line)
                            .and_then(|()| output.flush())
                            .is_err()
                        {
                            return ExitCode::FAILURE;
                        }
                    }
                }
            }
        }
        "tokio" => crate::runtime().block_on(async {
            let mut input = tokio::io::BufReader::new(acp_rpc::stdio::stdin());
            let mut output = acp_rpc::stdio::stdout();
            let mut line = Vec::new();
            loop {
                line.clear();
                match input.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => return ExitCode::SUCCESS,
                    Ok(_) => {
                        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                            return ExitCode::FAILURE;
                        }
                    }
                }
            }
        }),
        other => {
            eprintln!("unknown floor peer {other:?}");
            ExitCode::from(2)
        }
    }
}

fn spawn(kind: &str) -> Result<std::process::Child, String> {
    Command::new(crate::exe())
        .args([FLOOR_PEER_ARG, kind])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the floor peer: {e}"))
}

/// Round-trip samples (ns) with blocking pipes on this side too.
fn blocking(n: usize) -> Result<Vec<u64>, String> {
    let mut child = spawn("blocking")?;
    let mut to = child.stdin.take().expect("piped");
    let mut from = BufReader::new(child.stdout.take().expect("piped"));
    let mut samples = Vec::with_capacity(n);
    let mut line = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        to.write_all(LINE).map_err(|e| e.to_string())?;
        to.write_all(b"\n").map_err(|e| e.to_string())?;
        line.clear();
        from.read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        samples.push(t.elapsed().as_nanos() as u64);
        if line.len() != LINE.len() + 1 {
            return Err(format!("echo of {} bytes", line.len()));
        }
    }
    drop(to);
    let _ = child.wait();
    Ok(samples)
}

/// Round-trip samples (ns) with a tokio current-thread runtime on this side too.
fn on_tokio(n: usize) -> Result<Vec<u64>, String> {
    crate::runtime().block_on(async {
        let mut child = tokio::process::Command::new(crate::exe())
            .args([FLOOR_PEER_ARG, "tokio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the floor peer: {e}"))?;
        let mut to = child.stdin.take().expect("piped");
        let mut from = tokio::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut framed = LINE.to_vec();
        framed.push(b'\n');
        let mut samples = Vec::with_capacity(n);
        let mut line = Vec::new();
        for _ in 0..n {
            let t = Instant::now();
            to.write_all(&framed).await.map_err(|e| e.to_string())?;
            line.clear();
            from.read_until(b'\n', &mut line)
                .await
                .map_err(|e| e.to_string())?;
            samples.push(t.elapsed().as_nanos() as u64);
            if line.len() != framed.len() {
                return Err(format!("echo of {} bytes", line.len()));
            }
        }
        drop(to);
        let _ = child.wait().await;
        Ok(samples)
    })
}

/// `acp-bench floor`.
pub fn main(args: &[String]) -> ExitCode {
    let mut requests = 20_000usize;
    let mut runs = 5usize;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = |v: Option<&String>| v.and_then(|v| v.replace('_', "").parse::<usize>().ok());
        match arg.as_str() {
            "--requests" => match value(it.next()) {
                Some(v) => requests = v.max(1),
                None => return usage("--requests takes a number"),
            },
            "--runs" => match value(it.next()) {
                Some(v) => runs = v.max(1),
                None => return usage("--runs takes a number"),
            },
            "-h" | "--help" => return usage(""),
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    println!("| round trip of one line | p50 µs | p99 µs |\n| --- | ---: | ---: |");
    for (name, measure) in [
        (
            "blocking threads, both sides",
            blocking as fn(usize) -> Result<Vec<u64>, String>,
        ),
        ("tokio current-thread, both sides", on_tokio),
    ] {
        let mut p50s = Vec::new();
        let mut p99s = Vec::new();
        for _ in 0..runs {
            match measure(requests) {
                Ok(mut samples) => {
                    samples.sort_unstable();
                    p50s.push(percentile(&samples, 50.0) as f64 / 1000.0);
                    p99s.push(percentile(&samples, 99.0) as f64 / 1000.0);
                }
                Err(e) => {
                    eprintln!("FAILED floor {name}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        let median = |v: &[f64]| crate::table::median(v).unwrap_or(0.0);
        println!("| {name} | {:.2} | {:.2} |", median(&p50s), median(&p99s));
    }
    ExitCode::SUCCESS
}

fn usage(error: &str) -> ExitCode {
    if !error.is_empty() {
        eprintln!("error: {error}");
    }
    eprintln!("{USAGE}");
    ExitCode::from(2)
}
