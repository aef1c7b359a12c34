//! A v1 agent (this crate's `Agent`) served to a v2 client through `v2::serve_v1`, the
//! v1<->v2 translation of acp-dialects (and, for the turn and the cancel, a plain v1 agent
//! driven by a v2 application through `acp_client::v2::connect_to_v1`): a turn with a permission, an edit, a terminal
//! command and a cancel, modes as a config option, and what v1 cannot do refused.
#![cfg(feature = "v2")]

mod v2_coder;

use std::sync::Mutex;

use acp_dialects::AdapterOptions;
use acp_dialects::v2 as d2;
use acp_types::v2 as w2;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use v2_coder::{Coder, Editor, MemFs, edit_turn, init_and_session, until_idle};

struct Setup {
    agent: d2::AgentHandle,
    updates: mpsc::UnboundedReceiver<Value>,
    files: MemFs,
    _conn: d2::ClientConnection,
}

/// Where the translation runs: in the v1 agent's process (`v2::serve_v1`, the v2 client on
/// the wire), or in the v2 client's (`acp_client::v2::connect_to_v1`: a v2 application
/// driving a plain v1 agent on the wire).
#[derive(Clone, Copy, Debug)]
enum Placement {
    BesideTheAgent,
    BesideTheClient,
}

const PLACEMENTS: [Placement; 2] = [Placement::BesideTheAgent, Placement::BesideTheClient];

fn setup() -> Setup {
    setup_at(Placement::BesideTheAgent)
}

fn setup_at(at: Placement) -> Setup {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(agent_io);
    let (cr, cw) = tokio::io::split(client_io);
    let files = MemFs::default();
    let options = AdapterOptions::default()
        .with_fs(files.clone())
        .with_local_terminals(true)
        .with_cwd("/");
    let coder = Coder {
        mode: Mutex::default(),
    };
    let (tx, updates) = mpsc::unbounded_channel();
    let editor = Editor { updates: tx };
    let conn = match at {
        Placement::BesideTheAgent => {
            acp_agent::v2::serve_v1(coder, ar, aw, options);
            d2::connect(editor, cr, cw)
        }
        Placement::BesideTheClient => {
            // The v1 agent is plain v1 on the wire; dropping its handle leaves it serving.
            drop(acp_agent::Builder::new(coder).io(ar, aw));
            acp_client::v2::connect_to_v1(editor, cr, cw, options)
        }
    };
    Setup {
        agent: conn.agent().clone(),
        updates,
        files,
        _conn: conn,
    }
}

#[tokio::test]
async fn a_v1_agent_completes_a_turn_with_a_permission_an_edit_and_a_terminal_for_a_v2_client() {
    for at in PLACEMENTS {
        eprintln!("the translation {at:?}");
        let mut s = setup_at(at);
        edit_turn(&s.agent, &mut s.updates).await;
        assert_eq!(s.files.0.lock().unwrap()["/w/a.txt"], "new\n");
    }
}

#[tokio::test]
async fn a_v2_cancel_ends_the_v1_turn_as_idle_cancelled() {
    for at in PLACEMENTS {
        eprintln!("the translation {at:?}");
        a_v2_cancel_ends_the_v1_turn_as_idle_cancelled_at(at).await;
    }
}

async fn a_v2_cancel_ends_the_v1_turn_as_idle_cancelled_at(at: Placement) {
    let mut s = setup_at(at);
    init_and_session(&s.agent).await;
    let prompt: w2::PromptRequest = serde_json::from_value(
        json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "wait"}]}),
    )
    .unwrap();
    s.agent.session_prompt(prompt).await.unwrap();
    // Wait until the agent runs.
    loop {
        let u = s.updates.recv().await.unwrap();
        if u["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    s.agent
        .session_cancel(w2::CancelSessionNotification::new("s1"))
        .await
        .unwrap();
    let seen = until_idle(&mut s.updates).await;
    assert_eq!(seen.last().unwrap()["stopReason"], "cancelled");
}

#[tokio::test]
async fn resume_with_replay_is_a_v1_load_whose_history_comes_first() {
    let mut s = setup();
    init_and_session(&s.agent).await;
    let resume: w2::ResumeSessionRequest = serde_json::from_value(
        json!({"sessionId": "old", "cwd": "/w", "replayFrom": {"type": "start"}}),
    )
    .unwrap();
    s.agent.session_resume(resume).await.unwrap();
    let first = s.updates.recv().await.unwrap();
    assert_eq!(first["sessionUpdate"], "user_message_chunk");
    assert_eq!(first["content"]["text"], "earlier question");
    let second = s.updates.recv().await.unwrap();
    assert_eq!(second["sessionUpdate"], "agent_message_chunk");
}

#[tokio::test]
async fn what_v1_cannot_do_is_refused_with_method_not_found() {
    let s = setup();
    init_and_session(&s.agent).await;
    let cancel: w2::CancelToolCallRequest =
        serde_json::from_value(json!({"sessionId": "s1", "toolCallId": "t"})).unwrap();
    let e = s.agent.tool_call_cancel(cancel).await.unwrap_err();
    assert_eq!(e.code, acp_agent::ErrorCode::METHOD_NOT_FOUND);
    assert!(e.message.contains("tool_call/cancel"), "{}", e.message);
    let logout = s
        .agent
        .auth_logout(w2::LogoutAuthRequest::default())
        .await
        .unwrap_err();
    assert!(logout.message.contains("logout"), "{}", logout.message);
}

/// The translation keeps mapping state only for the sessions of its connection: a prompt
/// naming a session never made there, or one `session/close` closed, is refused with
/// `-32002` before it reaches the v1 agent, and the connection serves on (the made session
/// still takes prompts).
#[tokio::test]
async fn prompts_for_sessions_not_open_on_the_connection_are_refused() {
    let mut s = setup();
    let session = init_and_session(&s.agent).await.session_id;
    let prompt = |id: &str| -> w2::PromptRequest {
        serde_json::from_value(json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}))
            .unwrap()
    };
    for made_up in ["nobody-made-this", "another-one"] {
        let e = s.agent.session_prompt(prompt(made_up)).await.unwrap_err();
        assert_eq!(e.code, acp_agent::ErrorCode::RESOURCE_NOT_FOUND);
        assert!(
            e.message.contains("session/new or session/resume first"),
            "{}",
            e.message
        );
    }
    s.agent.session_prompt(prompt(&session.0)).await.unwrap();
    until_idle(&mut s.updates).await;

    s.agent
        .session_close(w2::CloseSessionRequest::new(session.clone()))
        .await
        .unwrap();
    let e = s
        .agent
        .session_prompt(prompt(&session.0))
        .await
        .unwrap_err();
    assert_eq!(e.code, acp_agent::ErrorCode::RESOURCE_NOT_FOUND);
    assert!(
        e.message.contains("closed by session/close"),
        "{}",
        e.message
    );
}

/// A v1 agent whose sessions are `a`, `b`, ... and whose prompt "poke OTHER" sends an update
/// for the session OTHER, then one for its own: an agent's update arriving after the client
/// closed OTHER (the built-in agent's commands follow its `session/new` answer, and may be
/// handled after a quick `session/close`).
#[derive(Default)]
struct LateUpdates {
    made: Mutex<u8>,
}

#[async_trait::async_trait]
impl acp_agent::Agent for LateUpdates {
    async fn initialize(
        &self,
        _: acp_agent::types::InitializeRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::InitializeResponse, acp_agent::Error> {
        Ok(serde_json::from_value(json!({"protocolVersion": 1})).unwrap())
    }

    async fn new_session(
        &self,
        _: acp_agent::types::NewSessionRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::NewSessionResponse, acp_agent::Error> {
        let mut made = self.made.lock().unwrap();
        let id = char::from(b'a' + *made).to_string();
        *made += 1;
        Ok(acp_agent::types::NewSessionResponse::new(id))
    }

    async fn prompt(
        &self,
        p: acp_agent::types::PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<acp_agent::types::PromptResponse, acp_agent::Error> {
        let text = serde_json::to_value(&p.prompt[0]).unwrap()["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if let Some(count) = text.strip_prefix("flood ") {
            // Updates for sessions nobody made, as a hostile agent might send.
            for i in 0..count.parse::<u32>().unwrap() {
                let made_up = acp_agent::types::SessionUpdate::AgentMessageChunk(
                    acp_agent::types::ContentChunk::new("made up"),
                );
                cx.session()
                    .client()
                    .send_update(format!("made-up-{i}"), made_up)
                    .await?;
            }
        }
        if let Some(other) = text.strip_prefix("poke ") {
            let late = acp_agent::types::SessionUpdate::AgentMessageChunk(
                acp_agent::types::ContentChunk::new("late"),
            );
            cx.session().client().send_update(other, late).await?;
        }
        cx.session().message_chunk("own").await?;
        Ok(acp_agent::types::PromptResponse::new(
            acp_agent::types::StopReason::EndTurn,
        ))
    }
}

/// The v2 editor of [`LateUpdates`]: every update with its session id.
struct SessionEditor {
    updates: mpsc::UnboundedSender<(String, Value)>,
}

#[async_trait::async_trait]
impl d2::Client for SessionEditor {
    async fn session_update(
        &self,
        n: w2::UpdateSessionNotification,
    ) -> Result<(), acp_agent::Error> {
        let update = serde_json::to_value(&n.update).unwrap();
        let _ = self.updates.send((n.session_id.0.to_string(), update));
        Ok(())
    }
}

/// [`LateUpdates`] behind the translation placed `at`, driven by a [`SessionEditor`] and
/// initialized: the connection and the updates the editor receives, with their sessions.
async fn late_updates_at(
    at: Placement,
) -> (
    d2::ClientConnection,
    mpsc::UnboundedReceiver<(String, Value)>,
) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(agent_io);
    let (cr, cw) = tokio::io::split(client_io);
    let (tx, updates) = mpsc::unbounded_channel();
    let editor = SessionEditor { updates: tx };
    let conn = match at {
        Placement::BesideTheAgent => {
            acp_agent::v2::serve_v1(LateUpdates::default(), ar, aw, AdapterOptions::default());
            d2::connect(editor, cr, cw)
        }
        Placement::BesideTheClient => {
            drop(acp_agent::Builder::new(LateUpdates::default()).io(ar, aw));
            acp_client::v2::connect_to_v1(editor, cr, cw, AdapterOptions::default())
        }
    };
    let init: w2::InitializeRequest = serde_json::from_value(
        json!({"protocolVersion": 2, "info": {"name": "v2 editor", "version": "1"}}),
    )
    .unwrap();
    conn.agent().initialize(init).await.unwrap();
    (conn, updates)
}

/// A text prompt to `session`.
fn text_prompt(session: &str, text: &str) -> w2::PromptRequest {
    serde_json::from_value(
        json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
    )
    .unwrap()
}

/// The updates up to and including `session`'s next `state_update` idle, with their sessions.
async fn until_idle_of(
    updates: &mut mpsc::UnboundedReceiver<(String, Value)>,
    session: &str,
) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    loop {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), updates.recv());
        let (from, update) = next.await.expect("the turn ends").unwrap();
        let idle = from == session
            && update["sessionUpdate"] == "state_update"
            && update["state"] == "idle";
        seen.push((from, update));
        if idle {
            return seen;
        }
    }
}

/// An update the v1 agent sends for a session after the client closed it is not passed on
/// and does not open the session again: a prompt to it is still refused as closed (before,
/// the update made the session's mapping state anew and the prompt ran a turn).
#[tokio::test]
async fn an_update_for_a_closed_session_does_not_open_it_again() {
    for at in PLACEMENTS {
        eprintln!("the translation {at:?}");
        let (conn, mut updates) = late_updates_at(at).await;
        let agent = conn.agent();
        let a = agent
            .session_new(w2::NewSessionRequest::new("/w"))
            .await
            .unwrap();
        let b = agent
            .session_new(w2::NewSessionRequest::new("/w"))
            .await
            .unwrap();
        assert_eq!(
            (a.session_id.0.as_ref(), b.session_id.0.as_ref()),
            ("a", "b")
        );
        agent
            .session_close(w2::CloseSessionRequest::new(a.session_id.clone()))
            .await
            .unwrap();

        agent
            .session_prompt(text_prompt("b", "poke a"))
            .await
            .unwrap();
        // The agent's updates are handled in order: once b's turn is idle, a's late update
        // has been handled too.
        let seen = until_idle_of(&mut updates, "b").await;
        assert!(
            seen.iter().all(|(session, _)| session == "b"),
            "only b's updates reach the client: {seen:?}"
        );
        assert!(
            seen.iter().any(|(_, u)| u["content"]["text"] == "own"),
            "{seen:?}"
        );

        let e = agent
            .session_prompt(text_prompt("a", "hi"))
            .await
            .unwrap_err();
        assert_eq!(e.code, acp_agent::ErrorCode::RESOURCE_NOT_FOUND);
        assert!(
            e.message.contains("closed by session/close"),
            "{}",
            e.message
        );
    }
}

/// An agent's updates for sessions no answer of its gave out are passed on only up to a
/// bound (64 such sessions): the translation keeps mapping state for each, so a hostile
/// agent naming made-up sessions cannot grow it without end. The turn itself goes on.
#[tokio::test]
async fn updates_for_sessions_nobody_made_are_kept_within_a_bound() {
    let (conn, mut updates) = late_updates_at(Placement::BesideTheAgent).await;
    let agent = conn.agent();
    let a = agent
        .session_new(w2::NewSessionRequest::new("/w"))
        .await
        .unwrap();
    let prompt = text_prompt(&a.session_id.0, "flood 200");
    agent.session_prompt(prompt).await.unwrap();
    let named: std::collections::HashSet<String> = until_idle_of(&mut updates, "a")
        .await
        .into_iter()
        .map(|(session, _)| session)
        .filter(|session| session != "a")
        .collect();
    assert_eq!(named.len(), 64, "{named:?}");
}
