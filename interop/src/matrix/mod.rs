//! Running the matrix: each cell is a client process that spawns the tap, which spawns the
//! agent; afterwards the wire transcript and both sides' events are checked ([`crate::checks`])
//! and every message is validated against the official schema (`peers/ts/validate.mjs`).
//!
//! Cells: our client against the TypeScript, Python and official Rust agents; the TypeScript,
//! Python and official Rust clients against our agent; and our client against our agent as the
//! baseline; over the network and through proxy chains; and in draft protocol v2 and across
//! versions ([`v2_cells`], each cell's [`Speaks`]). A cell's files (`wire.jsonl`,
//! `client.stdout.jsonl`, `client.stderr`, `agent.report.jsonl`, `agent.stderr`, `checks.txt`,
//! its workspace) stay in `<out>/<cell>/` when it fails (or with `--keep`).
//!
//! `cells` lists the cells, `launch` starts their peers, [`run`] runs and checks one;
//! this module runs the whole matrix and sums it up.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cache;
use crate::checks::Check;
use crate::script::script;

mod cells;
mod launch;
pub mod run;
pub mod validate;

pub use crate::server::kill_group;
pub use cells::{
    CELL_TIMEOUT, Cell, REMOTE_TOKEN, Speaks, Transport, all_cells, chain_cells, remote_cells,
    v2_cells,
};
pub use launch::Peers;
pub use run::{CellOutcome, run_cell};

/// Options of `acp-interop matrix`.
#[derive(Debug)]
pub struct Options {
    /// The install cache.
    pub cache: PathBuf,
    /// Where cell directories go (default: `<target>/interop-transcripts`).
    pub out: Option<PathBuf>,
    /// Keep the files of passing cells too.
    pub keep: bool,
    /// Run only the cells that need no install (and skip schema validation).
    pub rust_only: bool,
    /// Cells to run (by name; empty: all).
    pub cells: Vec<String>,
}

impl Options {
    /// Parses `[--cache <dir>] [--out <dir>] [--keep] [--rust-only] [<cell>...]`.
    pub fn parse(args: &[OsString]) -> Result<Options, String> {
        let mut options = Options {
            cache: cache::dir(),
            out: None,
            keep: false,
            rust_only: false,
            cells: Vec::new(),
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.to_str() {
                Some("--cache") => {
                    options.cache = it.next().ok_or("--cache needs a directory")?.into()
                }
                Some("--out") => {
                    options.out = Some(it.next().ok_or("--out needs a directory")?.into())
                }
                Some("--keep") => options.keep = true,
                Some("--rust-only") => options.rust_only = true,
                Some(name) if !name.starts_with('-') => options.cells.push(name.to_owned()),
                _ => return Err(format!("unexpected argument {arg:?}")),
            }
        }
        let known: Vec<String> = all_cells().iter().map(Cell::name).collect();
        if let Some(bad) = options.cells.iter().find(|c| !known.contains(c)) {
            return Err(format!("unknown cell {bad}; cells: {}", known.join(", ")));
        }
        Ok(options)
    }
}

/// `acp-interop matrix`: installs (unless `--rust-only`), runs the cells, validates, prints a
/// per-cell summary, keeps the files of failed cells; fails if any cell failed.
pub fn main(options: Options) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("interop: cannot find my own binary: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = options.out.clone().unwrap_or_else(|| {
        exe.parent().and_then(Path::parent).map_or_else(
            || PathBuf::from("interop-transcripts"),
            |t| t.join("interop-transcripts"),
        )
    });
    let installed = if options.rust_only {
        None
    } else {
        let started = Instant::now();
        match cache::install(&options.cache) {
            Ok(i) => {
                println!(
                    "interop: installs ready in {:.1}s",
                    started.elapsed().as_secs_f64()
                );
                Some(i)
            }
            Err(e) => {
                eprintln!("interop: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let peers = Peers { exe, installed };
    let cells: Vec<Cell> = all_cells()
        .into_iter()
        .filter(|c| options.cells.is_empty() || options.cells.contains(&c.name()))
        .filter(|c| !options.rust_only || c.is_rust_only())
        .collect();
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("interop: cannot create {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for cell in cells {
        let outcome = run_cell(cell, &peers, &out.join(cell.name()));
        println!(
            "interop: {} {} ({}, {:.1}s)",
            if outcome.passed() { "pass" } else { "FAIL" },
            cell.name(),
            cell.speaks.label(),
            outcome.elapsed.as_secs_f64()
        );
        outcomes.push(outcome);
    }
    match &peers.installed {
        Some(installed) => {
            if let Err(e) = validate::validate_schema(&mut outcomes, installed, &out) {
                eprintln!("interop: {e}");
                for o in &mut outcomes {
                    o.checks.push(Check {
                        name: "schema",
                        ok: false,
                        detail: e.clone(),
                    });
                }
            }
        }
        None => println!(
            "interop: schema validation skipped (--rust-only); `cargo xtask interop` runs it"
        ),
    }
    let summary = summarize(&outcomes, started.elapsed());
    print!("{summary}");
    let _ = std::fs::write(out.join("summary.txt"), &summary);
    let mut failed = false;
    for o in &outcomes {
        if o.passed() && !options.keep {
            let _ = std::fs::remove_dir_all(&o.dir);
        }
        failed |= !o.passed();
    }
    if failed {
        println!(
            "interop: transcripts of the failed cells are in {}",
            out.display()
        );
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The per-cell summary, every check with what it saw, and the update kinds covered.
pub fn summarize(outcomes: &[CellOutcome], elapsed: Duration) -> String {
    let mut text = String::from("\n== interop matrix ==\n");
    for o in outcomes {
        let _ = writeln!(
            text,
            "{} {} ({}, {:.1}s)",
            if o.passed() { "PASS" } else { "FAIL" },
            o.cell.name(),
            o.cell.speaks.label(),
            o.elapsed.as_secs_f64()
        );
        for c in &o.checks {
            let _ = writeln!(
                text,
                "  {} {}: {}",
                if c.ok { "ok  " } else { "FAIL" },
                c.name,
                c.detail
            );
        }
        for n in &o.notes {
            let _ = writeln!(text, "  note {n}");
        }
    }
    let covered: BTreeSet<&String> = outcomes.iter().flat_map(|o| &o.delivered).collect();
    let missing: Vec<&str> = script()
        .update_kinds()
        .into_iter()
        .filter(|k| !covered.iter().any(|c| c == k))
        .collect();
    let _ = writeln!(
        text,
        "session/update kinds delivered across the matrix: {}/{}{}",
        covered.len(),
        script().updates.len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(" (never: {missing:?})")
        }
    );
    let passed = outcomes.iter().filter(|o| o.passed()).count();
    let _ = writeln!(
        text,
        "{passed}/{} cells passed in {:.1}s",
        outcomes.len(),
        elapsed.as_secs_f64()
    );
    text
}
