//! A whole session as one stream (`AgentHandle::session_updates` and `prompt_on`): updates
//! between turns and within them on one route, each turn's result after its updates, more
//! updates than the buffer holds; and steering (`_session/steering`) as the agent answers it.

mod common;

use std::sync::{Arc, Mutex};

use acp_client::steering::SteeringOutcome;
use acp_client::{Client, SessionEvent};
use acp_rpc::{Error, Handler, Params, RawValue, RequestContext, to_raw};
use acp_types::v1::*;
use serde_json::{Value, json};

struct Nothing;
impl Client for Nothing {}

/// On `session/prompt`, streams as many numbered chunks as the prompt's text says, then
/// answers `end_turn`; on `_session/steering`, keeps the params and answers `injected`.
#[derive(Default)]
struct Counter {
    steered: Arc<Mutex<Vec<Value>>>,
}

#[acp_client::async_trait]
impl Handler for Counter {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        if method == "session/new" {
            // One update of another session before the answer, one of the new session
            // right after it (as agents send their command list).
            let other = SessionNotification::new("older", SessionUpdate::agent_message_text("no"));
            cx.peer().notify("session/update", &other).await?;
            let peer = cx.peer().clone();
            let written = cx.response_written();
            tokio::spawn(async move {
                let _ = written.await;
                let first =
                    SessionNotification::new("fresh", SessionUpdate::agent_message_text("first"));
                let _ = peer.notify("session/update", &first).await;
            });
            return to_raw(&json!({"sessionId": "fresh"}));
        }
        if method == "_session/steering" {
            let p: Value = params.parse()?;
            self.steered.lock().unwrap().push(p);
            return to_raw(&json!({"outcome": "injected"}));
        }
        let p: PromptRequest = params.parse()?;
        let n: usize = match &p.prompt[0] {
            ContentBlock::Text(t) => t.text.parse().unwrap(),
            _ => 0,
        };
        for i in 0..n {
            let update = SessionNotification::new(
                p.session_id.0.as_str(),
                SessionUpdate::agent_message_text(i.to_string()),
            );
            cx.peer().notify("session/update", &update).await?;
        }
        to_raw(&json!({"stopReason": "end_turn"}))
    }
}

fn text(update: &SessionUpdate) -> String {
    serde_json::to_value(update).unwrap()["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_session_stream_carries_updates_between_turns_and_each_turns_end_after_its_updates() {
    let (conn, agent) = common::pair(Nothing, Counter::default());
    let handle = conn.agent().clone();
    let mut session = handle.session_updates("s1");
    assert_eq!(session.session_id().0, "s1");
    // Between turns: an update the agent sends on its own reaches the stream.
    let between = SessionNotification::new("s1", SessionUpdate::agent_message_text("idle"));
    agent
        .peer()
        .notify("session/update", &between)
        .await
        .unwrap();
    // Other sessions' updates do not.
    let other = SessionNotification::new("s2", SessionUpdate::agent_message_text("no"));
    agent.peer().notify("session/update", &other).await.unwrap();
    match session.next().await {
        Some(SessionEvent::Update(u)) => assert_eq!(text(&u), "idle"),
        other => panic!("{other:?}"),
    }
    // Two turns, the first longer than the buffer (read while it runs, no deadlock).
    for count in [acp_client::PROMPT_STREAM_BUFFER * 2, 3] {
        handle.prompt_on(
            &mut session,
            PromptRequest::new("s1", [ContentBlock::text(count.to_string())]),
        );
        let mut texts = Vec::new();
        loop {
            match session.next().await {
                Some(SessionEvent::Update(u)) => texts.push(text(&u)),
                Some(SessionEvent::Prompted(result)) => {
                    assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        let expected: Vec<String> = (0..count).map(|i| i.to_string()).collect();
        assert_eq!(texts, expected);
    }
    // A closed connection ends the next turn with its error.
    agent.close();
    handle.prompt_on(
        &mut session,
        PromptRequest::new("s1", [ContentBlock::text("1")]),
    );
    match session.next().await {
        Some(SessionEvent::Prompted(Err(e))) => assert!(e.is_connection_closed(), "{e:?}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_new_sessions_stream_has_the_update_sent_right_after_its_answer() {
    let (conn, _agent) = common::pair(Nothing, Counter::default());
    let (created, mut updates) = conn
        .agent()
        .new_session_stream(NewSessionRequest::new("/w", Vec::<McpServer>::new()))
        .await
        .unwrap();
    assert_eq!(created.session_id.0, "fresh");
    match updates.next().await {
        Some(SessionEvent::Update(u)) => assert_eq!(text(&u), "first"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn steering_sends_the_prompt_and_reads_the_outcome() {
    let counter = Counter::default();
    let steered = counter.steered.clone();
    let (conn, _agent) = common::pair(Nothing, counter);
    let outcome = conn
        .agent()
        .steer(&SessionId("s1".into()), &[ContentBlock::text("faster")])
        .await
        .unwrap();
    assert_eq!(outcome, SteeringOutcome::Injected);
    let params = steered.lock().unwrap()[0].clone();
    assert_eq!(params["sessionId"], "s1");
    assert_eq!(params["prompt"][0]["text"], "faster");
    assert_eq!(
        params["_meta"]["steering"]["idleBehavior"],
        "promptRequired"
    );
}
