//! The cells of the matrix: which client SDK meets which agent SDK, over which transport.

use std::time::Duration;

use crate::checks::Sdk;

/// The bearer token of the remote cells' servers.
pub const REMOTE_TOKEN: &str = "interop-token";

/// How long one cell may run before its processes are killed.
pub const CELL_TIMEOUT: Duration = Duration::from_secs(90);

/// How a cell's client reaches its agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// The client spawns the agent (through the tap) and speaks over its stdio.
    Stdio,
    /// Streamable HTTP to the agent SDK's server, which spawns the agent (through the tap) per
    /// connection: acp-remote's gateway for our agent, `agent-client-protocol-http`'s server
    /// for the official Rust agent.
    Http,
    /// The WebSocket profile of the same server.
    WebSocket,
    /// Streamable HTTP to acp-remote's server serving our agent in process (what `acp serve`
    /// does with its built-in agent); the recording relay sits in the server's pipe.
    HttpInProcess,
    /// The WebSocket profile of that server.
    WebSocketInProcess,
    /// Over stdio to acp-agent's conductor, which runs two proxies and the agent
    /// ([`crate::chain`]).
    ViaOursConductor,
    /// Over stdio to the official `agent-client-protocol-conductor`, running the same.
    ViaRustConductor,
}

impl Transport {
    /// The cell-name suffix (empty for stdio).
    pub fn suffix(self) -> &'static str {
        match self {
            Transport::Stdio => "",
            Transport::Http => "-over-http",
            Transport::WebSocket => "-over-ws",
            Transport::HttpInProcess => "-over-http-in-process",
            Transport::WebSocketInProcess => "-over-ws-in-process",
            Transport::ViaOursConductor => "-via-ours-conductor",
            Transport::ViaRustConductor => "-via-rust-conductor",
        }
    }

    /// The conductor of a proxy-chain cell.
    pub fn conductor(self) -> Option<Sdk> {
        match self {
            Transport::ViaOursConductor => Some(Sdk::Ours),
            Transport::ViaRustConductor => Some(Sdk::Rust),
            _ => None,
        }
    }

    /// Whether the client connects over WebSocket.
    pub fn websocket(self) -> bool {
        matches!(self, Transport::WebSocket | Transport::WebSocketInProcess)
    }
}

/// One cell: a client SDK against an agent SDK, over a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Who wrote the client.
    pub client: Sdk,
    /// Who wrote the agent (and, over the network, the server in front of it).
    pub agent: Sdk,
    /// How they meet.
    pub transport: Transport,
}

impl Cell {
    /// A stdio cell.
    pub fn stdio(client: Sdk, agent: Sdk) -> Cell {
        Cell {
            client,
            agent,
            transport: Transport::Stdio,
        }
    }

    /// `<client>-client-x-<agent>-agent[-over-http|-over-ws|-via-<sdk>-conductor|...]`.
    pub fn name(&self) -> String {
        format!(
            "{}-client-x-{}-agent{}",
            self.client.name(),
            self.agent.name(),
            self.transport.suffix()
        )
    }

    /// Whether both peers are Rust (no npm/PyPI install needed).
    pub fn is_rust_only(&self) -> bool {
        self.client.is_rust() && self.agent.is_rust()
    }
}

/// The remote cells: the official Rust and TypeScript clients against our server (acp-remote's
/// gateway, what `acp serve -- <command>` runs), our client against the official Rust server
/// and the TypeScript SDK's server, and ours against ours, over both profiles.
pub fn remote_cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for transport in [Transport::Http, Transport::WebSocket] {
        for (client, agent) in [
            (Sdk::Rust, Sdk::Ours),
            (Sdk::Ours, Sdk::Rust),
            (Sdk::TypeScript, Sdk::Ours),
            (Sdk::Ours, Sdk::TypeScript),
            (Sdk::Ours, Sdk::Ours),
        ] {
            cells.push(Cell {
                client,
                agent,
                transport,
            });
        }
    }
    for transport in [Transport::HttpInProcess, Transport::WebSocketInProcess] {
        for client in [Sdk::Rust, Sdk::TypeScript] {
            cells.push(Cell {
                client,
                agent: Sdk::Ours,
                transport,
            });
        }
    }
    cells
}

/// The proxy-chain cells ([`crate::chain`]): our client through the official conductor
/// (proxies ours, then theirs) to our agent; our client and the official client through
/// ours (proxies theirs, then ours) to the official agent and to ours.
pub fn chain_cells() -> Vec<Cell> {
    [
        (Sdk::Ours, Sdk::Ours, Transport::ViaRustConductor),
        (Sdk::Ours, Sdk::Rust, Transport::ViaOursConductor),
        (Sdk::Rust, Sdk::Ours, Transport::ViaOursConductor),
    ]
    .into_iter()
    .map(|(client, agent, transport)| Cell {
        client,
        agent,
        transport,
    })
    .collect()
}

/// Every cell, in the order they run.
pub fn all_cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for agent in [Sdk::TypeScript, Sdk::Python, Sdk::Rust] {
        cells.push(Cell::stdio(Sdk::Ours, agent));
    }
    for client in [Sdk::TypeScript, Sdk::Python, Sdk::Rust] {
        cells.push(Cell::stdio(client, Sdk::Ours));
    }
    cells.push(Cell::stdio(Sdk::Ours, Sdk::Ours));
    cells.extend(remote_cells());
    cells.extend(chain_cells());
    cells
}
