//! `acp serve`: an agent on the network, both profiles of the remote transport on one `/acp`
//! endpoint (acp-remote): the built-in demo agent in process, or a stdio agent command run
//! once per connection. Always with a bearer token: `--token-file`, else `ACP_TOKEN`, else a
//! fresh one printed with the command that connects.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use acp_remote::{BearerTokens, Server};
use clap::Args;

use crate::builtin::BuiltinAgent;
use crate::chat::EXIT_FAILED;
use crate::secret_env::TOKEN_ENV;

const SERVE_AFTER: &str = "\
Every request needs `Authorization: Bearer TOKEN`, `GET /metrics` (with --metrics) too;
`GET /healthz` (alive) and `GET /readyz` (under the connection limit) answer without it.
With --dashboard, `GET /` is a live dashboard of every connection's messages (the page of
`acp trace --serve`; open it as /?token=TOKEN: a browser cannot send the header), request
ids shown as CONNECTION:ID. TLS is not done here: put a TLS-terminating proxy in front for anything beyond a trusted
network (docs/DEPLOYMENT.md). Ctrl-C stops the server and every agent it started.

A remote client's `session/new`, `session/load` and `session/resume` are checked before the
agent sees them (the built-in agent and an agent command alike): its stdio MCP servers are
refused unless --mcp-allow-command names the program, its http/sse ones when their address is
loopback, link-local, private or unresolvable unless under an --mcp-allow-url prefix, at most
--mcp-max-servers of them; its `cwd` and `additionalDirectories` must lie under --root. A
refusal is a JSON-RPC error -32602 saying which flag would allow it.";

#[derive(Args, Debug)]
#[command(after_help = SERVE_AFTER)]
pub struct ServeArgs {
    /// The address to listen on (port 0: any free port, printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The bearer tokens, one identity a line: `NAME:TOKEN` (NAME of A-Z a-z 0-9 . _ -),
    /// or one line of just TOKEN for the unnamed identity; blank lines and `#` comments
    /// skipped. Each identity sees and reaches only its own sessions (with --store). Re-read
    /// on SIGHUP (a file that does not parse then keeps the old tokens, and the log says
    /// why). Without it: `ACP_TOKEN`, else a fresh random token, printed.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// The built-in agent's sessions, shared by every connection (and, in a PostgreSQL
    /// database, by every `acp serve` host using it): a client that comes back, to this host
    /// or another behind the same load balancer, loads or resumes them. Only for the
    /// built-in agent.
    #[command(flatten)]
    store: crate::store::StoreArgs,
    /// Count and serve Prometheus metrics at `GET /metrics` (behind the token, like `/acp`):
    /// connections, sessions, requests by method and outcome, latencies, notifications by
    /// kind, bytes, agent processes, and with --store the store's operations and errors.
    #[arg(long)]
    metrics: bool,
    /// Serve a live dashboard at `GET /` (behind the token, given as `/?token=TOKEN`): the
    /// messages of every connection as `acp trace --serve` shows them, newest 5000 kept.
    #[arg(long)]
    dashboard: bool,
    /// How log lines are written to stderr: `text`, or `json` (one object a line, with the
    /// trace id of the request it was logged for; docs/OBSERVABILITY.md).
    #[arg(long, value_enum, default_value_t)]
    pub log_format: crate::telemetry::LogFormat,
    /// Let browser pages of this origin call (repeatable); others are refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// `--sandbox` and `--pass-env`: what an agent command's processes can reach.
    #[command(flatten)]
    gateway: crate::sandbox::GatewayArgs,
    #[command(flatten)]
    hosting: HostingArgs,
    /// `--agent ID` (and `--yes`): an agent of the ACP registry instead of a command.
    #[command(flatten)]
    pub(crate) by_id: crate::agents::ByIdConfirmed,
    /// The agent's command line, started once per connection; none for the built-in agent.
    #[arg(last = true)]
    pub(crate) agent: Vec<OsString>,
}

/// The bearer token from `file` (its first line), else from `ACP_TOKEN`; `None` if neither.
pub fn token(file: Option<&Path>) -> Result<Option<String>, String> {
    if let Some(file) = file {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("--token-file {}: {e}", file.display()))?;
        let token = text.lines().next().unwrap_or_default().trim().to_owned();
        if token.is_empty() {
            return Err(format!(
                "--token-file {}: the file is empty",
                file.display()
            ));
        }
        return Ok(Some(token));
    }
    Ok(std::env::var(TOKEN_ENV)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty()))
}

/// The tokens `acp serve` accepts: those of `--token-file` (one identity a line, see
/// [`BearerTokens`]), else the unnamed `ACP_TOKEN`; `None` if neither. An error names the
/// file and the line, never a token.
pub fn server_tokens(file: Option<&Path>) -> Result<Option<BearerTokens>, String> {
    let Some(file) = file else {
        return token(None)?
            .map(|t| BearerTokens::single(t).map_err(|e| e.to_string()))
            .transpose();
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("--token-file {}: {e}", file.display()))?;
    BearerTokens::parse(&text)
        .map(Some)
        .map_err(|e| format!("--token-file {}: {e}", file.display()))
}

/// Re-reads `file` into `tokens` on every SIGHUP: new tokens count from the next request; a
/// file that cannot be read or parsed keeps the old ones, and the log says why.
fn reload_on_hangup(file: PathBuf, tokens: BearerTokens) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups =
        signal(SignalKind::hangup()).map_err(|e| format!("cannot watch for SIGHUP: {e}"))?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let reloaded = std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|text| tokens.reload(&text).map_err(|e| e.to_string()));
            // To stderr whatever RUST_LOG says: the operator who sent the signal looks here.
            match reloaded {
                Ok(()) => eprintln!(
                    "acp serve: SIGHUP: --token-file {} reloaded ({} tokens)",
                    file.display(),
                    tokens.len()
                ),
                Err(error) => eprintln!(
                    "acp serve: SIGHUP: --token-file {}: {error}; the tokens before stay",
                    file.display()
                ),
            }
        }
    });
    Ok(())
}

/// The readiness check of a served store: one listing that matches nothing (an indexed
/// query for PostgreSQL, memory for a directory).
async fn store_reachable(
    store: std::sync::Arc<dyn acp_agent::store::SessionStore>,
) -> Result<(), String> {
    let query = acp_agent::store::ListQuery {
        owner: None,
        cwd: Some("/ readiness probe: no such directory".into()),
        cursor: None,
        limit: 1,
    };
    store
        .list(query)
        .await
        .map(drop)
        .map_err(|e| format!("the session store: {e}"))
}

/// Runs the server until Ctrl-C or SIGTERM.
pub async fn run(args: ServeArgs) -> i32 {
    match serve(args).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("acp serve: {e}");
            EXIT_FAILED
        }
    }
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let hosting = args.hosting.read()?;
    let given = server_tokens(args.token_file.as_deref())?;
    let generated = given.is_none();
    let (auth, token) = match given {
        Some(tokens) => (tokens, String::new()),
        None => {
            let token = acp_remote::random_token().map_err(|e| e.to_string())?;
            (
                BearerTokens::single(&token).map_err(|e| e.to_string())?,
                token,
            )
        }
    };
    let named = !auth.names().is_empty();
    if let Some(file) = &args.token_file {
        reload_on_hangup(file.clone(), auth.clone())?;
    }
    if args.store.store.is_some() && !args.agent.is_empty() {
        return Err(
            "--store is for the built-in agent; an agent command keeps its own sessions".into(),
        );
    }
    if args.gateway.any() && args.agent.is_empty() {
        return Err(
            "--sandbox and --pass-env are for an agent command (`-- AGENT...`): the \
                    built-in agent runs in this process"
                .into(),
        );
    }
    // The store, for `/readyz`: a host whose database is gone says so to its load balancer.
    let mut readiness_store = None;
    let metrics = args.metrics.then(acp_remote::Metrics::new);
    let (builder, what) = match args.agent.split_first() {
        None => match args.store.open().await? {
            None => {
                let policy = hosting.mcp.clone();
                // v1 or v2 by the client's offer (v2 through the translation, which runs no
                // terminals here: a remote client's turn starts no process on this host).
                let serve = move |frames, who: &acp_remote::Identity| {
                    acp_agent::Builder::new(BuiltinAgent::default().mcp_policy(policy.clone()))
                        .identity(who.session_owner())
                        .negotiate(versions())
                        .over_frames(frames)
                };
                (
                    Server::in_process_negotiated(serve),
                    "the built-in demo agent".to_owned(),
                )
            }
            Some((store, shown)) => {
                let mut store = store.0;
                readiness_store = Some(store.clone());
                if let Some(metrics) = &metrics {
                    // The agents' operations are counted, the readiness probes are not.
                    let metered = acp_remote::MeteredStore::new(store, metrics.clone());
                    store = std::sync::Arc::new(metered);
                }
                let policy = hosting.mcp.clone();
                // Each identity reaches only its own sessions of the shared store.
                let serve = move |frames, who: &acp_remote::Identity| {
                    acp_agent::Builder::new(BuiltinAgent::with_store().mcp_policy(policy.clone()))
                        .store(store.clone())
                        .identity(who.session_owner())
                        .negotiate(versions())
                        .over_frames(frames)
                };
                let what = format!("the built-in demo agent (sessions in {shown})");
                (Server::in_process_negotiated(serve), what)
            }
        },
        Some(_) => {
            let gateway = crate::sandbox::Gateway {
                args: &args.gateway,
                root: hosting.root.clone(),
                root_per_identity: hosting.per_identity,
                token_file: args.token_file.as_deref(),
                store: args.store.spec(),
            };
            let command = crate::sandbox::gateway_command(&args.agent, gateway).await?;
            let shown: Vec<_> = args.agent.iter().map(|a| a.to_string_lossy()).collect();
            let sandboxed = if args.gateway.sandbox {
                ", sandboxed"
            } else {
                ""
            };
            (
                Server::gateway_with(command),
                format!(
                    "`{}`, one process per connection{sandboxed}",
                    shown.join(" ")
                ),
            )
        }
    };
    let mut builder = hosting.apply(builder.authenticator(auth));
    if let Some(store) = readiness_store {
        builder = builder.readiness(move || store_reachable(store.clone()));
    }
    if let Some(metrics) = metrics {
        builder = builder.metrics(metrics);
    }
    if args.dashboard {
        let live = crate::trace::live::Live::new(format!("acp serve: {what}"));
        builder = builder
            .observe(crate::trace::live::ServeObserver::factory(live.clone()))
            .dashboard(live);
    }
    for origin in args.allow_origin {
        builder = builder.allow_origin(origin);
    }
    let server = builder
        .bind(args.listen)
        .await
        .map_err(|e| format!("{}: {e}", args.listen))?;
    let url = server.url();
    let credential = match (&args.token_file, generated) {
        // A file of several identities is not a client's: each has its own token.
        (Some(_), _) if named => format!("(with {TOKEN_ENV} set to your identity's token)"),
        (Some(file), _) => format!("--token-file {}", file.display()),
        (None, false) => format!("(with {TOKEN_ENV} set)"),
        (None, true) => String::new(),
    };
    let prefix = if generated {
        format!("{TOKEN_ENV}={token} ")
    } else {
        String::new()
    };
    println!(
        "acp serve: {what} on {url} (WebSocket: {})",
        url.replace("http://", "ws://")
    );
    println!("connect with:");
    println!("  {prefix}acp chat --url {url} {credential}");
    if generated {
        println!("(a fresh token; give --token-file or {TOKEN_ENV} to choose it)");
    }
    if args.metrics {
        let base = url.trim_end_matches("/acp");
        println!("metrics: {base}/metrics (with the token); readiness: {base}/readyz");
    }
    if args.dashboard {
        let base = url.trim_end_matches("acp");
        println!("dashboard: {base}?token=TOKEN");
    }
    stopped().await;
    server.shutdown();
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// What a remote client's session requests may ask of the host: the MCP policy and the
/// served root (applied by acp-remote's session guard, in process and as a gateway).
#[derive(Args, Debug)]
struct HostingArgs {
    /// Let remote clients' stdio MCP servers run this program (an exact absolute path;
    /// repeatable; arguments are the client's). Allow an MCP server, never a shell or an
    /// interpreter.
    #[arg(long = "mcp-allow-command", value_name = "PATH")]
    mcp_allow_command: Vec<PathBuf>,
    /// Let remote clients' http/sse MCP servers under this URL prefix be reached whatever
    /// their address (repeatable; `http://127.0.0.1:9000/`, `https://mcp.example.com/x`).
    #[arg(long = "mcp-allow-url", value_name = "PREFIX")]
    mcp_allow_url: Vec<String>,
    /// Add the servers of this MCP config file (`{"mcpServers": {...}}`, as for `acp chat`)
    /// to every session; the host's own servers are not checked.
    #[arg(long = "mcp-config", value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// The most MCP servers one session request may name (the --mcp-config ones not
    /// counted).
    #[arg(long = "mcp-max-servers", value_name = "N", default_value_t = acp_agent::mcp::policy::DEFAULT_MAX_SERVERS)]
    mcp_max_servers: usize,
    /// Sessions (their `cwd` and `additionalDirectories`) must lie under this directory
    /// [default: the directory acp serve starts in].
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Each identity's sessions lie under `ROOT/NAME` (NAME: the identity's name) instead,
    /// created on first use.
    #[arg(long)]
    root_per_identity: bool,
}

/// [`HostingArgs`], read and checked.
struct Hosting {
    mcp: acp_agent::mcp::McpPolicy,
    root: PathBuf,
    per_identity: bool,
}

impl HostingArgs {
    /// The policy and the root; `Err` (a clear message, at start) for a missing or
    /// malformed --mcp-config, an unusable prefix, a relative command or a missing root.
    fn read(self) -> Result<Hosting, String> {
        let mut mcp = acp_agent::mcp::McpPolicy::new().max_servers(self.mcp_max_servers);
        for command in self.mcp_allow_command {
            if !command.is_absolute() {
                return Err(format!(
                    "--mcp-allow-command {}: give the program's absolute path",
                    command.display()
                ));
            }
            mcp = mcp.allow_command(command);
        }
        for prefix in &self.mcp_allow_url {
            mcp = mcp.allow_url(prefix).map_err(|e| e.to_string())?;
        }
        if let Some(file) = &self.mcp_config {
            for server in crate::mcp_config::read(file).map_err(|e| format!("--mcp-config: {e}"))? {
                mcp = mcp.host_server(server);
            }
        }
        let root = match self.root {
            Some(root) => root,
            None => std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?,
        };
        if !root.is_dir() {
            return Err(format!("--root {}: no such directory", root.display()));
        }
        let root =
            std::path::absolute(&root).map_err(|e| format!("--root {}: {e}", root.display()))?;
        Ok(Hosting {
            mcp,
            root,
            per_identity: self.root_per_identity,
        })
    }
}

impl Hosting {
    fn apply(self, builder: acp_remote::ServerBuilder) -> acp_remote::ServerBuilder {
        let builder = builder.mcp_policy(self.mcp).root(self.root);
        if self.per_identity {
            builder.root_per_identity()
        } else {
            builder
        }
    }
}

/// What the built-in agent hosted by `acp serve` speaks: v1, and v2 through the v1<->v2
/// translation (without local terminals or files: nothing a remote client asks runs a
/// process or reads a file of this host through the translation).
fn versions() -> acp_agent::negotiate::NegotiateOptions {
    acp_agent::negotiate::NegotiateOptions::default().with_v2(true)
}
