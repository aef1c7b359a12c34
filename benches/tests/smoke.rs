//! The harness still runs every scenario for every column and checks what it received
//! (chunk counts and order, answer counts and sizes, sessions): `acp-bench --smoke` with tiny
//! sizes fails on any wrong or missing message. Timing is never asserted here; performance
//! figures come only from `cargo xtask bench`.

use std::process::Command;

/// Runs `acp-bench args...`, asserts it succeeded, returns its stdout.
fn run_ok(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_acp-bench"))
        .args(args)
        .output()
        .expect("the benchmark binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "acp-bench {args:?} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    stdout
}

#[test]
fn every_scenario_runs_and_checks_what_it_received() {
    // The Rust columns and the floor; the TypeScript and Python columns need the interop
    // install and are run by `.ci/run` after it (`acp-bench --smoke --impls ts,py`).
    let stdout = run_ok(&["--smoke", "--impls", "ours,official,raw"]);
    assert!(!stdout.contains("FAILED"), "{stdout}");
    // Every scenario produced its row, with a figure in each column it measures.
    for (row, columns) in [
        ("a. streaming, in-process duplex", 3),
        ("a. streaming, stdio, two processes", 3),
        ("a. (same runs) agent peak RSS", 3),
        ("b. sequential fs/read_text_file", 3),
        ("c. 64 outstanding requests", 3),
        ("d. 1 MiB responses", 3),
        ("e. idle sessions kept", 2),
        ("f. cold handshake", 3),
        ("g. sessions at once (--many)", 2),
        ("h. full exchange (spawn to exit)", 2),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {row} |")))
            .unwrap_or_else(|| panic!("no row {row:?} in\n{stdout}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | scenario | metric | better | ours | official | ts | py | raw | ...
        let measured = cells[4..9].iter().filter(|c| **c != "–").count();
        assert_eq!(measured, columns, "{line}");
    }
    assert!(stdout.contains("Targets"), "{stdout}");
}

/// `ACP_BENCH_SHOW_PHASES=1`: h prints where each exchange's time went, for both Rust
/// columns, and the medians of every phase at the end.
#[test]
fn the_phases_of_h_are_traced_for_both_rust_columns() {
    let output = Command::new(env!("CARGO_BIN_EXE_acp-bench"))
        .args(["--smoke", "--only", "h", "--impls", "ours,official"])
        .env("ACP_BENCH_SHOW_PHASES", "1")
        .output()
        .expect("the benchmark binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for (column, phases) in [
        (
            "ours",
            &[
                "spawn",
                "initialize",
                "session/new",
                "prompt",
                "agent exit",
                "returned",
            ][..],
        ),
        (
            "official",
            &[
                "initialize",
                "session/new",
                "prompt",
                "agent exit",
                "returned",
            ][..],
        ),
    ] {
        let line = stderr
            .lines()
            .find(|l| l.starts_with(&format!("h phases {column}:")))
            .unwrap_or_else(|| panic!("no phases of {column} in\n{stderr}"));
        for phase in phases {
            assert!(
                line.contains(&format!(" {phase} ")),
                "{phase} missing: {line}"
            );
        }
        let medians = stdout
            .lines()
            .skip_while(|l| !l.starts_with("h phases (medians"))
            .find(|l| l.starts_with(column))
            .unwrap_or_else(|| panic!("no medians of {column} in\n{stdout}"));
        assert!(
            medians.split_whitespace().count() == 9,
            "a column and 8 figures: {medians}"
        );
    }
}

#[test]
fn a_scenario_or_column_that_does_not_exist_is_refused_by_name() {
    for (args, named) in [
        (["--only", "a,z"], "unknown scenario \"z\""),
        (["--many", "x"], "bad number"),
        (["--only", "ab"], "unknown scenario \"ab\""),
        (["--impls", "nobody"], "unknown column nobody"),
        (["--runs", "x"], "bad number"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_acp-bench"))
            .args(args)
            .output()
            .expect("the benchmark binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?} measured something");
    }
}

/// `acp-bench store --smoke`: every store produces every figure (the embedded candidates
/// and PostgreSQL, whose server the run starts from Debian's binaries; CI installs them),
/// having checked that the replay returned every event and the walk every session, and the
/// stream figure comes at each durability setting.
#[test]
fn the_store_figures_run_for_every_store_and_durability() {
    let stdout = run_ok(&["store", "--smoke"]);
    let postgres = std::env::var("CI").is_ok_and(|v| v == "true")
        || std::path::Path::new("/usr/lib/postgresql").exists();
    let stores: &[&str] = if postgres {
        &["jsonl", "sqlite", "postgres"]
    } else {
        &["jsonl", "sqlite"]
    };
    for store in stores {
        let rows: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("| {store} |")))
            .collect();
        // | store | append | replay | peak | first page | walk | idle memory |
        let figures = rows
            .iter()
            .find(|l| l.contains("events/s"))
            .unwrap_or_else(|| panic!("no figures for {store} in\n{stdout}"));
        assert_eq!(figures.split('|').count(), 9, "{figures}");
        assert!(figures.contains(" ms |"), "{figures}");
        // | store | durability | chunks | stream ratio |
        let streams: Vec<&&str> = rows.iter().filter(|l| l.ends_with("%) |")).collect();
        assert!(
            !streams.is_empty(),
            "no stream figure for {store} in\n{stdout}"
        );
        for row in streams {
            assert_eq!(row.split('|').count(), 6, "{row}");
        }
    }
}

/// `acp-bench trace --smoke`: the proxy's overhead measured against a direct pipe, every
/// line recorded. Needs the `acp` binary beside this one (built by `cargo test --workspace`,
/// or `cargo build -p acp-cli`); without it the test says so and checks nothing else.
#[test]
fn the_trace_overhead_runs_side_by_side_with_a_direct_pipe() {
    let acp = std::path::Path::new(env!("CARGO_BIN_EXE_acp-bench")).with_file_name("acp");
    if !acp.exists() {
        eprintln!(
            "skipped: {} is not built (cargo build -p acp-cli)",
            acp.display()
        );
        return;
    }
    let stdout = run_ok(&["trace", "--smoke", "--acp", acp.to_str().unwrap()]);
    for row in ["| round trip |", "| stream |"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row} in\n{stdout}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | measure | direct | proxied | overhead |: three figures in microseconds.
        assert!(cells[2..5].iter().all(|c| c.ends_with(" us")), "{line}");
    }
}

/// `acp-bench serve --smoke`: scenario a through `acp serve`, metrics and dashboard off and
/// on (with a viewer following the dashboard), each timed. Needs the `acp` binary beside
/// this one, as the trace figure does.
#[test]
fn the_serve_overhead_runs_with_metrics_and_dashboard_off_and_on() {
    let acp = std::path::Path::new(env!("CARGO_BIN_EXE_acp-bench")).with_file_name("acp");
    if !acp.exists() {
        eprintln!(
            "skipped: {} is not built (cargo build -p acp-cli)",
            acp.display()
        );
        return;
    }
    let stdout = run_ok(&["serve", "--smoke", "--acp", acp.to_str().unwrap()]);
    for row in [
        "metrics and dashboard off",
        "metrics and dashboard on",
        "on / off throughput",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(row))
            .unwrap_or_else(|| panic!("no row {row} in\n{stdout}"));
        let figure: f64 = line[line.find(row).unwrap() + row.len()..]
            .split_whitespace()
            .next()
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("no figure in {line}"));
        assert!(figure > 0.0, "{line}");
    }
}

/// `acp-bench floor`: every row of b's floor is measured, the typed one having checked each
/// answer's id and content.
#[test]
fn the_floor_measures_each_of_its_rows() {
    let stdout = run_ok(&["floor", "--runs", "1", "--requests", "50"]);
    for row in [
        "| blocking threads, both sides |",
        "| tokio current-thread, both sides |",
        "| tokio, a typed request and answer (acp-types values, no RPC engine) |",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row}:\n{stdout}"));
        let figures: Vec<f64> = line
            .split('|')
            .skip(2)
            .filter_map(|cell| cell.trim().parse().ok())
            .collect();
        assert_eq!(figures.len(), 2, "p50 and p99: {line}");
        assert!(figures.iter().all(|f| *f > 0.0), "{line}");
    }
}

/// `acp-bench v2`: a, b and b' run over v1 and v2 (ours, in process) and the official
/// crate's v2, every chunk and every answer checked (b over v2 is a permission request per
/// round trip, b' that request in both versions), one row each; a also through the v1<->v2
/// translation (our v1 agent, our v2 client), its share of v1 last.
#[test]
fn the_v2_figures_run_beside_v1() {
    let stdout = run_ok(&["v2", "--chunks", "200", "--requests", "50", "--runs", "1"]);
    let a = stdout
        .lines()
        .find(|l| l.starts_with("a: chunks/s\t"))
        .unwrap_or_else(|| panic!("no row a:\n{stdout}"));
    let translated: Vec<f64> = a
        .split('\t')
        .skip(6)
        .filter_map(|cell| cell.trim().parse().ok())
        .collect();
    assert_eq!(translated.len(), 2, "the translation's rate and share: {a}");
    assert!(translated.iter().all(|f| *f > 0.0), "{a}");
    for row in [
        "a: chunks/s\t",
        "b: requests/s\t",
        "b': permission requests/s\t",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?}:\n{stdout}"));
        let figures: Vec<f64> = line
            .split('\t')
            .skip(1)
            .take(5)
            .filter_map(|cell| cell.trim().parse().ok())
            .collect();
        assert_eq!(
            figures.len(),
            5,
            "ours v1, ours v2, their ratio, the official crate's v2 and its ratio to ours: {line}"
        );
        assert!(figures.iter().all(|f| *f > 0.0), "{line}");
    }
}

/// `acp-bench v2 --only translated` runs that column alone (the others print `NaN`), and a
/// column it does not know is refused with the names it knows.
#[test]
fn the_v2_figures_run_one_column_when_asked() {
    let stdout = run_ok(&[
        "v2",
        "--chunks",
        "200",
        "--requests",
        "20",
        "--runs",
        "1",
        "--only",
        "translated",
    ]);
    let a = stdout
        .lines()
        .find(|l| l.starts_with("a: chunks/s\t"))
        .unwrap_or_else(|| panic!("no row a:\n{stdout}"));
    let cells: Vec<&str> = a.split('\t').collect();
    assert_eq!(cells[1], "NaN", "v1 was not run: {a}");
    assert!(
        cells[6].parse::<f64>().is_ok_and(|rate| rate > 0.0),
        "the translation ran: {a}"
    );
    let refused = Command::new(env!("CARGO_BIN_EXE_acp-bench"))
        .args(["v2", "--only", "v3"])
        .output()
        .expect("the benchmark binary runs");
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("no column `v3`"), "{stderr}");
}

/// `acp-bench remote --smoke`: a and b run in every column (ours over stdio, WebSocket and
/// Streamable HTTP; the official `agent-client-protocol-http` client and server over both;
/// our client against the TypeScript SDK's server over both, when the interop matrix has
/// installed that SDK, else those two say `skipped`), each having checked every chunk and
/// answer, and the idle-connection figures come for both servers and profiles. Timing is
/// never judged here.
#[test]
fn the_remote_figures_run_in_every_column() {
    let stdout = run_ok(&["remote", "--smoke"]);
    assert!(!stdout.contains("FAILED"), "{stdout}");
    for row in ["a. chunks/s", "b. p99 µs"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {row}")))
            .unwrap_or_else(|| panic!("no row {row:?} in\n{stdout}"));
        let figures: Vec<f64> = line
            .split('|')
            .skip(2)
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        let ts_skipped = line.matches("| skipped ").count();
        assert!(
            figures.len() == 7 || (figures.len() == 5 && ts_skipped == 2),
            "{line}"
        );
        assert!(figures.iter().all(|f| *f > 0.0), "{line}");
    }
    for server in ["ours ws", "ours http", "official ws", "official http"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {server} |")))
            .unwrap_or_else(|| panic!("no idle row for {server} in\n{stdout}"));
        let figures: Vec<f64> = line
            .split('|')
            .skip(2)
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        assert_eq!(figures.len(), 2, "{line}");
    }
    assert!(stdout.contains("Ratios:"), "{stdout}");
}

/// `acp-bench remote --hosting --smoke`: our server with the hosting checks off and on
/// (identities from a token file, the MCP policy, a served root) streams every chunk and
/// answers every request over both profiles; each row has both figures and their ratio.
#[test]
fn the_hosting_checks_comparison_runs_over_both_profiles() {
    let stdout = run_ok(&["remote", "--hosting", "--smoke"]);
    assert!(!stdout.contains("FAILED"), "{stdout}");
    for profile in ["WebSocket", "Streamable HTTP"] {
        for figure in ["a chunks/s", "b p99 µs"] {
            let row = format!("| {profile}, {figure} |");
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&row))
                .unwrap_or_else(|| panic!("no row {row:?} in\n{stdout}"));
            let figures: Vec<f64> = line
                .split('|')
                .skip(2)
                .filter_map(|c| c.trim().parse().ok())
                .collect();
            assert_eq!(figures.len(), 2, "{line}");
            assert!(figures.iter().all(|f| *f > 0.0), "{line}");
            assert!(line.trim_end().ends_with("x |"), "a ratio: {line}");
        }
    }
}
