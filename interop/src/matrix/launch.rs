//! How every peer of a cell is started, and how its client reaches its agent (directly, or
//! through a server started here for the remote cells).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::cells::{Cell, REMOTE_TOKEN, Transport};
use crate::cache::{self, Installed};
use crate::checks::Sdk;
use crate::peers::ours_v2::Versions;
use crate::peers::remote::AgentTarget;
use crate::server::ServerProcess;

/// How to start every peer.
#[derive(Clone, Debug)]
pub struct Peers {
    /// The `acp-interop` binary (the tap and the Rust peers).
    pub exe: PathBuf,
    /// The npm and PyPI installs (`None`: only Rust cells can run).
    pub installed: Option<Installed>,
}

pub(super) fn os(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_owned()).collect()
}

impl Peers {
    fn installed(&self, sdk: Sdk) -> Result<&Installed, String> {
        self.installed.as_ref().ok_or_else(|| {
            format!(
                "the {} peers need the npm/PyPI installs: run `cargo xtask interop`",
                sdk.name()
            )
        })
    }

    /// The command line of an agent speaking `versions`, writing its report to `report`.
    /// The TypeScript agent of v2 is `peers/ts/agent_v2.mjs`, and of both versions the same
    /// behind the SDK's `AgentProtocolRouter` with the v1 agent; the Rust ones take
    /// `--protocol`.
    pub fn agent_command(
        &self,
        sdk: Sdk,
        versions: Versions,
        report: &Path,
    ) -> Result<Vec<OsString>, String> {
        let peers = cache::peers_dir();
        let script = peers.join("script.json");
        let protocol = versions.arg();
        Ok(match sdk {
            Sdk::Ours | Sdk::Rust => {
                let which = if sdk == Sdk::Ours {
                    "ours-agent"
                } else {
                    "rust-agent"
                };
                let mut command = os(&[&self.exe, &which]);
                if versions != Versions::V1 {
                    command.extend(os(&[&"--protocol", &protocol]));
                }
                command.extend(os(&[&"--report", &report]));
                command
            }
            Sdk::TypeScript => {
                let npm = &self.installed(sdk)?.npm;
                let (agent, script) = match versions {
                    Versions::V1 => ("ts/agent.mjs", script),
                    Versions::V2 | Versions::Both => {
                        ("ts/agent_v2.mjs", peers.join("script.v2.json"))
                    }
                };
                let mut command = os(&[
                    &"node",
                    &peers.join(agent),
                    &"--modules",
                    npm,
                    &"--script",
                    &script,
                    &"--report",
                    &report,
                ]);
                if versions == Versions::Both {
                    command.extend(os(&[&"--v1-script", &peers.join("script.json")]));
                }
                command
            }
            Sdk::Python if versions != Versions::V1 => {
                return Err("the Python SDK has no v2 side".into());
            }
            Sdk::Python => {
                let python = &self.installed(sdk)?.python;
                let agent = peers.join("py/agent.py");
                os(&[python, &agent, &"--script", &script, &"--report", &report])
            }
        })
    }

    /// The command line of the server in front of an `sdk` agent spawned by `agent`, for the
    /// remote cells: acp-remote's gateway (ours), `agent-client-protocol-http`'s server (Rust),
    /// the TypeScript SDK's `experimental/server` (`peers/ts/server.mjs`).
    pub fn server_command(&self, sdk: Sdk, agent: Vec<OsString>) -> Result<Vec<OsString>, String> {
        let which = match sdk {
            Sdk::Ours => "ours-server",
            Sdk::Rust => "rust-server",
            Sdk::TypeScript => {
                let npm = &self.installed(sdk)?.npm;
                let server = cache::peers_dir().join("ts/server.mjs");
                let mut command = os(&[
                    &"node",
                    &server,
                    &"--modules",
                    npm,
                    &"--listen",
                    &"0",
                    &"--",
                ]);
                command.extend(agent);
                return Ok(command);
            }
            Sdk::Python => return Err("the Python SDK's server is not in the matrix".into()),
        };
        let mut command = os(&[
            &self.exe,
            &which,
            &"--listen",
            &"127.0.0.1:0",
            &"--token",
            &REMOTE_TOKEN,
            &"--",
        ]);
        command.extend(agent);
        Ok(command)
    }

    /// The command line of a client speaking `versions`, working in `cwd` and reaching its
    /// agent at `target`. The TypeScript client of v2 is `peers/ts/client_v2.mjs` (the SDK
    /// has no client that negotiates); the Rust ones take `--protocol`.
    pub fn client_command(
        &self,
        sdk: Sdk,
        versions: Versions,
        cwd: &Path,
        target: &AgentTarget,
    ) -> Result<Vec<OsString>, String> {
        let peers = cache::peers_dir();
        let script = peers.join("script.json");
        let mut command = match sdk {
            Sdk::Ours | Sdk::Rust => {
                let which = if sdk == Sdk::Ours {
                    "ours-client"
                } else {
                    "rust-client"
                };
                let mut command = os(&[&self.exe, &which]);
                if versions != Versions::V1 {
                    command.extend(os(&[&"--protocol", &versions.arg()]));
                }
                command.extend(os(&[&"--cwd", &cwd]));
                command
            }
            Sdk::TypeScript if versions == Versions::Both => {
                return Err("the TypeScript SDK has no client that negotiates".into());
            }
            Sdk::TypeScript if versions == Versions::V2 => {
                let npm = &self.installed(sdk)?.npm;
                os(&[
                    &"node",
                    &peers.join("ts/client_v2.mjs"),
                    &"--modules",
                    npm,
                    &"--script",
                    &peers.join("script.v2.json"),
                    &"--cwd",
                    &cwd,
                ])
            }
            Sdk::Python if versions != Versions::V1 => {
                return Err("the Python SDK has no v2 side".into());
            }
            Sdk::TypeScript => {
                let npm = &self.installed(sdk)?.npm;
                let client = peers.join("ts/client.mjs");
                let mut command = os(&[&"node"]);
                // Node 20's WebSocket (for the SDK's ws-client) is behind a flag.
                if matches!(target, AgentTarget::Remote { url, .. } if url.starts_with("ws://")) {
                    command.push("--experimental-websocket".into());
                }
                command.extend(os(&[
                    &client,
                    &"--modules",
                    npm,
                    &"--script",
                    &script,
                    &"--cwd",
                    &cwd,
                ]));
                command
            }
            Sdk::Python => {
                let python = &self.installed(sdk)?.python;
                let client = peers.join("py/client.py");
                os(&[python, &client, &"--script", &script, &"--cwd", &cwd])
            }
        };
        command.extend(target.to_args());
        Ok(command)
    }
}

/// How the client of `cell` reaches the agent command `tap`: directly (stdio), or through a
/// server started here (the remote cells).
pub(super) fn reach(
    cell: Cell,
    peers: &Peers,
    dir: &Path,
    tap: Vec<OsString>,
) -> Result<(AgentTarget, Option<ServerProcess>), String> {
    if cell.transport == Transport::Stdio || cell.transport.conductor().is_some() {
        return Ok((AgentTarget::Spawn(tap), None));
    }
    let command = match cell.transport {
        Transport::HttpInProcess | Transport::WebSocketInProcess if cell.agent == Sdk::Ours => {
            os(&[
                &peers.exe,
                &"ours-server",
                &"--listen",
                &"127.0.0.1:0",
                &"--token",
                &REMOTE_TOKEN,
                &"--in-process",
                &dir,
            ])
        }
        Transport::HttpInProcess | Transport::WebSocketInProcess => {
            return Err("only our agent is served in process".into());
        }
        Transport::Stdio
        | Transport::Http
        | Transport::WebSocket
        | Transport::ViaOursConductor
        | Transport::ViaRustConductor => peers.server_command(cell.agent, tap)?,
    };
    let server = ServerProcess::start(&command, &dir.join("server.stderr"))?;
    let url = if cell.transport.websocket() {
        server.url.replacen("http://", "ws://", 1)
    } else {
        server.url.clone()
    };
    let target = AgentTarget::Remote {
        url,
        token: REMOTE_TOKEN.to_owned(),
    };
    Ok((target, Some(server)))
}
