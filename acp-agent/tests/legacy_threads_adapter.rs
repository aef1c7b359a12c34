//! A v1 agent served to a threads editor through `Builder::dialect`, checked byte
//! for byte against a scripted editor that writes what the editors of that dialect wrote: no
//! `"jsonrpc"`, `"params": null`, and ids counted from 0 on each side so they collide. Also
//! the native threads agent with the bad-input table replayed in threads framing.

mod common;

use acp_agent::legacy::AdapterOptions;
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use common::editor::Editor;
use serde_json::{Value, json};

fn connect(agent: impl Agent) -> Editor {
    Editor::connect(|r, w| {
        acp_agent::Builder::new(agent)
            .dialect(acp_agent::Dialect::Threads)
            .legacy(AdapterOptions::default().with_cwd("/home/user/project"))
            .io(r, w);
    })
}

/// A v1 agent that reads a file through the client while it answers, and sends updates the
/// threads dialect cannot show (a thought, a plan, a tool call).
struct Reader;

#[acp_agent::async_trait]
impl Agent for Reader {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        // The adapter offers text-file reads only.
        assert!(p.client_capabilities.fs.read_text_file);
        assert!(!p.client_capabilities.fs.write_text_file);
        assert!(!p.client_capabilities.terminal);
        Ok(serde_json::from_value(json!({"protocolVersion": 1})).unwrap())
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        assert_eq!(p.cwd, "/home/user/project");
        Ok(serde_json::from_value(json!({"sessionId": "thread-1"})).unwrap())
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        if matches!(&p.prompt[0], ContentBlock::Text(t) if t.text == "fail") {
            return Err(Error::internal_error("the model is unavailable"));
        }
        let session = cx.session();
        session.message_chunk("Let me look ").await?;
        session
            .thought_chunk("dropped: threads has no thoughts")
            .await?;
        session.plan(vec![]).await?;
        session
            .start_tool_call(ToolCall::new("t1", "dropped too"))
            .await?;
        let read = cx
            .client()
            .read_text_file(
                ReadTextFileRequest::new(p.session_id.clone(), "/home/user/project/README.md")
                    .line(1)
                    .limit(20),
            )
            .await?;
        assert_eq!(read.content, "# Title\nhello\n");
        // Calls a threads editor cannot serve are refused, not lost.
        let denied = cx
            .client()
            .peer()
            .request::<_, Value>("session/request_permission", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(denied.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
        assert!(denied.message.contains("no permission prompt"), "{denied}");
        session.message_chunk("at the file.").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn a_threads_editor_drives_a_v1_agent_byte_for_byte() {
    let mut e = connect(Reader);
    e.send(r#"{"id":0,"method":"getThreads","params":null}"#)
        .await;
    e.expect(r#"{"id":0,"result":{"threads":[]}}"#).await;
    e.send(r#"{"id":1,"method":"createThread","params":null}"#)
        .await;
    e.expect(r#"{"id":1,"result":{"threadId":"thread-1"}}"#)
        .await;
    e.send(r#"{"id":2,"method":"openThread","params":{"threadId":"thread-1"}}"#)
        .await;
    e.expect(r#"{"id":2,"result":null}"#).await;
    e.send(r#"{"id":3,"method":"sendMessage","params":{"threadId":"thread-1","message":{"role":"user","chunks":[{"type":"text","chunk":"Summarize README.md"}]}}}"#).await;
    // The agent's own ids start at 0 too, while the editor's request 3 is still open.
    e.expect(r#"{"id":0,"method":"streamMessageChunk","params":{"threadId":"thread-1","chunk":{"type":"text","chunk":"Let me look "}}}"#).await;
    e.send(r#"{"id":0,"result":null}"#).await;
    e.expect(r#"{"id":1,"method":"readTextFile","params":{"threadId":"thread-1","path":"/home/user/project/README.md","lineOffset":0,"lineLimit":20}}"#).await;
    e.send(r##"{"id":1,"result":{"version":3,"content":"# Title\nhello\n"}}"##)
        .await;
    e.expect(r#"{"id":2,"method":"streamMessageChunk","params":{"threadId":"thread-1","chunk":{"type":"text","chunk":"at the file."}}}"#).await;
    e.send(r#"{"id":2,"result":null}"#).await;
    e.expect(r#"{"id":3,"result":null}"#).await;

    e.send(r#"{"id":4,"method":"getThreadEntries","params":{"threadId":"thread-1"}}"#)
        .await;
    e.expect(r##"{"id":4,"result":{"entries":[{"type":"message","role":"user","chunks":[{"type":"text","chunk":"Summarize README.md"}]},{"type":"message","role":"assistant","chunks":[{"type":"text","chunk":"Let me look "}]},{"type":"readFile","path":"/home/user/project/README.md","content":"# Title\nhello\n"},{"type":"message","role":"assistant","chunks":[{"type":"text","chunk":"at the file."}]}]}}"##).await;
    e.send(r#"{"id":5,"method":"getThreads","params":null}"#)
        .await;
    let listed = e
        .expect_json(
            json!({"id": 5, "result": {"threads": [{"id": "thread-1", "title": "Summarize README.md", "modifiedAt": null}]}}),
            &["/result/threads/0/modifiedAt"],
        )
        .await;
    let stamp = listed["result"]["threads"][0]["modifiedAt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stamp.len() == 20 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
        "{stamp}"
    );

    e.send(r#"{"id":6,"method":"openThread","params":{"threadId":"nope"}}"#)
        .await;
    e.expect(r#"{"id":6,"error":{"code":-32002,"message":"Thread not found: nope"}}"#)
        .await;
    e.send(r#"{"id":7,"method":"sendMessage","params":{"threadId":"thread-1","message":{"role":"user","chunks":[{"type":"text","chunk":"fail"}]}}}"#).await;
    e.expect(r#"{"id":7,"error":{"code":-32603,"message":"the model is unavailable"}}"#)
        .await;
}

#[tokio::test]
async fn thread_methods_with_bad_params_get_invalid_params_and_the_editor_goes_on() {
    let mut e = connect(Reader);
    // Unit params may come as null, absent or {}; anything else is refused.
    e.send(r#"{"id":0,"method":"getThreads"}"#).await;
    e.expect(r#"{"id":0,"result":{"threads":[]}}"#).await;
    e.send(r#"{"id":1,"method":"getThreads","params":{}}"#)
        .await;
    e.expect(r#"{"id":1,"result":{"threads":[]}}"#).await;
    e.send(r#"{"id":2,"method":"createThread","params":[1]}"#)
        .await;
    let refused: Value = serde_json::from_str(&e.line().await).unwrap();
    assert_eq!(refused["id"], 2);
    assert_eq!(refused["error"]["code"], -32602);
    e.send(r#"{"id":3,"method":"openThread","params":{"thread":"x"}}"#)
        .await;
    let refused: Value = serde_json::from_str(&e.line().await).unwrap();
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(refused["error"]["data"]["field"], "threadId");
    e.send(r#"{"id":4,"method":"getThreadEntries","params":{"threadId":"unknown"}}"#)
        .await;
    e.expect(r#"{"id":4,"error":{"code":-32002,"message":"Thread not found: unknown"}}"#)
        .await;
    e.send(r#"{"id":5,"method":"initialize","params":{"protocolVersion":1}}"#)
        .await;
    let refused: Value = serde_json::from_str(&e.line().await).unwrap();
    assert_eq!(refused["error"]["code"], -32601);
    e.send("not json").await;
    let refused: Value = serde_json::from_str(&e.line().await).unwrap();
    assert_eq!(refused["id"], Value::Null);
    assert_eq!(refused["error"]["code"], -32700);
    assert!(
        refused.get("jsonrpc").is_none(),
        "threads framing never writes jsonrpc"
    );
    e.send(r#"{"id":6,"method":"getThreads","params":null}"#)
        .await;
    e.expect(r#"{"id":6,"result":{"threads":[]}}"#).await;
}

/// A v1 agent with stored sessions: it lists them and replays one on `session/load`.
struct Keeper;

#[acp_agent::async_trait]
impl Agent for Keeper {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(serde_json::from_value(json!({
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "sessionCapabilities": {"list": {}}}
        }))
        .unwrap())
    }

    async fn list_sessions(
        &self,
        p: ListSessionsRequest,
        _cx: &AgentContext,
    ) -> Result<ListSessionsResponse, Error> {
        assert_eq!(p.cwd.as_deref(), Some("/home/user/project"));
        Ok(serde_json::from_value(json!({"sessions": [
            {"sessionId": "old-1", "cwd": "/home/user/project", "title": "Yesterday", "updatedAt": "2025-06-24T08:00:00Z"}
        ]}))
        .unwrap())
    }

    async fn load_session(
        &self,
        p: LoadSessionRequest,
        cx: &AgentContext,
    ) -> Result<LoadSessionResponse, Error> {
        if p.session_id.0 != "old-1" {
            return Err(Error::resource_not_found(format!(
                "no session {}",
                p.session_id.0
            )));
        }
        let session = cx.session(&p.session_id).expect("the load is tracked");
        session.user_chunk("What is 2+2?").await?;
        session.message_chunk("It is ").await?;
        session.message_chunk("4.").await?;
        Ok(LoadSessionResponse::default())
    }
}

#[tokio::test]
async fn stored_sessions_are_listed_and_opening_one_replays_its_history() {
    let mut e = connect(Keeper);
    e.send(r#"{"id":0,"method":"getThreads","params":null}"#)
        .await;
    e.expect(r#"{"id":0,"result":{"threads":[{"id":"old-1","title":"Yesterday","modifiedAt":"2025-06-24T08:00:00Z"}]}}"#).await;
    e.send(r#"{"id":1,"method":"openThread","params":{"threadId":"old-1"}}"#)
        .await;
    e.expect(r#"{"id":1,"result":null}"#).await;
    e.send(r#"{"id":2,"method":"getThreadEntries","params":{"threadId":"old-1"}}"#)
        .await;
    e.expect(r#"{"id":2,"result":{"entries":[{"type":"message","role":"user","chunks":[{"type":"text","chunk":"What is 2+2?"}]},{"type":"message","role":"assistant","chunks":[{"type":"text","chunk":"It is "},{"type":"text","chunk":"4."}]}]}}"#).await;
    // A session the agent cannot load stays unknown.
    e.send(r#"{"id":3,"method":"openThread","params":{"threadId":"gone"}}"#)
        .await;
    e.expect(r#"{"id":3,"error":{"code":-32002,"message":"no session gone"}}"#)
        .await;
    e.send(r#"{"id":4,"method":"getThreadEntries","params":{"threadId":"gone"}}"#)
        .await;
    e.expect(r#"{"id":4,"error":{"code":-32002,"message":"Thread not found: gone"}}"#)
        .await;
}

/// A v1 agent whose every turn streams [`STREAMED`] chunks (`c0`, `c1`, ...).
struct Streamer;

const STREAMED: usize = 100;

#[acp_agent::async_trait]
impl Agent for Streamer {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(serde_json::from_value(json!({"protocolVersion": 1})).unwrap())
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(serde_json::from_value(json!({"sessionId": "thread-1"})).unwrap())
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        for n in 0..STREAMED {
            cx.session().message_chunk(format!("c{n}")).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn chunks_are_streamed_ahead_of_the_editors_answers_and_the_turn_waits_for_them() {
    use std::time::Duration;
    let mut e = connect(Streamer);
    e.send(r#"{"id":0,"method":"createThread","params":null}"#)
        .await;
    e.expect(r#"{"id":0,"result":{"threadId":"thread-1"}}"#)
        .await;
    e.send(r#"{"id":1,"method":"sendMessage","params":{"threadId":"thread-1","message":{"role":"user","chunks":[{"type":"text","chunk":"go"}]}}}"#).await;
    let chunk = |n: usize| {
        format!(
            r#"{{"id":{n},"method":"streamMessageChunk","params":{{"threadId":"thread-1","chunk":{{"type":"text","chunk":"c{n}"}}}}}}"#
        )
    };
    // 64 chunks arrive, in order, while the editor has answered none of them.
    for n in 0..64 {
        e.expect(&chunk(n)).await;
    }
    let early = e.line_within(Duration::from_millis(200)).await;
    assert_eq!(early, None, "a 65th chunk before any answer");
    for n in 0..STREAMED {
        if n + 1 == STREAMED {
            let early = e.line_within(Duration::from_millis(200)).await;
            assert_eq!(early, None, "the turn answered before its last chunk was");
        }
        e.send(&format!(r#"{{"id":{n},"result":null}}"#)).await;
        if n + 64 < STREAMED {
            e.expect(&chunk(n + 64)).await;
        }
    }
    e.expect(r#"{"id":1,"result":null}"#).await;
}
