//! The proxy-chain peers of the matrix (`unstable_proxy_chains`, docs/PROXY_CHAINS.md): a
//! conductor and a pass-through proxy from each Rust library, so a chain can mix them.
//!
//! - `acp-interop ours-conductor --chain <file>`: acp-agent's conductor over child
//!   processes (what `acp conduct` runs); the file is [`read_chain`]'s;
//! - `acp-interop rust-conductor --chain <file>`: the official
//!   `agent-client-protocol-conductor` 5.0.0's `ConductorImpl`, each component an
//!   `AcpAgent` from its argument list;
//! - `acp-interop ours-proxy` / `rust-proxy`: a proxy that forwards everything both ways
//!   (acp-agent's [`Proxy`] with its default hooks; the official `Proxy` builder with its
//!   default forwarding), so that every script check still holds across the chain while every
//!   message crosses `proxy/successor` envelopes.

use std::ffi::OsString;
use std::time::Duration;

use acp_agent::conductor::{Component, conduct_stdio};
use acp_agent::proxy::{Proxy, serve_proxy_stdio};
use acp_client::process::{AgentCommand, ProcessChain};
use agent_client_protocol::{AcpAgent, Stdio};
use agent_client_protocol_conductor::{CommandLineComponents, ConductorImpl};

/// How long a component has to exit after SIGTERM once the chain is over.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Reads a chain file: a JSON array of command lines (arrays of strings), the last one the
/// agent's.
pub fn read_chain(path: &std::path::Path) -> Result<Vec<Vec<OsString>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let chain: Vec<Vec<String>> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a list of command lines: {e}", path.display()))?;
    if chain.is_empty() || chain.iter().any(Vec::is_empty) {
        return Err(format!(
            "{}: a chain needs an agent, and every component a command",
            path.display()
        ));
    }
    Ok(chain
        .into_iter()
        .map(|line| line.into_iter().map(OsString::from).collect())
        .collect())
}

/// acp-agent's conductor between our stdio and the chain's child processes. 0 once the
/// client has gone, 1 if the chain could not start or a component exited first.
pub async fn ours_conductor(chain: Vec<Vec<OsString>>) -> i32 {
    let commands: Vec<AgentCommand> = chain
        .iter()
        .map(|words| AgentCommand::new(&words[0]).args(&words[1..]))
        .collect();
    // acp-client's process handling: each its own process group, a bounded stderr tail, and
    // SIGTERM, a grace, then SIGKILL for every group at the end.
    let (children, members) = match ProcessChain::spawn(&commands) {
        Ok(started) => started,
        Err(e) => {
            eprintln!("ours-conductor: {e}");
            return 1;
        }
    };
    let parts = members
        .into_iter()
        .map(|m| Component {
            name: format!("`{}`", m.command),
            reader: Box::new(m.stdout),
            writer: Box::new(m.stdin),
        })
        .collect();
    let conductor = match conduct_stdio(parts) {
        Ok(conductor) => conductor,
        Err(e) => {
            eprintln!("ours-conductor: {}", e.message);
            return 1;
        }
    };
    // A component that ended first failed the chain (how it exited, with its stderr tail, is
    // said); once the client has left, components ending on their closed input are normal.
    let ended = conductor.closed().await.component();
    for exited in children.shutdown(ended, SHUTDOWN_GRACE).await {
        eprintln!("ours-conductor: {exited}");
    }
    i32::from(ended.is_some())
}

/// The official conductor between our stdio and the chain (it spawns and ends the
/// components itself).
pub async fn rust_conductor(chain: Vec<Vec<OsString>>) -> i32 {
    let agents: Result<Vec<AcpAgent>, _> = chain
        .iter()
        .map(|words| AcpAgent::from_args(words.iter().map(|w| w.to_string_lossy().into_owned())))
        .collect();
    let agents = match agents {
        Ok(agents) => agents,
        Err(e) => {
            eprintln!("rust-conductor: {e}");
            return 1;
        }
    };
    let conductor =
        ConductorImpl::new_agent("rust-conductor".to_owned(), CommandLineComponents(agents));
    match conductor.run(Stdio::new()).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rust-conductor: {e}");
            1
        }
    }
}

/// acp-agent's proxy with every hook at its default: forward.
struct PassThrough;

impl Proxy for PassThrough {}

/// `acp-interop ours-proxy`: forwards everything until its conductor leaves.
pub async fn ours_proxy() -> i32 {
    serve_proxy_stdio(PassThrough).finished().await;
    0
}

/// `acp-interop rust-proxy`: the official SDK's proxy role with its default forwarding.
pub async fn rust_proxy() -> i32 {
    let served = agent_client_protocol::Proxy
        .v1()
        .name("rust-proxy")
        .connect_to(Stdio::new())
        .await;
    match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rust-proxy: {e}");
            1
        }
    }
}
