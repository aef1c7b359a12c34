//! A v1 client (this crate's `Client`) driving a v2 agent through `v2::connect_v1`, the
//! v1<->v2 translation of acp-dialects, and the same v2 agent served to a plain v1 client
//! (`serve_v2_agent_to_v1`, the translation in the agent's process): a turn whose
//! `state_update` idle answers the v1 prompt, upserts as v1 tool calls, a command
//! permission, modes from a config option, `session/load` as a resume with replay, a cancel.
#![cfg(feature = "v2")]

use std::sync::Mutex;
use std::time::Duration;

use acp_client::{Client, Error};
use acp_dialects::AdapterOptions;
use acp_dialects::v2 as d2;
use acp_types::v1::*;
use acp_types::v2 as w2;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

/// A v2 agent written against the v2 side: one session with a mode option; "edit" streams
/// an upserted tool call with a native v2 diff and asks about a command; "wait" runs until
/// cancelled; a resume replays one message.
#[derive(Default)]
struct V2Agent {
    mode: Mutex<String>,
    cancelled: Notify,
}

fn v2<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn mode_option(current: &str) -> Value {
    json!([{"configId": "m", "name": "Mode", "category": "mode", "type": "select", "currentValue": current,
        "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}]}])
}

async fn up(cx: &d2::Context, session: &str, u: Value) -> Result<(), Error> {
    cx.client()
        .session_update(w2::UpdateSessionNotification::new(
            session,
            v2::<w2::SessionUpdate>(u),
        ))
        .await
}

#[async_trait::async_trait]
impl d2::Agent for V2Agent {
    async fn initialize(
        &self,
        p: w2::InitializeRequest,
        _: &d2::Context,
    ) -> Result<w2::InitializeResponse, Error> {
        assert_eq!(p.info.name, "v1 editor");
        Ok(v2(
            json!({"protocolVersion": 2, "info": {"name": "v2 agent", "version": "2.0.0"},
            "capabilities": {"session": {"prompt": {"image": {}}, "mcp": {"http": {}}}}}),
        ))
    }

    async fn session_new(
        &self,
        _: w2::NewSessionRequest,
        _: &d2::Context,
    ) -> Result<w2::NewSessionResponse, Error> {
        *self.mode.lock().unwrap() = "ask".into();
        Ok(v2(
            json!({"sessionId": "s1", "configOptions": mode_option("ask")}),
        ))
    }

    async fn session_resume(
        &self,
        p: w2::ResumeSessionRequest,
        cx: &d2::Context,
    ) -> Result<w2::ResumeSessionResponse, Error> {
        assert!(p.replay_from.is_some(), "session/load asks for the replay");
        up(cx, "s1", json!({"sessionUpdate": "user_message", "messageId": "u0", "content": [{"type": "text", "text": "earlier"}]})).await?;
        Ok(v2(json!({"configOptions": mode_option("ask")})))
    }

    async fn session_set_config_option(
        &self,
        p: w2::SetSessionConfigOptionRequest,
        _: &d2::Context,
    ) -> Result<w2::SetSessionConfigOptionResponse, Error> {
        let p = serde_json::to_value(&p).unwrap();
        assert_eq!(p["configId"], "m");
        let value = p["value"].as_str().unwrap().to_string();
        *self.mode.lock().unwrap() = value.clone();
        Ok(v2(json!({"configOptions": mode_option(&value)})))
    }

    async fn session_prompt(
        &self,
        p: w2::PromptRequest,
        cx: &d2::Context,
    ) -> Result<w2::PromptResponse, Error> {
        let text = serde_json::to_value(&p.prompt).unwrap()[0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        up(
            cx,
            "s1",
            json!({"sessionUpdate": "state_update", "state": "running"}),
        )
        .await?;
        up(cx, "s1", json!({"sessionUpdate": "user_message", "messageId": "u1", "content": [{"type": "text", "text": text}]})).await?;
        if text == "wait" {
            let client = cx.client().clone();
            self.cancelled.notified().await;
            let idle = json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"});
            client
                .session_update(w2::UpdateSessionNotification::new(
                    "s1",
                    v2::<w2::SessionUpdate>(idle),
                ))
                .await?;
            return Ok(w2::PromptResponse::new("u1"));
        }
        up(cx, "s1", json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "Editing"}})).await?;
        up(cx, "s1", json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "name": "edit", "kind": "edit", "status": "pending"})).await?;
        let ask = json!({"sessionId": "s1", "title": "Run cargo fmt?", "subject": {"type": "command", "command": "cargo fmt", "cwd": "/w", "toolCallId": "t1"},
            "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]});
        let answer = cx.client().session_request_permission(v2(ask)).await?;
        assert_eq!(
            serde_json::to_value(&answer).unwrap()["outcome"]["optionId"],
            "ok"
        );
        up(cx, "s1", json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
            "content": [{"type": "diff", "changes": [{"operation": "modify", "path": "/w/a.rs"}], "patch": {"format": "git_patch", "text": "PATCH"}}]})).await?;
        up(cx, "s1", json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": [{"content": "fmt", "priority": "high", "status": "completed"}]}})).await?;
        up(
            cx,
            "s1",
            json!({"sessionUpdate": "terminal_update", "terminalId": "x", "command": "ls"}),
        )
        .await?;
        up(
            cx,
            "s1",
            json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
        )
        .await?;
        Ok(w2::PromptResponse::new("u1"))
    }

    async fn session_cancel(&self, _: w2::CancelSessionNotification) -> Result<(), Error> {
        self.cancelled.notify_one();
        Ok(())
    }
}

/// The v1 editor: records updates and permission requests, allows everything.
struct Editor(mpsc::UnboundedSender<Value>);

#[async_trait::async_trait]
impl Client for Editor {
    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let _ = self
            .0
            .send(json!({"permission": serde_json::to_value(&p).unwrap()}));
        Ok(v2(
            json!({"outcome": {"outcome": "selected", "optionId": p.options[0].option_id.0}}),
        ))
    }

    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        let _ = self.0.send(serde_json::to_value(&n.update).unwrap());
        Ok(())
    }
}

/// The v1 client's connection, its updates, and what keeps the agent's side alive.
type Setup = (
    acp_client::ClientConnection,
    mpsc::UnboundedReceiver<Value>,
    Box<dyn std::any::Any + Send>,
);

/// Where the translation runs: in the v1 client's process (`connect_v1`, the v2 agent on
/// the wire), or in the v2 agent's (`serve_v2_agent_to_v1`: a v2 application served to a
/// plain v1 client on the wire). Every test runs both: one mapping, either placement.
#[derive(Clone, Copy, Debug)]
enum Placement {
    BesideTheClient,
    BesideTheAgent,
}

const PLACEMENTS: [Placement; 2] = [Placement::BesideTheClient, Placement::BesideTheAgent];

fn setup(at: Placement) -> Setup {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(agent_io);
    let (cr, cw) = tokio::io::split(client_io);
    let (tx, rx) = mpsc::unbounded_channel();
    match at {
        Placement::BesideTheClient => {
            let agent = d2::serve(V2Agent::default(), ar, aw);
            let conn = acp_client::v2::connect_v1(Editor(tx), cr, cw, AdapterOptions::default());
            (conn, rx, Box::new(agent))
        }
        Placement::BesideTheAgent => {
            let v2_agent = |end| {
                d2::serve_over(V2Agent::default(), end, Default::default())
                    .peer()
                    .clone()
            };
            let served = d2::serve_v2_agent_to_v1(v2_agent, ar, aw, AdapterOptions::default());
            let conn = acp_client::Builder::new(Editor(tx)).io(cr, cw);
            (conn, rx, Box::new(served))
        }
    }
}

async fn start(conn: &acp_client::ClientConnection) -> NewSessionResponse {
    let init = InitializeRequest::new(ProtocolVersion::V1)
        .client_info(Implementation::new("v1 editor", "1"));
    let answer = conn.agent().initialize(init).await.unwrap();
    assert_eq!(answer.protocol_version, ProtocolVersion::V1);
    assert!(answer.agent_capabilities.load_session);
    assert!(answer.agent_capabilities.prompt_capabilities.image);
    assert!(answer.agent_capabilities.mcp_capabilities.http);
    assert_eq!(answer.agent_info.unwrap().name, "v2 agent");
    conn.agent()
        .new_session(NewSessionRequest::new("/w", Vec::<McpServer>::new()))
        .await
        .unwrap()
}

fn drain(rx: &mut mpsc::UnboundedReceiver<Value>) -> Vec<Value> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

#[tokio::test]
async fn a_v2_turn_answers_the_v1_prompt_with_its_idle_stop_reason() {
    for at in PLACEMENTS {
        eprintln!("the translation {at:?}");
        let (conn, mut rx, _agent) = setup(at);
        let session = start(&conn).await;
        let modes = session.modes.expect("the mode option is v1 modes");
        assert_eq!(modes.current_mode_id.0, "ask");
        // The option itself reaches the v1 client in v1's shape (`id`): a v1 reader drops an
        // option still in v2's (`configId`), as it did before.
        let options = session.config_options.expect("the config options");
        assert_eq!(options.len(), 1, "{options:?}");
        assert_eq!(options[0].id.0.to_string(), "m");
        // A select's value id, which v1 writes without `type` (v2 tags it `id`).
        let set: SetSessionConfigOptionRequest =
            serde_json::from_value(json!({"sessionId": "s1", "configId": "m", "value": "ask"}))
                .unwrap();
        let answer = conn.agent().set_session_config_option(set).await.unwrap();
        assert_eq!(answer.config_options[0].id.0.to_string(), "m");
        conn.agent()
            .set_session_mode(SetSessionModeRequest::new("s1", "code"))
            .await
            .unwrap();

        let answer = conn
            .agent()
            .prompt(PromptRequest::new("s1", vec![ContentBlock::from("edit")]))
            .await
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let seen = drain(&mut rx);
        let kinds: Vec<&str> = seen
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap_or("permission"))
            .collect();
        // No echo of the prompt, no state updates, no v2 terminal.
        assert_eq!(
            kinds,
            [
                "agent_message_chunk",
                "tool_call",
                "permission",
                "tool_call_update",
                "plan"
            ],
            "{seen:?}"
        );
        assert_eq!(seen[1]["title"], "edit");
        let asked = &seen[2]["permission"]["toolCall"];
        assert_eq!(asked["title"], "Run cargo fmt?");
        assert_eq!(asked["kind"], "execute");
        assert_eq!(asked["rawInput"]["command"], "cargo fmt");
        assert_eq!(seen[3]["content"][0]["content"]["text"], "PATCH");
        assert_eq!(seen[4]["entries"][0]["content"], "fmt");
    }
}

#[tokio::test]
async fn session_load_is_a_resume_whose_replay_arrives_before_the_answer() {
    for at in PLACEMENTS {
        eprintln!("the translation {at:?}");
        let (conn, mut rx, _agent) = setup(at);
        start(&conn).await;
        let load = LoadSessionRequest::new(Vec::<McpServer>::new(), "/w", "s1");
        let answer = conn.agent().load_session(load).await.unwrap();
        assert_eq!(answer.modes.unwrap().current_mode_id.0, "ask");
        let seen = drain(&mut rx);
        assert_eq!(seen[0]["sessionUpdate"], "user_message_chunk");
        assert_eq!(seen[0]["content"]["text"], "earlier");
    }
}

#[tokio::test]
async fn a_v1_cancel_ends_the_v2_turn_as_cancelled() {
    for at in PLACEMENTS {
        eprintln!("the translation {at:?}");
        let (conn, _rx, _agent) = setup(at);
        start(&conn).await;
        let agent = conn.agent().clone();
        let turn = tokio::spawn(async move {
            agent
                .prompt(PromptRequest::new("s1", vec![ContentBlock::from("wait")]))
                .await
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        conn.agent()
            .cancel(CancelNotification::new("s1"))
            .await
            .unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(10), turn)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::Cancelled);
    }
}
