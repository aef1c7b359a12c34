//! The cells of the matrix: which client SDK meets which agent SDK, over which transport.

use std::time::Duration;

use crate::checks::Sdk;
use crate::peers::ours_v2::Versions;

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
    /// The protocol versions the client and the agent speak ([`Speaks::V1`] for the v1
    /// cells).
    pub speaks: Speaks,
}

/// The protocol versions the peers of a cell speak: the client's, then the agent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Speaks(pub Versions, pub Versions);

impl Speaks {
    /// Both peers v1 only: the v1 cells.
    pub const V1: Speaks = Speaks(Versions::V1, Versions::V1);
    /// Both peers v2 only.
    pub const V2: Speaks = Speaks(Versions::V2, Versions::V2);

    /// The version the peers must settle on: 2 when both speak it, else 1.
    pub fn settles(self) -> u16 {
        let has_v2 = |v| matches!(v, Versions::V2 | Versions::Both);
        if has_v2(self.0) && has_v2(self.1) {
            2
        } else {
            1
        }
    }

    /// The cell-name suffix: empty for v1, `-v2` for v2 on both sides, `-v<client>-v<agent>`
    /// for a negotiation (`v12`: both versions), e.g. `-v12-v1`.
    pub fn suffix(self) -> String {
        let short = |v| match v {
            Versions::V1 => "v1",
            Versions::V2 => "v2",
            Versions::Both => "v12",
        };
        match self {
            Speaks::V1 => String::new(),
            Speaks::V2 => "-v2".into(),
            Speaks(client, agent) => format!("-{}-{}", short(client), short(agent)),
        }
    }

    /// What the report says: the version settled and, for a negotiation, who speaks what.
    pub fn label(self) -> String {
        let says = |v| match v {
            Versions::V1 => "1",
            Versions::V2 => "2",
            Versions::Both => "2 and 1",
        };
        match self {
            Speaks::V1 | Speaks::V2 => format!("protocol {}", self.settles()),
            Speaks(client, agent) => format!(
                "protocol {} negotiated: the client speaks {}, the agent {}",
                self.settles(),
                says(client),
                says(agent)
            ),
        }
    }
}

impl Cell {
    /// A stdio cell.
    pub fn stdio(client: Sdk, agent: Sdk) -> Cell {
        Cell::speaking(client, agent, Speaks::V1)
    }

    /// A stdio cell whose peers speak the versions `speaks`.
    pub fn speaking(client: Sdk, agent: Sdk, speaks: Speaks) -> Cell {
        Cell {
            client,
            agent,
            transport: Transport::Stdio,
            speaks,
        }
    }

    /// `<client>-client-x-<agent>-agent[-over-http|-over-ws|-via-<sdk>-conductor|...]
    /// [-v2|-v<client>-v<agent>]`.
    pub fn name(&self) -> String {
        format!(
            "{}-client-x-{}-agent{}{}",
            self.client.name(),
            self.agent.name(),
            self.transport.suffix(),
            self.speaks.suffix()
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
                speaks: Speaks::V1,
            });
        }
    }
    for transport in [Transport::HttpInProcess, Transport::WebSocketInProcess] {
        for client in [Sdk::Rust, Sdk::TypeScript] {
            cells.push(Cell {
                client,
                agent: Sdk::Ours,
                transport,
                speaks: Speaks::V1,
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
        speaks: Speaks::V1,
    })
    .collect()
}

/// The protocol v2 cells, over stdio: v2 on both sides (the TypeScript SDK's
/// `experimental/v2` and the official Rust crate's `v2` against ours, both directions, and
/// ours against ours), then the negotiations: their v1-only peers against our both-versions
/// peers and the reverse (our v1-only peers against the TypeScript SDK's
/// `AgentProtocolRouter` serving v1 and v2), settling on 1; our both-versions peers against
/// their v2 ones (and the router), settling on 2.
pub fn v2_cells() -> Vec<Cell> {
    use Versions::{Both, V1, V2};
    let mut cells = Vec::new();
    for (client, agent) in [
        (Sdk::Ours, Sdk::TypeScript),
        (Sdk::TypeScript, Sdk::Ours),
        (Sdk::Ours, Sdk::Rust),
        (Sdk::Rust, Sdk::Ours),
        (Sdk::Ours, Sdk::Ours),
    ] {
        cells.push(Cell::speaking(client, agent, Speaks::V2));
    }
    for (client, agent, speaks) in [
        // Settling on 1.
        (Sdk::TypeScript, Sdk::Ours, Speaks(V1, Both)),
        (Sdk::Rust, Sdk::Ours, Speaks(V1, Both)),
        (Sdk::Ours, Sdk::TypeScript, Speaks(Both, V1)),
        (Sdk::Ours, Sdk::Rust, Speaks(Both, V1)),
        (Sdk::Ours, Sdk::TypeScript, Speaks(V1, Both)),
        (Sdk::Ours, Sdk::Ours, Speaks(V1, Both)),
        (Sdk::Ours, Sdk::Ours, Speaks(Both, V1)),
        // Settling on 2.
        (Sdk::TypeScript, Sdk::Ours, Speaks(V2, Both)),
        (Sdk::Rust, Sdk::Ours, Speaks(V2, Both)),
        (Sdk::Ours, Sdk::TypeScript, Speaks(Both, V2)),
        (Sdk::Ours, Sdk::Rust, Speaks(Both, V2)),
        (Sdk::Ours, Sdk::TypeScript, Speaks(Both, Both)),
        (Sdk::Ours, Sdk::Ours, Speaks(Both, Both)),
    ] {
        cells.push(Cell::speaking(client, agent, speaks));
    }
    cells
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
    cells.extend(v2_cells());
    cells
}
