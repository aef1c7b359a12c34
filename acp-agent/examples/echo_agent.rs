//! A demo agent that needs no network or model, served over stdio.
//!
//! For each prompt it streams a thought, publishes a plan, asks permission and reads
//! `hello.txt` from the session's directory through the client (if the client offers
//! `fs.readTextFile`), runs `echo` in a client terminal (if the client offers `terminal`),
//! then echoes the prompt back word by word. It honours `session/cancel` at every step and
//! supports two modes (`ask`, `code`).
//!
//! It speaks every dialect this build has (v1, 0.0.9, threads, probe, crow), found from the client's first
//! message; `--dialects v1,legacy-0.0.9` pins the accepted ones. `--store DIR` keeps the
//! sessions of v1 clients in DIR (`acp_agent::store::JsonlStore`), so `session/load`,
//! `session/list` and `session/resume` work across restarts; `--durability event|event-sync-turn|turn|<N>ms`
//! chooses when a turn is written (`acp_agent::store::Durability`, default `event`). Run it under an ACP client,
//! e.g. `cargo run -p acp-client --example demo` (which spawns it).
//!
//! Built with the feature `v2`, it also speaks draft protocol v2 (unless given
//! `--protocol 1`): a client whose `initialize` offers `protocolVersion` 2 (or a later one
//! in a shape v2 reads) is served v2 (`acp_agent::v2`; the prompt
//! is inserted as a user message, a tool call upsert asks permission to echo it, the prompt
//! is echoed back as agent message chunks, and the turn ends with an idle `state_update`:
//! `cancelled` when the permission request is answered `cancelled` or `session/cancel`
//! came; it advertises `capabilities.session` and serves the session baseline:
//! `session/list`, `session/resume` and `session/close` of its connection's sessions), any
//! other client as above.
//!
//! Built with the feature `mcp`, it connects the MCP servers of `session/new` (and of
//! `session/load` and `session/resume`), stdio ones (http too with `mcp-http`), and the
//! prompt `/mcp` lists them with their tools; `/mcp SERVER TOOL {json}` calls one as a tool
//! call after asking permission (acp-agent's `mcp::mcp_command`). With
//! `unstable_mcp_over_acp` too, the client's own (`acp`) servers are reached over this
//! connection: its `mcp/message` requests and notifications go to the session's connector.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use acp_agent::negotiate::NegotiateOptions;
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Dialect, Error, PromptContext, SessionHandle};
#[derive(Default)]
struct EchoAgent {
    /// Session id -> working directory.
    sessions: Mutex<HashMap<String, String>>,
    /// Session id -> its MCP servers (killed when the agent goes with its connection).
    #[cfg(feature = "mcp")]
    mcp: Mutex<HashMap<String, std::sync::Arc<acp_agent::mcp::McpConnector>>>,
    /// Put in session ids so that they stay unique across restarts (with `--store`).
    id_prefix: String,
}

enum Step {
    Done,
    Cancelled,
}

impl EchoAgent {
    /// Starts a session's MCP servers in the background, in place of those it had.
    #[cfg(feature = "mcp")]
    fn connect_mcp(&self, id: &str, servers: &[McpServer], cx: &AgentContext) {
        use acp_agent::mcp::{McpConfig, McpConnector};
        let connector = McpConnector::start_with_client(servers, McpConfig::default(), cx.client());
        let mut mcp = self.mcp.lock().unwrap();
        mcp.insert(id.to_owned(), std::sync::Arc::new(connector));
    }

    /// The connector of the session that was given the `acp` server `server_id`.
    #[cfg(all(feature = "mcp", feature = "unstable_mcp_over_acp"))]
    fn serving(&self, server_id: &str) -> Option<std::sync::Arc<acp_agent::mcp::McpConnector>> {
        let mcp = self.mcp.lock().unwrap();
        mcp.values().find(|c| c.serves(server_id)).cloned()
    }

    #[cfg(not(feature = "mcp"))]
    fn connect_mcp(&self, _id: &str, _servers: &[McpServer], _cx: &AgentContext) {}

    /// `/mcp`: acp-agent's command over the session's servers.
    #[cfg(feature = "mcp")]
    async fn mcp(&self, cx: &PromptContext, s: &SessionHandle, rest: &str) -> Result<Step, Error> {
        let connector = self.mcp.lock().unwrap().get(&s.id().0).cloned();
        let cancel = cx.cancellation_token();
        let call_id = format!("mcp-{}", cx.request_id());
        match acp_agent::mcp::mcp_command(s, connector.as_deref(), call_id, rest, &cancel).await? {
            true => Ok(Step::Cancelled),
            false => Ok(Step::Done),
        }
    }

    #[cfg(not(feature = "mcp"))]
    async fn mcp(
        &self,
        _cx: &PromptContext,
        s: &SessionHandle,
        _rest: &str,
    ) -> Result<Step, Error> {
        s.message_chunk("This echo agent was built without MCP (feature `mcp`).\n")
            .await?;
        Ok(Step::Done)
    }

    async fn read_file(&self, cx: &PromptContext, s: &SessionHandle) -> Result<Step, Error> {
        let readable = cx
            .client_capabilities()
            .is_some_and(|c| c.fs.read_text_file);
        if !readable {
            s.message_chunk("(the client offers no file reading; skipping the file tool)\n")
                .await?;
            return Ok(Step::Done);
        }
        let cwd = self
            .sessions
            .lock()
            .unwrap()
            .get(&s.id().0)
            .cloned()
            .unwrap_or_default();
        let path = format!("{}/hello.txt", cwd.trim_end_matches('/'));
        let call = ToolCall::new("read-1", format!("Read {path}"))
            .kind(ToolKind::Read)
            .locations([ToolCallLocation::new(path.as_str())]);
        let tool = s.start_tool_call(call).await?;
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let outcome = match s.request_permission(tool.blank(), options).await {
            Ok(outcome) => outcome,
            // A client that cannot ask its user (a threads editor, through the adapter):
            // nothing is allowed that was not granted.
            Err(e) if e.code == acp_agent::ErrorCode::METHOD_NOT_FOUND => {
                tool.fail(vec![ToolCallContent::content(format!(
                    "the client cannot ask for permission ({})",
                    e.message
                ))])
                .await?;
                return Ok(Step::Done);
            }
            Err(e) => return Err(e),
        };
        match outcome {
            RequestPermissionOutcome::Cancelled => return Ok(Step::Cancelled),
            RequestPermissionOutcome::Selected(sel) if sel.option_id.0 == "allow" => {}
            _ => {
                tool.fail(vec![ToolCallContent::content("permission denied")])
                    .await?;
                return Ok(Step::Done);
            }
        }
        tool.status(ToolCallStatus::InProgress).await?;
        let read = cx
            .client()
            .read_text_file(ReadTextFileRequest::new(s.id().clone(), path))
            .await;
        match read {
            Ok(r) => {
                tool.complete(vec![ToolCallContent::content(r.content)])
                    .await?
            }
            Err(e) => tool.fail(vec![ToolCallContent::content(e.message)]).await?,
        }
        Ok(Step::Done)
    }

    async fn run_terminal(&self, cx: &PromptContext, s: &SessionHandle) -> Result<Step, Error> {
        if !cx.client_capabilities().is_some_and(|c| c.terminal) {
            return Ok(Step::Done);
        }
        let client = cx.client();
        let session = s.id().clone();
        let created = client
            .create_terminal(
                CreateTerminalRequest::new(session.clone(), "echo")
                    .args(["hello from a terminal"])
                    .output_byte_limit(4096),
            )
            .await?;
        let tid = created.terminal_id;
        let call = ToolCall::new("term-1", "Run echo")
            .kind(ToolKind::Execute)
            .content([ToolCallContent::terminal(tid.clone())]);
        let tool = s.start_tool_call(call).await?;
        let exit = tokio::select! {
            r = client.wait_for_terminal_exit(WaitForTerminalExitRequest::new(session.clone(), tid.clone())) => Some(r?),
            _ = cx.cancelled() => None,
        };
        let Some(exit) = exit else {
            let _ = client
                .kill_terminal(KillTerminalRequest::new(session.clone(), tid.clone()))
                .await;
            let _ = client
                .release_terminal(ReleaseTerminalRequest::new(session, tid))
                .await;
            return Ok(Step::Cancelled);
        };
        let output = client
            .terminal_output(TerminalOutputRequest::new(session.clone(), tid.clone()))
            .await?;
        client
            .release_terminal(ReleaseTerminalRequest::new(session, tid))
            .await?;
        let summary = format!("exit {:?}: {}", exit.exit_code, output.output.trim_end());
        tool.complete(vec![ToolCallContent::content(summary)])
            .await?;
        Ok(Step::Done)
    }
}

#[acp_agent::async_trait]
impl Agent for EchoAgent {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        let response = InitializeResponse::new(ProtocolVersion::V1)
            .agent_info(Implementation::new("echo-agent", env!("CARGO_PKG_VERSION")));
        #[cfg(feature = "mcp")]
        let response = response.agent_capabilities(
            AgentCapabilities::new().mcp_capabilities(acp_agent::mcp::mcp_capabilities()),
        );
        Ok(response)
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let id = {
            let mut sessions = self.sessions.lock().unwrap();
            let id = format!("echo-{}{}", self.id_prefix, sessions.len() + 1);
            sessions.insert(id.clone(), p.cwd);
            id
        };
        self.connect_mcp(&id, &p.mcp_servers, cx);
        // Held by the SDK until the response below has been written.
        cx.client()
            .send_update(
                id.as_str(),
                SessionUpdate::available_commands_update([
                    AvailableCommand::new("echo", "Echo the prompt back"),
                    AvailableCommand::new(
                        "mcp",
                        "List the session's MCP servers, or call a tool: /mcp SERVER TOOL {json}",
                    ),
                ]),
            )
            .await?;
        Ok(NewSessionResponse::new(id).modes(SessionModeState::new(
            "ask",
            [
                SessionMode::new("ask", "Ask").description("Ask before reading files"),
                SessionMode::new("code", "Code"),
            ],
        )))
    }

    /// Connects the request's MCP servers, then leaves the replay to the store (answering
    /// MethodNotFound lets a store serve `session/load`).
    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        if cx.stored_session(&p.session_id).await.is_some() {
            self.connect_mcp(&p.session_id.0, &p.mcp_servers, cx);
        }
        Err(Error::method_not_found(names::SESSION_LOAD))
    }

    /// As `session/load`, without the replay.
    async fn resume_session(
        &self,
        p: ResumeSessionRequest,
        cx: &AgentContext,
    ) -> Result<ResumeSessionResponse, Error> {
        if cx.stored_session(&p.session_id).await.is_some() {
            self.connect_mcp(&p.session_id.0, &p.mcp_servers, cx);
        }
        Err(Error::method_not_found(names::SESSION_RESUME))
    }

    async fn set_session_mode(
        &self,
        p: SetSessionModeRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        if !["ask", "code"].contains(&p.mode_id.0.as_str()) {
            return Err(Error::invalid_params(format!(
                "unknown mode {}",
                p.mode_id.0
            )));
        }
        if let Some(s) = cx.session(&p.session_id) {
            s.current_mode(p.mode_id).await?;
        }
        Ok(SetSessionModeResponse::new())
    }

    /// A request of one of the client's MCP servers to this agent (`ping`, `roots/list`...),
    /// answered by the connector of the session that was given the server.
    #[cfg(all(feature = "mcp", feature = "unstable_mcp_over_acp"))]
    async fn mcp_message(
        &self,
        p: MessageMcpRequest,
        _cx: &AgentContext,
    ) -> Result<MessageMcpResponse, Error> {
        let connector = self.serving(&p.server_id.0);
        match connector {
            Some(connector) => connector.answer(p).await,
            None => Err(Error::invalid_params(format!(
                "no MCP server {} in any session",
                p.server_id.0
            ))),
        }
    }

    /// A notification of one of the client's MCP servers (`notifications/tools/list_changed`).
    #[cfg(all(feature = "mcp", feature = "unstable_mcp_over_acp"))]
    async fn mcp_message_notification(&self, p: MessageMcpNotification) {
        if let Some(connector) = self.serving(&p.server_id.0) {
            connector.deliver(&p);
        }
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        // A session the store loaded or resumed for us: its cwd comes from the store.
        let known = self.sessions.lock().unwrap().contains_key(&s.id().0);
        if !known && let Some(meta) = cx.stored_session(s.id()).await {
            self.sessions
                .lock()
                .unwrap()
                .insert(s.id().0.clone(), meta.cwd);
        }
        let text: Vec<String> = p
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect();
        let text = text.join(" ");
        if let Some(rest) =
            (text.trim().strip_prefix("/mcp")).filter(|r| r.is_empty() || r.starts_with(' '))
        {
            return Ok(PromptResponse::new(match self.mcp(cx, s, rest).await? {
                Step::Done => StopReason::EndTurn,
                Step::Cancelled => StopReason::Cancelled,
            }));
        }
        s.thought_chunk("The user said something; I will echo it.")
            .await?;
        let pending =
            |content, priority| PlanEntry::new(content, priority, PlanEntryStatus::Pending);
        s.plan(vec![
            pending("Read hello.txt", PlanEntryPriority::Medium),
            pending("Run a terminal command", PlanEntryPriority::Low),
            pending("Echo the prompt", PlanEntryPriority::High),
        ])
        .await?;
        let cancelled = Ok(PromptResponse::new(StopReason::Cancelled));
        if let Step::Cancelled = self.read_file(cx, s).await? {
            return cancelled;
        }
        if let Step::Cancelled = self.run_terminal(cx, s).await? {
            return cancelled;
        }
        for word in text.split_whitespace() {
            tokio::select! {
                _ = cx.cancelled() => return cancelled,
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            s.message_chunk(format!("{word} ")).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut options = NegotiateOptions::default();
    if let Ok(cwd) = std::env::current_dir() {
        options = options.with_legacy_cwd(cwd);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--dialects") {
        let list = args.get(i + 1).map(String::as_str).unwrap_or("");
        let dialects: Result<Vec<Dialect>, _> = list.split(',').map(str::parse).collect();
        match dialects {
            Ok(dialects) => options = options.with_dialects(dialects),
            Err(e) => {
                eprintln!("echo_agent: --dialects: {e}");
                std::process::exit(2);
            }
        }
    }
    let mut agent = EchoAgent::default();
    if let Some(i) = args.iter().position(|a| a == "--store") {
        let dir = args.get(i + 1).map(String::as_str).unwrap_or("");
        let durability = match args.iter().position(|a| a == "--durability") {
            None => acp_agent::store::Durability::default(),
            Some(i) => match args.get(i + 1).map(|a| a.parse()) {
                Some(Ok(durability)) => durability,
                Some(Err(e)) => {
                    eprintln!("echo_agent: --durability: {e}");
                    std::process::exit(2);
                }
                None => {
                    eprintln!("echo_agent: --durability needs a value");
                    std::process::exit(2);
                }
            },
        };
        match acp_agent::store::JsonlStore::open(dir) {
            Ok(store) => options = options.with_store(store.with_durability(durability)),
            Err(e) => {
                eprintln!("echo_agent: --store {dir:?}: {e}");
                std::process::exit(1);
            }
        }
        agent.id_prefix = format!("{}-", acp_agent::store::now_rfc3339());
    }
    #[cfg(feature = "v2")]
    let stdin = {
        let mut sniffer = acp_rpc::sniff::LineSniffer::new(
            tokio::io::stdin(),
            acp_rpc::Config::default().max_message_size,
        );
        // `--protocol 1`: v1 only, as a build without `v2` (a v1-only peer for tests).
        let v1_only = args.windows(2).any(|w| w[0] == "--protocol" && w[1] == "1");
        if !v1_only && let Ok(Some(line)) = sniffer.next_line().await {
            let offers_v2 = acp_agent::v2::first_line_goes_to_v2(&line, true);
            sniffer.unread(&line);
            if offers_v2 {
                let conn = acp_agent::v2::serve(
                    v2_echo::EchoV2::default(),
                    sniffer.into_reader(),
                    tokio::io::stdout(),
                );
                eprintln!("echo_agent: the client speaks v2");
                let reason = conn.closed().await;
                eprintln!("echo_agent: connection closed ({reason})");
                return;
            }
        }
        sniffer.into_reader()
    };
    #[cfg(not(feature = "v2"))]
    let stdin = tokio::io::stdin();
    let conn = match acp_agent::Builder::new(agent)
        .negotiate(options)
        .io(stdin, tokio::io::stdout())
        .await
    {
        Ok(conn) => conn,
        Err(e) => {
            eprintln!("echo_agent: {e}");
            std::process::exit(1);
        }
    };
    eprintln!("echo_agent: the client speaks {}", conn.dialect());
    let reason = conn.closed().await;
    eprintln!("echo_agent: connection closed ({reason})");
}

/// The v2 side of the echo agent (feature `v2`).
#[cfg(feature = "v2")]
#[path = "echo_agent_v2/mod.rs"]
mod v2_echo;
