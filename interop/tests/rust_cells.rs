//! The cells of the interop matrix that need only Rust, as plain tests: our client against the
//! official Rust SDK's agent, the official Rust SDK's client against our agent, and ours against
//! ours, over stdio and over both remote profiles (the official `agent-client-protocol-http`
//! client against acp-remote's gateway, our client against the official server), and through
//! proxy chains (our conductor and the official one, a proxy of each library), and in draft
//! protocol v2 (ours and the official crate's `v2` side, and negotiations between v1-only and
//! both-versions peers). Each runs
//! real processes through the recording tap and makes every wire assertion of the matrix. The TypeScript and Python cells and the schema validation need the npm and PyPI
//! installs: `cargo xtask interop` runs them (and these cells again).

use std::path::PathBuf;

// The official http crate's departures from the RFD, in this binary (one link step).
#[path = "remote/deviations.rs"]
mod deviations;

use acp_interop::checks::Sdk;
use acp_interop::matrix::{Cell, Peers, Speaks, Transport, run_cell};
use acp_interop::peers::ours_v2::Versions::{Both, V1, V2};

fn run(client: Sdk, agent: Sdk) {
    run_over(client, agent, Transport::Stdio);
}

fn run_over(client: Sdk, agent: Sdk, transport: Transport) {
    run_cell_checked(Cell {
        client,
        agent,
        transport,
        speaks: Speaks::V1,
    });
}

/// A stdio cell whose peers speak `speaks` (`Versions::Both`: v1 and v2, negotiated).
fn run_speaking(client: Sdk, agent: Sdk, speaks: Speaks) {
    run_cell_checked(Cell::speaking(client, agent, speaks));
}

fn run_cell_checked(cell: Cell) {
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

#[test]
fn the_official_http_client_against_our_gateway_over_streamable_http() {
    run_over(Sdk::Rust, Sdk::Ours, Transport::Http);
}

#[test]
fn the_official_http_client_against_our_gateway_over_websocket() {
    run_over(Sdk::Rust, Sdk::Ours, Transport::WebSocket);
}

#[test]
fn our_remote_client_against_the_official_http_server_over_streamable_http() {
    run_over(Sdk::Ours, Sdk::Rust, Transport::Http);
}

#[test]
fn our_remote_client_against_the_official_http_server_over_websocket() {
    run_over(Sdk::Ours, Sdk::Rust, Transport::WebSocket);
}

#[test]
fn our_remote_client_against_our_gateway_over_streamable_http() {
    run_over(Sdk::Ours, Sdk::Ours, Transport::Http);
}

#[test]
fn our_remote_client_against_our_gateway_over_websocket() {
    run_over(Sdk::Ours, Sdk::Ours, Transport::WebSocket);
}

#[test]
fn the_official_http_client_against_our_agent_in_process_over_streamable_http() {
    run_over(Sdk::Rust, Sdk::Ours, Transport::HttpInProcess);
}

#[test]
fn the_official_http_client_against_our_agent_in_process_over_websocket() {
    run_over(Sdk::Rust, Sdk::Ours, Transport::WebSocketInProcess);
}

#[test]
fn our_client_through_the_official_conductor_and_both_proxies_to_our_agent() {
    run_over(Sdk::Ours, Sdk::Ours, Transport::ViaRustConductor);
}

#[test]
fn our_client_through_our_conductor_and_both_proxies_to_the_official_agent() {
    run_over(Sdk::Ours, Sdk::Rust, Transport::ViaOursConductor);
}

#[test]
fn the_official_client_through_our_conductor_and_both_proxies_to_our_agent() {
    run_over(Sdk::Rust, Sdk::Ours, Transport::ViaOursConductor);
}

#[test]
fn our_v2_client_against_the_official_rust_v2_agent() {
    run_speaking(Sdk::Ours, Sdk::Rust, Speaks::V2);
}

#[test]
fn the_official_rust_v2_client_against_our_v2_agent() {
    run_speaking(Sdk::Rust, Sdk::Ours, Speaks::V2);
}

#[test]
fn our_v2_client_against_our_v2_agent() {
    run_speaking(Sdk::Ours, Sdk::Ours, Speaks::V2);
}

#[test]
fn the_official_v1_client_and_our_both_versions_agent_settle_on_1() {
    run_speaking(Sdk::Rust, Sdk::Ours, Speaks(V1, Both));
}

#[test]
fn our_both_versions_client_and_the_official_v1_agent_settle_on_1() {
    run_speaking(Sdk::Ours, Sdk::Rust, Speaks(Both, V1));
}

#[test]
fn the_official_v2_client_and_our_both_versions_agent_settle_on_2() {
    run_speaking(Sdk::Rust, Sdk::Ours, Speaks(V2, Both));
}

#[test]
fn our_both_versions_client_and_the_official_v2_agent_settle_on_2() {
    run_speaking(Sdk::Ours, Sdk::Rust, Speaks(Both, V2));
}

#[test]
fn our_both_versions_peers_settle_on_2() {
    run_speaking(Sdk::Ours, Sdk::Ours, Speaks(Both, Both));
}
