//! `cargo xtask test`: the workspace's tests, with the test binaries run side by side.
//!
//! `cargo test --workspace` builds every test binary, then runs them one after another. Most of
//! ours wait far more than they compute (child processes, tmux, a browser, PostgreSQL, timers
//! that prove something does *not* happen), so on a 2-core machine one binary at a time leaves
//! the cores idle for most of the run. This command builds exactly what `cargo test --workspace`
//! builds (the same features, so nothing is compiled twice), then runs the binaries `--jobs` at a
//! time, the slowest first (from the durations of the previous run, kept in the target
//! directory), each with its output in a file and a time limit. The doctests run as one more job.
//!
//! A binary's output is printed only when it fails (or with `--verbose`); every binary gets one
//! line with its result and duration, and the slowest ten are listed at the end.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask test [--jobs <n>] [--timeout <seconds>] [--locked] [--no-doc] [--verbose] [-- <test binary args>...]

Builds what `cargo test --workspace` builds, then runs the test binaries <n> at a time (default:
the number of cores plus one), the slowest of the previous run first, and the doctests as one
more job. A binary that runs longer than <seconds> (default 900) is killed and fails.
Arguments after `--` go to every test binary (a name filter, `--ignored`, `--nocapture`).";

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    jobs: usize,
    timeout: Duration,
    locked: bool,
    doc: bool,
    verbose: bool,
    binary_args: Vec<String>,
}

fn parse(args: &[&str]) -> Result<Options, String> {
    let mut options = Options {
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()) + 1,
        timeout: Duration::from_secs(900),
        locked: false,
        doc: true,
        verbose: false,
        binary_args: Vec::new(),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--jobs" | "-j" => {
                let value = rest.next().ok_or("--jobs takes a number")?;
                options.jobs = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("--jobs takes a number above 0, got {value:?}"))?;
            }
            "--timeout" => {
                let value = rest.next().ok_or("--timeout takes seconds")?;
                let seconds: u64 = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("--timeout takes seconds above 0, got {value:?}"))?;
                options.timeout = Duration::from_secs(seconds);
            }
            "--locked" => options.locked = true,
            "--no-doc" => options.doc = false,
            "--verbose" | "-v" => options.verbose = true,
            "--" => {
                options.binary_args = rest.map(|a| a.to_string()).collect();
                break;
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(options)
}

/// One thing to run: a test binary cargo built, or the doctests.
struct Job {
    /// `crate-dir::target` (`(lib)`/`(bin)` for unit tests), or `doctests`.
    name: String,
    command: Command,
    /// The binary's size in bytes (the doctests: the largest), to order a first run.
    size: u64,
}

/// A job that is running.
struct Running {
    name: String,
    child: Child,
    log: PathBuf,
    started: Instant,
}

/// How one job ended.
struct Outcome {
    name: String,
    passed: bool,
    summary: String,
    took: Duration,
    log: PathBuf,
}

pub fn run(root: &Path, args: &[&str]) -> ExitCode {
    if matches!(args, ["--help"] | ["-h"]) {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse(args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_absolute() {
                dir
            } else {
                root.join(dir)
            }
        })
        .unwrap_or_else(|| root.join("target"));
    let logs = target_dir.join("xtask-test");
    if let Err(e) = std::fs::create_dir_all(&logs) {
        eprintln!("error: cannot create {}: {e}", logs.display());
        return ExitCode::FAILURE;
    }

    let built = Instant::now();
    let mut jobs = match build(&cargo, root, &options) {
        Ok(jobs) => jobs,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "built {} test binaries in {:.0}s; running them {} at a time",
        jobs.len(),
        built.elapsed().as_secs_f64(),
        options.jobs
    );
    if options.doc {
        let mut doc = Command::new(&cargo);
        without_cargo_run_variables(&mut doc)
            .current_dir(root)
            .args(["test", "--workspace", "--doc"])
            .args(options.locked.then_some("--locked"));
        if !options.binary_args.is_empty() {
            doc.arg("--").args(&options.binary_args);
        }
        jobs.push(Job {
            name: "doctests".into(),
            command: doc,
            size: u64::MAX,
        });
    }

    // The slowest first: the binaries that take longest decide when the run ends. Without a
    // previous run (a fresh clone), the largest binaries first: they hold the most tests.
    let history_file = logs.join("durations.txt");
    let history = read_history(&history_file);
    let weight = |job: &Job| match history.get(&job.name) {
        Some(seconds) => *seconds,
        None if history.is_empty() => job.size as f64,
        None => f64::MAX,
    };
    jobs.sort_by(|a, b| weight(b).total_cmp(&weight(a)));

    let started = Instant::now();
    let outcomes = run_jobs(jobs, &options, &logs);
    write_history(&history_file, &history, &outcomes);
    report(&outcomes, started.elapsed(), options.verbose)
}

/// The variables `cargo run` sets for xtask itself (its package's name, version, manifest...).
/// They must not reach the cargo this command runs, nor the tests: build scripts such as
/// ring's and cc's declare `rerun-if-env-changed` on several of them, and cargo compares those
/// with its own environment, so a build from inside `cargo xtask` would otherwise not match
/// one from a shell (each would rebuild ring and everything above it for the other).
fn without_cargo_run_variables(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("CARGO_PKG_")
            || matches!(
                name,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_MANIFEST_LINKS"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_RUSTC_CURRENT_DIR"
                    | "CARGO_TARGET_TMPDIR"
                    | "OUT_DIR"
            )
        {
            command.env_remove(name);
        }
    }
    command
}

/// Builds every test target of the workspace with `cargo test --no-run` and returns one job
/// per test binary, in the directory `cargo test` would run it in.
fn build(cargo: &std::ffi::OsStr, root: &Path, options: &Options) -> Result<Vec<Job>, String> {
    let mut command = Command::new(cargo);
    without_cargo_run_variables(&mut command)
        .current_dir(root)
        .args([
            "test",
            "--workspace",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .args(options.locked.then_some("--locked"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut jobs = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("reading cargo's messages: {e}"))?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if let Some(job) = test_binary(&message, &options.binary_args) {
            jobs.push(job);
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the tests failed ({status})"));
    }
    Ok(jobs)
}

/// The job for a `compiler-artifact` message of a test binary, or `None` for anything else.
fn test_binary(message: &serde_json::Value, binary_args: &[String]) -> Option<Job> {
    if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
        return None;
    }
    let executable = message["executable"].as_str()?;
    let manifest = Path::new(message["manifest_path"].as_str()?);
    let package_dir = manifest.parent()?;
    let crate_dir = package_dir.file_name()?.to_string_lossy();
    let target = message["target"]["name"].as_str()?;
    let kind = message["target"]["kind"][0].as_str().unwrap_or("test");
    let name = match kind {
        "test" => format!("{crate_dir}::{target}"),
        other => format!("{crate_dir}::{target}({other})"),
    };
    let size = std::fs::metadata(executable).map_or(0, |m| m.len());
    let mut command = Command::new(executable);
    // As `cargo test` runs a test binary: in its package's directory, with the package's
    // manifest directory in the environment.
    without_cargo_run_variables(&mut command)
        .current_dir(package_dir)
        .env("CARGO_MANIFEST_DIR", package_dir)
        // The build above made every example of the workspace: tests that would build one
        // on demand (a package-scoped build, with other features) use it as it is.
        .env("ACP_TEST_EXAMPLES_BUILT", "1")
        .args(binary_args);
    Some(Job {
        name,
        command,
        size,
    })
}

/// Runs the jobs `options.jobs` at a time, each with its output in a log file.
fn run_jobs(jobs: Vec<Job>, options: &Options, logs: &Path) -> Vec<Outcome> {
    let mut waiting = jobs.into_iter();
    let mut running: Vec<Running> = Vec::new();
    let mut outcomes = Vec::new();
    loop {
        while running.len() < options.jobs {
            let Some(job) = waiting.next() else { break };
            match start(job, logs) {
                Ok(started) => running.push(started),
                Err(outcome) => {
                    print_line(&outcome);
                    outcomes.push(outcome);
                }
            }
        }
        if running.is_empty() {
            return outcomes;
        }
        let mut index = 0;
        while index < running.len() {
            let job = &mut running[index];
            let ended = match job.child.try_wait() {
                Ok(Some(status)) => Some(status.success()),
                Ok(None) if job.started.elapsed() > options.timeout => {
                    let _ = job.child.kill();
                    let _ = job.child.wait();
                    Some(false)
                }
                Ok(None) => None,
                Err(_) => Some(false),
            };
            match ended {
                None => index += 1,
                Some(passed) => {
                    let job = running.swap_remove(index);
                    let took = job.started.elapsed();
                    let summary = if took > options.timeout && !passed {
                        format!("killed after {}s (--timeout)", options.timeout.as_secs())
                    } else {
                        result_line(&job.log)
                    };
                    let outcome = Outcome {
                        name: job.name,
                        passed,
                        summary,
                        took,
                        log: job.log,
                    };
                    print_line(&outcome);
                    if !passed || options.verbose {
                        print_log(&outcome.log);
                    }
                    outcomes.push(outcome);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts one job with stdout and stderr in one log file.
fn start(mut job: Job, logs: &Path) -> Result<Running, Outcome> {
    let log = logs.join(format!("{}.log", job.name.replace([':', '(', ')'], "_")));
    let failed = |summary: String, log: PathBuf, name: String| Outcome {
        name,
        passed: false,
        summary,
        took: Duration::ZERO,
        log,
    };
    let file = match File::create(&log) {
        Ok(file) => file,
        Err(e) => return Err(failed(format!("cannot create its log: {e}"), log, job.name)),
    };
    let stderr = match file.try_clone() {
        Ok(file) => file,
        Err(e) => return Err(failed(format!("cannot share its log: {e}"), log, job.name)),
    };
    job.command.stdin(Stdio::null()).stdout(file).stderr(stderr);
    match job.command.spawn() {
        Ok(child) => Ok(Running {
            name: job.name,
            child,
            log,
            started: Instant::now(),
        }),
        Err(e) => Err(failed(format!("cannot start: {e}"), log, job.name)),
    }
}

/// The last `test result:` line of a log, summed when a job printed several (the doctests).
fn result_line(log: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(log) else {
        return "no output".into();
    };
    let (mut passed, mut failed, mut ignored, mut results) = (0u64, 0u64, 0u64, 0);
    for line in text.lines().filter(|l| l.starts_with("test result:")) {
        results += 1;
        let count = |word: &str| {
            line.split(';')
                .find_map(|part| {
                    part.trim()
                        .strip_suffix(word)?
                        .trim()
                        .rsplit(' ')
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .unwrap_or(0)
        };
        passed += count("passed");
        failed += count("failed");
        ignored += count("ignored");
    }
    if results == 0 {
        // A binary with a harness of its own (`harness = false`) may print only the
        // `test NAME ... ok` lines.
        for line in text.lines().filter(|l| l.starts_with("test ")) {
            if line.ends_with(" ... ok") {
                passed += 1;
            } else if line.ends_with(" ... FAILED") {
                failed += 1;
            } else if line.ends_with(" ... ignored") {
                ignored += 1;
            }
        }
        if passed + failed + ignored == 0 {
            return "no `test result:` line".into();
        }
    }
    format!("{passed} passed, {failed} failed, {ignored} ignored")
}

fn print_line(outcome: &Outcome) {
    println!(
        "{} {:<58} {:>6.1}s  {}",
        if outcome.passed { "ok  " } else { "FAIL" },
        outcome.name,
        outcome.took.as_secs_f64(),
        outcome.summary
    );
}

/// Prints a job's log, at most its last 2 MiB (a runaway test must not flood CI's log).
fn print_log(log: &Path) {
    const MAX: u64 = 2 << 20;
    let Ok(mut file) = File::open(log) else {
        return;
    };
    let length = file.metadata().map_or(0, |m| m.len());
    if length > MAX {
        println!("--- last {MAX} bytes of {} ---", log.display());
        let _ = file.seek(SeekFrom::Start(length - MAX));
    } else {
        println!("--- {} ---", log.display());
    }
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    println!("{}", String::from_utf8_lossy(&bytes));
    println!("--- end of {} ---", log.display());
}

fn report(outcomes: &[Outcome], took: Duration, verbose: bool) -> ExitCode {
    let mut slowest: Vec<&Outcome> = outcomes.iter().collect();
    slowest.sort_by_key(|outcome| std::cmp::Reverse(outcome.took));
    println!("\nslowest:");
    for outcome in slowest.iter().take(10) {
        println!("  {:>6.1}s  {}", outcome.took.as_secs_f64(), outcome.name);
    }
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.passed).collect();
    println!(
        "\n{} jobs in {:.0}s, {} failed",
        outcomes.len(),
        took.as_secs_f64(),
        failed.len()
    );
    if failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    for outcome in &failed {
        println!("  FAIL {} ({})", outcome.name, outcome.summary);
        if !verbose {
            println!("       log: {}", outcome.log.display());
        }
    }
    ExitCode::FAILURE
}

/// Durations of the previous run (`seconds name` per line); missing or unreadable is empty.
fn read_history(path: &Path) -> HashMap<String, f64> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    text.lines()
        .filter_map(|line| {
            let (seconds, name) = line.split_once(' ')?;
            Some((name.to_string(), seconds.parse().ok()?))
        })
        .collect()
}

/// Keeps this run's durations (and the older ones of jobs this run did not have), so the
/// next run starts the slowest first.
fn write_history(path: &Path, old: &HashMap<String, f64>, outcomes: &[Outcome]) {
    let mut all = old.clone();
    for outcome in outcomes {
        all.insert(outcome.name.clone(), outcome.took.as_secs_f64());
    }
    let mut lines: Vec<String> = all
        .iter()
        .map(|(name, seconds)| format!("{seconds:.1} {name}"))
        .collect();
    lines.sort();
    let _ = std::fs::write(path, lines.join("\n") + "\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_refuse_nonsense() {
        let options = parse(&[
            "--jobs",
            "4",
            "--timeout",
            "30",
            "--locked",
            "--",
            "x",
            "--ignored",
        ])
        .unwrap();
        assert_eq!(options.jobs, 4);
        assert_eq!(options.timeout, Duration::from_secs(30));
        assert!(options.locked && options.doc);
        assert_eq!(options.binary_args, ["x", "--ignored"]);
        assert!(parse(&["--jobs", "0"]).unwrap_err().contains("above 0"));
        assert!(parse(&["--jobs"]).is_err());
        assert!(
            parse(&["--frobnicate"])
                .unwrap_err()
                .contains("unknown option")
        );
    }

    #[test]
    fn a_test_binary_message_becomes_a_job_and_other_messages_do_not() {
        let message = serde_json::json!({
            "reason": "compiler-artifact",
            "manifest_path": "/w/acp-cli/Cargo.toml",
            "target": {"name": "chat_session_tmux", "kind": ["test"]},
            "profile": {"test": true},
            "executable": "/w/target/debug/deps/chat_session_tmux-0123"
        });
        let job = test_binary(&message, &["--ignored".into()]).expect("a test binary");
        assert_eq!(job.name, "acp-cli::chat_session_tmux");
        assert_eq!(job.command.get_current_dir(), Some(Path::new("/w/acp-cli")));
        assert_eq!(job.command.get_args().collect::<Vec<_>>(), ["--ignored"]);

        let mut lib = message.clone();
        lib["target"] = serde_json::json!({"name": "acp_rpc", "kind": ["lib"]});
        assert_eq!(
            test_binary(&lib, &[]).unwrap().name,
            "acp-cli::acp_rpc(lib)"
        );

        let mut not_a_test = message.clone();
        not_a_test["profile"]["test"] = false.into();
        assert!(test_binary(&not_a_test, &[]).is_none());
        let mut no_executable = message.clone();
        no_executable["executable"] = serde_json::Value::Null;
        assert!(test_binary(&no_executable, &[]).is_none());
    }

    #[test]
    fn result_lines_are_summed_across_a_log() {
        let dir = std::env::temp_dir().join(format!("xtask-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        std::fs::write(
            &log,
            "running 3 tests\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\
             test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
        )
        .unwrap();
        assert_eq!(result_line(&log), "5 passed, 1 failed, 1 ignored");
        std::fs::write(&log, "test a ... ok\ntest b ... FAILED\ntest c ... ok\n").unwrap();
        assert_eq!(result_line(&log), "2 passed, 1 failed, 0 ignored");
        std::fs::write(&log, "thread 'main' panicked\n").unwrap();
        assert_eq!(result_line(&log), "no `test result:` line");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_history_keeps_the_previous_durations() {
        let dir = std::env::temp_dir().join(format!("xtask-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("durations.txt");
        let old = HashMap::from([("a::gone".to_string(), 3.0), ("a::b".to_string(), 1.0)]);
        let outcome = Outcome {
            name: "a::b".into(),
            passed: true,
            summary: String::new(),
            took: Duration::from_secs(7),
            log: PathBuf::new(),
        };
        write_history(&path, &old, &[outcome]);
        let read = read_history(&path);
        assert_eq!(read["a::b"], 7.0);
        assert_eq!(read["a::gone"], 3.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
