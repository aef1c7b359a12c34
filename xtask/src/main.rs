//! Project automation for acp-rs, run as `cargo xtask <command>`.
//!
//! - `cargo xtask codegen` regenerates every generated file from the schemas in acp-schema.
//! - `cargo xtask codegen --check` regenerates in memory and fails, naming each stale file,
//!   when a checked-in file differs (CI runs this).
//! - `cargo xtask interop [<option>...] [<cell>...]` runs the interop matrix against the
//!   official TypeScript, Python and Rust SDKs (the `acp-interop` binary's `matrix` command,
//!   built and run through cargo so xtask itself never links the official Rust SDK).
//! - `cargo xtask bench [options]` builds the `acp-bench` harness in release mode and runs it:
//!   acp-rs side by side with the official crate and a raw serde_json baseline
//!   (`cargo xtask bench --help` lists the options; `BENCHMARKS.md` explains the table).
//! - `cargo xtask drift [--latest]` lists what the official schema JSON and schema crate have
//!   that our schemas lack, against the pinned releases (offline; CI) or the newest ones.
//! - `cargo xtask test [options]` builds what `cargo test --workspace` builds and runs the test
//!   binaries side by side, the slowest first (`cargo xtask test --help`; CI runs this).
//! - `cargo xtask soak [--lines <n>]` feeds 10^6 (or `n`) mutated lines to an agent and a
//!   client, in-process and over real pipes, and prints lines/s and peak RSS (the
//!   `acp-client` `soak` test, whose short form runs in `cargo test`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod drift;
mod test_runner;
#[cfg(test)]
mod tidy;

const USAGE: &str = "usage:
  cargo xtask codegen [--check]
  cargo xtask interop [--cache <dir>] [--out <dir>] [--keep] [--rust-only] [<cell>...]
  cargo xtask bench [options]
  cargo xtask drift [--latest]
  cargo xtask test [--jobs <n>] [--timeout <seconds>] [--locked] [--no-doc] [--verbose] [-- <args>]
  cargo xtask soak [--lines <n>]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["codegen"] => codegen(false),
        ["codegen", "--check"] | ["codegen", "check"] => codegen(true),
        ["interop", rest @ ..] => interop(rest),
        ["bench", options @ ..] => bench(options),
        ["drift"] => drift::run(&workspace_root(), false),
        ["drift", "--latest"] => drift::run(&workspace_root(), true),
        ["test", options @ ..] => test_runner::run(&workspace_root(), options),
        ["soak"] => soak("1000000"),
        ["soak", "--lines", n] => soak(n),
        ["help"] | ["--help"] | ["-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// Runs the full soak: the `acp-client` `soak` test with `ACP_SOAK_LINES` set.
fn soak(lines: &str) -> ExitCode {
    if lines.parse::<usize>().is_err() {
        eprintln!("error: --lines takes a number, got {lines:?}");
        return ExitCode::from(2);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = workspace_root();
    let status = Command::new(cargo)
        .current_dir(&root)
        .args([
            "test",
            "--quiet",
            "--locked",
            "-p",
            "acp-client",
            "--test",
            "soak",
        ])
        .env("ACP_SOAK_LINES", lines)
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("error: the soak failed ({s})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: cannot run cargo in {}: {e}", root.display());
            ExitCode::FAILURE
        }
    }
}

/// Builds and runs `acp-interop matrix` with the given options, through the cargo that runs
/// this xtask (same profile, target directory and `--locked` discipline as the caller's).
fn interop(options: &[&str]) -> ExitCode {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = workspace_root();
    let status = Command::new(cargo)
        .current_dir(&root)
        .args([
            "run",
            "--quiet",
            "--locked",
            "-p",
            "acp-interop",
            "--",
            "matrix",
        ])
        .args(options)
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("error: the interop matrix failed ({s})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: cannot run cargo in {}: {e}", root.display());
            ExitCode::FAILURE
        }
    }
}

fn codegen(check: bool) -> ExitCode {
    let files = match acp_codegen::generate_all() {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: code generation failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stale = match acp_codegen::sync::sync(&workspace_root(), &files, check) {
        Ok(stale) => stale,
        Err(e) => {
            eprintln!("error: writing generated files: {e}");
            return ExitCode::FAILURE;
        }
    };
    if check && !stale.is_empty() {
        for path in &stale {
            eprintln!("error: `{}` is not up to date", path.display());
        }
        eprintln!("run `cargo xtask codegen` and commit the result");
        return ExitCode::FAILURE;
    }
    if !check {
        for path in &stale {
            println!("updated {}", path.display());
        }
    }
    println!(
        "{} generated files {}",
        files.len(),
        if check { "are up to date" } else { "written" }
    );
    ExitCode::SUCCESS
}

/// Runs the benchmark harness in release mode, passing the options through.
fn bench(options: &[&str]) -> ExitCode {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .current_dir(workspace_root())
        .args(["run", "--release", "--package", "acp-bench", "--"])
        .args(options)
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: running cargo: {e}");
            ExitCode::FAILURE
        }
    }
}
