//! `acp-bench floor`: the round trip of one line between two processes over pipes with no
//! JSON and no RPC layer, blocking threads against tokio's current-thread runtime. This is
//! what scenario b sits on: the gap between the two is what an async runtime costs per
//! round trip (a wake-up through epoll on each side instead of a blocking read), which no
//! RPC layer on tokio can win back. A third row adds b's typed work and nothing else: on
//! tokio, one side writes an `fs/read_text_file` request made from acp-types values, the
//! other parses it into them and answers with a typed response, which the first parses.
//! What b takes beyond that row is the RPC engine's. BENCHMARKS.md compares b's figures
//! with all three.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use acp_types::v1::{ReadTextFileRequest, ReadTextFileResponse};

use crate::msg::{SMALL_CONTENT, SMALL_PATH, content_for, percentile, session_id};
use crate::raw::{Answer, InMessage, OutMessage};

/// The argument that turns this binary into the echoing peer of the floor.
pub const FLOOR_PEER_ARG: &str = "__floor_peer";

/// A line the size of b's answer (a small `fs/read_text_file` result).
const LINE: &[u8] = br#"{"jsonrpc":"2.0","id":12345,"result":{"content":"fn main() {\n    println!(\"hello\");\n}\n"}}"#;

const USAGE: &str = "\
usage: acp-bench floor [--requests N] [--runs N]
  round trips of one line to a child process that echoes it, over its stdin/stdout:
  blocking threads on both sides, then tokio current-thread runtimes on both sides; then,
  on tokio, a typed fs/read_text_file request and its typed answer (acp-types values
  through serde_json, no RPC engine)";

/// The echoing child, `blocking` or `tokio`, or the typed answering child, `typed`.
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
        "typed" => crate::runtime().block_on(async {
            let mut input = tokio::io::BufReader::new(acp_rpc::stdio::stdin());
            let mut output = acp_rpc::stdio::stdout();
            let mut line = Vec::new();
            let mut answer = Vec::new();
            loop {
                line.clear();
                match input.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => return ExitCode::SUCCESS,
                    Ok(_) => {}
                }
                let Ok(request) = serde_json::from_slice::<InMessage<ReadTextFileRequest>>(&line)
                else {
                    return ExitCode::FAILURE;
                };
                let content = content_for(&request.params.path).unwrap_or_default();
                let result = Answer {
                    jsonrpc: "2.0".to_owned(),
                    id: request.id.unwrap_or(0),
                    result: ReadTextFileResponse::new(content),
                };
                answer.clear();
                if serde_json::to_writer(&mut answer, &result).is_err() {
                    return ExitCode::FAILURE;
                }
                answer.push(b'\n');
                if output.write_all(&answer).await.is_err() || output.flush().await.is_err() {
                    return ExitCode::FAILURE;
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
    let mut framed = LINE.to_vec();
    framed.push(b'\n');
    let mut samples = Vec::with_capacity(n);
    let mut line = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        // One write, as every other row and scenario b make (the child's pipe is
        // unbuffered: two writes were two system calls).
        to.write_all(&framed).map_err(|e| e.to_string())?;
        line.clear();
        from.read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        samples.push(t.elapsed().as_nanos() as u64);
        if line.len() != framed.len() {
            return Err(format!("echo of {} bytes", line.len()));
        }
    }
    drop(to);
    let _ = child.wait();
    Ok(samples)
}

/// Round-trip samples (ns) with a tokio current-thread runtime on this side too.
fn on_tokio(n: usize) -> Result<Vec<u64>, String> {
    let mut framed = LINE.to_vec();
    framed.push(b'\n');
    tokio_round_trips(
        "tokio",
        n,
        |_, line| line.extend_from_slice(&framed),
        |_, echo| {
            if echo.len() == framed.len() {
                Ok(())
            } else {
                Err(format!("echo of {} bytes", echo.len()))
            }
        },
    )
}

/// Round-trip samples (ns) of a typed `fs/read_text_file` request and answer, on tokio
/// current-thread runtimes on both sides, with no RPC engine in between.
fn typed(n: usize) -> Result<Vec<u64>, String> {
    let session = session_id(0);
    tokio_round_trips(
        "typed",
        n,
        |i, line| {
            let message = OutMessage {
                jsonrpc: "2.0",
                id: Some(i),
                method: "fs/read_text_file",
                params: ReadTextFileRequest::new(session.as_str(), SMALL_PATH),
            };
            serde_json::to_writer(&mut *line, &message).expect("a request serializes");
            line.push(b'\n');
        },
        |i, line| {
            let answer: Answer<ReadTextFileResponse> =
                serde_json::from_slice(line).map_err(|e| format!("answer: {e}"))?;
            if answer.id == i && answer.result.content.len() == SMALL_CONTENT.len() {
                Ok(())
            } else {
                Err(format!("wrong answer {}", String::from_utf8_lossy(line)))
            }
        },
    )
}

/// `n` round trips with the floor peer `kind` on tokio current-thread runtimes: each writes
/// the line `request` makes for round trip `i` (line end included) and reads one line back,
/// which `check` judges. Both are timed: they are the work of the round trip.
fn tokio_round_trips(
    kind: &str,
    n: usize,
    mut request: impl FnMut(u64, &mut Vec<u8>),
    check: impl Fn(u64, &[u8]) -> Result<(), String>,
) -> Result<Vec<u64>, String> {
    crate::runtime().block_on(async {
        let mut child = tokio::process::Command::new(crate::exe())
            .args([FLOOR_PEER_ARG, kind])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the floor peer: {e}"))?;
        let mut to = child.stdin.take().expect("piped");
        let mut from = tokio::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut samples = Vec::with_capacity(n);
        let mut out = Vec::new();
        let mut line = Vec::new();
        for i in 0..n as u64 {
            let t = Instant::now();
            out.clear();
            request(i, &mut out);
            to.write_all(&out).await.map_err(|e| e.to_string())?;
            line.clear();
            from.read_until(b'\n', &mut line)
                .await
                .map_err(|e| e.to_string())?;
            let checked = check(i, &line);
            samples.push(t.elapsed().as_nanos() as u64);
            checked?;
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
        (
            "tokio, a typed request and answer (acp-types values, no RPC engine)",
            typed,
        ),
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
