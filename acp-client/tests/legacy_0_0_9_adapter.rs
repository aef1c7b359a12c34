//! A v1 client driving a 0.0.9 agent through `Builder::dialect`, byte for byte
//! against the wire Gemini CLI 0.1.x wrote (chunks fired back to back without waiting,
//! explicit `"content": null`, `"description": null` and `"locations": []`, a tool call id
//! echoed from a confirmation answer, ids counted from 0 on each side), plus the native 0.0.9
//! pair, the chain through both adapters, and what the adapter refuses.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::Dialect;
use acp_client::legacy::AdapterOptions;
use acp_client::legacy::v0_0_9::{self as zero_nine, SESSION_ID};
use acp_client::{Client, PromptEvent};
use acp_rpc::{Error, ErrorCode};
use acp_types::legacy::v0_0_9 as z;
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

fn init() -> InitializeRequest {
    v(json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}))
}

/// A v1 client that records updates and answers permission requests with "allow once".
#[derive(Default, Clone)]
struct Recorder {
    updates: Arc<Mutex<Vec<SessionUpdate>>>,
    permissions: Arc<Mutex<Vec<RequestPermissionRequest>>>,
}

#[acp_client::async_trait]
impl Client for Recorder {
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        assert_eq!(n.session_id.0, SESSION_ID);
        self.updates.lock().unwrap().push(n.update);
        Ok(())
    }
    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let once = p
            .options
            .iter()
            .find(|o| o.kind == PermissionOptionKind::AllowOnce)
            .unwrap()
            .option_id
            .clone();
        self.permissions.lock().unwrap().push(p);
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::selected(once),
        ))
    }
}

/// The agent's end of the wire, scripted line by line.
struct ScriptedAgent {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
}

impl ScriptedAgent {
    async fn send(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    /// Asserts the next line is the message `expected`: the same members with the same
    /// values (`"params"` left out is not `"params": null`), in any key order.
    async fn expect(&mut self, expected: &str) {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("the client writes within 5 s")
            .unwrap()
            .expect("the client keeps the connection open");
        let got: Value = serde_json::from_str(&line).expect("the client writes JSON");
        let want: Value = serde_json::from_str(expected).expect("the transcript is JSON");
        assert_eq!(got, want, "\n   got: {line}\nwanted: {expected}");
    }
}

fn scripted(client: Recorder) -> (acp_client::ClientConnection, ScriptedAgent) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    let conn = acp_client::Builder::new(client)
        .dialect(Dialect::Legacy009)
        .legacy(AdapterOptions::default())
        .io(r, w)
        .unwrap();
    let (r, w) = tokio::io::split(theirs);
    (
        conn,
        ScriptedAgent {
            lines: BufReader::new(r).lines(),
            out: w,
        },
    )
}

#[tokio::test]
async fn a_v1_client_drives_a_gemini_like_agent_byte_for_byte() {
    let client = Recorder::default();
    let (conn, mut agent) = scripted(client.clone());
    let handle = conn.agent().clone();

    let initialized = tokio::spawn({
        let handle = handle.clone();
        async move { handle.initialize(init()).await }
    });
    agent
        .expect(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#)
        .await;
    agent
        .send(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"0.0.9","isAuthenticated":true}}"#)
        .await;
    let initialized = initialized.await.unwrap().unwrap();
    assert_eq!(initialized.protocol_version, ProtocolVersion::LATEST);
    assert!(initialized.auth_methods.is_empty());
    assert!(!initialized.agent_capabilities.load_session);

    // session/new crosses nothing: the dialect has one implicit conversation.
    let session = handle
        .new_session(v(json!({"cwd": "/p", "mcpServers": []})))
        .await
        .unwrap()
        .session_id;
    assert_eq!(session.0, SESSION_ID);

    let turn = tokio::spawn({
        let handle = handle.clone();
        let session = session.clone();
        async move {
            handle
                .prompt_stream(PromptRequest::new(
                    session,
                    v::<Vec<ContentBlock>>(json!([
                        {"type": "text", "text": "hi "},
                        {"type": "resource_link", "name": "main.rs", "uri": "file://src/main.rs"}
                    ])),
                ))
                .collect()
                .await
        }
    });
    agent
        .expect(r#"{"jsonrpc":"2.0","id":1,"method":"sendUserMessage","params":{"chunks":[{"text":"hi "},{"path":"src/main.rs"}]}}"#)
        .await;
    // What Gemini CLI 0.1.20 wrote (from the recorded transcript, labels shortened).
    agent.send(r#"{"jsonrpc":"2.0","id":0,"method":"pushToolCall","params":{"icon":"fileSearch","label":"Read src/main.rs"}}"#).await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":0,"result":{"id":0}}"#)
        .await;
    agent.send(r####"{"jsonrpc":"2.0","id":1,"method":"updateToolCall","params":{"toolCallId":0,"status":"finished","content":{"type":"markdown","markdown":"### ReadManyFiles Result"}}}"####).await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":1,"result":null}"#)
        .await;
    // Two chunks sent back to back, before either answer.
    agent.send(r#"{"jsonrpc":"2.0","id":2,"method":"streamAssistantMessageChunk","params":{"chunk":{"thought":"Considering the request"}}}"#).await;
    agent.send(r#"{"jsonrpc":"2.0","id":3,"method":"streamAssistantMessageChunk","params":{"chunk":{"text":"Hello from the fake model. "}}}"#).await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":2,"result":null}"#)
        .await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":3,"result":null}"#)
        .await;
    agent.send(r#"{"jsonrpc":"2.0","id":4,"method":"pushToolCall","params":{"icon":"folder","label":".","locations":[]}}"#).await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":4,"result":{"id":1}}"#)
        .await;
    agent.send(r#"{"jsonrpc":"2.0","id":5,"method":"requestToolCallConfirmation","params":{"label":"Fetch http://127.0.0.1:8765/page","icon":"globe","content":null,"confirmation":{"type":"fetch","urls":["http://127.0.0.1:8765/page"],"description":null},"locations":[]}}"#).await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":5,"result":{"id":2,"outcome":"allow"}}"#)
        .await;
    agent.send(r#"{"jsonrpc":"2.0","id":6,"method":"updateToolCall","params":{"toolCallId":2,"status":"error","content":{"type":"markdown","markdown":"fetch failed"}}}"#).await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":6,"result":null}"#)
        .await;
    // The last chunk and the turn's answer in one write, the chunk unanswered yet.
    agent.send("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"streamAssistantMessageChunk\",\"params\":{\"chunk\":{\"text\":\"All done.\"}}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}").await;
    agent
        .expect(r#"{"jsonrpc":"2.0","id":7,"result":null}"#)
        .await;

    let (updates, result) = turn.await.unwrap();
    assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
    let updates = serde_json::to_value(&updates).unwrap();
    assert_eq!(
        updates,
        json!([
            {"sessionUpdate": "tool_call", "toolCallId": "tool-0", "title": "Read src/main.rs", "kind": "read", "status": "in_progress"},
            {"sessionUpdate": "tool_call_update", "toolCallId": "tool-0", "status": "completed",
             "content": [{"type": "content", "content": {"type": "text", "text": "### ReadManyFiles Result"}}]},
            {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Considering the request"}},
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello from the fake model. "}},
            {"sessionUpdate": "tool_call", "toolCallId": "tool-1", "title": ".", "kind": "search", "status": "in_progress"},
            {"sessionUpdate": "tool_call", "toolCallId": "tool-2", "title": "Fetch http://127.0.0.1:8765/page", "kind": "fetch",
             "rawInput": {"type": "fetch", "urls": ["http://127.0.0.1:8765/page"]}},
            {"sessionUpdate": "tool_call_update", "toolCallId": "tool-2", "status": "failed",
             "content": [{"type": "content", "content": {"type": "text", "text": "fetch failed"}}]},
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "All done."}}
        ])
    );
    let asked = client.permissions.lock().unwrap().pop().unwrap();
    assert_eq!(asked.tool_call.tool_call_id.0, "tool-2");
    let kinds: Vec<_> = asked.options.iter().map(|o| o.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::RejectOnce
        ]
    );

    // session/cancel while a turn runs: cancelSendMessage with its params left out, and
    // the turn ends "cancelled" whatever the agent answers.
    let turn = tokio::spawn({
        let handle = handle.clone();
        let session = session.clone();
        async move {
            handle
                .prompt(PromptRequest::new(session, [ContentBlock::text("again")]))
                .await
        }
    });
    agent
        .expect(r#"{"jsonrpc":"2.0","id":2,"method":"sendUserMessage","params":{"chunks":[{"text":"again"}]}}"#)
        .await;
    handle
        .cancel(CancelNotification::new(session.clone()))
        .await
        .unwrap();
    agent
        .expect(r#"{"jsonrpc":"2.0","id":3,"method":"cancelSendMessage"}"#)
        .await;
    agent
        .send(r#"{"jsonrpc":"2.0","id":3,"result":null}"#)
        .await;
    agent
        .send(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"details":"aborted"}}}"#)
        .await;
    assert_eq!(
        turn.await.unwrap().unwrap().stop_reason,
        StopReason::Cancelled
    );

    // An error answer to a turn that was not cancelled reaches the client as it was sent.
    let turn = tokio::spawn({
        let handle = handle.clone();
        let session = session.clone();
        async move {
            handle
                .prompt(PromptRequest::new(session, [ContentBlock::text("fail")]))
                .await
        }
    });
    agent
        .expect(r#"{"jsonrpc":"2.0","id":4,"method":"sendUserMessage","params":{"chunks":[{"text":"fail"}]}}"#)
        .await;
    agent
        .send(r#"{"jsonrpc":"2.0","id":4,"error":{"code":429,"message":"Rate limit exceeded. Try again later."}}"#)
        .await;
    let error = turn.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode(429));
    assert_eq!(error.message, "Rate limit exceeded. Try again later.");
}

#[tokio::test]
async fn what_a_0_0_9_agent_cannot_do_is_refused_clearly() {
    let (conn, mut agent) = scripted(Recorder::default());
    let handle = conn.agent().clone();
    let initialized = tokio::spawn({
        let handle = handle.clone();
        async move { handle.initialize(init()).await }
    });
    agent.expect(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#).await;
    // Not authenticated: one agent-run auth method is listed, and authenticate reaches the
    // agent with its params left out.
    agent
        .send(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"0.0.9","isAuthenticated":false}}"#)
        .await;
    let initialized = initialized.await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(&initialized.auth_methods).unwrap(),
        json!([{"id": "agent-login", "name": "Log in", "description": "The agent runs its own login flow."}])
    );
    let auth = tokio::spawn({
        let handle = handle.clone();
        async move {
            handle
                .authenticate(v(json!({"methodId": "agent-login"})))
                .await
        }
    });
    agent
        .expect(r#"{"jsonrpc":"2.0","id":1,"method":"authenticate"}"#)
        .await;
    agent
        .send(r#"{"jsonrpc":"2.0","id":1,"result":null}"#)
        .await;
    auth.await.unwrap().unwrap();

    // Before session/new the agent's calls have nowhere to go.
    agent.send(r#"{"jsonrpc":"2.0","id":0,"method":"streamAssistantMessageChunk","params":{"chunk":{"text":"early"}}}"#).await;
    agent.expect(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"streamAssistantMessageChunk before session/new: the v1 client has no session to show it in","data":{"dialect":"legacy-0.0.9","method":"streamAssistantMessageChunk"}}}"#).await;

    let session = handle
        .new_session(v(json!({"cwd": "/p", "mcpServers": []})))
        .await
        .unwrap()
        .session_id;
    // One conversation only.
    let again = handle
        .new_session(v(json!({"cwd": "/p", "mcpServers": []})))
        .await
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::INVALID_REQUEST);
    // An image cannot be sent: refused before anything is written.
    let refused = handle
        .prompt(PromptRequest::new(
            session.clone(),
            v::<Vec<ContentBlock>>(json!([{"type": "text", "text": "look"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}])),
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(refused.data, Some(json!({"field": "prompt[1]"})));
    // Methods the dialect lacks.
    let refused = handle
        .load_session(v(
            json!({"sessionId": SESSION_ID, "cwd": "/p", "mcpServers": []}),
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::METHOD_NOT_FOUND);
    // An unknown session.
    let refused = handle
        .prompt(PromptRequest::new("other", [ContentBlock::text("x")]))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::RESOURCE_NOT_FOUND);
    // The client did not advertise writes and no sandbox was given: -32601, saying so.
    agent.send(r#"{"jsonrpc":"2.0","id":1,"method":"writeTextFile","params":{"path":"/p/a","content":"x"}}"#).await;
    agent.expect(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"writeTextFile: the v1 client does not offer this file method and no file system was configured (AdapterOptions::with_fs)","data":{"dialect":"legacy-0.0.9","method":"writeTextFile"}}}"#).await;
    // An update for a tool call id never handed out.
    agent.send(r#"{"jsonrpc":"2.0","id":2,"method":"updateToolCall","params":{"toolCallId":9,"status":"finished","content":null}}"#).await;
    agent.expect(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool call id 9: ids come from pushToolCall or requestToolCallConfirmation","data":{"field":"toolCallId"}}}"#).await;
}

/// A v1 agent for the chain through both adapters.
struct Echo;

#[acp_agent::async_trait]
impl acp_agent::Agent for Echo {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({"protocolVersion": 1})))
    }
    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(v(json!({"sessionId": "inner-1"})))
    }
    async fn prompt(
        &self,
        p: PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<PromptResponse, Error> {
        let session = cx.session();
        session.thought_chunk("hmm").await?;
        let mut call = ToolCall::new("t-1", "Edit a.rs");
        call.kind = ToolKind::Edit;
        let call = session.start_tool_call(call).await?;
        let outcome = session
            .request_permission(
                call.blank(),
                v(json!([
                    {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "no", "name": "No", "kind": "reject_once"}
                ])),
            )
            .await?;
        assert_eq!(outcome, RequestPermissionOutcome::selected("yes"));
        call.complete(v(
            json!([{"type": "diff", "path": "/p/a.rs", "oldText": "a", "newText": "b"}]),
        ))
        .await?;
        let ContentBlock::Text(text) = &p.prompt[0] else {
            unreachable!()
        };
        session.message_chunk(format!("echo {}", text.text)).await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn a_v1_client_and_a_v1_agent_talk_through_the_0_0_9_dialect() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    acp_agent::Builder::new(Echo)
        .dialect(acp_agent::Dialect::Legacy009)
        .legacy(Default::default())
        .io(ar, aw);
    let client = Recorder::default();
    let conn = acp_client::Builder::new(client.clone())
        .dialect(Dialect::Legacy009)
        .legacy(AdapterOptions::default())
        .io(br, bw)
        .unwrap();
    let agent = conn.agent();
    agent.initialize(init()).await.unwrap();
    let session = agent
        .new_session(v(json!({"cwd": "/p", "mcpServers": []})))
        .await
        .unwrap()
        .session_id;
    let mut turn = agent.prompt_stream(PromptRequest::new(session, [ContentBlock::text("ping")]));
    let mut kinds = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), turn.next())
            .await
            .unwrap()
        {
            Some(PromptEvent::Update(u)) => {
                kinds.push(serde_json::to_value(&u).unwrap()["sessionUpdate"].clone())
            }
            Some(PromptEvent::Done(r)) => {
                assert_eq!(r.unwrap().stop_reason, StopReason::EndTurn);
                break;
            }
            None => panic!("the stream ended without a result"),
        }
    }
    // The tool call crosses twice: announced (in progress), then, for the permission, shown
    // again as pending under the id of the confirmation.
    assert_eq!(
        kinds,
        [
            "agent_thought_chunk",
            "tool_call",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    let updates = client.updates.lock().unwrap().clone();
    let SessionUpdate::ToolCallUpdate(done) = &updates[3] else {
        panic!("{updates:?}")
    };
    assert_eq!(done.status, Some(ToolCallStatus::Completed));
    assert!(
        matches!(&done.content.as_deref(), Some([ToolCallContent::Diff(d)]) if d.new_text == "b")
    );
    assert_eq!(updates[4], SessionUpdate::agent_message_text("echo ping"));
}

/// A native 0.0.9 agent that pushes a tool call and streams.
struct NativeAgent;

#[acp_agent::async_trait]
impl acp_agent::legacy::v0_0_9::Agent for NativeAgent {
    async fn send_user_message(
        &self,
        p: z::SendUserMessageParams,
        cx: &acp_agent::legacy::v0_0_9::Context,
    ) -> Result<(), Error> {
        let pushed = cx
            .client()
            .push_tool_call(z::PushToolCallParams::new("Look", z::Icon::FileSearch))
            .await?;
        cx.client()
            .update_tool_call(z::UpdateToolCallParams::new(
                pushed.id,
                z::ToolCallStatus::Finished,
            ))
            .await?;
        let z::UserMessageChunk::Text(text) = &p.chunks[0] else {
            unreachable!()
        };
        cx.client()
            .stream_text(format!("hello {}", text.text))
            .await
    }
}

#[derive(Default, Clone)]
struct NativeClient(Arc<Mutex<Vec<String>>>);

#[acp_client::async_trait]
impl zero_nine::Client for NativeClient {
    async fn stream_assistant_message_chunk(
        &self,
        p: z::StreamAssistantMessageChunkParams,
    ) -> Result<(), Error> {
        if let z::AssistantMessageChunk::Text(t) = p.chunk {
            self.0.lock().unwrap().push(t.text);
        }
        Ok(())
    }
    async fn push_tool_call(
        &self,
        p: z::PushToolCallParams,
    ) -> Result<z::PushToolCallResponse, Error> {
        self.0.lock().unwrap().push(format!("push {}", p.label));
        Ok(z::PushToolCallResponse::new(z::ToolCallId(7)))
    }
    async fn update_tool_call(&self, p: z::UpdateToolCallParams) -> Result<(), Error> {
        self.0
            .lock()
            .unwrap()
            .push(format!("update {} {}", p.tool_call_id.0, p.status));
        Ok(())
    }
}

#[tokio::test]
async fn the_native_0_0_9_client_and_agent_talk_to_each_other() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    acp_agent::legacy::v0_0_9::serve(NativeAgent, ar, aw);
    let client = NativeClient::default();
    let conn = zero_nine::connect(client.clone(), br, bw);
    let init = conn.agent().initialize().await.unwrap();
    assert!(init.is_authenticated);
    conn.agent()
        .send_user_message(z::SendUserMessageParams::new([
            z::TextUserMessageChunk::new("you").into(),
        ]))
        .await
        .unwrap();
    assert_eq!(
        *client.0.lock().unwrap(),
        ["push Look", "update 7 finished", "hello you"]
    );
    // cancelSendMessage with nothing running: the native agent's default answers null.
    conn.agent().cancel_send_message().await.unwrap();
    // readTextFile is not implemented by this client: the default answers -32601.
    let (a, b) = tokio::io::duplex(1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let editor = zero_nine::connect(NativeClient::default(), ar, aw);
    let agent = acp_agent::legacy::v0_0_9::serve(NativeAgent, br, bw);
    let missing = agent
        .client()
        .read_text_file(z::ReadTextFileParams::new("/a"))
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::METHOD_NOT_FOUND);
    drop(editor);
}
