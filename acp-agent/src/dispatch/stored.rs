//! The session methods a store answers for an agent that leaves them at their default:
//! each calls the agent's method first and falls back to the store only when it answers
//! "method not found", so an agent author can still override any of them.
//!
//! Every call is scoped to the connection's identity ([`Recorder::owner`]): a session the
//! store keeps for another identity is answered as one that does not exist (`-32002` for
//! `session/load` and `session/resume`; `session/delete` succeeds without touching it, as
//! for a session that does not exist), before the agent hears of it, and a listing shows
//! only the identity's own sessions.

use acp_types::NotificationMethod;
use acp_types::v1::*;

use crate::agent::Agent;
use crate::context::AgentContext;
use crate::record::Recorder;
use crate::store::{
    HistoryCursor, INTERRUPTED_META, ListQuery, MetaChange, SessionMeta, StoreError, StoredEvent,
};
use crate::{Error, ErrorCode};

/// Events read per page while replaying (the replay's memory does not grow with the
/// history).
const REPLAY_PAGE: usize = 256;

/// Rows per `session/list` page.
pub const LIST_PAGE: usize = 100;

/// Whether the agent left the method at its default.
fn defaulted<T>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(e) if e.code == ErrorCode::METHOD_NOT_FOUND)
}

fn unknown(id: &SessionId) -> Error {
    StoreError::NotFound(id.clone()).into()
}

/// Adds what a store provides to the agent's `initialize` answer.
pub(crate) fn advertise(response: &mut InitializeResponse) {
    let caps = &mut response.agent_capabilities;
    caps.load_session = true;
    let session = &mut caps.session_capabilities;
    session.list.get_or_insert_with(Default::default);
    session.resume.get_or_insert_with(Default::default);
    session.close.get_or_insert_with(Default::default);
    session.delete.get_or_insert_with(Default::default);
}

/// A session the agent loaded or resumed itself is recorded from now on (created in the
/// store if it is not there).
async fn adopt(recorder: &Recorder, id: &SessionId, cwd: &str) -> Result<(), Error> {
    if recorder.store()?.meta(id).await?.is_none() {
        // (Another identity's session was refused before the agent was asked.)
        // New to the store, so its whole history will have the turn markers.
        let mut meta = SessionMeta::new(id.clone(), cwd);
        meta.turn_markers = true;
        recorder.created(meta).await?;
    }
    recorder.attach(id);
    Ok(())
}

/// `session/load`: the history replayed as `session/update`s, then the answer. The updates
/// are queued on the connection before this returns, so all of them are written before the
/// response.
pub(crate) async fn load<A: Agent>(
    agent: &A,
    params: LoadSessionRequest,
    cx: &AgentContext,
    peer: &acp_rpc::Peer,
    recorder: &Recorder,
) -> Result<LoadSessionResponse, Error> {
    let id = params.session_id.clone();
    let cwd = params.cwd.clone();
    if recorder.is_foreign(&id).await? {
        return Err(unknown(&id));
    }
    let result = agent.load_session(params, cx).await;
    if !defaulted(&result) {
        let response = result?;
        adopt(recorder, &id, &cwd).await?;
        return Ok(response);
    }
    let meta = recorder.own_meta(&id).await?.ok_or_else(|| unknown(&id))?;
    let mut cursor = HistoryCursor::START;
    // A prompt whose turn has not ended yet in the history read so far.
    let mut open_turn = false;
    let send = |update: SessionUpdate| {
        let n = SessionNotification::new(id.clone(), update);
        async move { peer.notify(SessionNotification::METHOD, &n).await }
    };
    loop {
        let page = recorder.store()?.history(&id, cursor, REPLAY_PAGE).await?;
        for event in page.events {
            match &event {
                StoredEvent::Prompt(_) if open_turn && meta.turn_markers => {
                    send(interrupted()).await?;
                }
                StoredEvent::Prompt(_) => open_turn = true,
                StoredEvent::TurnEnd(_) => open_turn = false,
                StoredEvent::Update(_) => {}
            }
            for update in event.into_updates() {
                send(update).await?;
            }
        }
        match page.next {
            Some(next) => cursor = next,
            None => break,
        }
    }
    if open_turn && meta.turn_markers {
        send(interrupted()).await?;
    }
    recorder.attach(&id);
    let mut response = LoadSessionResponse::new();
    response.modes = meta.modes;
    response.config_options = meta.config_options;
    Ok(response)
}

/// What `session/load` replays after the events of a turn that never ended (its agent
/// process died mid-turn): a chunk saying so, marked [`INTERRUPTED_META`] in its `_meta`.
fn interrupted() -> SessionUpdate {
    let chunk = serde_json::json!({
        "content": {"type": "text", "text": "\n[turn interrupted: the agent stopped before it ended]\n"},
        "_meta": {INTERRUPTED_META: true},
    });
    match serde_json::from_value(chunk) {
        Ok(chunk) => SessionUpdate::AgentMessageChunk(chunk),
        // The literal above is a valid chunk; this arm only keeps a panic off the path.
        Err(_) => SessionUpdate::agent_message_text("[turn interrupted]"),
    }
}

/// `session/resume`: the session is open again, without replay.
pub(crate) async fn resume<A: Agent>(
    agent: &A,
    params: ResumeSessionRequest,
    cx: &AgentContext,
    recorder: &Recorder,
) -> Result<ResumeSessionResponse, Error> {
    let id = params.session_id.clone();
    let cwd = params.cwd.clone();
    if recorder.is_foreign(&id).await? {
        return Err(unknown(&id));
    }
    let result = agent.resume_session(params, cx).await;
    if !defaulted(&result) {
        let response = result?;
        adopt(recorder, &id, &cwd).await?;
        return Ok(response);
    }
    let meta = recorder.own_meta(&id).await?.ok_or_else(|| unknown(&id))?;
    recorder.attach(&id);
    let mut response = ResumeSessionResponse::new();
    response.modes = meta.modes;
    response.config_options = meta.config_options;
    Ok(response)
}

/// `session/list`: a page of the identity's sessions in the store, newest first, filtered
/// by `cwd`.
pub(crate) async fn list<A: Agent>(
    agent: &A,
    params: ListSessionsRequest,
    cx: &AgentContext,
    recorder: &Recorder,
) -> Result<ListSessionsResponse, Error> {
    let query = ListQuery {
        owner: recorder.owner().map(str::to_owned),
        cwd: params.cwd.clone(),
        cursor: params.cursor.clone(),
        limit: LIST_PAGE,
    };
    let result = agent.list_sessions(params, cx).await;
    if !defaulted(&result) {
        return result;
    }
    let page = recorder.store()?.list(query).await?;
    let sessions = page.sessions.into_iter().map(|row| {
        let mut info = SessionInfo::new(row.session_id, row.cwd)
            .additional_directories(row.additional_directories)
            .updated_at(row.updated_at);
        info.title = row.title;
        info
    });
    let mut response = ListSessionsResponse::new(sessions);
    response.next_cursor = page.next_cursor;
    Ok(response)
}

/// `session/close`: the agent's answer (or an empty one), then what is pending is written
/// and the store lets go of the session.
pub(crate) async fn close<A: Agent>(
    agent: &A,
    params: CloseSessionRequest,
    cx: &AgentContext,
    recorder: &Recorder,
) -> Result<CloseSessionResponse, Error> {
    let id = params.session_id.clone();
    let result = agent.close_session(params, cx).await;
    let response = if defaulted(&result) {
        CloseSessionResponse::new()
    } else {
        result?
    };
    recorder.detach(&id).await?;
    Ok(response)
}

/// `session/delete`: removed from the store (also after an agent's own delete succeeded).
/// A session the store does not have (never created, or already deleted) is no error: the
/// spec says such a delete SHOULD succeed silently, so a retried delete is harmless.
/// Another identity's session gets that same answer, and neither the agent nor the store
/// touches it.
pub(crate) async fn delete<A: Agent>(
    agent: &A,
    params: DeleteSessionRequest,
    cx: &AgentContext,
    recorder: &Recorder,
) -> Result<DeleteSessionResponse, Error> {
    let id = params.session_id.clone();
    if recorder.is_foreign(&id).await? {
        return Ok(DeleteSessionResponse::new());
    }
    let result = agent.delete_session(params, cx).await;
    let response = if defaulted(&result) {
        DeleteSessionResponse::new()
    } else {
        result?
    };
    recorder.forget(&id);
    match recorder.store()?.delete(&id).await {
        Ok(()) => Ok(response),
        Err(StoreError::NotFound(_)) => Ok(response),
        Err(e) => Err(e.into()),
    }
}

/// Records the mode a `session/set_mode` chose.
pub(crate) async fn mode_set(recorder: &Recorder, id: &SessionId, mode: SessionModeId) {
    let change = MetaChange {
        current_mode: Some(mode),
        ..MetaChange::touch()
    };
    recorder.changed(id, change).await;
}

/// Records the config options a `session/set_config_option` answered with.
pub(crate) async fn config_set(
    recorder: &Recorder,
    id: &SessionId,
    options: Vec<SessionConfigOption>,
) {
    let change = MetaChange {
        config_options: Some(options),
        ..MetaChange::touch()
    };
    recorder.changed(id, change).await;
}
