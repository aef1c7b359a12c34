//! Our client in the matrix, built on acp-client:
//! `acp-interop ours-client --cwd <workspace> -- <agent command...>`, or
//! `… --url <url> --token <token>` to reach a remote agent through acp-remote's `connect`
//! (Streamable HTTP for `http://`, WebSocket for `ws://`).
//!
//! It spawns the agent with `AgentProcess` (or connects), serves files with `SandboxedFs` and terminals with
//! `Terminals`, and runs the client script, printing every event as a JSON line on stdout.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use acp_client::fs::SandboxedFs;
use acp_client::permission::{PermissionPolicy, choose_permission};
use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::terminal::{TerminalDecision, TerminalRequest, Terminals};
use acp_client::{AgentHandle, Client, ClientConnection, Error, async_trait};
use acp_remote::ConnectOptions;
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::peers::remote::AgentTarget;
use crate::report::Reporter;
use crate::script::script;

/// How the connection ends: the child is shut down, or the remote goodbye goes out.
pub(crate) enum End {
    Process(Box<AgentProcess>),
    Remote(acp_remote::Finished),
}

/// Our v1 client (also the v1 side of [`super::ours_v2`]'s both-versions client).
pub(crate) struct OursClient {
    out: Reporter,
    fs: SandboxedFs,
    terminals: Terminals,
    turn: Mutex<Option<&'static str>>,
    agent: OnceLock<AgentHandle>,
    /// Signalled when turn 3's holding message arrives.
    holding: Notify,
}

impl OursClient {
    /// A client printing its events to `out`, serving files and terminals in `cwd`
    /// (canonical).
    pub(crate) fn new(out: Reporter, cwd: &std::path::Path) -> std::io::Result<Arc<Self>> {
        Ok(Arc::new(OursClient {
            out,
            fs: SandboxedFs::new([cwd])?,
            terminals: Terminals::new().with_workspace(cwd),
            turn: Mutex::new(None),
            agent: OnceLock::new(),
            holding: Notify::new(),
        }))
    }

    fn turn(&self) -> Option<&'static str> {
        *self.turn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_turn(&self, turn: Option<&'static str>) {
        *self.turn.lock().unwrap_or_else(|p| p.into_inner()) = turn;
    }
}

#[async_trait]
impl Client for OursClient {
    /// Runs the script's terminal command and nothing else.
    async fn approve_terminal(&self, r: &TerminalRequest) -> TerminalDecision {
        let wanted = &script().terminal;
        if r.command == wanted.command && r.args == wanted.args {
            TerminalDecision::Allow
        } else {
            TerminalDecision::deny("not the interop script's command")
        }
    }

    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        let turn = self.turn();
        self.out.event(
            json!({"event": "update", "turn": turn, "sessionId": n.session_id, "update": n.update}),
        );
        if turn == Some("3")
            && let SessionUpdate::AgentMessageChunk(chunk) = &n.update
            && let ContentBlock::Text(t) = &chunk.content
            && t.text == script().holding_message
        {
            self.holding.notify_one();
        }
        Ok(())
    }

    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let turn = self.turn();
        if turn == Some("2") {
            let agent = self
                .agent
                .get()
                .ok_or_else(|| Error::internal_error("no agent handle"))?;
            agent
                .cancel(CancelNotification::new(p.session_id.clone()))
                .await?;
            self.out
                .event(json!({"event": "cancel_sent", "turn": turn}));
            self.out.event(json!({"event": "permission", "turn": turn, "toolCallId": p.tool_call.tool_call_id, "outcome": "cancelled"}));
            return Ok(RequestPermissionResponse::new(
                RequestPermissionOutcome::Cancelled,
            ));
        }
        if p.options.is_empty() {
            return Err(Error::invalid_params("no permission options"));
        }
        // Refuse a delete, allow anything else once; never an "always" option.
        let policy = if p.tool_call.kind == Some(ToolKind::Delete) {
            PermissionPolicy::Refuse
        } else {
            PermissionPolicy::AllowOnce
        };
        let choice = choose_permission(&p.options, policy);
        match choice.option {
            Some(i) => self.out.event(json!({"event": "permission", "turn": turn, "toolCallId": p.tool_call.tool_call_id, "outcome": "selected", "optionId": p.options[i].option_id})),
            None => self.out.event(json!({"event": "permission", "turn": turn, "toolCallId": p.tool_call.tool_call_id, "outcome": "cancelled"})),
        }
        Ok(RequestPermissionResponse::new(choice.outcome(&p.options)))
    }

    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.out.event(json!({"event": "fs_read", "path": p.path}));
        self.fs.read_text_file(p).await
    }

    async fn write_text_file(
        &self,
        p: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.out.event(json!({"event": "fs_write", "path": p.path}));
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
        self.out
            .event(json!({"event": "terminal_create", "command": p.command, "args": p.args}));
        self.terminals.create(p, self).await
    }
}

async fn bad_call(
    out: &Reporter,
    conn: &ClientConnection,
    name: &str,
    method: &str,
    params: Value,
) {
    let code = match conn.peer().request::<_, Value>(method, &params).await {
        Ok(_) => Value::Null,
        Err(e) => json!(e.code.0),
    };
    out.event(json!({"event": "error", "bad_call": name, "code": code}));
}

/// The `initialize` our v1 client sends (the v1 offer of the both-versions client too).
pub(crate) fn v1_initialize() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new()
                .fs(FileSystemCapabilities::new()
                    .read_text_file(true)
                    .write_text_file(true))
                .terminal(true)
                .session(
                    ClientSessionCapabilities::new()
                        .notices(NoticeCapabilities::new())
                        .compaction(CompactionCapabilities::new()),
                ),
        )
        .client_info(Implementation::new(
            "ours-interop-client",
            env!("CARGO_PKG_VERSION"),
        ))
}

/// Runs the client script against the agent `command`, in workspace `cwd`.
pub async fn run(cwd: PathBuf, target: AgentTarget) -> Result<(), Box<dyn std::error::Error>> {
    let out = Reporter::stdout();
    let cwd = std::fs::canonicalize(cwd)?;
    let client = OursClient::new(out.clone(), &cwd)?;
    let (conn, end) = match target {
        AgentTarget::Spawn(command) => {
            let (program, args) = command.split_first().ok_or("no agent command after --")?;
            let mut process =
                AgentProcess::spawn(&AgentCommand::new(program).args(args.iter().cloned()))?;
            let (stdout, stdin) = process.take_stdio().ok_or("the agent's stdio was taken")?;
            let conn = acp_client::Builder::shared(client.clone()).io(stdout, stdin);
            (conn, End::Process(Box::new(process)))
        }
        AgentTarget::Remote { url, token } => {
            let link = acp_remote::connect(&url, &ConnectOptions::new().token(token)).await?;
            out.event(
                json!({"event": "connected", "url": url, "profile": format!("{:?}", link.profile)}),
            );
            let conn = acp_client::Builder::shared(client.clone()).io(link.reader, link.writer);
            (conn, End::Remote(link.finished))
        }
    };
    let init = conn.agent().initialize(v1_initialize()).await?;
    drive(client, conn, init, &cwd, end).await
}

/// The v1 client script after the handshake (`init`, the agent's answer): the sessions and
/// turns, then the connection's end.
pub(crate) async fn drive(
    client: Arc<OursClient>,
    conn: ClientConnection,
    init: InitializeResponse,
    cwd: &std::path::Path,
    end: End,
) -> Result<(), Box<dyn std::error::Error>> {
    let out = client.out.clone();
    let sc = script();
    let agent = conn.agent().clone();
    let _ = client.agent.set(agent.clone());
    let load = init.agent_capabilities.load_session;
    out.event(json!({"event": "initialized", "protocolVersion": init.protocol_version, "loadSession": load}));

    let cwd_text = cwd.to_string_lossy().into_owned();
    let session = agent
        .new_session(NewSessionRequest::new(cwd_text.as_str(), []))
        .await?;
    let sid = session.session_id;
    out.event(json!({"event": "session", "sessionId": sid}));
    bad_call(&out, &conn, "unknown_method", &sc.unknown_method, json!({})).await;
    bad_call(
        &out,
        &conn,
        "invalid_params",
        "session/prompt",
        json!({"sessionId": sid, "prompt": "not a list of blocks"}),
    )
    .await;

    client.set_turn(Some("1"));
    let first = agent
        .prompt(PromptRequest::new(
            sid.clone(),
            [
                ContentBlock::text(sc.prompts.work.as_str()),
                ContentBlock::image(sc.image.data.as_str(), sc.image.mime_type.as_str()),
                ContentBlock::resource(
                    TextResourceContents::new(sc.resource_text.as_str(), sc.resource_uri.as_str())
                        .mime_type("text/markdown"),
                ),
            ],
        ))
        .await?;
    out.event(json!({"event": "stop", "turn": "1", "stopReason": first.stop_reason}));

    client.set_turn(Some("2"));
    let second = agent
        .prompt(PromptRequest::new(
            sid.clone(),
            [sc.prompts.cancel.as_str().into()],
        ))
        .await?;
    out.event(json!({"event": "stop", "turn": "2", "stopReason": second.stop_reason}));

    client.set_turn(Some("3"));
    let third = agent.prompt(PromptRequest::new(
        sid.clone(),
        [sc.prompts.hold.as_str().into()],
    ));
    tokio::select! {
        result = third => out.event(json!({"event": "stop", "turn": "3", "stopReason": result?.stop_reason})),
        // Dropping the call makes acp-rpc send `$/cancel_request` (its answer is not awaited).
        _ = client.holding.notified() => out.event(json!({"event": "request_cancelled", "turn": "3", "code": null})),
    }

    if load {
        client.set_turn(Some("load"));
        agent
            .load_session(LoadSessionRequest::new([], cwd_text.as_str(), sid.clone()))
            .await?;
        out.event(json!({"event": "loaded", "sessionId": sid}));
    }
    client.set_turn(None);
    conn.close();
    match end {
        End::Process(process) => {
            let status = process.shutdown(Duration::from_secs(5)).await?;
            out.event(json!({"event": "agent_exit", "code": status.code(), "signal": null}));
        }
        End::Remote(finished) => {
            // The goodbye (DELETE or close frame) ends the server's agent process; the tap
            // behind the server records its exit.
            let _ = tokio::time::timeout(Duration::from_secs(5), finished.wait()).await;
            out.event(json!({"event": "agent_exit", "code": null, "signal": null, "note": "remote: the tap behind the server records the agent's exit"}));
        }
    }
    out.event(json!({"event": "done"}));
    Ok(())
}
