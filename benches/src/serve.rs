//! `acp-bench serve`: what `acp serve --metrics --dashboard` costs, scenario a (one prompt
//! streaming `--chunks` `agent_message_chunk`s) through `acp serve` in front of our bench
//! agent (`acp serve -- acp-bench __peer ours`, a gateway: one agent process per
//! connection), with metrics and the live dashboard off and on, alternating, in one run. With
//! them on, one viewer follows the dashboard's events the whole time (as a browser would), so
//! the window's analysis runs too. The figure is the throughput with them on as a share of
//! the throughput with them off (medians).
//!
//! The `acp` binary is taken from beside this one (`cargo build --release -p acp-cli --bin
//! acp -p acp-bench`), or from `--acp PATH`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use crate::msg::Job;
use crate::plan::Plan;

const USAGE: &str = "\
usage: acp-bench serve [options]
  --acp PATH     the acp binary (default: beside acp-bench)
  --runs N       runs of each, alternating off and on (default 3)
  --chunks N     chunks the prompt streams (default 200000)
  --smoke        tiny sizes, one run";

const TOKEN: &str = "bench-token-0123456789";

/// One `acp serve` with its URL; killed on drop.
struct Served {
    child: std::process::Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(acp: &PathBuf, on: bool, dir: &std::path::Path) -> Result<Served, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let token = dir.join("token");
    std::fs::write(&token, TOKEN).map_err(|e| e.to_string())?;
    let mut command = Command::new(acp);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        // The sessions' cwd (`msg::CWD`) lies under /tmp, not where the bench runs.
        .args(["--root", "/tmp"]);
    if on {
        command.args(["--metrics", "--dashboard"]);
    }
    let mut child = command
        .arg("--")
        .arg(me)
        .args([crate::PEER_ARG, "ours"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", acp.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        let Some(Ok(line)) = lines.next() else {
            return Err("acp serve printed no URL".into());
        };
        if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
            break url.to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    Ok(Served { child, url })
}

/// Follows the dashboard's events until the server goes away.
fn viewer(url: &str) {
    let host = url
        .trim_start_matches("http://")
        .trim_end_matches("/acp")
        .to_owned();
    std::thread::spawn(move || {
        let Ok(mut socket) = std::net::TcpStream::connect(&host) else {
            return;
        };
        let request = format!("GET /events?token={TOKEN} HTTP/1.1\r\nHost: {host}\r\n\r\n");
        if socket.write_all(request.as_bytes()).is_err() {
            return;
        }
        let mut sink = [0u8; 64 * 1024];
        while socket.read(&mut sink).is_ok_and(|n| n > 0) {}
    });
}

fn measure(acp: &PathBuf, on: bool, chunks: u64) -> Result<Duration, String> {
    let dir = std::env::temp_dir().join(format!("acp-bench-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let served = serve(acp, on, &dir)?;
    if on {
        viewer(&served.url);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let plan = Plan::Job(Job::Stream { n: chunks });
    let outcome = runtime.block_on(crate::ours::over_remote(&served.url, TOKEN, plan))?;
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(outcome.elapsed)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `acp-bench serve [options]`.
pub fn main(args: &[String]) -> ExitCode {
    let mut acp = None;
    let (mut runs, mut chunks) = (3usize, 200_000u64);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_default();
        match arg.as_str() {
            "--acp" => acp = Some(PathBuf::from(value())),
            "--runs" => runs = value().parse().unwrap_or(0),
            "--chunks" => chunks = value().parse().unwrap_or(0),
            "--smoke" => (runs, chunks) = (1, 200),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if runs == 0 || chunks == 0 {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let acp = acp.unwrap_or_else(|| {
        let me = std::env::current_exe().unwrap_or_default();
        me.with_file_name("acp")
    });
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (metered, into) in [(false, &mut off), (true, &mut on)] {
            match measure(&acp, metered, chunks) {
                Ok(took) => into.push(took),
                Err(e) => {
                    eprintln!("acp-bench serve: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let (off, on) = (median(off), median(on));
    let rate = |d: Duration| chunks as f64 / d.as_secs_f64();
    println!("scenario a through acp serve: {chunks} chunks, median of {runs} run(s)");
    println!(
        "  metrics and dashboard off  {:>9.1} ms  {:>10.0} chunks/s",
        off.as_secs_f64() * 1e3,
        rate(off)
    );
    println!(
        "  metrics and dashboard on   {:>9.1} ms  {:>10.0} chunks/s",
        on.as_secs_f64() * 1e3,
        rate(on)
    );
    println!(
        "  on / off throughput        {:>9.1} %",
        rate(on) / rate(off) * 100.0
    );
    ExitCode::SUCCESS
}
