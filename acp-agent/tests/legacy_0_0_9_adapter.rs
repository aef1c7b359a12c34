//! A v1 agent served to a 0.0.9 editor through `Builder::dialect`, checked byte for
//! byte against a scripted editor that writes what the dialect's editors wrote (the crate's
//! `"type":"PushToolCallResponse"` tags, `params` left out of `cancelSendMessage`, ids from
//! 0 on each side), including what the adapter drops or refuses.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::legacy::AdapterOptions;
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use common::editor::Editor;
use serde_json::{Value, json};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

/// How many chunks the agent streams for the prompt `stream`.
const STREAMED: usize = 100;

/// What the agent saw: prompts and permission outcomes.
#[derive(Clone, Default)]
struct Seen {
    prompts: Arc<Mutex<Vec<Value>>>,
    outcomes: Arc<Mutex<Vec<RequestPermissionOutcome>>>,
}

/// A v1 agent whose turn covers what the dialect can show, and what it cannot.
struct Worker(Seen);

#[acp_agent::async_trait]
impl Agent for Worker {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({
            "protocolVersion": 1,
            "authMethods": [{"id": "oauth", "name": "Google"}]
        })))
    }

    async fn authenticate(
        &self,
        p: AuthenticateRequest,
        _cx: &AgentContext,
    ) -> Result<AuthenticateResponse, Error> {
        assert_eq!(p.method_id.0, "oauth");
        Ok(AuthenticateResponse::default())
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        assert_eq!(p.cwd, "/home/user/project");
        Ok(v(json!({"sessionId": "s-9"})))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        self.0
            .prompts
            .lock()
            .unwrap()
            .push(serde_json::to_value(&p.prompt).unwrap());
        let ContentBlock::Text(first) = &p.prompt[0] else {
            return Err(Error::invalid_params("text first"));
        };
        let session = cx.session();
        match first.text.as_str() {
            "fail" => return Err(Error::internal_error("the model is unavailable")),
            "wait" => {
                cx.cancelled().await;
                return Ok(PromptResponse::new(StopReason::Cancelled));
            }
            "stream" => {
                for n in 0..STREAMED {
                    session.message_chunk(format!("c{n}")).await?;
                }
                return Ok(PromptResponse::new(StopReason::EndTurn));
            }
            _ => {}
        }
        session.thought_chunk("thinking...").await?;
        session.message_chunk("You said hi").await?;
        // Neither can be shown in 0.0.9: dropped with a logged reason.
        session.plan(vec![]).await?;
        session.current_mode("code").await?;
        let mut edit = ToolCall::new("edit-1", "Edit main.rs");
        edit.kind = ToolKind::Edit;
        edit.locations = vec![v(
            json!({"path": "/home/user/project/src/main.rs", "line": 3}),
        )];
        let edit = session.start_tool_call(edit).await?;
        let outcome = session
            .request_permission(
                edit.blank(),
                v(json!([
                    {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"}
                ])),
            )
            .await?;
        self.0.outcomes.lock().unwrap().push(outcome);
        let read = cx
            .client()
            .read_text_file(v(
                json!({"sessionId": "s-9", "path": "/home/user/project/src/main.rs", "line": 1, "limit": 5}),
            ))
            .await?;
        cx.client()
            .write_text_file(v(
                json!({"sessionId": "s-9", "path": "/home/user/project/src/main.rs", "content": read.content.replace("old", "new")}),
            ))
            .await?;
        // Only the diff's status changes: the adapter fills in the content shown before.
        edit.status(ToolCallStatus::InProgress).await?;
        edit.complete(v(json!([
            {"type": "diff", "path": "/home/user/project/src/main.rs", "oldText": "old", "newText": "new"}
        ])))
        .await?;
        // A terminal was not offered (0.0.9 editors have none): refused locally, never sent.
        let refused = cx
            .client()
            .create_terminal(v(json!({"sessionId": "s-9", "command": "ls"})))
            .await
            .unwrap_err();
        assert_eq!(refused.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

fn connect(seen: &Seen) -> Editor {
    connect_with(seen, acp_agent::Config::default())
}

/// [`connect`] with the connection's `config` (the legacy wire's too).
fn connect_with(seen: &Seen, config: acp_agent::Config) -> Editor {
    let agent = Worker(seen.clone());
    Editor::connect(|r, w| {
        acp_agent::Builder::new(agent)
            .dialect(acp_agent::Dialect::Legacy009)
            .config(config)
            .legacy(AdapterOptions::default().with_cwd("/home/user/project"))
            .io(r, w);
    })
}

#[tokio::test]
async fn a_0_0_9_editor_drives_a_v1_agent_byte_for_byte() {
    let seen = Seen::default();
    let mut e = connect(&seen);
    e.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#,
    )
    .await;
    // The agent lists an auth method: the editor is told it is not authenticated yet.
    e.expect(
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"0.0.9","isAuthenticated":false}}"#,
    )
    .await;
    // authenticate has no params in 0.0.9; the agent's own auth method runs.
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"authenticate"}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;

    e.send(r#"{"jsonrpc":"2.0","id":2,"method":"sendUserMessage","params":{"chunks":[{"text":"hi "},{"path":"src/main.rs"}]}}"#).await;
    // The adapter's own ids start at 0, while the editor's request 2 is open.
    e.expect(r#"{"jsonrpc":"2.0","id":0,"method":"streamAssistantMessageChunk","params":{"chunk":{"thought":"thinking..."}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":1,"method":"streamAssistantMessageChunk","params":{"chunk":{"text":"You said hi"}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":2,"method":"pushToolCall","params":{"label":"Edit main.rs","icon":"pencil","locations":[{"path":"/home/user/project/src/main.rs","line":3}]}}"#).await;
    // The crate's editor tags its answers with the struct's name; the tag is ignored.
    e.send(r#"{"jsonrpc":"2.0","id":2,"result":{"type":"PushToolCallResponse","id":41}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":3,"method":"requestToolCallConfirmation","params":{"label":"Edit main.rs","icon":"pencil","locations":[{"path":"/home/user/project/src/main.rs","line":3}],"confirmation":{"type":"edit","description":"Edit main.rs"}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":3,"result":{"type":"RequestToolCallConfirmationResponse","id":42,"outcome":"allow"}}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":4,"method":"readTextFile","params":{"path":"/home/user/project/src/main.rs","line":1,"limit":5}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":4,"result":{"content":"fn old() {}\n"}}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":5,"method":"writeTextFile","params":{"path":"/home/user/project/src/main.rs","content":"fn new() {}\n"}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":5,"result":null}"#).await;
    // Updates go to the id of the confirmation answer (42), not the push (41); a status-only
    // v1 update still sends the content shown (none yet: null).
    e.expect(r#"{"jsonrpc":"2.0","id":6,"method":"updateToolCall","params":{"toolCallId":42,"status":"running","content":null}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":6,"result":null}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":7,"method":"updateToolCall","params":{"toolCallId":42,"status":"finished","content":{"type":"diff","path":"/home/user/project/src/main.rs","oldText":"old","newText":"new"}}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":7,"result":null}"#).await;
    e.expect(r#"{"jsonrpc":"2.0","id":2,"result":null}"#).await;
    assert_eq!(
        seen.prompts.lock().unwrap()[0],
        json!([
            {"type": "text", "text": "hi "},
            {"type": "resource_link", "name": "src/main.rs", "uri": "file:///home/user/project/src/main.rs"}
        ])
    );
    assert_eq!(
        seen.outcomes.lock().unwrap().pop(),
        Some(RequestPermissionOutcome::selected("ok"))
    );

    // An error from the agent passes through, with its code.
    e.send(r#"{"jsonrpc":"2.0","id":3,"method":"sendUserMessage","params":{"chunks":[{"text":"fail"}]}}"#).await;
    e.expect(
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"the model is unavailable"}}"#,
    )
    .await;

    // cancelSendMessage (no params) cancels the running turn, which then answers null.
    e.send(r#"{"jsonrpc":"2.0","id":4,"method":"sendUserMessage","params":{"chunks":[{"text":"wait"}]}}"#).await;
    e.send(r#"{"jsonrpc":"2.0","id":5,"method":"cancelSendMessage"}"#)
        .await;
    let mut answers = vec![e.line().await, e.line().await];
    answers.sort();
    assert_eq!(
        answers,
        [
            r#"{"jsonrpc":"2.0","id":4,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":null}"#
        ]
    );
    // With nothing running, cancelSendMessage is a no-op.
    e.send(r#"{"jsonrpc":"2.0","id":6,"method":"cancelSendMessage"}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":6,"result":null}"#).await;
}

#[tokio::test]
async fn a_rejected_confirmation_selects_the_reject_option_and_bad_input_is_answered() {
    let seen = Seen::default();
    let mut e = connect(&seen);
    // A v1-style initialize (integer version) is answered in 0.0.9 terms: the editor decides.
    e.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#)
        .await;
    e.expect(
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"0.0.9","isAuthenticated":false}}"#,
    )
    .await;
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"sendUserMessage","params":{"chunks":[{"text":"hi"}]}}"#).await;
    for id in 0..2 {
        let _chunk = e.line().await;
        e.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#))
            .await;
    }
    let _push = e.line().await;
    e.send(r#"{"jsonrpc":"2.0","id":2,"result":{"id":0}}"#)
        .await;
    let _confirm = e.line().await;
    e.send(r#"{"jsonrpc":"2.0","id":3,"result":{"id":1,"outcome":"reject"}}"#)
        .await;
    // The agent goes on (reads, writes, updates); answer everything with what it needs.
    let read = e.line().await;
    assert!(read.contains("readTextFile"), "{read}");
    e.send(r#"{"jsonrpc":"2.0","id":4,"result":{"content":"old"}}"#)
        .await;
    for id in 5..8 {
        let _ = e.line().await;
        e.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#))
            .await;
    }
    e.expect(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;
    assert_eq!(
        seen.outcomes.lock().unwrap().pop(),
        Some(RequestPermissionOutcome::selected("no"))
    );
    // Bad params name the field; unknown methods are -32601; the connection goes on.
    e.send(r#"{"jsonrpc":"2.0","id":2,"method":"sendUserMessage","params":{"chunks":"hi"}}"#)
        .await;
    let refused: Value = serde_json::from_str(&e.line().await).unwrap();
    assert_eq!(refused["id"], 2);
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(refused["error"]["data"]["field"], "chunks");
    e.send(r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{}}"#)
        .await;
    let refused: Value = serde_json::from_str(&e.line().await).unwrap();
    assert_eq!(refused["error"]["code"], -32601);
    e.send(r#"{"jsonrpc":"2.0","id":4,"method":"cancelSendMessage"}"#)
        .await;
    e.expect(r#"{"jsonrpc":"2.0","id":4,"result":null}"#).await;
}

#[tokio::test]
async fn chunks_are_streamed_ahead_of_the_editors_answers_and_the_turn_waits_for_them() {
    let seen = Seen::default();
    let mut e = connect(&seen);
    e.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#,
    )
    .await;
    let _ = e.line().await;
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"sendUserMessage","params":{"chunks":[{"text":"stream"}]}}"#).await;
    // 64 chunks arrive, in order, while the editor has answered none of them.
    let chunk = |n: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"streamAssistantMessageChunk","params":{{"chunk":{{"text":"c{n}"}}}}}}"#
        )
    };
    for n in 0..64 {
        e.expect(&chunk(n)).await;
    }
    // The window is full: nothing more until the editor answers.
    let early = e.line_within(Duration::from_millis(200)).await;
    assert_eq!(early, None, "a 65th chunk before any answer");
    // Each answer lets one more through; a refused chunk is logged and the turn goes on.
    for n in 0..STREAMED {
        let answer = if n == 5 {
            format!(r#"{{"jsonrpc":"2.0","id":{n},"error":{{"code":-32000,"message":"not now"}}}}"#)
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":{n},"result":null}}"#)
        };
        if n + 1 == STREAMED {
            // Every chunk is sent and the agent's turn is over, but the editor has not
            // answered the last chunk: the turn is not answered yet.
            let early = e.line_within(Duration::from_millis(200)).await;
            assert_eq!(early, None, "the turn answered before its last chunk was");
        }
        e.send(&answer).await;
        if n + 64 < STREAMED {
            e.expect(&chunk(n + 64)).await;
        }
    }
    e.expect(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;
}

/// An editor that answers none of its streamed chunks does not hold the turn for ever: each
/// answer is waited for at most the legacy connection's default timeout (a minute without
/// one), then counts as a refusal, and the turn is answered once every chunk is sent.
#[tokio::test]
async fn an_editor_that_never_answers_its_chunks_gets_them_all_and_the_turns_answer() {
    let seen = Seen::default();
    let config =
        acp_agent::Config::default().with_default_timeout(Some(Duration::from_millis(300)));
    let mut e = connect_with(&seen, config);
    e.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#,
    )
    .await;
    let _ = e.line().await;
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"sendUserMessage","params":{"chunks":[{"text":"stream"}]}}"#).await;
    let mut chunks = 0;
    let answer = loop {
        let line = e
            .line_within(Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("the turn is not answered, {chunks} chunks sent"));
        let message: Value = serde_json::from_str(&line).unwrap();
        match message["method"].as_str() {
            Some("streamAssistantMessageChunk") => {
                assert_eq!(message["params"]["chunk"]["text"], format!("c{chunks}"));
                chunks += 1;
            }
            Some(other) => panic!("unexpected request {other}: {line}"),
            None => break message,
        }
    };
    assert_eq!(chunks, STREAMED, "every chunk is sent");
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 1, "result": null}));
}
