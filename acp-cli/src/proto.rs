//! The protocol values this crate builds, in one place: small constructors for the
//! built-in agent and the client so the rest of the code reads as what it means.

use acp_types::v1::*;

/// Our `initialize` request: file reads (inside the working directory) and terminals (each
/// command put to the user first) are offered; file writes are not.
pub fn initialize_request() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new()
                .fs(FileSystemCapabilities::new().read_text_file(true))
                .terminal(true),
        )
        .client_info(Implementation::new("acp", env!("CARGO_PKG_VERSION")))
}

/// `session/new` in `cwd` with no MCP servers.
pub fn new_session_request(cwd: &str, mcp_servers: Vec<McpServer>) -> NewSessionRequest {
    NewSessionRequest::new(cwd, mcp_servers)
}

/// `session/load` of `id` in `cwd`.
pub fn load_session_request(id: &str, cwd: &str) -> LoadSessionRequest {
    LoadSessionRequest::new(Vec::<McpServer>::new(), cwd, SessionId(id.to_owned()))
}

/// `session/list`, from `cursor` on.
pub fn list_sessions_request(cursor: Option<String>) -> ListSessionsRequest {
    match cursor {
        Some(cursor) => ListSessionsRequest::new().cursor(cursor),
        None => ListSessionsRequest::new(),
    }
}

/// `session/prompt`.
pub fn prompt_request(session: &SessionId, prompt: Vec<ContentBlock>) -> PromptRequest {
    PromptRequest::new(session.clone(), prompt)
}

/// `session/cancel`.
pub fn cancel(session: &SessionId) -> CancelNotification {
    CancelNotification::new(session.clone())
}

/// `session/set_mode`.
pub fn set_mode(session: &SessionId, mode: &str) -> SetSessionModeRequest {
    SetSessionModeRequest::new(session.clone(), SessionModeId(mode.to_owned()))
}

/// `session/set_config_option` choosing `value` of a select option.
pub fn set_config_value(
    session: &SessionId,
    option: &str,
    value: &str,
) -> SetSessionConfigOptionRequest {
    SetSessionConfigOptionRequest::new(
        session.clone(),
        SessionConfigId(option.to_owned()),
        SessionConfigOptionValue::ValueId(SessionConfigValueIdValue::new(SessionConfigValueId(
            value.to_owned(),
        ))),
    )
}

/// A permission answer.
pub fn permission_response(outcome: RequestPermissionOutcome) -> RequestPermissionResponse {
    RequestPermissionResponse::new(outcome)
}

/// A file's text as an embedded resource block.
pub fn embedded_text(uri: String, text: String) -> ContentBlock {
    EmbeddedResource::new(EmbeddedResourceResource::TextResourceContents(
        TextResourceContents::new(text, uri),
    ))
    .into()
}

/// A link to a file.
pub fn resource_link(uri: String, name: String, size: Option<i64>) -> ContentBlock {
    let link = ResourceLink::new(name, uri);
    match size {
        Some(size) => link.size(size).into(),
        None => link.into(),
    }
}

// ---- values the built-in agent sends ----

/// A permission option.
pub fn permission_option(id: &str, name: &str, kind: PermissionOptionKind) -> PermissionOption {
    PermissionOption::new(PermissionOptionId(id.to_owned()), name, kind)
}

/// A plan entry.
pub fn plan_entry(content: &str, status: PlanEntryStatus) -> PlanEntry {
    PlanEntry::new(content, PlanEntryPriority::Medium, status)
}

/// A slash command with a free-text input hint.
pub fn command(name: &str, description: &str, hint: Option<&str>) -> AvailableCommand {
    let command = AvailableCommand::new(name, description);
    match hint {
        Some(hint) => command.input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(hint),
        )),
        None => command,
    }
}

/// A session mode.
pub fn mode(id: &str, name: &str, description: &str) -> SessionMode {
    SessionMode::new(SessionModeId(id.to_owned()), name).description(description)
}

/// The mode state of a session.
pub fn mode_state(current: &str, modes: Vec<SessionMode>) -> SessionModeState {
    SessionModeState::new(SessionModeId(current.to_owned()), modes)
}

/// A select configuration option of category `model`.
pub fn model_option(current: &str, models: &[(&str, &str)]) -> SessionConfigOption {
    let values: Vec<SessionConfigSelectOption> = models
        .iter()
        .map(|(value, name)| {
            SessionConfigSelectOption::new(SessionConfigValueId((*value).to_owned()), *name)
        })
        .collect();
    SessionConfigOption::new(
        SessionConfigId("model".to_owned()),
        "Model",
        SessionConfigKind::Select(SessionConfigSelect::new(
            SessionConfigValueId(current.to_owned()),
            SessionConfigSelectOptions::Ungrouped(values),
        )),
    )
    .category(SessionConfigOptionCategory::Model)
}

/// Text tool-call content.
pub fn text_content(text: impl Into<String>) -> ToolCallContent {
    Content::new(ContentBlock::text(text)).into()
}

/// A diff as tool-call content.
pub fn diff_content(path: &str, old: Option<&str>, new: &str) -> ToolCallContent {
    let diff = Diff::new(path, new);
    match old {
        Some(old) => diff.old_text(old).into(),
        None => diff.into(),
    }
}

/// A terminal as tool-call content.
pub fn terminal_content(id: TerminalId) -> ToolCallContent {
    Terminal::new(id).into()
}

/// `terminal/create` for `command args...`.
pub fn create_terminal(session: &SessionId, command: &str, args: &[&str]) -> CreateTerminalRequest {
    CreateTerminalRequest::new(session.clone(), command)
        .args(args.iter().map(|a| (*a).to_owned()))
        .output_byte_limit(64 * 1024)
}

/// `terminal/wait_for_exit`.
pub fn wait_for_terminal(session: &SessionId, id: &TerminalId) -> WaitForTerminalExitRequest {
    WaitForTerminalExitRequest::new(session.clone(), id.clone())
}

/// `terminal/output`.
pub fn terminal_output(session: &SessionId, id: &TerminalId) -> TerminalOutputRequest {
    TerminalOutputRequest::new(session.clone(), id.clone())
}

/// `terminal/kill`.
pub fn kill_terminal(session: &SessionId, id: &TerminalId) -> KillTerminalRequest {
    KillTerminalRequest::new(session.clone(), id.clone())
}

/// `terminal/release`.
pub fn release_terminal(session: &SessionId, id: &TerminalId) -> ReleaseTerminalRequest {
    ReleaseTerminalRequest::new(session.clone(), id.clone())
}

/// The built-in agent's `initialize` answer: embedded context, session lists.
pub fn builtin_initialize_response() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                .mcp_capabilities(acp_agent::mcp::mcp_capabilities())
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .title(SessionTitleCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new(
            "acp built-in demo agent",
            env!("CARGO_PKG_VERSION"),
        ))
}

/// An `available_commands_update`.
pub fn commands_update(commands: Vec<AvailableCommand>) -> AvailableCommandsUpdate {
    AvailableCommandsUpdate::new(commands)
}

/// The answer to `session/new`.
pub fn new_session_response(
    id: SessionId,
    modes: SessionModeState,
    options: Vec<SessionConfigOption>,
) -> NewSessionResponse {
    NewSessionResponse::new(id)
        .modes(modes)
        .config_options(options)
}

/// One entry of `session/list`: titled, or named by its number of turns.
pub fn session_info(id: &SessionId, cwd: &str, title: Option<&str>, turns: usize) -> SessionInfo {
    let title = title.map_or_else(|| format!("{turns} turn(s)"), str::to_owned);
    SessionInfo::new(id.clone(), cwd).title(title)
}

/// A `session_info_update` with a new title.
pub fn title_update(title: &str) -> SessionUpdate {
    SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(Some(title.to_owned())))
}

/// A `config_option_update` with every option as it now stands.
pub fn config_update(options: Vec<SessionConfigOption>) -> ConfigOptionUpdate {
    ConfigOptionUpdate::new(options)
}

/// The answer to `session/list` (one page).
pub fn list_sessions_response(sessions: Vec<SessionInfo>) -> ListSessionsResponse {
    ListSessionsResponse::new(sessions)
}

/// The answer to `session/set_config_option`.
pub fn set_config_response(options: Vec<SessionConfigOption>) -> SetSessionConfigOptionResponse {
    SetSessionConfigOptionResponse::new(options)
}

/// A tool-call location at line `line` of `path`.
pub fn location(path: &str, line: u32) -> ToolCallLocation {
    ToolCallLocation::new(path).line(line)
}
