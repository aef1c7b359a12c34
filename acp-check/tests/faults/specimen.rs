//! The specimen: a small agent built on acp-agent that does everything a check looks at, with
//! one [`Fault`] switched on, and the line filters between it and the kit for the faults
//! acp-agent cannot commit (it answers bad input correctly by construction).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use acp_check::Target;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One way to be wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    // Agent-level faults.
    RefuseUnsupportedVersion,
    DuplicateAuthMethods,
    WrongAuthCode,
    EmptySessionId,
    UpdateForOtherSession,
    LateUpdate,
    UnknownStopReason,
    GhostToolCallUpdate,
    SpillIntoFirstSession,
    RefuseImage,
    RefuseMode,
    RefuseConfigOption,
    RefuseList,
    RefuseMcpHttp,
    NoReplayOnLoad,
    IgnoreCancel,
    SlowInitialize,
    SlowNewSession,
    SlowAfterRead,
    SlowAfterWrite,
    // Wire-level faults (the line filter): acp-agent answers `initialize` with the version
    // it speaks and does not let an agent call a client method the client did not offer.
    WrongVersion,
    UseTerminal,
    AnswerUnknownSession,
    WrongUnknownMethodCode,
    WrongInvalidParamsCode,
    SilentOnMalformedLine,
    NoiseOnStdout,
    EarlyUpdate,
    InvalidMessage,
    DropCancelledAnswer,
    SlowUnknownMethod,
    // Not faults: what the protocol allows, which the kit must not fail.
    /// Session metadata (available commands, a title, the mode, config options) before the
    /// `session/new` answer, after a turn's answer and after the `session/load` answer.
    MetadataAtAnyTime,
    /// No `$/cancel_request` (it is optional): the kit's line never reaches the agent.
    NoCancelRequest,
    /// During a turn, metadata (a title) for another session of the connection, as a real
    /// agent's late command list for a session an earlier check opened.
    MetadataForOtherSession,
    /// A tool call first named by the permission request about it, then updated (gemini-cli
    /// asks before it starts a call that needs confirmation).
    ToolCallAskedFirst,
    // And a fault that looks like the last: turn content after the `session/load` answer.
    ContentAfterLoad,
}

pub const CANCEL_PROMPT: &str = "please start something long";
pub const HOLD_PROMPT: &str = "please hold";
/// How long a "slow" fault waits, against the bounds of [`options`].
const SLOW: Duration = Duration::from_millis(2000);

#[derive(Default)]
struct State {
    authed: bool,
    sessions: Vec<String>,
    /// Tool calls started per session.
    tools: HashMap<String, u32>,
    /// Each session's working directory.
    cwds: HashMap<String, String>,
    turns: u32,
}

struct Specimen {
    fault: Fault,
    state: Mutex<State>,
}

impl Specimen {
    fn new(fault: Fault) -> Self {
        Specimen {
            fault,
            state: Mutex::default(),
        }
    }
    fn is(&self, fault: Fault) -> bool {
        self.fault == fault
    }
}

#[acp_agent::async_trait]
impl Agent for Specimen {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        if self.is(Fault::SlowInitialize) {
            tokio::time::sleep(SLOW).await;
        }
        if *p.protocol_version != 1 && self.is(Fault::RefuseUnsupportedVersion) {
            return Err(Error::invalid_params("unsupported protocol version"));
        }
        let mut methods = vec![AuthMethod::from(AuthMethodAgent::new("token", "Token"))];
        if self.is(Fault::DuplicateAuthMethods) {
            methods.push(AuthMethodAgent::new("token", "Token again").into());
        }
        let caps = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                PromptCapabilities::new()
                    .image(true)
                    .audio(true)
                    .embedded_context(true),
            )
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new()),
            );
        Ok(InitializeResponse::new(1)
            .agent_capabilities(caps)
            .auth_methods(methods))
    }

    async fn authenticate(
        &self,
        _p: AuthenticateRequest,
        _cx: &AgentContext,
    ) -> Result<AuthenticateResponse, Error> {
        self.state.lock().unwrap().authed = true;
        Ok(AuthenticateResponse::new())
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        if self.is(Fault::SlowNewSession) {
            tokio::time::sleep(SLOW).await;
        }
        if !self.state.lock().unwrap().authed {
            return Err(if self.is(Fault::WrongAuthCode) {
                Error::internal_error("log in first")
            } else {
                Error::auth_required("log in first")
            });
        }
        if self.is(Fault::RefuseMcpHttp)
            && p.mcp_servers
                .iter()
                .any(|s| matches!(s, McpServer::Http(_)))
        {
            return Err(Error::invalid_params("no http MCP servers here"));
        }
        let id = {
            let mut state = self.state.lock().unwrap();
            let id = format!("specimen-{}", state.sessions.len() + 1);
            state.sessions.push(id.clone());
            state.cwds.insert(id.clone(), p.cwd.clone());
            id
        };
        let id = if self.is(Fault::EmptySessionId) {
            String::new()
        } else {
            id
        };
        let model = SessionConfigOption::new(
            SessionConfigId("model".into()),
            "Model",
            SessionConfigKind::Select(SessionConfigSelect::new(
                SessionConfigValueId("fast".into()),
                SessionConfigSelectOptions::Ungrouped(vec![SessionConfigSelectOption::new(
                    SessionConfigValueId("fast".into()),
                    "Fast",
                )]),
            )),
        );
        Ok(NewSessionResponse::new(id)
            .modes(SessionModeState::new(
                "ask",
                [
                    SessionMode::new("ask", "Ask"),
                    SessionMode::new("code", "Code"),
                ],
            ))
            .config_options([model]))
    }

    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        if !self.is(Fault::NoReplayOnLoad) {
            cx.client()
                .send_update(
                    p.session_id.clone(),
                    SessionUpdate::agent_message_text("earlier"),
                )
                .await?;
        }
        let after = if self.is(Fault::MetadataAtAnyTime) {
            Some(metadata(0))
        } else if self.is(Fault::ContentAfterLoad) {
            Some(SessionUpdate::agent_message_text("replayed late"))
        } else {
            None
        };
        if let Some(update) = after {
            later(cx.client().clone(), p.session_id.0.clone(), vec![update]);
        }
        Ok(LoadSessionResponse::new())
    }

    async fn list_sessions(
        &self,
        _p: ListSessionsRequest,
        _cx: &AgentContext,
    ) -> Result<ListSessionsResponse, Error> {
        if self.is(Fault::RefuseList) {
            return Err(Error::internal_error("cannot list"));
        }
        let state = self.state.lock().unwrap();
        Ok(ListSessionsResponse::new(state.sessions.iter().map(|id| {
            let cwd = state.cwds.get(id).map_or("/", String::as_str);
            SessionInfo::new(id.clone(), cwd)
        })))
    }

    async fn resume_session(
        &self,
        _p: ResumeSessionRequest,
        _cx: &AgentContext,
    ) -> Result<ResumeSessionResponse, Error> {
        Ok(ResumeSessionResponse::new())
    }

    async fn close_session(
        &self,
        _p: CloseSessionRequest,
        _cx: &AgentContext,
    ) -> Result<CloseSessionResponse, Error> {
        Ok(CloseSessionResponse::new())
    }

    async fn set_session_mode(
        &self,
        _p: SetSessionModeRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        if self.is(Fault::RefuseMode) {
            return Err(Error::internal_error("modes are for show"));
        }
        Ok(SetSessionModeResponse::new())
    }

    async fn set_session_config_option(
        &self,
        _p: SetSessionConfigOptionRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        if self.is(Fault::RefuseConfigOption) {
            return Err(Error::internal_error("options are for show"));
        }
        Ok(SetSessionConfigOptionResponse::new([]))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        let session = s.id().0.clone();
        let text: String = p
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        if self.is(Fault::RefuseImage)
            && p.prompt.iter().any(|b| matches!(b, ContentBlock::Image(_)))
        {
            return Err(Error::invalid_params("no images"));
        }
        let (first_turn, first_session) = {
            let mut state = self.state.lock().unwrap();
            state.turns += 1;
            (state.turns == 1, state.sessions.first().cloned())
        };
        if text.contains(CANCEL_PROMPT) {
            s.message_chunk("starting").await?;
            let call = ToolCall::new("long", "A long task").kind(ToolKind::Execute);
            let tool = s.start_tool_call(call).await?;
            let options = vec![PermissionOption::new(
                "go",
                "Go",
                PermissionOptionKind::AllowOnce,
            )];
            let outcome = s.request_permission(tool.blank(), options).await?;
            if matches!(outcome, RequestPermissionOutcome::Cancelled) || cx.is_cancelled() {
                tool.fail(vec![]).await?;
                let reason = if self.is(Fault::IgnoreCancel) {
                    StopReason::EndTurn
                } else {
                    StopReason::Cancelled
                };
                return Ok(PromptResponse::new(reason));
            }
            return Ok(PromptResponse::new(StopReason::EndTurn));
        }
        if text.contains(HOLD_PROMPT) {
            s.message_chunk("holding").await?;
            tokio::select! {
                _ = cx.cancelled() => return Ok(PromptResponse::new(StopReason::Cancelled)),
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
            return Ok(PromptResponse::new(StopReason::EndTurn));
        }
        s.thought_chunk("reading the file").await?;
        if first_turn && self.is(Fault::MetadataForOtherSession) {
            cx.client().send_update("elsewhere", metadata(1)).await?;
        }
        if first_turn && self.is(Fault::ToolCallAskedFirst) {
            let options = vec![PermissionOption::new(
                "go",
                "Go",
                PermissionOptionKind::AllowOnce,
            )];
            let _ = s
                .request_permission(ToolCallUpdate::new("asked-first"), options)
                .await?;
            s.send(
                ToolCallUpdate::new("asked-first")
                    .status(ToolCallStatus::Completed)
                    .into(),
            )
            .await?;
        }
        if first_turn && self.is(Fault::UpdateForOtherSession) {
            cx.client()
                .send_update(
                    "elsewhere",
                    SessionUpdate::agent_message_text("misdirected"),
                )
                .await?;
        }
        if let Some(first) = first_session.filter(|f| *f != session)
            && self.is(Fault::SpillIntoFirstSession)
        {
            cx.client()
                .send_update(first, SessionUpdate::agent_message_text("spilled"))
                .await?;
        }
        let n = {
            let mut state = self.state.lock().unwrap();
            let n = state.tools.entry(session.clone()).or_default();
            *n += 1;
            *n
        };
        let tool = s
            .start_tool_call(
                ToolCall::new(format!("copy-{n}"), "Copy hello.txt").kind(ToolKind::Edit),
            )
            .await?;
        let caps = cx.client_capabilities();
        let dir = self
            .state
            .lock()
            .unwrap()
            .cwds
            .get(&session)
            .cloned()
            .unwrap_or_default();
        if caps.as_ref().is_some_and(|c| c.fs.read_text_file) {
            let read = cx
                .client()
                .read_text_file(ReadTextFileRequest::new(
                    session.as_str(),
                    format!("{dir}/hello.txt"),
                ))
                .await?;
            if self.is(Fault::SlowAfterRead) {
                tokio::time::sleep(SLOW).await;
            }
            if caps.as_ref().is_some_and(|c| c.fs.write_text_file) {
                cx.client()
                    .write_text_file(WriteTextFileRequest::new(
                        session.as_str(),
                        format!("{dir}/copy.txt"),
                        read.content,
                    ))
                    .await?;
                if self.is(Fault::SlowAfterWrite) {
                    tokio::time::sleep(SLOW).await;
                }
            }
        }
        tool.complete(vec![]).await?;
        if first_turn && self.is(Fault::GhostToolCallUpdate) {
            s.send(
                ToolCallUpdate::new("ghost")
                    .status(ToolCallStatus::Completed)
                    .into(),
            )
            .await?;
        }
        s.message_chunk("done").await?;
        if first_turn && self.is(Fault::LateUpdate) {
            let client = cx.client().clone();
            let id = session.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                let _ = client
                    .send_update(id, SessionUpdate::agent_message_text("one more thing"))
                    .await;
            });
        }
        if self.is(Fault::MetadataAtAnyTime) {
            later(
                cx.client().clone(),
                session.clone(),
                (1..5).map(metadata).collect(),
            );
        }
        if first_turn && self.is(Fault::UnknownStopReason) {
            return Ok(PromptResponse::new(StopReason::Unknown("finished".into())));
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// Session metadata, which may arrive at any time: commands, a title, the mode, config
/// options, by `n`.
fn metadata(n: usize) -> SessionUpdate {
    match n % 4 {
        0 => SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new([
            AvailableCommand::new("plan", "Plan the work"),
        ])),
        1 => SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().title(Some("Copy hello.txt".into())),
        ),
        2 => SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new("ask")),
        _ => SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new([])),
    }
}

/// Sends `updates` for `session` 30 ms from now: after the answer being written.
fn later(client: acp_agent::ClientHandle, session: String, updates: Vec<SessionUpdate>) {
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        for update in updates {
            let _ = client.send_update(session.clone(), update).await;
        }
    });
}

/// Drops the kit's `$/cancel_request` lines on their way to the agent
/// ([`Fault::NoCancelRequest`]); everything else passes unchanged.
async fn filter_in(fault: Fault, from: tokio::io::DuplexStream, mut to: tokio::io::DuplexStream) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if fault == Fault::NoCancelRequest && line.contains("\"$/cancel_request\"") {
            continue;
        }
        if to.write_all(format!("{line}\n").as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Rewrites what the agent writes, for the faults acp-agent would never commit.
async fn filter(fault: Fault, from: tokio::io::DuplexStream, mut to: tokio::io::DuplexStream) {
    let mut lines = BufReader::new(from).lines();
    let mut first_update = true;
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let code = message.pointer("/error/code").and_then(Value::as_i64);
        let update = message["method"] == "session/update";
        let mut out = vec![line];
        let recode = |to: i64| {
            let mut m = message.clone();
            m["error"]["code"] = json!(to);
            m.to_string()
        };
        match fault {
            Fault::AnswerUnknownSession if code == Some(-32002) => {
                let answer = PromptResponse::new(StopReason::EndTurn);
                out = vec![
                    json!({"jsonrpc": "2.0", "id": message["id"], "result": answer}).to_string(),
                ];
            }
            Fault::WrongUnknownMethodCode if code == Some(-32601) => out = vec![recode(-32603)],
            Fault::WrongInvalidParamsCode if code == Some(-32602) => out = vec![recode(-32603)],
            Fault::SilentOnMalformedLine if message.get("id") == Some(&Value::Null) => out.clear(),
            Fault::DropCancelledAnswer if code == Some(-32800) => out.clear(),
            Fault::SlowUnknownMethod if code == Some(-32601) => {
                tokio::time::sleep(Duration::from_millis(600)).await;
            }
            Fault::NoiseOnStdout if update && first_update => {
                out.insert(0, "specimen agent: warming up".into());
            }
            Fault::InvalidMessage if update && first_update => {
                // A plan without its entries: not a v1 `session/update`.
                let session = message["params"]["sessionId"].clone();
                out.push(
                    json!({"jsonrpc": "2.0", "method": "session/update",
                           "params": {"sessionId": session, "update": {"sessionUpdate": "plan"}}})
                    .to_string(),
                );
            }
            Fault::WrongVersion
                if message.pointer("/result/protocolVersion") == Some(&json!(1)) =>
            {
                let mut m = message.clone();
                m["result"]["protocolVersion"] = json!(2);
                out = vec![m.to_string()];
            }
            Fault::UseTerminal if update && first_update => {
                let session = message["params"]["sessionId"].as_str().unwrap_or_default();
                let create = CreateTerminalRequest::new(session, "true");
                let request = json!({"jsonrpc": "2.0", "id": "specimen-terminal", "method": "terminal/create", "params": create});
                out.push(request.to_string());
            }
            Fault::MetadataAtAnyTime => {
                if let Some(id) = message.pointer("/result/sessionId").and_then(Value::as_str) {
                    let early = SessionNotification::new(id, metadata(0));
                    let early =
                        json!({"jsonrpc": "2.0", "method": "session/update", "params": early});
                    out.insert(0, early.to_string());
                }
            }
            Fault::EarlyUpdate => {
                if let Some(id) = message.pointer("/result/sessionId").and_then(Value::as_str) {
                    let early =
                        SessionNotification::new(id, SessionUpdate::agent_message_text("early"));
                    let early =
                        json!({"jsonrpc": "2.0", "method": "session/update", "params": early});
                    out.insert(0, early.to_string());
                }
            }
            _ => {}
        }
        first_update &= !update;
        for line in out {
            if to.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

/// The specimen agent with `fault` switched on, behind the line filters, as the kit's target.
pub fn target(fault: Fault) -> Target {
    Target::in_process(move |kit_in, kit_out| {
        let (agent_out, filtered) = tokio::io::duplex(1 << 20);
        let (filtered_in, agent_in) = tokio::io::duplex(1 << 20);
        tokio::spawn(filter_in(fault, kit_in, filtered_in));
        acp_agent::Builder::new(Specimen::new(fault)).io(agent_in, agent_out);
        tokio::spawn(filter(fault, filtered, kit_out));
    })
}

/// The healthy specimen (a v1 application) served to the kit as v2 through acp-agent's
/// v1<->v2 translation (`acp_agent::v2::serve_v1`; no file system or terminals: v2
/// clients have neither).
#[allow(dead_code)]
pub fn served_as_v2() -> Target {
    Target::in_process(|kit_in, kit_out| {
        let options = acp_agent::legacy::AdapterOptions::default();
        drop(acp_agent::v2::serve_v1(
            Specimen::new(Fault::None),
            kit_in,
            kit_out,
            options,
        ));
    })
}
