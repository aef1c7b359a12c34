//! The cells of the interop matrix that need only Rust, as plain tests: our client against the
//! official Rust SDK's agent, the official Rust SDK's client against our agent, and ours against
//! ours. Each runs real processes through the recording tap and makes every wire assertion of
//! the matrix. The TypeScript and Python cells and the schema validation need the npm and PyPI
//! installs: `cargo xtask interop` runs them (and these cells again).

use std::path::PathBuf;

use acp_interop::checks::Sdk;
use acp_interop::matrix::{Cell, Peers, run_cell};

fn run(client: Sdk, agent: Sdk) {
    let cell = Cell { client, agent };
    let peers = Peers {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_acp-interop")),
        installed: None,
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("interop-cells")
        .join(cell.name());
    let outcome = run_cell(cell, &peers, &dir);
    let report: Vec<String> = outcome
        .checks
        .iter()
        .map(|c| {
            format!(
                "{} {}: {}",
                if c.ok { "ok  " } else { "FAIL" },
                c.name,
                c.detail
            )
        })
        .collect();
    assert!(
        outcome.passed(),
        "{} failed; its transcript is in {}\n{}",
        cell.name(),
        dir.display(),
        report.join("\n")
    );
    eprintln!(
        "{}: {} checks passed (schema validation runs in `cargo xtask interop`)",
        cell.name(),
        outcome.checks.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn our_client_against_the_official_rust_agent() {
    run(Sdk::Ours, Sdk::Rust);
}

#[test]
fn the_official_rust_client_against_our_agent() {
    run(Sdk::Rust, Sdk::Ours);
}

#[test]
fn our_client_against_our_agent() {
    run(Sdk::Ours, Sdk::Ours);
}
