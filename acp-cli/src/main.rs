//! `acp`: the command line for the Agent Client Protocol.
//!
//! * `acp chat [-- AGENT...]`: talk to an agent in the terminal (the built-in demo agent when
//!   no command is given); `--prompt TEXT` (as often as wanted) runs turns for scripts.
//! * `acp sessions -- AGENT...`: list an agent's sessions.
//! * `acp serve [--listen ADDR] [--store DIR|postgres://...] [-- AGENT...]`: serve an agent
//!   (the built-in one without a command) over the network, Streamable HTTP and WebSocket,
//!   with a bearer token; `acp chat`, `acp sessions` and `acp check` reach it with `--url`.
//!   Hosts given one PostgreSQL store share their sessions (docs/DEPLOYMENT.md).
//! * `acp agent [--store DIR|postgres://...]`: serve the built-in demo agent on stdio (for
//!   editors, or `acp trace`), its sessions kept in DIR or a PostgreSQL database when given
//!   (or `ACP_STORE`; `acp chat --store DIR|postgres://...` does the same for the in-process agent;
//!   `--load ID` then shows an earlier conversation and goes on).
//! * `acp trace --out FILE -- AGENT...`: a transparent stdio proxy recording every line;
//!   `--serve ADDR` shows the run live in a browser (`--out` then optional).
//! * `acp trace view FILE [--html OUT]`: a trace as a summary, or as a page.
//! * `acp check [-- AGENT...]`: grade an agent with the conformance kit (`acp-check`).
//! * `acp conduct -- PROXY... -- AGENT`: a proxy chain served as one agent on stdio (unstable:
//!   proxy chains); `acp tag-proxy` is a demo proxy for it.
//! * `acp agents [update|install]`: the ACP agent registry; `--agent ID` runs one of its
//!   agents in `acp chat`, `sessions`, `check`, `trace` and `serve` (`agents.rs`).
//!
//! Logs go to stderr through `tracing` (`RUST_LOG=debug` for more); stdout carries only the
//! transcript (or the JSON events, or the proxied protocol).

mod agents;
mod attach;
mod builtin;
mod chat;
mod check;
mod client;
mod conduct;
mod input;
mod link;
mod mcp_config;
mod offers;
mod proto;
mod remote;
mod sandbox;
mod sanitize;
mod secret_env;
mod serve;
mod sessions;
mod store;
mod telemetry;
mod trace;
mod view;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use acp_client::Dialect;
use acp_client::permission::PermissionPolicy;
use clap::{Args, Parser, Subcommand};

/// The command line for the Agent Client Protocol.
#[derive(Parser, Debug)]
#[command(name = "acp", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Chat with an agent (the built-in demo agent when no command follows `--`).
    Chat(ChatArgs),
    /// List an agent's sessions.
    Sessions(AgentArgs),
    /// Serve the built-in demo agent on stdin/stdout, in the version or dialect the client
    /// speaks: v1, v2 (through the v1<->v2 translation, which runs the agent's own `echo`
    /// terminal for it) or a legacy dialect.
    Agent(AgentCommandArgs),
    /// Serve an agent over the network (Streamable HTTP and WebSocket on one `/acp`
    /// endpoint): the built-in demo agent, or each connection its own AGENT process.
    Serve(serve::ServeArgs),
    /// Record an agent's stdio as NDJSON while passing it through unchanged, or view a
    /// recording (`acp trace view FILE`).
    Trace(TraceArgs),
    /// Grade an agent against the protocol (the built-in demo agent when no command follows
    /// `--`): a table of checks, pass / fail with evidence / skip with the reason.
    Check(check::CheckArgs),
    /// Serve a proxy chain as one agent on stdin/stdout: `acp conduct -- PROXY... -- AGENT`
    /// spawns each component (separated by `--`; the last one the agent) and routes between
    /// them (unstable: proxy chains).
    Conduct(conduct::ConductArgs),
    /// List the agents of the ACP agent registry (id, name, version, how each would run
    /// here, whether installed); `acp agents update` fetches the current registry.
    Agents(agents::AgentsArgs),
    /// Serve a demo proxy for `acp conduct`: forwards everything, prefixing the agent's
    /// message text.
    TagProxy(conduct::TagProxyArgs),
}

/// Which agent and how to talk to it.
#[derive(Args, Debug)]
struct AgentArgs {
    /// Dialects to offer, in order (repeatable or comma-separated: v1, legacy-0.0.9,
    /// threads, probe, crow). Default: all, newest first.
    #[arg(long, value_delimiter = ',')]
    dialect: Vec<Dialect>,
    /// Seconds each dialect offer waits for the agent's answer.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// The protocol version to speak, 1 or 2; without it, the highest the agent speaks
    /// (v2 is offered first, an agent answering 1 is spoken to in v1 or its dialect). The
    /// chat's client is v1: a v2 agent is driven through acp-dialects' v1<->v2 translation,
    /// and the built-in v1 agent is served as v2 through the other direction. With 2, an
    /// agent that answers 1 is an error; `--dialect`, `--store` and `--url` speak v1 only.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2))]
    protocol: Option<u16>,
    /// Working directory of the session and the agent (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The built-in agent keeps its sessions in this directory (created if missing), or in
    /// the PostgreSQL database of a `postgres://` URL, so `--load` and `acp sessions` find
    /// them in later runs. Only for the built-in agent.
    #[arg(long)]
    store: Option<OsString>,
    /// A remote agent's endpoint (`http://HOST:PORT/acp` for Streamable HTTP,
    /// `ws://HOST:PORT/acp` for WebSocket; `https://` and `wss://` over TLS), as `acp serve`
    /// prints it.
    #[arg(long, conflicts_with_all = ["agent", "store"])]
    url: Option<String>,
    #[command(flatten)]
    remote: remote::RemoteArgs,
    /// `--agent ID`: an agent of the ACP registry instead of a command.
    #[command(flatten)]
    by_id: agents::ById,
    /// The agent's command line; none for the built-in agent.
    #[arg(last = true)]
    agent: Vec<OsString>,
}

#[derive(Args, Debug)]
struct AgentCommandArgs {
    #[command(flatten)]
    store: store::StoreArgs,
}

/// The chat's own commands, listed by `acp chat --help`.
const CHAT_COMMANDS: &str = "\
In the chat (Tab completes commands, ids and @paths):
  /mode [ID]     list the agent's modes, or switch to one
  /model [ID]    list the agent's models, or switch (session/set_model when the agent lists
                 `models`, else its model config option)
  /title [TEXT]  show the session's title, or rename the session (when the agent advertises
                 sessionCapabilities.title)
  /quit          leave (Ctrl-D too); Ctrl-C cancels a turn, a second Ctrl-C quits
  @PATH          attach a file to the prompt

While a turn runs, a line typed and ended with Enter is a follow-up: sent into the running
turn as steering where the agent advertises it (`_session/steering`), else queued (shown as
`queued:`) and sent as the next prompt when the turn ends. Ctrl-C cancels the turn and holds
the queued lines instead of sending them: each is offered on the prompt line, where Enter
sends it and Ctrl-C drops it.";

#[derive(Args, Debug)]
#[command(after_help = CHAT_COMMANDS)]
struct ChatArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Run one turn with this prompt and exit: 0 for end_turn, 130 cancelled, 3 refusal,
    /// 4 max_tokens, 5 max_turn_requests, 6 another stop reason, 1 an error. Given several
    /// times: one turn each, in order, stopping at the first that does not end with
    /// end_turn (its status is the exit status).
    #[arg(long, value_name = "TEXT")]
    prompt: Vec<String>,
    /// With --prompt: one JSON event per line on stdout instead of a transcript.
    #[arg(long, requires = "prompt")]
    json: bool,
    /// Load this session (when the agent supports session/load) instead of starting one.
    #[arg(long)]
    load: Option<String>,
    /// With --prompt: allow what the agent asks (terminal commands, and permission requests
    /// with the agent's one-time `allow_once` option, never an "always" one; an agent that
    /// offers no one-time allow is refused, with the reason shown). Without it everything is
    /// refused (`reject_once`, else `reject_always`, else `cancelled`).
    #[arg(long, requires = "prompt")]
    yes: bool,
    /// With --prompt: as --yes, and where the agent offers no one-time allow, grant its
    /// `allow_always` option: a permanent grant, which --yes never gives.
    #[arg(long, requires = "prompt")]
    yes_always: bool,
    /// Pass the MCP servers of this file (`{"mcpServers": {NAME: {command, args, env} |
    /// {url, headers}}}`, as MCP clients write it) in session/new; those of transports the
    /// agent does not advertise are left out with a warning.
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<PathBuf>,
}

/// `acp trace --help`, after the options.
const TRACE_AFTER: &str = "\
--serve ADDR serves a live dashboard at http://ADDR/ while the agent runs: the page of
`acp trace view --html` (sequence, request/response pairs with latency, notifications by
session and kind, errors, message rate, latency per method, session health), redrawn as
messages flow (server-sent events from /events; nothing from the network), with a
Pause/Follow button. It holds the newest 5000 messages (older ones leave the window; the
count of all is shown), each reduced to what the page reads, so memory stays bounded
however long the run. Loopback only, unless a token is given (--token-file, else ACP_TOKEN):
then any address, and the page is opened as http://ADDR/?token=TOKEN. The address is
printed on stderr; stdout stays the agent's.";

#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = TRACE_AFTER
)]
struct TraceArgs {
    #[command(subcommand)]
    view: Option<TraceCommand>,
    /// The NDJSON file to write (required unless --serve).
    #[arg(long, required_unless_present = "serve")]
    out: Option<PathBuf>,
    /// Serve a live dashboard of the run on this address (`127.0.0.1:0`: any free port).
    #[arg(long, value_name = "ADDR")]
    serve: Option<std::net::SocketAddr>,
    /// With --serve: viewers need the token in the first line of this file (else
    /// `ACP_TOKEN`, else none and loopback only).
    #[arg(long, requires = "serve")]
    token_file: Option<PathBuf>,
    /// `--agent ID` (and `--yes`): an agent of the ACP registry instead of a command.
    #[command(flatten)]
    by_id: agents::ByIdConfirmed,
    /// The agent's command line: after `--`, or simply last (`acp trace --out F acp agent`),
    /// which lets a trace sit inside an `acp conduct` chain, whose components `--` separates.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required_unless_present = "agent_id"
    )]
    agent: Vec<OsString>,
}

#[derive(Subcommand, Debug)]
enum TraceCommand {
    /// Summarise a trace on the terminal, or write it as an HTML page.
    View {
        /// The trace (NDJSON written by `acp trace`).
        file: PathBuf,
        /// Write a self-contained HTML page here.
        #[arg(long)]
        html: Option<PathBuf>,
    },
}

impl AgentArgs {
    fn spec(self) -> Result<chat::AgentSpec, String> {
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            return Err(format!(
                "--timeout must be a positive number of seconds, not {}",
                self.timeout
            ));
        }
        if self.store.is_some() && !self.agent.is_empty() {
            return Err(
                "--store is for the built-in agent; an agent command keeps its own sessions"
                    .to_owned(),
            );
        }
        let remote = match self.url {
            Some(url) => Some(chat::RemoteSpec {
                url,
                options: self.remote.connect_options()?,
            }),
            None => None,
        };
        Ok(chat::AgentSpec {
            remote,
            store: self.store,
            command: self.agent,
            dialects: self.dialect,
            protocol: self.protocol,
            timeout: Duration::from_secs_f64(self.timeout.min(3600.0)),
            cwd: chat::working_directory(self.cwd)?,
        })
    }
}

impl Command {
    /// The command's name for telemetry (the default `OTEL_SERVICE_NAME` is `acp-NAME`) and
    /// its log format.
    fn telemetry(&self) -> (&'static str, telemetry::LogFormat) {
        let name = match self {
            Command::Chat(_) => "chat",
            Command::Sessions(_) => "sessions",
            Command::Agent(_) => "agent",
            Command::Serve(args) => return ("serve", args.log_format),
            Command::Trace(_) => "trace",
            Command::Check(_) => "check",
            Command::Conduct(_) => "conduct",
            Command::Agents(_) => "agents",
            Command::TagProxy(_) => "tag-proxy",
        };
        (name, telemetry::LogFormat::Text)
    }
}

fn main() {
    let cli = Cli::parse();
    let (name, log_format) = cli.command.telemetry();
    let telemetry = telemetry::Telemetry::init(name, log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("acp: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let status = runtime.block_on(run(cli));
    // Blocking work (the keyboard thread, stdin readers) must not keep us alive.
    runtime.shutdown_timeout(Duration::from_millis(100));
    telemetry.shutdown();
    std::process::exit(status);
}

async fn run(cli: Cli) -> i32 {
    let fail = |e: String| {
        eprintln!("acp: {e}");
        chat::EXIT_FAILED
    };
    match cli.command {
        Command::Chat(mut args) => {
            if let Err(e) = by_id(&mut args.agent, args.yes || args.yes_always).await {
                return fail(e);
            }
            let spec = match args.agent.spec() {
                Ok(spec) => spec,
                Err(e) => return fail(e),
            };
            let mcp_servers = match args.mcp_config.as_deref().map(mcp_config::read) {
                None => Vec::new(),
                Some(Ok(servers)) => servers,
                Some(Err(e)) => return fail(e),
            };
            chat::run(chat::ChatRequest {
                agent: spec,
                mcp_servers,
                prompts: args.prompt,
                json: args.json,
                load: args.load,
                allow: match (args.yes, args.yes_always) {
                    (_, true) => PermissionPolicy::AllowAlways,
                    (true, false) => PermissionPolicy::AllowOnce,
                    (false, false) => PermissionPolicy::Refuse,
                },
            })
            .await
        }
        Command::Sessions(mut args) => {
            if let Err(e) = by_id(&mut args, false).await {
                return fail(e);
            }
            match args.spec() {
                Ok(spec) => sessions::sessions(spec).await,
                Err(e) => fail(e),
            }
        }
        Command::Agent(args) => serve_builtin(args.store).await,
        Command::Serve(mut args) => match agent_by_id(&args.by_id).await {
            Ok(Some(agent)) => {
                args.agent = agent;
                serve::run(args).await
            }
            Ok(None) => serve::run(args).await,
            Err(e) => fail(e),
        },
        Command::Check(mut args) => match agent_by_id(&args.by_id).await {
            Ok(Some(agent)) => {
                args.agent = agent;
                check::run(args).await
            }
            Ok(None) => check::run(args).await,
            Err(e) => fail(e),
        },
        Command::Agents(args) => agents::run(args).await,
        Command::Conduct(args) => conduct::run(args).await,
        Command::TagProxy(args) => conduct::tag_proxy(args).await,
        Command::Trace(TraceArgs {
            view: Some(TraceCommand::View { file, html }),
            ..
        }) => trace::view(&file, html.as_deref()),
        Command::Trace(TraceArgs {
            view: None,
            out,
            serve,
            token_file,
            by_id,
            mut agent,
        }) => {
            match agent_by_id(&by_id).await {
                Ok(Some(found)) => agent = found,
                Ok(None) => {}
                Err(e) => return fail(e),
            }
            let serve = match serve.map(|addr| trace_serve(addr, token_file.as_deref())) {
                None => None,
                Some(Ok(serve)) => Some(serve),
                Some(Err(e)) => return fail(e),
            };
            if out.is_none() && serve.is_none() {
                return fail("--out FILE or --serve ADDR is required".into());
            }
            trace::proxy::run(out.as_deref(), serve, &agent).await
        }
    }
}

/// Chat and sessions: `--agent ID` resolved into the agent's command line.
async fn by_id(args: &mut AgentArgs, yes: bool) -> Result<(), String> {
    let Some(id) = args.by_id.agent.take() else {
        return Ok(());
    };
    if args.url.is_some() || args.store.is_some() {
        return Err(
            "--agent ID runs a registry agent here; it goes with neither --url nor --store".into(),
        );
    }
    args.agent = agents::command(&id, yes).await?;
    Ok(())
}

/// Check, trace and serve: the command line of `--agent ID`, if given.
async fn agent_by_id(args: &agents::ByIdConfirmed) -> Result<Option<Vec<OsString>>, String> {
    match &args.by_id.agent {
        Some(id) => agents::command(id, args.yes).await.map(Some),
        None => Ok(None),
    }
}

/// `acp trace --serve ADDR`: where, and the token if one is given.
fn trace_serve(
    addr: std::net::SocketAddr,
    token_file: Option<&std::path::Path>,
) -> Result<trace::proxy::Serve, String> {
    let auth = match serve::token(token_file)? {
        Some(token) => Some(acp_remote::BearerToken::new(token).map_err(|e| e.to_string())?),
        None => None,
    };
    Ok(trace::proxy::Serve { addr, auth })
}

/// `acp agent`: the built-in agent on stdio, in whichever dialect the client speaks.
async fn serve_builtin(store: store::StoreArgs) -> i32 {
    let mut options = acp_agent::negotiate::NegotiateOptions::default().with_v2(true);
    if let Ok(cwd) = std::env::current_dir() {
        options = options.with_legacy_cwd(cwd);
    }
    // A v2 client runs no terminals: the translation runs the built-in agent's one command
    // (`echo`, fixed by the agent, never the client's) and shows it as a v2 terminal.
    options.legacy = options.legacy.with_local_terminals(true);
    let agent = match store.open().await {
        Ok(Some((store, _))) => {
            options = options.with_store(store);
            builtin::BuiltinAgent::with_store()
        }
        Ok(None) => builtin::BuiltinAgent::default(),
        Err(e) => {
            eprintln!("acp agent: {e}");
            return chat::EXIT_FAILED;
        }
    };
    match acp_agent::Builder::new(agent)
        .negotiate(options)
        .stdio()
        .await
    {
        Ok(conn) => {
            conn.closed().await;
            0
        }
        Err(e) => {
            eprintln!("acp agent: {e}");
            chat::EXIT_FAILED
        }
    }
}
