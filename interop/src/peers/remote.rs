//! The remote side of the matrix: the two servers a remote cell puts between its client and its
//! agent, and how a client is told where its agent is.
//!
//! - `acp-interop ours-server --listen <addr> --token <t> -- <agent command...>`: acp-remote's
//!   [`Server::gateway`], exactly what `acp serve --listen <addr> --token-file <f> -- <command>`
//!   runs (bearer token, default limits), one agent process per remote connection.
//! - `acp-interop rust-server --listen <addr> -- <agent command...>`: the official
//!   `agent-client-protocol-http` 5.0.0 server (`AcpHttpServer`, axum, HTTP/1 only) with an
//!   `AcpAgent` per connection: their gateway. It has no authentication of its own; the token
//!   our client sends is ignored.
//!
//! - `acp-interop ours-server --listen <addr> --token <t> --in-process <dir>`: acp-remote's
//!   [`Server::in_process_with`] serving our scripted agent in this process (what `acp serve`
//!   without a command does with the built-in agent), the recording relay spliced into each
//!   connection (between its messages and the agent's, [`crate::tap::WireLog`]): `<dir>/wire.jsonl`,
//!   `<dir>/agent.report.jsonl`, and `<dir>/agent.status` (`0` once both directions of the
//!   connection reached EOF). One connection per run: the transcript has no connection column.
//!
//! Both print one JSON line on stdout once they listen, `{"url": "http://127.0.0.1:PORT/acp"}`,
//! and serve until killed or until their stdin closes. The agent command is the recording tap
//! in front of a scripted agent, so a remote cell's agent-side wire is recorded and checked as
//! a stdio cell's is. Only loopback addresses are accepted.

use std::ffi::OsString;
use std::net::SocketAddr;

use acp_client::process::AgentCommand;
use acp_remote::{BearerToken, Server};
use agent_client_protocol::{AcpAgent, AcpAgentConfig};
use agent_client_protocol_http::AcpHttpServer;
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::peers::ours_agent;
use crate::report::Reporter;
use crate::tap::WireLog;

/// Where a client finds its agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentTarget {
    /// Spawn this command and speak over its stdio.
    Spawn(Vec<OsString>),
    /// Connect to this endpoint (`http://…/acp` for Streamable HTTP, `ws://…/acp` for
    /// WebSocket) with this bearer token.
    Remote {
        /// The endpoint.
        url: String,
        /// The bearer token.
        token: String,
    },
}

impl AgentTarget {
    /// Parses `-- <agent command...>` or `--url <url> --token <token>`.
    pub fn parse(args: &[OsString]) -> Result<AgentTarget, String> {
        match args {
            [dashes, command @ ..] if dashes == "--" && !command.is_empty() => {
                Ok(AgentTarget::Spawn(command.to_vec()))
            }
            [flag, url, tflag, token] if flag == "--url" && tflag == "--token" => {
                Ok(AgentTarget::Remote {
                    url: url.to_string_lossy().into_owned(),
                    token: token.to_string_lossy().into_owned(),
                })
            }
            _ => Err(format!(
                "expected `-- <agent command...>` or `--url <url> --token <token>`, got {args:?}"
            )),
        }
    }

    /// As command-line arguments (the inverse of [`AgentTarget::parse`]).
    pub fn to_args(&self) -> Vec<OsString> {
        match self {
            AgentTarget::Spawn(command) => {
                let mut args = vec![OsString::from("--")];
                args.extend(command.iter().cloned());
                args
            }
            AgentTarget::Remote { url, token } => {
                vec!["--url".into(), url.into(), "--token".into(), token.into()]
            }
        }
    }
}

/// The arguments of both servers.
#[derive(Clone, Debug)]
pub struct ServerArgs {
    /// A loopback address (port 0: any free port).
    pub listen: SocketAddr,
    /// The bearer token (ours requires it; the official server has no authentication).
    pub token: String,
    /// The agent command, one process per remote connection (empty with `in_process`).
    pub command: Vec<OsString>,
    /// Serve our scripted agent in process, its files in this directory.
    pub in_process: Option<std::path::PathBuf>,
}

impl ServerArgs {
    /// Parses `--listen <addr> [--token <token>] (-- <agent command...> | --in-process <dir>)`.
    pub fn parse(args: &[OsString]) -> Result<ServerArgs, String> {
        let mut listen = None;
        let mut in_process = None;
        let mut token = String::from("interop");
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.to_str() {
                Some("--listen") => {
                    let addr = it.next().ok_or("--listen needs an address")?;
                    let addr: SocketAddr = addr
                        .to_string_lossy()
                        .parse()
                        .map_err(|e| format!("--listen {addr:?}: {e}"))?;
                    if !addr.ip().is_loopback() {
                        return Err(format!("{addr} is not a loopback address"));
                    }
                    listen = Some(addr);
                }
                Some("--token") => {
                    token = it
                        .next()
                        .ok_or("--token needs a value")?
                        .to_string_lossy()
                        .into_owned();
                }
                Some("--in-process") => {
                    in_process = Some(it.next().ok_or("--in-process needs a directory")?.into());
                }
                Some("--") => {
                    let command: Vec<OsString> = it.cloned().collect();
                    if command.is_empty() {
                        return Err("no agent command after --".into());
                    }
                    return Ok(ServerArgs {
                        listen: listen.ok_or("--listen is required")?,
                        token,
                        command,
                        in_process: None,
                    });
                }
                _ => return Err(format!("unexpected server argument {arg:?}")),
            }
        }
        match in_process {
            Some(dir) => Ok(ServerArgs {
                listen: listen.ok_or("--listen is required")?,
                token,
                command: Vec::new(),
                in_process: Some(dir),
            }),
            None => {
                Err("no agent command (`-- <agent command...>` or `--in-process <dir>`)".into())
            }
        }
    }
}

/// Prints the URL line, then waits until stdin closes (the driver ends the server by closing
/// it or by killing the process group).
async fn announce_and_wait(url: String) {
    println!("{}", json!({ "url": url }));
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
}

/// `acp-interop ours-server`: acp-remote's gateway (what `acp serve -- <command>` runs), or
/// our agent in process (what `acp serve` runs with the built-in agent).
pub async fn ours_server(args: ServerArgs) -> Result<(), Box<dyn std::error::Error>> {
    let builder = match &args.in_process {
        Some(dir) => {
            let wire = WireLog::create(&dir.join("wire.jsonl"))?;
            let report = Reporter::file(Some(dir.join("agent.report.jsonl")));
            let status = dir.join("agent.status");
            Server::in_process_with(move |end, _who| {
                let (end, relayed) = wire.splice(end);
                let status = status.clone();
                tokio::spawn(async move {
                    relayed.await;
                    let _ = std::fs::write(&status, "0");
                });
                ours_agent::serve_over(report.clone(), end)
            })
        }
        None => {
            let (program, rest) = args.command.split_first().ok_or("no agent command")?;
            Server::gateway(AgentCommand::new(program).args(rest.iter().cloned()))
        }
    };
    let server = builder
        .authenticator(BearerToken::new(args.token)?)
        .bind(args.listen)
        .await?;
    announce_and_wait(server.url()).await;
    server.shutdown();
    Ok(())
}

/// `acp-interop rust-server`: the official `agent-client-protocol-http` server with an
/// `AcpAgent` child per connection.
pub async fn rust_server(args: ServerArgs) -> Result<(), Box<dyn std::error::Error>> {
    let (program, rest) = args.command.split_first().ok_or("no agent command")?;
    let config = AcpAgentConfig::new(program.to_string_lossy().into_owned())
        .args(rest.iter().map(|a| a.to_string_lossy().into_owned()));
    let router = AcpHttpServer::new(move || AcpAgent::new(config.clone())).into_router();
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let url = format!("http://{}/acp", listener.local_addr()?);
    let serving = tokio::spawn(async move { axum::serve(listener, router).await });
    announce_and_wait(url).await;
    serving.abort();
    Ok(())
}
