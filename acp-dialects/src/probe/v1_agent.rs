//! A v1 agent in front of a probe editor: the translation for the agent's role, on the
//! skeleton of [`crate::translate`]. [`Sessions`] is what its two ends share: the sessions
//! this connection knows, their histories, modes and running prompts.

use std::collections::HashMap;
use std::sync::Mutex;

use acp_rpc::{Error, RequestContext};
use acp_types::legacy::probe as p;
use acp_types::legacy::probe::convert;
use acp_types::time::now_rfc3339_seconds;
use acp_types::v1;
use async_trait::async_trait;

use super::native::{Agent, ClientHandle, Context};
use super::{
    now_millis, session_not_found, tools_of, unsupported_version,
};
use crate::translate::{LegacyEnd, OnDrop, V1End, V1Handshake, update_kind, v1_routes};
use crate::{AdapterOptions, lock};

/// What the two ends of a v1 agent in front of a probe editor share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Sessions {
    Sessions {
        handshake: V1Handshake::reading(true),
        known: Mutex::default(),
        options,
    }
}

/// The state both ends of the translation share: the sessions this connection knows.
pub(crate) struct Sessions {
    handshake: V1Handshake,
    known: Mutex<HashMap<v1::SessionId, SessionState>>,
    options: AdapterOptions,
}

/// A tool call as first shown, for its later progress reports.
struct ShownTool {
    name: String,
    kind: String,
    status: p::ToolCallStatus,
    start_time: u64,
}

struct SessionState {
    mode: p::SessionMode,
    history: Vec<p::HistoryMessage>,
    /// The prompt running in it: its reply so far and the next chunk's index.
    turn: Option<(String, u64)>,
    tools: HashMap<String, ShownTool>,
}

impl SessionState {
    fn new(mode: p::SessionMode) -> Self {
        SessionState {
            mode,
            history: Vec::new(),
            turn: None,
            tools: HashMap::new(),
        }
    }

    /// Appends text to the history, extending the last message when it has the same role
    /// (chunks of one message arrive one by one).
    fn record(&mut self, role: p::Role, text: &str) {
        match self.history.last_mut() {
            Some(last) if last.role == role => last.content.push_str(text),
            _ => self.history.push(p::HistoryMessage::new(role, text)),
        }
    }

    /// Sets the mode; `true` when it changed (the editor is then told).
    fn switch_mode(&mut self, mode: p::SessionMode) -> bool {
        let changed = self.mode != mode;
        self.mode = mode;
        changed
    }
}

impl Sessions {
    fn with<T>(&self, id: &v1::SessionId, f: impl FnOnce(&mut SessionState) -> T) -> Option<T> {
        lock(&self.known).get_mut(id).map(f)
    }

    fn insert(&self, id: v1::SessionId, mode: p::SessionMode) {
        lock(&self.known)
            .entry(id)
            .or_insert_with(|| SessionState::new(mode));
    }
}

/// The probe mode a v1 session starts in: its current mode when probe names it, else
/// `NORMAL`.
fn mode_of(modes: Option<&v1::SessionModeState>) -> p::SessionMode {
    match modes.map(|m| convert::mode_from_v1(&m.current_mode_id)) {
        Some(mode @ (p::SessionMode::NORMAL | p::SessionMode::PLANNING)) => mode,
        _ => p::SessionMode::NORMAL,
    }
}

/// The probe agent the editor sees; every call becomes v1 calls to the agent on the pipe.
type ProbeAgent = LegacyEnd<Sessions, ClientHandle>;

impl ProbeAgent {
    /// A session of this connection, or `-32002`.
    fn known(&self, id: &p::SessionId) -> Result<v1::SessionId, Error> {
        let id = v1::SessionId::from(id.as_str());
        if lock(&self.known).contains_key(&id) {
            Ok(id)
        } else {
            Err(session_not_found(&id.0))
        }
    }
}

#[async_trait]
impl Agent for ProbeAgent {
    async fn initialize(
        &self,
        params: p::InitializeParams,
        _cx: &Context,
    ) -> Result<p::InitializeResponse, Error> {
        if params.protocol_version.0 != p::PROTOCOL_VERSION {
            return Err(unsupported_version(&params.protocol_version.0));
        }
        let init = self.handshake.done(&self.v1).await?;
        let server = match &init.agent_info {
            Some(info) => p::ServerInfo::new(info.name.clone(), info.version.clone()),
            None => p::ServerInfo::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        };
        let capabilities = p::Capabilities::new()
            .tools(tools_of(init.meta.as_ref()))
            .session_management(true)
            .streaming(true)
            .permissions(false);
        Ok(p::InitializeResponse::new(
            p::ProtocolVersion::current(),
            server,
            capabilities,
        ))
    }

    async fn new_session(
        &self,
        _params: p::NewSessionParams,
        _cx: &Context,
    ) -> Result<p::NewSessionResponse, Error> {
        self.handshake.done(&self.v1).await?;
        let request = self.options.new_session();
        let created = self.v1.typed_request(&request).await?;
        let mode = mode_of(created.modes.as_ref());
        self.insert(created.session_id.clone(), mode.clone());
        Ok(p::NewSessionResponse::new(
            created.session_id.as_str(),
            mode,
            now_rfc3339_seconds(),
        ))
    }

    async fn load_session(
        &self,
        params: p::LoadSessionParams,
        _cx: &Context,
    ) -> Result<p::LoadSessionResponse, Error> {
        let init = self.handshake.done(&self.v1).await?;
        let id = v1::SessionId::from(params.session_id.as_str());
        let answer = |s: &mut SessionState| {
            p::LoadSessionResponse::new(params.session_id.clone(), s.mode.clone())
                .history(s.history.clone())
        };
        if let Some(known) = self.with(&id, answer) {
            return Ok(known);
        }
        if !init.agent_capabilities.load_session {
            return Err(session_not_found(&id.0));
        }
        // The history the agent replays during the load lands in the new session's state.
        self.insert(id.clone(), p::SessionMode::NORMAL);
        let load = self.options.load_session(id.clone());
        match self.v1.typed_request(&load).await {
            Ok(loaded) => {
                let mode = mode_of(loaded.modes.as_ref());
                self.with(&id, |s| s.mode = mode);
                Ok(self
                    .with(&id, answer)
                    .ok_or_else(|| session_not_found(&id.0))?)
            }
            Err(e) => {
                lock(&self.known).remove(&id);
                if e.code == acp_rpc::ErrorCode::RESOURCE_NOT_FOUND {
                    Err(session_not_found(&id.0))
                } else {
                    Err(e)
                }
            }
        }
    }

    async fn set_session_mode(
        &self,
        params: p::SetSessionModeParams,
        cx: &Context,
    ) -> Result<p::SetSessionModeResponse, Error> {
        let id = self.known(&params.session_id)?;
        let request = v1::SetSessionModeRequest::new(id.clone(), convert::mode_to_v1(&params.mode));
        self.v1.typed_request(&request).await?;
        let changed = self
            .with(&id, |s| s.switch_mode(params.mode.clone()))
            .unwrap_or(false);
        if changed {
            let updated = p::SessionUpdatedParams::new(params.session_id.clone())
                .mode(params.mode.clone())
                .updated_at(now_rfc3339_seconds());
            cx.client().session_updated(updated).await?;
        }
        Ok(p::SetSessionModeResponse::new()
            .session_id(params.session_id)
            .mode(params.mode))
    }

    async fn prompt(
        &self,
        params: p::PromptParams,
        _cx: &Context,
    ) -> Result<p::PromptResponse, Error> {
        let id = self.known(&params.session_id)?;
        self.with(&id, |s| {
            s.record(p::Role::User, &params.message);
            s.turn = Some((String::new(), 0));
        });
        let turn = OnDrop(|| {
            self.with(&id, |s| s.turn = None);
        });
        let prompt = v1::PromptRequest::new(id.clone(), [v1::ContentBlock::text(params.message)]);
        let answer = self.v1.typed_request(&prompt).await?;
        if answer.stop_reason != v1::StopReason::EndTurn {
            tracing::debug!(stop_reason = %answer.stop_reason.as_str(), "the probe answer has no stop reason: the reply so far is the answer");
        }
        let reply = self
            .with(&id, |s| s.turn.take().map(|(reply, _)| reply))
            .flatten()
            .unwrap_or_default();
        drop(turn);
        let content = if reply.is_empty() {
            Vec::new()
        } else {
            vec![p::ContentBlock::text(reply)]
        };
        Ok(p::PromptResponse::new(
            params.session_id,
            content,
            now_rfc3339_seconds(),
        ))
    }

    async fn cancel(
        &self,
        params: p::CancelParams,
        _cx: &Context,
    ) -> Result<p::CancelResponse, Error> {
        let id = self.known(&params.session_id)?;
        let running = self.with(&id, |s| s.turn.is_some()).unwrap_or(false);
        self.v1
            .notify(v1::names::SESSION_CANCEL, &v1::CancelNotification::new(id))
            .await?;
        Ok(p::CancelResponse::new()
            .session_id(params.session_id)
            .cancelled(running))
    }
}

/// The v1 client the agent sees on the pipe; its calls go to the probe editor.
type V1Client = V1End<Sessions, ClientHandle>;

v1_routes! {
    V1Client;
    requests {
        v1::names::FS_READ_TEXT_FILE => read_text_file,
        v1::names::FS_WRITE_TEXT_FILE => write_text_file,
    }
    refuse |method| match method {
        v1::names::SESSION_REQUEST_PERMISSION => not_forwarded(
            method,
            "a probe editor has no permission prompt (it is told `permissions: false`)",
        ),
        _ => not_forwarded(method, "a probe editor has no such method"),
    };
    notifications { v1::names::SESSION_UPDATE => update }
    drop |method| tracing::debug!(method, "notification from the v1 agent dropped: no probe equivalent");
}

/// What one v1 update becomes on the probe wire.
enum Out {
    Chunk(p::MessageChunkParams),
    Tool(Box<p::ToolCallProgressParams>),
    Mode(p::SessionUpdatedParams),
}

impl V1Client {
    async fn update(&self, n: v1::SessionNotification) -> Result<(), Error> {
        let id = n.session_id;
        let probe_id = p::SessionId::from(id.as_str());
        let out = self.with(&id, |s| match &n.update {
            v1::SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                v1::ContentBlock::Text(text) => {
                    s.record(p::Role::Assistant, &text.text);
                    s.turn.as_mut().map(|(reply, index)| {
                        reply.push_str(&text.text);
                        *index += 1;
                        Out::Chunk(p::MessageChunkParams::new(
                            probe_id.clone(),
                            text.text.clone(),
                            *index - 1,
                        ))
                    })
                }
                _ => {
                    tracing::warn!(session = %id.0, "probe editors show text only: a non-text agent_message_chunk was dropped");
                    None
                }
            },
            v1::SessionUpdate::UserMessageChunk(chunk) => {
                if let v1::ContentBlock::Text(text) = &chunk.content {
                    s.record(p::Role::User, &text.text);
                }
                None
            }
            v1::SessionUpdate::ToolCall(call) => {
                let shown = ShownTool {
                    name: call.title.clone(),
                    kind: convert::kind_from_v1(&call.kind),
                    status: convert::status_from_v1(&call.status),
                    start_time: now_millis(),
                };
                let progress = tool_progress(&call.tool_call_id.0, &shown, false);
                s.tools.insert(call.tool_call_id.0.clone(), shown);
                Some(Out::Tool(Box::new(p::ToolCallProgressParams::new(
                    probe_id.clone(),
                    progress,
                ))))
            }
            v1::SessionUpdate::ToolCallUpdate(update) => {
                let shown = s
                    .tools
                    .entry(update.tool_call_id.0.clone())
                    .or_insert_with(|| ShownTool {
                        name: update.tool_call_id.0.clone(),
                        kind: "other".to_string(),
                        status: p::ToolCallStatus::InProgress,
                        start_time: now_millis(),
                    });
                if let Some(title) = &update.title {
                    shown.name = title.clone();
                }
                if let Some(kind) = &update.kind {
                    shown.kind = convert::kind_from_v1(kind);
                }
                if let Some(status) = &update.status {
                    shown.status = convert::status_from_v1(status);
                }
                let ended = matches!(
                    shown.status,
                    p::ToolCallStatus::Completed | p::ToolCallStatus::Failed
                );
                let progress = tool_progress(&update.tool_call_id.0, shown, ended);
                Some(Out::Tool(Box::new(p::ToolCallProgressParams::new(
                    probe_id.clone(),
                    progress,
                ))))
            }
            v1::SessionUpdate::CurrentModeUpdate(mode) => {
                let mode = convert::mode_from_v1(&mode.current_mode_id);
                s.switch_mode(mode.clone()).then(|| {
                    Out::Mode(
                        p::SessionUpdatedParams::new(probe_id.clone())
                            .mode(mode)
                            .updated_at(now_rfc3339_seconds()),
                    )
                })
            }
            other => {
                tracing::warn!(session = %id.0, kind = %update_kind(other), "the probe dialect has no way to show this session/update; dropped");
                None
            }
        });
        let editor = self.legacy()?;
        match out.flatten() {
            Some(Out::Chunk(chunk)) => editor.message_chunk(chunk).await,
            Some(Out::Tool(progress)) => editor.tool_call_progress(*progress).await,
            Some(Out::Mode(updated)) => editor.session_updated(updated).await,
            None => Ok(()),
        }
    }

    async fn read_text_file(
        &self,
        _cx: &RequestContext,
        r: v1::ReadTextFileRequest,
    ) -> Result<v1::ReadTextFileResponse, Error> {
        let read = p::ReadTextFileParams::new(r.path).session_id(r.session_id.as_str());
        let answer = self.legacy()?.read_text_file(read).await?;
        let content = lines_of(&answer.content, r.line, r.limit);
        Ok(v1::ReadTextFileResponse::new(content))
    }

    async fn write_text_file(
        &self,
        _cx: &RequestContext,
        w: v1::WriteTextFileRequest,
    ) -> Result<v1::WriteTextFileResponse, Error> {
        let write = p::WriteTextFileParams::new(w.path, w.content)
            .session_id(w.session_id.as_str());
        let answer = self.legacy()?.write_text_file(write).await?;
        if answer.success == Some(false) {
            return Err(Error::internal_error(
                "the probe editor answered writeTextFile with success: false",
            ));
        }
        Ok(v1::WriteTextFileResponse::new())
    }
}

/// A probe tool call report of a call as shown so far.
fn tool_progress(id: &str, shown: &ShownTool, ended: bool) -> p::ToolCall {
    let call = p::ToolCall::new(id, shown.name.clone(), shown.status.clone())
        .kind(shown.kind.clone())
        .start_time(shown.start_time);
    if ended {
        call.end_time(now_millis())
    } else {
        call
    }
}

/// The lines `line` (counted from 1) to `line + limit` of a whole file's text, as v1's
/// `fs/read_text_file` asks (the probe dialect reads whole files).
fn lines_of(content: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return content.to_string();
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
    let take = limit.map_or(usize::MAX, |l| l as usize);
    content
        .split_inclusive('\n')
        .skip(skip)
        .take(take)
        .collect()
}

/// `-32601` for a v1 client call the probe editor cannot serve, saying why.
fn not_forwarded(method: &str, why: &str) -> Error {
    crate::not_forwarded(crate::Dialect::Probe, method, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_windows_count_from_one() {
        let text = "a\nb\nc\n";
        assert_eq!(lines_of(text, None, None), text);
        assert_eq!(lines_of(text, Some(2), None), "b\nc\n");
        assert_eq!(lines_of(text, Some(2), Some(1)), "b\n");
        assert_eq!(lines_of(text, None, Some(1)), "a\n");
        assert_eq!(lines_of(text, Some(9), None), "");
    }

    #[test]
    fn history_merges_chunks_of_one_message() {
        let mut s = SessionState::new(p::SessionMode::NORMAL);
        s.record(p::Role::User, "hi");
        s.record(p::Role::Assistant, "hel");
        s.record(p::Role::Assistant, "lo");
        assert_eq!(
            s.history,
            vec![
                p::HistoryMessage::new(p::Role::User, "hi"),
                p::HistoryMessage::new(p::Role::Assistant, "hello"),
            ]
        );
        assert!(!s.switch_mode(p::SessionMode::NORMAL));
        assert!(s.switch_mode(p::SessionMode::PLANNING));
    }
}
