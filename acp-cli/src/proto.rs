//! The protocol values this crate builds, in one place: small constructors for the
//! built-in agent and the client so the rest of the code reads as what it means.

use acp_types::v1::*;

/// Our `initialize` request: file reads (inside the working directory) and terminals (each
/// command put to the user first) are offered; file writes are not.
pub fn initialize_request() -> InitializeRequest {
    InitializeRequest {
        protocol_version: ProtocolVersion::V1,
        client_capabilities: ClientCapabilities {
            fs: FileSystemCapabilities {
                read_text_file: true,
                ..Default::default()
            },
            terminal: true,
            session: None,
            auth: Default::default(),
            elicitation: None,
            meta: None,
        },
        client_info: Some(implementation("acp", env!("CARGO_PKG_VERSION"))),
        meta: None,
    }
}

/// A name and version.
pub fn implementation(name: &str, version: &str) -> Implementation {
    Implementation {
        name: name.to_owned(),
        title: None,
        version: version.to_owned(),
        meta: None,
    }
}

/// `session/new` in `cwd` with no MCP servers.
pub fn new_session_request(cwd: &str) -> NewSessionRequest {
    NewSessionRequest {
        cwd: cwd.to_owned(),
        additional_directories: Vec::new(),
        mcp_servers: Vec::new(),
        meta: None,
    }
}

/// `session/load` of `id` in `cwd`.
pub fn load_session_request(id: &str, cwd: &str) -> LoadSessionRequest {
    LoadSessionRequest {
        mcp_servers: Vec::new(),
        cwd: cwd.to_owned(),
        additional_directories: Vec::new(),
        session_id: SessionId(id.to_owned()),
        meta: None,
    }
}

/// `session/list`, from `cursor` on.
pub fn list_sessions_request(cursor: Option<String>) -> ListSessionsRequest {
    ListSessionsRequest {
        cwd: None,
        cursor,
        meta: None,
    }
}

/// `session/prompt`.
pub fn prompt_request(session: &SessionId, prompt: Vec<ContentBlock>) -> PromptRequest {
    PromptRequest {
        session_id: session.clone(),
        prompt,
        meta: None,
    }
}

/// `session/cancel`.
pub fn cancel(session: &SessionId) -> CancelNotification {
    CancelNotification {
        session_id: session.clone(),
        meta: None,
    }
}

/// `session/set_mode`.
pub fn set_mode(session: &SessionId, mode: &str) -> SetSessionModeRequest {
    SetSessionModeRequest {
        session_id: session.clone(),
        mode_id: SessionModeId(mode.to_owned()),
        meta: None,
    }
}

/// `session/set_config_option` choosing `value` of a select option.
pub fn set_config_value(
    session: &SessionId,
    option: &str,
    value: &str,
) -> SetSessionConfigOptionRequest {
    SetSessionConfigOptionRequest {
        session_id: session.clone(),
        config_id: SessionConfigId(option.to_owned()),
        meta: None,
        value: SessionConfigOptionValue::ValueId(SessionConfigValueIdValue {
            value: SessionConfigValueId(value.to_owned()),
        }),
    }
}

/// A permission answer.
pub fn permission_response(outcome: RequestPermissionOutcome) -> RequestPermissionResponse {
    RequestPermissionResponse {
        outcome,
        meta: None,
    }
}

/// A file's text as an embedded resource block.
pub fn embedded_text(uri: String, text: String, mime_type: Option<String>) -> ContentBlock {
    ContentBlock::Resource(Box::new(EmbeddedResource {
        annotations: None,
        resource: EmbeddedResourceResource::TextResourceContents(TextResourceContents {
            mime_type,
            text,
            uri,
            meta: None,
        }),
        meta: None,
    }))
}

/// A link to a file.
pub fn resource_link(uri: String, name: String, size: Option<i64>) -> ContentBlock {
    ContentBlock::ResourceLink(Box::new(ResourceLink {
        annotations: None,
        description: None,
        mime_type: None,
        name,
        size,
        title: None,
        uri,
        meta: None,
    }))
}

// ---- values the built-in agent sends ----

/// A permission option.
pub fn permission_option(id: &str, name: &str, kind: PermissionOptionKind) -> PermissionOption {
    PermissionOption {
        option_id: PermissionOptionId(id.to_owned()),
        name: name.to_owned(),
        kind,
        meta: None,
    }
}

/// A plan entry.
pub fn plan_entry(content: &str, status: PlanEntryStatus) -> PlanEntry {
    PlanEntry {
        content: content.to_owned(),
        priority: PlanEntryPriority::Medium,
        status,
        meta: None,
    }
}

/// A slash command with a free-text input hint.
pub fn command(name: &str, description: &str, hint: Option<&str>) -> AvailableCommand {
    AvailableCommand {
        name: name.to_owned(),
        description: description.to_owned(),
        input: hint.map(|hint| {
            AvailableCommandInput::Unstructured(UnstructuredCommandInput {
                hint: hint.to_owned(),
                meta: None,
            })
        }),
        meta: None,
    }
}

/// A session mode.
pub fn mode(id: &str, name: &str, description: &str) -> SessionMode {
    SessionMode {
        id: SessionModeId(id.to_owned()),
        name: name.to_owned(),
        description: Some(description.to_owned()),
        meta: None,
    }
}

/// The mode state of a session.
pub fn mode_state(current: &str, modes: Vec<SessionMode>) -> SessionModeState {
    SessionModeState {
        current_mode_id: SessionModeId(current.to_owned()),
        available_modes: modes,
        meta: None,
    }
}

/// A select configuration option of category `model`.
pub fn model_option(current: &str, models: &[(&str, &str)]) -> SessionConfigOption {
    SessionConfigOption {
        id: SessionConfigId("model".to_owned()),
        name: "Model".to_owned(),
        description: None,
        category: Some(SessionConfigOptionCategory::Model),
        meta: None,
        kind: SessionConfigKind::Select(SessionConfigSelect {
            current_value: SessionConfigValueId(current.to_owned()),
            options: SessionConfigSelectOptions::Ungrouped(
                models
                    .iter()
                    .map(|(value, name)| SessionConfigSelectOption {
                        value: SessionConfigValueId((*value).to_owned()),
                        name: (*name).to_owned(),
                        description: None,
                        meta: None,
                    })
                    .collect(),
            ),
        }),
    }
}

/// Text tool-call content.
pub fn text_content(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::Content(Content {
        content: ContentBlock::text(text),
        meta: None,
    })
}

/// A diff as tool-call content.
pub fn diff_content(path: &str, old: Option<&str>, new: &str) -> ToolCallContent {
    ToolCallContent::Diff(Diff {
        path: path.to_owned(),
        old_text: old.map(str::to_owned),
        new_text: new.to_owned(),
        meta: None,
    })
}

/// A terminal as tool-call content.
pub fn terminal_content(id: TerminalId) -> ToolCallContent {
    ToolCallContent::Terminal(Terminal {
        terminal_id: id,
        meta: None,
    })
}

/// `terminal/create` for `command args...`.
pub fn create_terminal(session: &SessionId, command: &str, args: &[&str]) -> CreateTerminalRequest {
    CreateTerminalRequest {
        session_id: session.clone(),
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: Vec::new(),
        cwd: None,
        output_byte_limit: Some(64 * 1024),
        meta: None,
    }
}

/// `terminal/wait_for_exit`.
pub fn wait_for_terminal(session: &SessionId, id: &TerminalId) -> WaitForTerminalExitRequest {
    WaitForTerminalExitRequest {
        session_id: session.clone(),
        terminal_id: id.clone(),
        meta: None,
    }
}

/// `terminal/output`.
pub fn terminal_output(session: &SessionId, id: &TerminalId) -> TerminalOutputRequest {
    TerminalOutputRequest {
        session_id: session.clone(),
        terminal_id: id.clone(),
        meta: None,
    }
}

/// `terminal/kill`.
pub fn kill_terminal(session: &SessionId, id: &TerminalId) -> KillTerminalRequest {
    KillTerminalRequest {
        session_id: session.clone(),
        terminal_id: id.clone(),
        meta: None,
    }
}

/// `terminal/release`.
pub fn release_terminal(session: &SessionId, id: &TerminalId) -> ReleaseTerminalRequest {
    ReleaseTerminalRequest {
        session_id: session.clone(),
        terminal_id: id.clone(),
        meta: None,
    }
}

/// The built-in agent's `initialize` answer: embedded context, session lists.
pub fn builtin_initialize_response() -> InitializeResponse {
    InitializeResponse {
        protocol_version: ProtocolVersion::V1,
        agent_capabilities: AgentCapabilities {
            load_session: false,
            prompt_capabilities: PromptCapabilities {
                embedded_context: true,
                ..Default::default()
            },
            mcp_capabilities: Default::default(),
            session_capabilities: SessionCapabilities {
                list: Some(SessionListCapabilities::default()),
                ..Default::default()
            },
            auth: Default::default(),
            meta: None,
        },
        auth_methods: Vec::new(),
        agent_info: Some(implementation(
            "acp built-in demo agent",
            env!("CARGO_PKG_VERSION"),
        )),
        meta: None,
    }
}

/// An `available_commands_update`.
pub fn commands_update(commands: Vec<AvailableCommand>) -> AvailableCommandsUpdate {
    AvailableCommandsUpdate {
        available_commands: commands,
        meta: None,
    }
}

/// The answer to `session/new`.
pub fn new_session_response(
    id: SessionId,
    modes: SessionModeState,
    options: Vec<SessionConfigOption>,
) -> NewSessionResponse {
    NewSessionResponse {
        session_id: id,
        modes: Some(modes),
        config_options: Some(options),
        meta: None,
    }
}

/// One entry of `session/list`.
pub fn session_info(id: &SessionId, cwd: &str, turns: usize) -> SessionInfo {
    SessionInfo {
        session_id: id.clone(),
        cwd: cwd.to_owned(),
        additional_directories: Vec::new(),
        title: Some(format!("{turns} turn(s)")),
        updated_at: None,
        meta: None,
    }
}

/// The answer to `session/list` (one page).
pub fn list_sessions_response(sessions: Vec<SessionInfo>) -> ListSessionsResponse {
    ListSessionsResponse {
        sessions,
        next_cursor: None,
        meta: None,
    }
}

/// The answer to `session/set_config_option`.
pub fn set_config_response(options: Vec<SessionConfigOption>) -> SetSessionConfigOptionResponse {
    SetSessionConfigOptionResponse {
        config_options: options,
        meta: None,
    }
}
