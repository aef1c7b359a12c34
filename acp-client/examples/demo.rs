//! The end-to-end demo: a client that spawns the demo agent as a real child process over
//! stdio, runs initialize -> session/new -> session/prompt, answers the permission request,
//! serves files and terminals from the built-in handlers rooted at a temporary directory, and
//! prints a readable transcript.
//!
//! ```sh
//! cargo run -p acp-client --example demo            # transcript
//! cargo run -p acp-client --example demo -- --wire  # plus every raw line on the wire
//! cargo run -p acp-client --example demo -- --dialect legacy-0.0.9   # pin a dialect
//! cargo run -p acp-client --example demo -- -- my-agent --flag   # drive another agent
//! cargo run -p acp-client --example demo -- --store /tmp/demo-sessions  # run it twice
//! cargo run -p acp-client --example demo -- --allow-terminal     # let the agent run commands
//! cargo run -p acp-client --features v2 --example demo -- --protocol 2   # draft v2 first
//! ```
//!
//! With `--protocol 2` (needs the feature `v2`) the demo offers draft protocol v2 first and
//! falls back to v1 when the agent answers 1; the echo agent is then built with its `v2`
//! feature, and the v2 session is printed as `acp_client::v2::SessionState` folds it.
//!
//! With `--store DIR` the echo agent keeps its sessions in DIR; from the second run on, the
//! demo first loads the newest stored session and prints its replayed conversation.
//!
//! Terminal policy: the demo is not interactive, so it cannot ask. By default it does not
//! offer the `terminal` capability, and refuses any `terminal/create` an agent sends anyway,
//! printing the exact command it refused; with `--allow-terminal` it offers terminals and
//! runs commands inside the workspace (printing each one) but still refuses a `cwd` outside
//! it and environment variables (the `Terminals` defaults).
//!
//! By default the agent is `acp-agent`'s `echo_agent` example: the demo builds it first
//! (`cargo build`, saying so on stderr, cargo's progress below) and then spawns the built
//! executable, so a first build does not eat into the negotiation's time limit. The dialect is negotiated (v1 first, then the legacy
//! ones); `--dialect` (repeatable, or comma-separated) pins the ones offered, in order. Over
//! a legacy dialect the same v1 client and agent talk through both adapters, and what the
//! dialect cannot carry (plans, terminals, a threads or probe editor's permission prompt) is
//! left out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_client::fs::SandboxedFs;
use acp_client::negotiate::NegotiateOptions;
use acp_client::permission::{PermissionPolicy, choose_permission};
use acp_client::process::{AgentCommand, AgentProcess, ProcessError};
use acp_client::terminal::{TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, Config, Dialect, Error, PromptEvent, async_trait};
use acp_rpc::{Direction, TapEvent};
use acp_types::v1::*;

#[cfg(feature = "v2")]
#[path = "support/demo_v2.rs"]
mod demo_v2;

/// The demo's `Client`: files and terminals from the built-in handlers, permission requests
/// answered with the first "allow" option, and every update printed.
struct DemoClient {
    fs: SandboxedFs,
    terminals: Terminals,
    /// `--allow-terminal`: run the commands the agent asks for (inside the workspace).
    allow_terminal: bool,
}

#[async_trait]
impl Client for DemoClient {
    async fn approve_terminal(&self, request: &TerminalRequest) -> TerminalDecision {
        if self.allow_terminal {
            println!("  ! running {request} (--allow-terminal)");
            TerminalDecision::Allow
        } else {
            println!("  ! refused to run {request} (pass --allow-terminal to allow)");
            TerminalDecision::deny("the demo client runs commands only with --allow-terminal")
        }
    }

    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let title = p
            .tool_call
            .title
            .clone()
            .unwrap_or_else(|| p.tool_call.tool_call_id.0.clone());
        // The one action only: never an "always" option, whatever the options' order.
        let choice = choose_permission(&p.options, PermissionPolicy::AllowOnce);
        match choice.option {
            Some(i) => println!(
                "  ? permission for \"{title}\": answering \"{}\"{}",
                p.options[i].name,
                if choice.no_allow_offered {
                    " (the agent offers no one-time allow)"
                } else {
                    ""
                }
            ),
            None => println!("  ? permission for \"{title}\": cancelled (no option fits)"),
        }
        Ok(RequestPermissionResponse::new(choice.outcome(&p.options)))
    }

    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        println!("  < fs/read_text_file {}", p.path);
        self.fs.read_text_file(p).await
    }

    async fn write_text_file(
        &self,
        p: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        println!("  < fs/write_text_file {}", p.path);
        self.fs.write_text_file(p).await
    }

    /// The other terminal methods: the trait's defaults, served by these terminals.
    fn terminals(&self) -> Option<&Terminals> {
        Some(&self.terminals)
    }

    async fn create_terminal(
        &self,
        p: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        println!("  < terminal/create {} {}", p.command, p.args.join(" "));
        self.terminals.create(p, self).await
    }
}

/// One line of transcript for an update.
fn describe(update: &SessionUpdate) -> String {
    fn text(block: &ContentBlock) -> String {
        match block {
            ContentBlock::Text(t) => t.text.clone(),
            other => format!(
                "[{}]",
                serde_json::to_value(other)
                    .map(|v| v["type"].to_string())
                    .unwrap_or_default()
            ),
        }
    }
    match update {
        SessionUpdate::AgentMessageChunk(c) => format!("agent: {}", text(&c.content)),
        SessionUpdate::AgentThoughtChunk(c) => format!("thought: {}", text(&c.content)),
        SessionUpdate::UserMessageChunk(c) => format!("user: {}", text(&c.content)),
        SessionUpdate::ToolCall(t) => format!(
            "tool call {} \"{}\" ({}, {})",
            t.tool_call_id.0, t.title, t.kind, t.status
        ),
        SessionUpdate::ToolCallUpdate(t) => {
            let status = t
                .status
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "updated".into());
            format!("tool call {} {status}", t.tool_call_id.0)
        }
        SessionUpdate::Plan(p) => {
            let entries: Vec<String> = p
                .entries
                .iter()
                .map(|e| format!("[{}] {}", e.status, e.content))
                .collect();
            format!("plan: {}", entries.join("; "))
        }
        SessionUpdate::AvailableCommandsUpdate(c) => {
            let names: Vec<&str> = c
                .available_commands
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            format!("commands: /{}", names.join(", /"))
        }
        SessionUpdate::CurrentModeUpdate(m) => format!("mode: {}", m.current_mode_id.0),
        other => format!(
            "update: {}",
            serde_json::to_string(other).unwrap_or_default()
        ),
    }
}

fn workspace_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml")
}

/// Builds `acp-agent`'s `echo_agent` example (cargo's progress on stderr) and returns the
/// path of its executable. Built before it is spawned, so the negotiation's clock runs only
/// while the agent runs: spawned through `cargo run`, a first build (a fresh checkout, or a
/// target directory holding other feature sets) took the clock's 60 s and the demo failed
/// with "no dialect was agreed". `cargo` is the one running the demo (`$CARGO`), else the
/// one on `PATH`.
fn build_echo_agent(v2: bool) -> Result<PathBuf, BoxError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("building the echo agent example (cargo build -p acp-agent --example echo_agent)…");
    let output = std::process::Command::new(&cargo)
        .arg("build")
        .arg("--manifest-path")
        .arg(workspace_manifest())
        .args(["-p", "acp-agent", "--example", "echo_agent"])
        .args(if v2 { &["--features", "v2"][..] } else { &[] })
        // Artifacts as JSON on stdout (the executable's path), diagnostics and progress as
        // usual on stderr.
        .arg("--message-format=json-render-diagnostics")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    if !output.status.success() {
        return Err(format!("building the echo agent failed ({})", output.status).into());
    }
    let executable = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "echo_agent")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from));
    executable.ok_or_else(|| "the build named no echo_agent executable".into())
}

/// Loads the newest session the agent has stored (an earlier run's) and prints its
/// replayed conversation.
async fn show_newest_stored_session(agent: &acp_client::AgentHandle) -> Result<(), BoxError> {
    let listed = agent.list_sessions(ListSessionsRequest::new()).await?;
    let Some(newest) = listed.sessions.first() else {
        println!("no stored session yet (run the demo again with the same --store)");
        return Ok(());
    };
    let request = LoadSessionRequest::new(
        Vec::<McpServer>::new(),
        newest.cwd.clone(),
        newest.session_id.clone(),
    );
    let loaded = agent.load_session_history(request).await?;
    println!(
        "loaded session {} ({} updates replayed):",
        newest.session_id.0,
        loaded.history.len()
    );
    for update in &loaded.history {
        println!("  {}", describe(update));
    }
    Ok(())
}

type BoxError = Box<dyn std::error::Error>;

/// The scratch workspace, removed when dropped: on success, on every error and on a panic.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // A scratch workspace with one file the demo agent reads.
    let scratch = Scratch(std::env::temp_dir().join(format!("acp-demo-{}", std::process::id())));
    let outcome = tokio::select! {
        outcome = run(&scratch.0) => outcome,
        _ = tokio::signal::ctrl_c() => Err("interrupted".into()),
    };
    drop(scratch);
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("demo failed: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Why the agent let us down: how it exited (status and stderr tail) if it has, or that it
/// is still running and what it last wrote to stderr.
async fn agent_report(agent: &mut AgentProcess) -> String {
    match tokio::time::timeout(Duration::from_secs(1), agent.wait_exit()).await {
        Ok(exited) => exited.to_string(),
        Err(_) => {
            let tail = agent.stderr_tail();
            if tail.is_empty() {
                format!(
                    "agent `{}` is still running; it wrote nothing to stderr",
                    agent.command()
                )
            } else {
                format!(
                    "agent `{}` is still running; last stderr output:\n{tail}",
                    agent.command()
                )
            }
        }
    }
}

async fn run(root: &Path) -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let custom: Vec<String> = match args.iter().position(|a| a == "--") {
        Some(i) => args[i + 1..].to_vec(),
        None => Vec::new(),
    };
    let ours = &args[..args.len() - custom.len()];
    let wire = ours.iter().any(|a| a == "--wire");
    let store = ours
        .iter()
        .position(|a| a == "--store")
        .map(|i| ours.get(i + 1).ok_or("--store needs a directory"))
        .transpose()?;
    let allow_terminal = ours.iter().any(|a| a == "--allow-terminal");
    let protocol = match ours.iter().position(|a| a == "--protocol") {
        None => 1,
        Some(i) => match ours.get(i + 1).map(String::as_str) {
            Some("1") => 1,
            Some("2") if cfg!(feature = "v2") => 2,
            Some("2") => return Err("--protocol 2 needs the feature v2 (cargo run -p acp-client --features v2 --example demo)".into()),
            _ => return Err("--protocol takes 1 or 2".into()),
        },
    };
    let mut dialects = Vec::new();
    for (i, arg) in ours.iter().enumerate() {
        if arg == "--dialect" {
            let list = ours.get(i + 1).ok_or("--dialect needs a value")?;
            for name in list.split(',') {
                dialects.push(name.parse::<Dialect>()?);
            }
        }
    }

    std::fs::create_dir_all(root)?;
    let root = std::fs::canonicalize(root)?;
    std::fs::write(
        root.join("hello.txt"),
        "Hello from the client's file system!\n",
    )?;

    let command = match custom.split_first() {
        Some((program, rest)) => AgentCommand::new(program).args(rest),
        None => AgentCommand::new(build_echo_agent(protocol == 2)?).args(
            store
                .into_iter()
                .flat_map(|dir| ["--store".into(), dir.clone()]),
        ),
    }
    .cwd(&root);
    println!("spawning the agent (cwd {})", root.display());
    if allow_terminal {
        println!("terminal commands: run inside the workspace (--allow-terminal)");
    } else {
        println!("terminal commands: refused (pass --allow-terminal to let the agent run them)");
    }
    let mut agent_process = AgentProcess::spawn(&command)?;
    #[cfg(feature = "v2")]
    if protocol == 2 {
        let outcome = demo_v2::converse(&mut agent_process, &root).await;
        let status = agent_process.shutdown(Duration::from_secs(2)).await?;
        println!("agent exited: {status}");
        return outcome;
    }
    match converse(
        &mut agent_process,
        &root,
        wire,
        allow_terminal,
        dialects,
        store,
    )
    .await
    {
        Ok(()) => {
            let status = agent_process.shutdown(Duration::from_secs(2)).await?;
            println!("agent exited: {status}");
            Ok(())
        }
        Err(error) => {
            // A negotiation error names the stderr tail already: keep only what went wrong.
            let error = match error.downcast::<ProcessError>() {
                Ok(process_error) => match *process_error {
                    ProcessError::Negotiation { error, .. } => error.to_string(),
                    other => other.to_string(),
                },
                Err(other) => other.to_string(),
            };
            Err(format!("{error}\n{}", agent_report(&mut agent_process).await).into())
        }
    }
}

/// Negotiates, opens a session and runs one prompt turn, printing the transcript.
async fn converse(
    agent_process: &mut AgentProcess,
    root: &Path,
    wire: bool,
    allow_terminal: bool,
    dialects: Vec<Dialect>,
    store: Option<&String>,
) -> Result<(), BoxError> {
    let mut config = Config::default();
    if wire {
        config = config.with_observer(acp_rpc::tap::on_line(|event: TapEvent<'_>| {
            if let TapEvent::Line(direction, bytes) = event {
                let arrow = match direction {
                    Direction::Outgoing => ">>",
                    Direction::Incoming => "<<",
                };
                eprintln!("{arrow} {}", String::from_utf8_lossy(bytes).trim_end());
            }
        }));
    }
    let terminals = Terminals::new();
    let client = DemoClient {
        fs: SandboxedFs::new([root])?,
        terminals: terminals.clone(),
        allow_terminal,
    };
    let initialize = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new()
                .fs(FileSystemCapabilities::new()
                    .read_text_file(true)
                    .write_text_file(true))
                .terminal(allow_terminal),
        )
        .client_info(Implementation::new(
            "acp-rs demo client",
            env!("CARGO_PKG_VERSION"),
        ));
    let mut options = NegotiateOptions::new(initialize)
        .with_config(config)
        // The echo agent is built before this clock starts; another agent (`-- my-agent`) may
        // be slow to start (a late answer to an earlier offer still counts, so this only
        // bounds an agent that never answers): each offer may wait that long, and so may the
        // whole negotiation, not once per dialect.
        .with_timeout(Duration::from_secs(60))
        .with_deadline(Duration::from_secs(60))
        .with_legacy_fs(SandboxedFs::new([root])?);
    if !dialects.is_empty() {
        options = options.with_dialects(dialects);
    }
    let negotiated = acp_client::Builder::new(client)
        .negotiate(options)
        .attach(agent_process)
        .await?;
    let connection = negotiated.connection;
    let agent = connection.agent();
    let init = negotiated.initialize;
    println!("negotiated dialect: {}", negotiated.dialect);
    println!(
        "initialized: protocol {}, agent {}",
        init.protocol_version.0,
        init.agent_info
            .as_ref()
            .map(|i| i.name.as_str())
            .unwrap_or("(unnamed)")
    );

    if store.is_some() && init.agent_capabilities.load_session {
        show_newest_stored_session(agent).await?;
    }

    let session = agent
        .new_session(NewSessionRequest::new(root.to_string_lossy(), []))
        .await?;
    println!("session {}", session.session_id.0);
    // Commands without a `cwd` run in the session's directory, and a `cwd` must lie inside it.
    terminals.add_session(session.session_id.clone(), root, []);

    let prompt = "Please read hello.txt and say hi";
    println!("user: {prompt}");
    let mut turn = agent.prompt_stream(PromptRequest::new(
        session.session_id.clone(),
        [ContentBlock::text(prompt)],
    ));
    while let Some(event) = turn.next().await {
        match event {
            PromptEvent::Update(update) => println!("  {}", describe(&update)),
            PromptEvent::Done(result) => println!("stop reason: {}", result?.stop_reason),
        }
    }

    terminals.close().await;
    Ok(())
}
