//! Reaching an agent: where it is ([`AgentSpec`]), starting it (the built-in one in process,
//! or a command as a child process) and negotiating a dialect ([`connect`]), and the
//! connection that results ([`Link`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_client::negotiate::{NegotiateOptions, NegotiationError, OfferV2};
use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::{AgentHandle, ClientConnection, Dialect};
use acp_types::v1::*;

use crate::builtin::BuiltinAgent;
use crate::client::CliClient;
use crate::proto;

/// How to reach the agent.
#[derive(Clone, Debug)]
pub struct AgentSpec {
    /// The agent's command line; empty for the built-in agent.
    pub command: Vec<OsString>,
    /// Dialects to offer, in order (all compiled ones when empty).
    pub dialects: Vec<Dialect>,
    /// The protocol version pinned with `--protocol`; `None`: the highest both sides speak
    /// (v2 offered first). `--dialect`, `--store` and `--url` speak v1 (or its dialects).
    pub protocol: Option<u16>,
    /// How long each dialect offer waits for the agent's answer.
    pub timeout: Duration,
    /// The working directory of the session (and of the agent process).
    pub cwd: PathBuf,
    /// The built-in agent's session store: a directory or a `postgres://` URL.
    pub store: Option<OsString>,
    /// A remote agent (`--url`) instead of a command or the built-in one.
    pub remote: Option<RemoteSpec>,
}

/// A remote agent: its endpoint and how to reach it (profile, credential, trusted roots;
/// the token is redacted from `Debug`).
#[derive(Clone, Debug)]
pub struct RemoteSpec {
    /// `http://HOST:PORT/acp` or `ws://HOST:PORT/acp` (`https://`, `wss://`).
    pub url: String,
    /// The connection options.
    pub options: acp_remote::ConnectOptions,
}

/// The running agent: its connection, its handshake answer, and what keeps it alive.
pub struct Link {
    /// The v1 connection.
    pub connection: ClientConnection,
    /// The agent's `initialize` answer.
    pub init: InitializeResponse,
    /// The dialect spoken.
    pub dialect: Dialect,
    /// The protocol version on the wire: 1, or 2 (the v1 connection drives a v2 agent, or
    /// the built-in v1 agent served as v2, through the v1<->v2 translation).
    pub protocol: u16,
    process: Option<AgentProcess>,
    builtin: Option<tokio::task::JoinHandle<()>>,
    /// A remote agent's transport, done once its goodbye went out.
    remote: Option<acp_remote::Finished>,
}

impl Link {
    /// What the header says is spoken: the dialect, or `v2` (for the built-in agent: behind
    /// the v1<->v2 translation).
    pub fn spoken(&self) -> String {
        match (self.protocol, self.builtin.is_some()) {
            (2, true) => "v2, the built-in v1 agent through the v1<->v2 translation".to_owned(),
            (2, false) => "v2".to_owned(),
            _ => self.dialect.to_string(),
        }
    }

    /// The agent handle.
    pub fn agent(&self) -> &AgentHandle {
        self.connection.agent()
    }

    /// Why the agent went away, if it did: its exit status and stderr tail.
    pub(crate) async fn death(&mut self) -> Option<String> {
        let process = self.process.as_mut()?;
        let exited = tokio::time::timeout(Duration::from_secs(2), process.wait_exit())
            .await
            .ok()?;
        Some(exited.to_string())
    }

    /// Closes the connection and ends the agent (politely, then by force).
    pub async fn shutdown(mut self) {
        self.connection.close();
        if let Some(remote) = self.remote.take() {
            // The goodbye (`DELETE`, a close frame) must reach the server before this
            // process exits, or the server keeps the connection and its agent until its
            // idle timeout.
            let _ = tokio::time::timeout(Duration::from_secs(3), remote.wait()).await;
        }
        if let Some(process) = self.process.take() {
            let _ = process.shutdown(Duration::from_secs(2)).await;
        }
        if let Some(task) = self.builtin.take() {
            task.abort();
        }
    }
}

/// Starts the agent (built-in or a child process) and negotiates a dialect with it.
pub async fn connect(spec: &AgentSpec, client: CliClient) -> Result<Link, String> {
    let mut options = NegotiateOptions::new(proto::initialize_request()).with_timeout(spec.timeout);
    if !spec.dialects.is_empty() {
        options = options.with_dialects(spec.dialects.clone());
    }
    let v1_only = spec.remote.is_some() || !spec.dialects.is_empty() || spec.store.is_some();
    if spec.protocol == Some(2) && v1_only {
        return Err(
            "--protocol 2 cannot be spoken with --dialect, --store or --url (they speak v1 or \
             its dialects): leave those out, or use --protocol 1"
                .to_owned(),
        );
    }
    options = options.with_v2(match (spec.protocol, v1_only) {
        (Some(2), _) => OfferV2::Only,
        (None, false) => OfferV2::First,
        _ => OfferV2::No,
    });
    if let Some(remote) = &spec.remote {
        return connect_remote(remote, client, options).await;
    }
    let Some((program, args)) = spec.command.split_first() else {
        if !v1_only {
            // Both sides are ours: the built-in agent is a v1 agent, which also speaks v2
            // through the v1<->v2 translation when `--protocol 2` asks for it. Without it the
            // chat stays on v1, where the built-in agent's terminals, MCP servers and
            // `--load` work; the translation does not carry those yet (acp_dialects::v2).
            return match spec.protocol {
                Some(2) => connect_builtin_v2(client, spec).await,
                _ => connect_builtin(client, spec.timeout).await,
            };
        }
        // A dialect asked for (the built-in agent behind a translation) or a session store:
        // negotiated over a byte pipe, as with a child process.
        let (client_side, agent_side) = tokio::io::duplex(1 << 20);
        let (agent_read, agent_write) = tokio::io::split(agent_side);
        let mut agent_options = acp_agent::negotiate::NegotiateOptions::default();
        if !spec.dialects.is_empty() {
            agent_options = agent_options.with_dialects(spec.dialects.clone());
        }
        let agent = match &spec.store {
            Some(spec) => {
                let store = crate::store::open_any_store(spec, Default::default()).await?;
                agent_options = agent_options.with_store(store);
                BuiltinAgent::with_store()
            }
            None => BuiltinAgent::default(),
        };
        let builtin = tokio::spawn(async move {
            match acp_agent::Builder::new(agent)
                .negotiate(agent_options)
                .io(agent_read, agent_write)
                .await
            {
                Ok(conn) => {
                    conn.closed().await;
                }
                Err(e) => tracing::error!("built-in agent: {e}"),
            }
        });
        let (read, write) = tokio::io::split(client_side);
        let negotiated = acp_client::Builder::new(client)
            .negotiate(options)
            .io(read, write)
            .await
            .map_err(|e| format!("the built-in agent: {e}"))?;
        return Ok(Link {
            dialect: negotiated.dialect,
            protocol: 1,
            connection: negotiated.connection,
            init: negotiated.initialize,
            process: None,
            builtin: Some(builtin),
            remote: None,
        });
    };
    let command = AgentCommand::new(program).args(args).cwd(&spec.cwd);
    let mut process = AgentProcess::spawn(&command).map_err(|e| e.to_string())?;
    match acp_client::Builder::new(client)
        .negotiate(options)
        .attach(&mut process)
        .await
    {
        Ok(negotiated) => Ok(Link {
            dialect: negotiated.dialect,
            protocol: negotiated.version,
            connection: negotiated.connection,
            init: negotiated.initialize,
            process: Some(process),
            builtin: None,
            remote: None,
        }),
        Err(error) => {
            // An agent that answered with a version we did not offer: that answer is the
            // reason (it exits only because we hung up).
            if let acp_client::process::ProcessError::Negotiation { error: e, .. } = &error
                && matches!(
                    **e,
                    NegotiationError::Unaccepted { .. } | NegotiationError::Unoffered { .. }
                )
            {
                return Err(version_hint(error.to_string(), spec.protocol));
            }
            // An agent that died says more by its exit than by the failed handshake.
            let exited =
                tokio::time::timeout(Duration::from_millis(500), process.wait_exit()).await;
            Err(match exited {
                Ok(exit) => exit.to_string(),
                Err(_) => error.to_string(),
            })
        }
    }
}

/// A version refusal with what to do about it: the other `--protocol` when one was pinned.
fn version_hint(error: String, pinned: Option<u16>) -> String {
    match pinned {
        Some(2) => format!(
            "{error}\n--protocol 2 needs an agent that speaks v2; without --protocol the agent's version is spoken"
        ),
        Some(1) => format!(
            "{error}\n--protocol 1 needs an agent that speaks v1; without --protocol the agent's version is spoken"
        ),
        _ => error,
    }
}

/// The built-in agent in this process, v1 on an in-memory message pair: both sides are
/// ours, so there is nothing to negotiate, and whole messages pass between the two
/// connections with no JSON lines and no byte pipe.
async fn connect_builtin(client: CliClient, timeout: Duration) -> Result<Link, String> {
    let (agent_end, client_end) = acp_rpc::transport::memory_pair(256);
    let agent = acp_agent::Builder::new(BuiltinAgent::default()).over(agent_end);
    let builtin = tokio::spawn(async move {
        agent.closed().await;
    });
    let connection = acp_client::Builder::new(client).over(client_end);
    let init = tokio::time::timeout(
        timeout,
        connection.agent().initialize(proto::initialize_request()),
    )
    .await
    .map_err(|_| "the built-in agent did not answer initialize".to_owned())?
    .map_err(|e| format!("the built-in agent: {e}"))?;
    Ok(Link {
        dialect: Dialect::V1,
        protocol: 1,
        connection,
        init,
        process: None,
        builtin: Some(builtin),
        remote: None,
    })
}

/// The built-in v1 agent served as v2 (`acp_agent::v2::serve_v1`) and the chat's v1 client
/// driving it (`acp_client::v2::connect_v1`), the two translations meeting on a byte pipe in
/// v2. The translation runs no terminals for the agent (starting processes is the chat
/// client's decision, which v2 cannot carry), so the agent's terminal step says the client
/// offers none.
async fn connect_builtin_v2(client: CliClient, spec: &AgentSpec) -> Result<Link, String> {
    let (client_side, agent_side) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent_side);
    let options = acp_agent::legacy::AdapterOptions::default().with_cwd(spec.cwd.clone());
    let served = acp_agent::v2::serve_v1(BuiltinAgent::default(), agent_read, agent_write, options);
    let builtin = tokio::spawn(async move {
        served.closed().await;
    });
    let (read, write) = tokio::io::split(client_side);
    let options = acp_agent::legacy::AdapterOptions::default();
    let connection = acp_client::v2::connect_v1(client, read, write, options);
    let init = tokio::time::timeout(
        spec.timeout,
        connection.agent().initialize(proto::initialize_request()),
    )
    .await
    .map_err(|_| "the built-in agent did not answer initialize".to_owned())?
    .map_err(|e| format!("the built-in agent over v2: {e}"))?;
    Ok(Link {
        dialect: Dialect::V1,
        protocol: 2,
        connection,
        init,
        process: None,
        builtin: Some(builtin),
        remote: None,
    })
}

/// Reaches a remote agent (`--url`): v1 only, the one dialect the network transport carries.
async fn connect_remote(
    remote: &RemoteSpec,
    client: CliClient,
    options: NegotiateOptions,
) -> Result<Link, String> {
    let link = acp_remote::connect(&remote.url, &remote.options)
        .await
        .map_err(|e| format!("{}: {e}", remote.url))?;
    let finished = link.finished.clone();
    let options = options.with_dialects(vec![Dialect::V1]);
    let negotiated = acp_client::Builder::new(client)
        .negotiate(options)
        .io(link.reader, link.writer)
        .await
        .map_err(|e| format!("{}: {e}", remote.url))?;
    Ok(Link {
        dialect: negotiated.dialect,
        protocol: 1,
        connection: negotiated.connection,
        init: negotiated.initialize,
        process: None,
        builtin: None,
        remote: Some(finished),
    })
}

/// The working directory: `--cwd` or the current one, made absolute.
pub fn working_directory(cwd: Option<PathBuf>) -> Result<PathBuf, String> {
    let dir = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    std::fs::canonicalize(&dir).map_err(|e| format!("{}: {e}", Path::new(&dir).display()))
}
