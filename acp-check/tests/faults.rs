//! Every check against a deliberately broken agent: a small agent built on acp-agent that
//! does everything a check looks at (authentication, modes, config options, MCP over http,
//! session list/resume/close/load, images, tool calls, 1 MB file reads and writes,
//! cancellation), run in process with one fault switched on. Faults the agent cannot commit
//! through acp-agent (which answers bad input correctly by construction) are made by a line
//! filter between the agent and the kit.
//!
//! Each test runs the whole kit and asserts that exactly the check owning the fault fails:
//! the check catches its fault, and no other check mistakes that fault for its own.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use acp_check::{Bounds, Offer, Options, PromptScript, Report, Target};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One way to be wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
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

const CANCEL_PROMPT: &str = "please start something long";
const HOLD_PROMPT: &str = "please hold";
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

struct Probe {
    fault: Fault,
    state: Mutex<State>,
}

impl Probe {
    fn new(fault: Fault) -> Self {
        Probe {
            fault,
            state: Mutex::default(),
        }
    }
    fn is(&self, fault: Fault) -> bool {
        self.fault == fault
    }
}

#[acp_agent::async_trait]
impl Agent for Probe {
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
            let id = format!("probe-{}", state.sessions.len() + 1);
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
        let sessions = self.state.lock().unwrap().sessions.clone();
        Ok(ListSessionsResponse::new(
            sessions.into_iter().map(|id| SessionInfo::new(id, "/")),
        ))
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
                out.insert(0, "probe agent: warming up".into());
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
                let request = json!({"jsonrpc": "2.0", "id": "probe-terminal", "method": "terminal/create", "params": create});
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

fn target(fault: Fault) -> Target {
    Target::in_process(move |kit_in, kit_out| {
        let (agent_out, filtered) = tokio::io::duplex(1 << 20);
        let (filtered_in, agent_in) = tokio::io::duplex(1 << 20);
        tokio::spawn(filter_in(fault, kit_in, filtered_in));
        acp_agent::serve(Probe::new(fault), agent_in, agent_out);
        tokio::spawn(filter(fault, filtered, kit_out));
    })
}

fn options() -> Options {
    Options {
        offer: Offer::default(),
        bounds: Bounds {
            check: Duration::from_secs(3),
            turn: Duration::from_secs(5),
            cancel: Duration::from_secs(1),
            handshake: Duration::from_secs(1),
            session_new: Duration::from_secs(1),
            round_trip: Duration::from_millis(300),
            file_read: Duration::from_millis(1500),
            file_write: Duration::from_millis(1500),
        },
        script: PromptScript {
            prompts: vec!["please copy hello.txt".into()],
            cancel: CANCEL_PROMPT.into(),
            hold: HOLD_PROMPT.into(),
            file: "hello.txt".into(),
            ..PromptScript::default()
        },
        ..Options::default()
    }
}

async fn grade(fault: Fault) -> Report {
    acp_check::run(&target(fault), &options()).await
}

/// Runs the kit against the agent with `fault` and asserts that `owner` alone fails.
async fn only_fails(fault: Fault, owner: &str) -> Report {
    let report = grade(fault).await;
    assert_eq!(
        report.failures(),
        [owner],
        "{fault:?} should fail {owner} and nothing else:\n{}",
        report.table(None)
    );
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthy_probe_passes_every_check_and_skips_none() {
    let report = grade(Fault::None).await;
    assert_eq!(
        report.checks.len(),
        acp_check::CHECKS.len(),
        "{}",
        report.table(None)
    );
    let not_passed: Vec<_> = report
        .checks
        .iter()
        .filter(|c| !c.outcome.is_pass())
        .map(|c| (c.name, c.outcome.clone()))
        .collect();
    assert!(not_passed.is_empty(), "{}", report.table(None));
}

macro_rules! fault_tests {
    ($($test:ident: $fault:ident => $owner:literal;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            only_fails(Fault::$fault, $owner).await;
        }
    )*};
}

fault_tests! {
    initialize_with_the_wrong_version: WrongVersion => "handshake.initialize";
    unsupported_version_refused: RefuseUnsupportedVersion => "handshake.unsupported_version";
    auth_methods_with_a_duplicate_id: DuplicateAuthMethods => "handshake.auth_methods";
    auth_required_with_the_wrong_code: WrongAuthCode => "handshake.auth_required";
    session_new_without_an_id: EmptySessionId => "sessions.new";
    an_update_for_another_session_during_a_turn: UpdateForOtherSession => "prompt.session_ids";
    an_update_after_the_turn_answer: LateUpdate => "prompt.no_late_updates";
    a_stop_reason_outside_the_set: UnknownStopReason => "prompt.stop_reason";
    a_tool_call_update_for_an_unknown_id: GhostToolCallUpdate => "prompt.tool_call_ids";
    a_turn_in_one_session_spills_into_another: SpillIntoFirstSession => "sessions.separate";
    an_advertised_image_refused: RefuseImage => "capabilities.prompt_content";
    an_offered_mode_refused: RefuseMode => "capabilities.modes";
    an_offered_config_option_refused: RefuseConfigOption => "capabilities.config_options";
    an_advertised_session_list_failing: RefuseList => "capabilities.session_methods";
    an_advertised_mcp_transport_refused: RefuseMcpHttp => "capabilities.mcp";
    load_without_replay: NoReplayOnLoad => "sessions.load";
    session_cancel_ignored: IgnoreCancel => "cancel.session_cancel";
    a_terminal_that_was_not_offered: UseTerminal => "capabilities.offered_only";
    a_slow_handshake: SlowInitialize => "timing.handshake";
    a_slow_session_new: SlowNewSession => "timing.session_new";
    a_slow_megabyte_read: SlowAfterRead => "timing.fs_read_1mb";
    a_slow_megabyte_write: SlowAfterWrite => "timing.fs_write_1mb";
    a_prompt_for_an_unknown_session_answered: AnswerUnknownSession => "sessions.unknown_id";
    unknown_method_with_the_wrong_code: WrongUnknownMethodCode => "robustness.unknown_method";
    invalid_params_with_the_wrong_code: WrongInvalidParamsCode => "robustness.invalid_params";
    silence_after_a_malformed_line: SilentOnMalformedLine => "robustness.malformed_line";
    a_log_line_on_stdout: NoiseOnStdout => "robustness.stdout_protocol_only";
    an_update_before_its_session_exists: EarlyUpdate => "prompt.no_early_updates";
    a_message_that_is_not_v1: InvalidMessage => "schema.agent_messages";
    a_slow_round_trip: SlowUnknownMethod => "timing.round_trip";
    turn_content_after_the_load_answer: ContentAfterLoad => "sessions.load";
}

/// The cancelled request is never answered: that check costs its bound (1 s here), the agent
/// is replaced, and the checks after it still run and pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_request_costs_one_bound_and_the_run_goes_on() {
    let started = std::time::Instant::now();
    let report = only_fails(Fault::DropCancelledAnswer, "cancel.cancel_request").await;
    let hung = report.get("cancel.cancel_request").unwrap();
    assert!(
        hung.millis >= 1000 && hung.millis < 4000,
        "{}",
        report.table(None)
    );
    for after in [
        "robustness.unknown_method",
        "robustness.invalid_params",
        "robustness.malformed_line",
    ] {
        assert!(
            report.get(after).unwrap().outcome.is_pass(),
            "{}",
            report.table(None)
        );
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Issue 32: session metadata (available commands, a title, the mode, config options) may
/// arrive at any time, before the answer that created the session, after a turn's answer, after
/// the `session/load` answer; only turn content counts as early or late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_metadata_at_any_time_fails_no_check() {
    let report = grade(Fault::MetadataAtAnyTime).await;
    assert!(report.failures().is_empty(), "{}", report.table(None));
    for name in [
        "prompt.no_late_updates",
        "prompt.no_early_updates",
        "sessions.load",
    ] {
        assert!(
            report.get(name).unwrap().outcome.is_pass(),
            "{name}:\n{}",
            report.table(None)
        );
    }
}

/// Issue 32, found running the kit against real agents: metadata for another session of the
/// connection during a turn (qwen-code's late command list), and a tool call first named by
/// the permission request about it (gemini-cli), are what the protocol allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_for_another_session_and_tool_calls_named_by_a_question_fail_no_check() {
    for fault in [Fault::MetadataForOtherSession, Fault::ToolCallAskedFirst] {
        let report = grade(fault).await;
        assert!(
            report.failures().is_empty(),
            "{fault:?}:\n{}",
            report.table(None)
        );
        for name in ["prompt.session_ids", "prompt.tool_call_ids"] {
            assert!(
                report.get(name).unwrap().outcome.is_pass(),
                "{fault:?} {name}:\n{}",
                report.table(None)
            );
        }
    }
}

/// Issue 32: `$/cancel_request` is optional. An agent that does not implement it answers the
/// withdrawn prompt when the kit falls back to `session/cancel`: a skip with the reason, not a
/// failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_cancel_request_is_skipped_with_the_reason() {
    let report = grade(Fault::NoCancelRequest).await;
    assert!(report.failures().is_empty(), "{}", report.table(None));
    let outcome = &report.get("cancel.cancel_request").unwrap().outcome;
    assert_eq!(outcome.word(), "skip", "{}", report.table(None));
    assert!(
        outcome
            .detail()
            .contains("does not implement `$/cancel_request`"),
        "{}",
        report.table(None)
    );
}

/// Issue 32: a timing miss is reported as its own class, apart from protocol failures: a slow
/// machine does not read as a broken agent (it still fails the run unless allowed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timing_miss_is_its_own_class() {
    let report = grade(Fault::SlowInitialize).await;
    assert_eq!(
        report.timing_misses(),
        ["timing.handshake"],
        "{}",
        report.table(None)
    );
    assert!(
        report.protocol_failures().is_empty(),
        "{}",
        report.table(None)
    );
    assert!(report.failed());
    let table = report.table(None);
    let row = table
        .lines()
        .find(|l| l.starts_with("timing.handshake "))
        .unwrap();
    assert!(row.contains(" SLOW "), "{table}");
    let summary = table.lines().last().unwrap();
    assert!(
        summary.contains(" passed, 0 failed, 1 timing miss, "),
        "{table}"
    );
    assert_eq!(report.to_json()["timing_misses"], 1);
    assert_eq!(report.to_json()["failed"], 0);
}

/// Every check has a fault test above (or is the hung-request test's owner).
#[test]
fn every_check_has_its_fault() {
    let source = include_str!("faults.rs");
    for check in acp_check::CHECKS {
        assert!(
            source.contains(&format!("=> \"{}\"", check.name))
                || source.contains(&format!("Fault::DropCancelledAnswer, \"{}\"", check.name)),
            "no fault test owns {}",
            check.name
        );
    }
}
