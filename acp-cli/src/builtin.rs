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
//! | `/mcp` | the session's MCP servers (from `session/new`) with their tools |
//! | `/mcp SERVER TOOL {json}` | calls that tool, after asking permission (in every mode), as a tool call |
//! | `/help` | the commands, as a reply |
//!
//! In mode `ask` (the default) the edit waits for permission; in mode `code` it is applied
//! (to the demo's imagination: no file is written) without asking. The model picks the
//! streaming speed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::mcp::{McpConfig, McpConnector};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};

use crate::proto;

mod mcp;
mod turn;

use turn::Step;

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
    /// Each session's MCP servers, started in the background at `session/new` and stopped
    /// (process groups killed) when the agent is dropped with its connection.
    mcp: Mutex<HashMap<SessionId, Arc<McpConnector>>>,
    /// The connectors' bounds, and the MCP policy their HTTP client is held to when served
    /// to remote clients (`acp serve`).
    mcp_config: McpConfig,
}

impl BuiltinAgent {
    /// The agent for a connection served with a session store.
    pub fn with_store() -> Self {
        BuiltinAgent {
            id_prefix: Some(format!("{}-", acp_agent::store::now_rfc3339())),
            ..Self::default()
        }
    }

    /// Holds the HTTP MCP servers' connections to `policy` (`acp serve`: every address
    /// checked when connecting, redirects too); the requests were checked by the server.
    pub fn mcp_policy(mut self, policy: acp_agent::mcp::McpPolicy) -> Self {
        self.mcp_config = self.mcp_config.policy(policy);
        self
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

    /// Starts the MCP servers a session was given (in the background: the answer does not
    /// wait for them), in place of those it had.
    fn connect_mcp(&self, id: &SessionId, servers: &[McpServer], cx: &AgentContext) {
        let mut mcp = self.mcp.lock().unwrap_or_else(|p| p.into_inner());
        if servers.is_empty() {
            mcp.remove(id);
            return;
        }
        let connector =
            McpConnector::start_with_client(servers, self.mcp_config.clone(), cx.client());
        mcp.insert(id.clone(), Arc::new(connector));
    }

    /// The MCP connector of a session that was given servers.
    fn connector(&self, id: &SessionId) -> Option<Arc<McpConnector>> {
        self.mcp
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
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
        proto::command(
            "mcp",
            "List the session's MCP servers and tools, or call one: /mcp SERVER TOOL {json}",
            Some("server tool {json arguments}"),
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
        self.connect_mcp(&id, &p.mcp_servers, cx);
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
    /// Connects the servers of the request to a session the store has, then leaves the
    /// replay to the store (an agent answering MethodNotFound lets the store serve it).
    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        if self.restored_state(&p.session_id, cx).await.is_some() {
            self.connect_mcp(&p.session_id, &p.mcp_servers, cx);
        }
        Err(Error::method_not_found(names::SESSION_LOAD))
    }

    /// As `session/load`, without the replay.
    async fn resume_session(
        &self,
        p: ResumeSessionRequest,
        cx: &AgentContext,
    ) -> Result<ResumeSessionResponse, Error> {
        if self.restored_state(&p.session_id, cx).await.is_some() {
            self.connect_mcp(&p.session_id, &p.mcp_servers, cx);
        }
        Err(Error::method_not_found(names::SESSION_RESUME))
    }

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
            Some(("mcp", rest)) => self.mcp_command(cx, &state, rest).await?,
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

    async fn mcp_message(
        &self,
        p: MessageMcpRequest,
        _cx: &AgentContext,
    ) -> Result<MessageMcpResponse, Error> {
        self.mcp_request(p).await
    }

    async fn mcp_message_notification(&self, p: MessageMcpNotification) {
        self.mcp_notification(p);
    }
}

#[cfg(test)]
mod tests;
