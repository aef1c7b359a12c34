//! The built-in demo agent: what `acp chat` talks to when no agent command is given (in
//! process, over an in-memory pipe) and what `acp agent` serves on stdio.
//!
//! It needs no model and no network, and it exercises what a client has to show: a thought,
//! a plan that is checked off, an edit (a diff) that waits for the user's permission, a
//! terminal command the client runs for it, and a reply streamed word by word. It advertises
//! slash commands right after `session/new` (before the first prompt), two modes, and its
//! models as the official schema has them: a session config option of category `model`. (It
//! does not put gemini-cli's `models` at the root of its answers, where the spec forbids
//! custom fields; it still accepts gemini's `session/set_model`, kept in step with the
//! option, for clients that send it.) It titles a session after its first
//! prompt and lets the client rename it (`session/set_title`), accepts embedded file context,
//! and honours `session/cancel` at every step.
//!
//! | prompt | what happens |
//! | --- | --- |
//! | anything | the full demo turn above, then an echo of the prompt and its attachments |
//! | `/echo TEXT` | the text streamed back, nothing else |
//! | `/count [N]` | counts to N (default 30) slowly: a long turn to cancel |
//! | `/help` | the commands, as a reply |
//!
//! In mode `ask` (the default) the edit waits for permission; in mode `code` it is applied
//! (to the demo's imagination: no file is written) without asking. The model picks the
//! streaming speed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext, SessionHandle, ToolCallHandle};

use crate::proto;

/// The modes the built-in agent offers.
const MODES: [(&str, &str, &str); 2] = [
    ("ask", "Ask", "Ask before editing"),
    ("code", "Code", "Edit without asking"),
];

/// The models (streaming speeds) it offers: value, name, delay between words.
const MODELS: [(&str, &str, u64); 2] = [
    ("demo-fast", "Demo (fast)", 25),
    ("demo-slow", "Demo (slow)", 150),
];

/// How many sessions one `session/list` page holds.
const LIST_PAGE: usize = 50;

/// What starts every `session/list` cursor the built-in agent gives.
const CURSOR_PREFIX: &str = "after:";

/// A session id's place in creation order: ids are `builtin-<n>`, so by length, then text.
fn order_key(id: &str) -> (usize, &str) {
    (id.len(), id)
}

/// The place after which a cursor's page starts, if it is one of ours.
fn cursor_key(cursor: &str) -> Option<(usize, &str)> {
    cursor
        .strip_prefix(CURSOR_PREFIX)
        .filter(|id| !id.is_empty())
        .map(order_key)
}

/// Per-session state.
#[derive(Clone, Debug)]
struct SessionState {
    cwd: String,
    mode: String,
    model: String,
    turns: usize,
    /// The session's title: the start of its first prompt, or what the client set.
    title: Option<String>,
}

/// The longest title the built-in agent keeps, in characters.
const TITLE_MAX: usize = 60;

/// A title from a prompt's text: its first line, at most [`TITLE_MAX`] characters.
fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(TITLE_MAX).collect())
}

/// The built-in demo agent.
#[derive(Default)]
pub struct BuiltinAgent {
    sessions: Mutex<HashMap<SessionId, SessionState>>,
    next_id: Mutex<u64>,
    /// Served with a session store (`--store`): session ids carry the start time so they
    /// stay unique across runs, and the store lists, loads and resumes the sessions.
    id_prefix: Option<String>,
}

/// How one step of a turn ended.
enum Step {
    Continue,
    Cancelled,
}

impl BuiltinAgent {
    /// The agent for a connection served with a session store.
    pub fn with_store() -> Self {
        BuiltinAgent {
            id_prefix: Some(format!("{}-", acp_agent::store::now_rfc3339())),
            ..Self::default()
        }
    }

    /// A session's state, rebuilt from the store for a session it loaded or resumed for
    /// this agent (the cwd, mode and model it had).
    async fn restored_state(&self, id: &SessionId, cx: &AgentContext) -> Option<SessionState> {
        if let Some(state) = self.state(id) {
            return Some(state);
        }
        let meta = cx.stored_session(id).await?;
        let mode = meta
            .modes
            .as_ref()
            .map(|m| m.current_mode_id.0.clone())
            .filter(|m| MODES.iter().any(|(id, _, _)| id == m))
            .unwrap_or_else(|| MODES[0].0.to_owned());
        let model = meta
            .config_options
            .iter()
            .flatten()
            .find_map(|o| match &o.kind {
                SessionConfigKind::Select(select) if o.id.0 == "model" => {
                    Some(select.current_value.0.clone())
                }
                _ => None,
            })
            .filter(|m| MODELS.iter().any(|(v, _, _)| v == m))
            .unwrap_or_else(|| MODELS[0].0.to_owned());
        let state = SessionState {
            cwd: meta.cwd,
            mode,
            model,
            turns: 0,
            title: meta.title,
        };
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), state.clone());
        Some(state)
    }

    fn state(&self, id: &SessionId) -> Option<SessionState> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    fn update_state(&self, id: &SessionId, f: impl FnOnce(&mut SessionState)) {
        if let Some(state) = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(id)
        {
            f(state);
        }
    }

    fn config_options(model: &str) -> Vec<SessionConfigOption> {
        let models: Vec<(&str, &str)> = MODELS.iter().map(|(v, n, _)| (*v, *n)).collect();
        vec![proto::model_option(model, &models)]
    }

    /// Switches a session's model, checked against [`MODELS`].
    fn switch_model(&self, id: &SessionId, model: &str) -> Result<(), Error> {
        if !MODELS.iter().any(|(v, _, _)| *v == model) {
            return Err(Error::invalid_params(format!(
                "unknown model `{model}` (the built-in agent has demo-fast and demo-slow)"
            )));
        }
        self.update_state(id, |s| s.model = model.to_owned());
        Ok(())
    }

    fn word_delay(state: &SessionState) -> Duration {
        let ms = MODELS
            .iter()
            .find(|(v, _, _)| *v == state.model)
            .map_or(25, |(_, _, ms)| *ms);
        Duration::from_millis(ms)
    }

    /// Streams `text` word by word; `Cancelled` as soon as the turn is cancelled.
    async fn stream(
        cx: &PromptContext,
        s: &SessionHandle,
        text: &str,
        delay: Duration,
    ) -> Result<Step, Error> {
        let mut first = true;
        for word in text.split(' ') {
            tokio::select! {
                _ = cx.cancelled() => return Ok(Step::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
            let chunk = if first {
                word.to_owned()
            } else {
                format!(" {word}")
            };
            first = false;
            s.message_chunk(chunk).await?;
        }
        Ok(Step::Continue)
    }

    /// The edit: a diff that needs permission in `ask` mode.
    async fn propose_edit(
        cx: &PromptContext,
        s: &SessionHandle,
        state: &SessionState,
        turn: usize,
    ) -> Result<Step, Error> {
        let path = format!("{}/NOTES.md", state.cwd.trim_end_matches('/'));
        let call = ToolCall::new(format!("edit-{turn}"), "Edit NOTES.md")
            .kind(ToolKind::Edit)
            .locations([proto::location(&path, 1)])
            .content([proto::diff_content(
                &path,
                Some("# Notes\nTry acp.\n"),
                &format!("# Notes\nTry acp.\nTurn {turn}: talked to the built-in agent.\n"),
            )]);
        let tool = s.start_tool_call(call).await?;
        if state.mode == "ask" {
            let options = vec![
                proto::permission_option("allow", "Allow", PermissionOptionKind::AllowOnce),
                proto::permission_option(
                    "allow-always",
                    "Always allow",
                    PermissionOptionKind::AllowAlways,
                ),
                proto::permission_option("reject", "Reject", PermissionOptionKind::RejectOnce),
            ];
            let outcome = s.request_permission(tool.blank(), options).await?;
            match outcome {
                RequestPermissionOutcome::Cancelled => return Ok(Step::Cancelled),
                RequestPermissionOutcome::Selected(sel) if sel.option_id.0.starts_with("allow") => {
                }
                _ => {
                    tool.fail(vec![proto::text_content("rejected by the user")])
                        .await?;
                    return Ok(Step::Continue);
                }
            }
        }
        tool.status(ToolCallStatus::InProgress).await?;
        tokio::select! {
            _ = cx.cancelled() => return Ok(Step::Cancelled),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        tool.complete(vec![proto::text_content(
            "applied (a demo: no file was written)",
        )])
        .await?;
        Ok(Step::Continue)
    }

    /// The check: `echo` in a terminal the client runs (if it offers terminals and agrees).
    async fn run_check(cx: &PromptContext, s: &SessionHandle, turn: usize) -> Result<Step, Error> {
        if !cx.client_capabilities().is_some_and(|c| c.terminal) {
            s.message_chunk("(the client offers no terminals; skipping the check)\n")
                .await?;
            return Ok(Step::Continue);
        }
        let call = ToolCall::new(format!("check-{turn}"), "Run echo").kind(ToolKind::Execute);
        let tool = s.start_tool_call(call).await?;
        let client = cx.client();
        let created = client
            .create_terminal(proto::create_terminal(
                s.id(),
                "echo",
                &["hello from the built-in agent"],
            ))
            .await;
        let terminal = match created {
            Ok(created) => created.terminal_id,
            Err(e) => {
                tool.fail(vec![proto::text_content(format!(
                    "the client did not run it: {}",
                    e.message
                ))])
                .await?;
                return Ok(Step::Continue);
            }
        };
        tool_with_terminal(&tool, &terminal).await?;
        let exit = tokio::select! {
            r = client.wait_for_terminal_exit(proto::wait_for_terminal(s.id(), &terminal)) => Some(r),
            _ = cx.cancelled() => None,
        };
        let Some(exit) = exit else {
            let _ = client
                .kill_terminal(proto::kill_terminal(s.id(), &terminal))
                .await;
            let _ = client
                .release_terminal(proto::release_terminal(s.id(), &terminal))
                .await;
            return Ok(Step::Cancelled);
        };
        let output = client
            .terminal_output(proto::terminal_output(s.id(), &terminal))
            .await;
        let _ = client
            .release_terminal(proto::release_terminal(s.id(), &terminal))
            .await;
        match (exit, output) {
            (Ok(exit), Ok(_)) if exit.exit_code == Some(0) => {
                tool.status(ToolCallStatus::Completed).await?
            }
            (Ok(exit), _) => {
                tool.fail(vec![proto::text_content(format!(
                    "exit code {:?}",
                    exit.exit_code
                ))])
                .await?
            }
            (Err(e), _) => tool.fail(vec![proto::text_content(e.message)]).await?,
        }
        Ok(Step::Continue)
    }

    async fn demo_turn(
        &self,
        p: &PromptRequest,
        cx: &PromptContext,
        state: &SessionState,
        turn: usize,
    ) -> Result<StopReason, Error> {
        let s = cx.session();
        let delay = Self::word_delay(state);
        let (text, attachments) = describe_prompt(&p.prompt);
        s.thought_chunk(format!(
            "The user wrote {} words and attached {} file(s). I will show what a turn can hold.",
            text.split_whitespace().count(),
            attachments.len()
        ))
        .await?;
        let plan = |done: usize| {
            let steps = ["Read the prompt", "Edit NOTES.md", "Run a check", "Reply"];
            steps
                .iter()
                .enumerate()
                .map(|(i, step)| {
                    let status = match i.cmp(&done) {
                        std::cmp::Ordering::Less => PlanEntryStatus::Completed,
                        std::cmp::Ordering::Equal => PlanEntryStatus::InProgress,
                        std::cmp::Ordering::Greater => PlanEntryStatus::Pending,
                    };
                    proto::plan_entry(step, status)
                })
                .collect::<Vec<_>>()
        };
        s.plan(plan(1)).await?;
        if let Step::Cancelled = Self::propose_edit(cx, s, state, turn).await? {
            return Ok(StopReason::Cancelled);
        }
        s.plan(plan(2)).await?;
        if let Step::Cancelled = Self::run_check(cx, s, turn).await? {
            return Ok(StopReason::Cancelled);
        }
        s.plan(plan(3)).await?;
        let mut reply = format!("You said: {text}");
        for name in &attachments {
            reply.push_str(&format!(" [attached: {name}]"));
        }
        if let Step::Cancelled = Self::stream(cx, s, &reply, delay).await? {
            return Ok(StopReason::Cancelled);
        }
        s.message_chunk("\n").await?;
        s.plan(plan(4)).await?;
        Ok(StopReason::EndTurn)
    }
}

async fn tool_with_terminal(tool: &ToolCallHandle, terminal: &TerminalId) -> Result<(), Error> {
    let update = tool
        .blank()
        .status(ToolCallStatus::InProgress)
        .content([proto::terminal_content(terminal.clone())]);
    tool.update(update).await
}

/// The prompt's text and the names of its attachments.
fn describe_prompt(prompt: &[ContentBlock]) -> (String, Vec<String>) {
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(t) => text.push(t.text.trim().to_owned()),
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => attachments.push(format!(
                    "{} ({} lines, embedded)",
                    t.uri,
                    t.text.lines().count()
                )),
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    attachments.push(format!("{} (binary, embedded)", b.uri))
                }
            },
            ContentBlock::ResourceLink(l) => attachments.push(format!("{} (link)", l.uri)),
            _ => attachments.push("(unsupported block)".to_owned()),
        }
    }
    (text.join(" "), attachments)
}

/// The commands the agent advertises.
fn commands() -> Vec<AvailableCommand> {
    vec![
        proto::command(
            "echo",
            "Stream the text back, nothing else",
            Some("text to echo"),
        ),
        proto::command(
            "count",
            "Count slowly (a long turn to cancel)",
            Some("how far"),
        ),
        proto::command("help", "What the built-in agent can do", None),
    ]
}

#[acp_agent::async_trait]
impl Agent for BuiltinAgent {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(proto::builtin_initialize_response())
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let id = {
            let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
            *next += 1;
            SessionId(format!(
                "builtin-{}{}",
                self.id_prefix.as_deref().unwrap_or(""),
                *next
            ))
        };
        let state = SessionState {
            cwd: p.cwd,
            mode: MODES[0].0.to_owned(),
            model: MODELS[0].0.to_owned(),
            turns: 0,
            title: None,
        };
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), state.clone());
        // Sent after the response (the connection holds it back): the commands are known
        // before the first prompt.
        cx.client()
            .send_update(
                id.clone(),
                SessionUpdate::AvailableCommandsUpdate(proto::commands_update(commands())),
            )
            .await?;
        let modes = MODES
            .iter()
            .map(|(id, name, d)| proto::mode(id, name, d))
            .collect();
        Ok(proto::new_session_response(
            id,
            proto::mode_state(&state.mode, modes),
            Self::config_options(&state.model),
        ))
    }

    /// The sessions of this run, oldest first, [`LIST_PAGE`] a page: only those whose `cwd`
    /// is the request's when it names one (none match: an empty list), from the request's
    /// cursor on. The cursor is opaque to the client: the id of the last session of the page
    /// before, so a page stays right when sessions are created or deleted between pages.
    async fn list_sessions(
        &self,
        p: ListSessionsRequest,
        _cx: &AgentContext,
    ) -> Result<ListSessionsResponse, Error> {
        if self.id_prefix.is_some() {
            // The store lists every session it has, from this run and earlier ones.
            return Err(Error::method_not_found(names::SESSION_LIST));
        }
        let after = match p.cursor.as_deref() {
            None => None,
            Some(cursor) => Some(cursor_key(cursor).ok_or_else(|| {
                Error::invalid_params(format!("`{cursor}` is not a cursor this agent gave"))
            })?),
        };
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let mut matching: Vec<(&SessionId, &SessionState)> = sessions
            .iter()
            .filter(|(_, s)| p.cwd.as_ref().is_none_or(|cwd| *cwd == s.cwd))
            .filter(|(id, _)| after.as_ref().is_none_or(|after| order_key(&id.0) > *after))
            .collect();
        matching.sort_by_key(|(id, _)| order_key(&id.0));
        let more = matching.len() > LIST_PAGE;
        matching.truncate(LIST_PAGE);
        let next = more
            .then(|| {
                matching
                    .last()
                    .map(|(id, _)| format!("{CURSOR_PREFIX}{}", id.0))
            })
            .flatten();
        let list: Vec<SessionInfo> = matching
            .iter()
            .map(|(id, s)| proto::session_info(id, &s.cwd, s.title.as_deref(), s.turns))
            .collect();
        let response = proto::list_sessions_response(list);
        Ok(match next {
            Some(next) => response.next_cursor(next),
            None => response,
        })
    }

    async fn set_session_mode(
        &self,
        p: SetSessionModeRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        if !MODES.iter().any(|(id, _, _)| *id == p.mode_id.0) {
            return Err(Error::invalid_params(format!(
                "unknown mode `{}` (the built-in agent has `ask` and `code`)",
                p.mode_id.0
            )));
        }
        self.update_state(&p.session_id, |s| s.mode = p.mode_id.0.clone());
        if let Some(s) = cx.session(&p.session_id) {
            s.current_mode(p.mode_id).await?;
        }
        Ok(SetSessionModeResponse::default())
    }

    async fn set_session_config_option(
        &self,
        p: SetSessionConfigOptionRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let value = match (&p.config_id.0[..], &p.value) {
            ("model", SessionConfigOptionValue::ValueId(v)) => v.value.0.clone(),
            _ => {
                return Err(Error::invalid_params(format!(
                    "unknown option `{}` (the built-in agent has `model`)",
                    p.config_id.0
                )));
            }
        };
        self.switch_model(&p.session_id, &value)?;
        Ok(proto::set_config_response(Self::config_options(&value)))
    }

    async fn set_session_model(
        &self,
        p: SetSessionModelRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionModelResponse, Error> {
        self.switch_model(&p.session_id, &p.model_id.0)?;
        // The config option says the same: the client (and a session store) sees it change.
        cx.client()
            .send_update(
                p.session_id,
                SessionUpdate::ConfigOptionUpdate(proto::config_update(Self::config_options(
                    &p.model_id.0,
                ))),
            )
            .await?;
        Ok(SetSessionModelResponse::new())
    }

    async fn set_session_title(
        &self,
        p: SetSessionTitleRequest,
        cx: &AgentContext,
    ) -> Result<SetSessionTitleResponse, Error> {
        if self.restored_state(&p.session_id, cx).await.is_none() {
            return Err(Error::resource_not_found(p.session_id.0.clone()));
        }
        let Some(title) = title_from(&p.title) else {
            return Err(Error::invalid_params("an empty title"));
        };
        self.update_state(&p.session_id, |s| s.title = Some(title.clone()));
        // Reported like any title change: the client shows it, a session store records it.
        cx.client()
            .send_update(p.session_id, proto::title_update(&title))
            .await?;
        Ok(SetSessionTitleResponse::new(title))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let Some(mut state) = self.restored_state(&p.session_id, cx).await else {
            return Err(Error::resource_not_found(p.session_id.0.clone()));
        };
        state.turns += 1;
        self.update_state(&p.session_id, |s| s.turns = state.turns);
        let s = cx.session();
        let first_text = p.prompt.iter().find_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.trim().to_owned()),
            _ => None,
        });
        // An untitled session is named after its first prompt, as agents do.
        if state.title.is_none()
            && let Some(title) = first_text.as_deref().and_then(title_from)
        {
            self.update_state(&p.session_id, |s| s.title = Some(title.clone()));
            s.send(proto::title_update(&title)).await?;
        }
        let command = first_text
            .as_deref()
            .and_then(|t| t.strip_prefix('/'))
            .map(|t| t.split_once(' ').unwrap_or((t, "")));
        let delay = Self::word_delay(&state);
        let stop = match command {
            Some(("echo", rest)) => match Self::stream(cx, s, rest, delay).await? {
                Step::Continue => {
                    s.message_chunk("\n").await?;
                    StopReason::EndTurn
                }
                Step::Cancelled => StopReason::Cancelled,
            },
            Some(("count", rest)) => {
                let n: u32 = rest.trim().parse().unwrap_or(30).min(10_000);
                let mut stop = StopReason::EndTurn;
                for i in 1..=n {
                    tokio::select! {
                        _ = cx.cancelled() => { stop = StopReason::Cancelled; break; }
                        _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                    }
                    s.message_chunk(format!("{i} ")).await?;
                }
                if stop == StopReason::EndTurn {
                    s.message_chunk("\n").await?;
                }
                stop
            }
            Some(("help", _)) => {
                let mut text = String::from("Commands:");
                for c in commands() {
                    text.push_str(&format!(" /{} ({})", c.name, c.description));
                }
                text.push_str(". Anything else runs the full demo turn.");
                match Self::stream(cx, s, &text, Duration::from_millis(5)).await? {
                    Step::Continue => StopReason::EndTurn,
                    Step::Cancelled => StopReason::Cancelled,
                }
            }
            _ => self.demo_turn(&p, cx, &state, state.turns).await?,
        };
        Ok(PromptResponse::new(stop))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

    /// The built-in agent served over an in-memory pipe, spoken to in JSON lines.
    struct Wire {
        lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
        out: WriteHalf<DuplexStream>,
        next: i64,
    }

    impl Wire {
        async fn start() -> Wire {
            let (client, agent) = tokio::io::duplex(1 << 20);
            let (agent_read, agent_write) = tokio::io::split(agent);
            acp_agent::serve(BuiltinAgent::default(), agent_read, agent_write);
            let (read, out) = tokio::io::split(client);
            let mut wire = Wire {
                lines: BufReader::new(read).lines(),
                out,
                next: 0,
            };
            wire.call("initialize", json!({"protocolVersion": 1})).await;
            wire
        }

        /// The whole answer (`result` or `error`) to a request; notifications are skipped.
        async fn call(&mut self, method: &str, params: Value) -> Value {
            self.next += 1;
            let request =
                json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
            self.out
                .write_all(format!("{request}\n").as_bytes())
                .await
                .unwrap();
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the agent answers");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["id"] == json!(self.next) {
                    return message;
                }
            }
        }

        async fn new_session(&mut self, cwd: &str) -> Value {
            let answer = self
                .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
                .await;
            answer["result"].clone()
        }

        /// Every page of `session/list` with `params` (plus the cursor): the ids, and how many
        /// pages there were.
        async fn list_all(&mut self, params: Value) -> (Vec<String>, usize) {
            let mut ids = Vec::new();
            let mut pages = 0;
            let mut cursor = Value::Null;
            loop {
                let mut params = params.clone();
                if !cursor.is_null() {
                    params["cursor"] = cursor.clone();
                }
                let page = self.call("session/list", params).await;
                let page = &page["result"];
                pages += 1;
                for s in page["sessions"].as_array().expect("a list") {
                    ids.push(s["sessionId"].as_str().unwrap().to_owned());
                }
                cursor = page["nextCursor"].clone();
                if cursor.is_null() {
                    return (ids, pages);
                }
            }
        }
    }

    /// Issue 32: `session/list` returned every session, ignoring `cwd` and the cursor. The
    /// spec: only sessions with a matching `cwd`, an empty array when none match; pages
    /// follow `nextCursor`.
    #[tokio::test]
    async fn session_list_filters_by_cwd_and_pages_with_a_cursor() {
        let mut wire = Wire::start().await;
        let mut in_a = Vec::new();
        for i in 0..LIST_PAGE + 5 {
            in_a.push(wire.new_session("/a").await["sessionId"].clone());
            if i % 20 == 0 {
                wire.new_session("/b").await;
            }
        }
        let (a, pages) = wire.list_all(json!({"cwd": "/a"})).await;
        assert_eq!(pages, 2);
        assert_eq!(a.len(), LIST_PAGE + 5);
        let in_a: Vec<String> = in_a
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(a, in_a, "oldest first, each once");
        let (b, pages) = wire.list_all(json!({"cwd": "/b"})).await;
        assert_eq!((b.len(), pages), (3, 1));
        let none = wire.call("session/list", json!({"cwd": "/nowhere"})).await;
        assert_eq!(none["result"]["sessions"], json!([]), "{none}");
        assert!(none["result"].get("nextCursor").is_none(), "{none}");
        let (all, pages) = wire.list_all(json!({})).await;
        assert_eq!((all.len(), pages), (LIST_PAGE + 8, 2));
        let bad = wire.call("session/list", json!({"cursor": "nope"})).await;
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
    }

    /// Issue 32: the answer to `session/new` carried gemini-cli's `models` at its root, where
    /// the spec forbids custom fields; the models are a config option of category `model`.
    #[tokio::test]
    async fn models_are_offered_as_a_config_option_not_at_the_root() {
        let mut wire = Wire::start().await;
        let new = wire.new_session("/a").await;
        assert!(new.get("models").is_none(), "{new}");
        let options = new["configOptions"].as_array().expect("config options");
        let model = options
            .iter()
            .find(|o| o["category"] == "model")
            .expect("a model option");
        assert_eq!(model["currentValue"], "demo-fast", "{model}");
    }

    #[test]
    fn titles_are_the_first_line_of_bounded_length() {
        assert_eq!(
            title_from("\n  fix the build \nand more").as_deref(),
            Some("fix the build")
        );
        assert_eq!(title_from(" \n\t").as_deref(), None);
        assert_eq!(
            title_from(&"é".repeat(100)).map(|t| t.chars().count()),
            Some(TITLE_MAX)
        );
    }

    #[test]
    fn attachments_are_described_by_kind() {
        let prompt = vec![
            ContentBlock::text(" hi "),
            proto::embedded_text("file:///a.txt".into(), "1\n2\n".into()),
            proto::resource_link("file:///b.bin".into(), "b.bin".into(), Some(3)),
        ];
        let (text, attachments) = describe_prompt(&prompt);
        assert_eq!(text, "hi");
        assert_eq!(
            attachments,
            ["file:///a.txt (2 lines, embedded)", "file:///b.bin (link)"]
        );
    }
}
