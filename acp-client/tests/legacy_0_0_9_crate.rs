//! The 0.0.9 dialect against its real implementation, crates.io `agentic-coding-protocol`
//! 0.0.9 (futures IO through tokio-util's compat layer, `!Send` handlers on a `LocalSet`):
//!
//! * their editor (`AgentConnection`) drives our v1 agent, served by `acp_agent::negotiate`,
//!   which detects the dialect and runs the 0.0.9 adapter;
//! * our v1 client, through `acp_client::negotiate` and the 0.0.9 adapter, drives their
//!   `Agent` (which silently drops the v1 handshake, so the negotiation falls back to 0.0.9
//!   after the probe timeout).
//!
//! Both cover streaming (text and thoughts), `pushToolCall` + `updateToolCall`,
//! `requestToolCallConfirmation` with each outcome, `readTextFile`/`writeTextFile`,
//! `cancelSendMessage`, and an error reply.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::Dialect;
use acp_rpc::Error;
use acp_types::v1::*;
use agentic_coding_protocol as old;
use serde_json::{Value, json};
use tokio::task::LocalSet;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 10 s"))
}

// ----------------------------------------------------------------------------------------
// Their editor, our agent.
// ----------------------------------------------------------------------------------------

/// Their editor: records what it is asked, allocates tool call ids from 100, answers
/// confirmations with the outcome the test sets.
#[derive(Clone, Default)]
struct OldEditor {
    events: Rc<RefCell<Vec<String>>>,
    next_id: Rc<Cell<u64>>,
    outcome: Rc<Cell<Option<old::ToolCallConfirmationOutcome>>>,
    /// The confirmation of each `requestToolCallConfirmation`, as JSON.
    confirmations: Rc<RefCell<Vec<Value>>>,
}

impl OldEditor {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.borrow_mut())
    }
    fn id(&self) -> old::ToolCallId {
        let id = 100 + self.next_id.get();
        self.next_id.set(self.next_id.get() + 1);
        old::ToolCallId(id)
    }
}

impl old::Client for OldEditor {
    async fn stream_assistant_message_chunk(
        &self,
        p: old::StreamAssistantMessageChunkParams,
    ) -> Result<(), old::Error> {
        let event = match p.chunk {
            old::AssistantMessageChunk::Text { text } => format!("text:{text}"),
            old::AssistantMessageChunk::Thought { thought } => format!("thought:{thought}"),
        };
        self.events.borrow_mut().push(event);
        Ok(())
    }

    async fn request_tool_call_confirmation(
        &self,
        p: old::RequestToolCallConfirmationParams,
    ) -> Result<old::RequestToolCallConfirmationResponse, old::Error> {
        self.confirmations
            .borrow_mut()
            .push(serde_json::to_value(&p.confirmation).unwrap());
        self.events.borrow_mut().push(format!(
            "confirm:{}:{:?}",
            p.tool_call.label, p.tool_call.icon
        ));
        Ok(old::RequestToolCallConfirmationResponse {
            id: self.id(),
            outcome: self.outcome.get().expect("the test set an outcome"),
        })
    }

    async fn push_tool_call(
        &self,
        p: old::PushToolCallParams,
    ) -> Result<old::PushToolCallResponse, old::Error> {
        let locations: Vec<_> = p
            .locations
            .iter()
            .map(|l| l.path.display().to_string())
            .collect();
        self.events.borrow_mut().push(format!(
            "push:{}:{:?}:{}",
            p.label,
            p.icon,
            locations.join(",")
        ));
        Ok(old::PushToolCallResponse { id: self.id() })
    }

    async fn update_tool_call(&self, p: old::UpdateToolCallParams) -> Result<(), old::Error> {
        let content = match p.content {
            Some(old::ToolCallContent::Markdown { markdown }) => markdown,
            Some(old::ToolCallContent::Diff { diff }) => format!("diff {}", diff.path.display()),
            None => "-".into(),
        };
        self.events.borrow_mut().push(format!(
            "update:{}:{:?}:{content}",
            p.tool_call_id.0, p.status
        ));
        Ok(())
    }

    async fn write_text_file(&self, p: old::WriteTextFileParams) -> Result<(), old::Error> {
        self.events
            .borrow_mut()
            .push(format!("write:{}:{}", p.path.display(), p.content));
        Ok(())
    }

    async fn read_text_file(
        &self,
        p: old::ReadTextFileParams,
    ) -> Result<old::ReadTextFileResponse, old::Error> {
        self.events.borrow_mut().push(format!(
            "read:{}:{:?}:{:?}",
            p.path.display(),
            p.line,
            p.limit
        ));
        Ok(old::ReadTextFileResponse {
            content: "hello from the editor\n".into(),
        })
    }
}

/// Our v1 agent: what it does depends on the prompt's first text.
#[derive(Clone, Default)]
struct OurAgent {
    /// Every prompt it received, as JSON.
    prompts: Arc<Mutex<Vec<Value>>>,
    /// The permission outcome of each `confirm` prompt.
    outcomes: Arc<Mutex<Vec<RequestPermissionOutcome>>>,
}

fn options() -> Vec<PermissionOption> {
    v(json!([
        {"optionId": "once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        {"optionId": "never", "name": "Never", "kind": "reject_always"}
    ]))
}

#[acp_agent::async_trait]
impl acp_agent::Agent for OurAgent {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<InitializeResponse, Error> {
        // The adapter offers file reads and writes, no terminal.
        assert!(p.client_capabilities.fs.read_text_file);
        assert!(p.client_capabilities.fs.write_text_file);
        assert!(!p.client_capabilities.terminal);
        Ok(v(json!({"protocolVersion": 1})))
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        assert_eq!(p.cwd, "/work");
        Ok(v(json!({"sessionId": "s-1"})))
    }

    async fn prompt(
        &self,
        p: PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<PromptResponse, Error> {
        self.prompts
            .lock()
            .unwrap()
            .push(serde_json::to_value(&p.prompt).unwrap());
        let ContentBlock::Text(first) = &p.prompt[0] else {
            return Err(Error::invalid_params("text first"));
        };
        let session = cx.session();
        match first.text.as_str() {
            "stream" => {
                session.thought_chunk("thinking...").await?;
                session.message_chunk("Hello ").await?;
                // Dropped with a logged reason: 0.0.9 has no plans.
                session.plan(vec![]).await?;
                session.message_chunk("world").await?;
            }
            "tools" => {
                let mut call = ToolCall::new("read-1", "Read README.md");
                call.kind = ToolKind::Read;
                call.locations = vec![v(json!({"path": "/work/README.md", "line": 1}))];
                let call = session.start_tool_call(call).await?;
                let read = cx
                    .client()
                    .read_text_file(v(
                        json!({"sessionId": "s-1", "path": "/work/README.md", "line": 1, "limit": 10}),
                    ))
                    .await?;
                call.complete(vec![ToolCallContent::content(format!(
                    "read {} bytes",
                    read.content.len()
                ))])
                .await?;
            }
            "confirm" => {
                let mut call = ToolCall::new("run-1", "Run ls");
                call.kind = ToolKind::Execute;
                call.raw_input = Some(json!({"command": "ls -la"}));
                let call = session.start_tool_call(call).await?;
                let outcome = session.request_permission(call.blank(), options()).await?;
                let allowed = matches!(&outcome, RequestPermissionOutcome::Selected(s) if s.option_id.0 == "once" || s.option_id.0 == "always");
                self.outcomes.lock().unwrap().push(outcome);
                if allowed {
                    cx.client()
                        .write_text_file(v(
                            json!({"sessionId": "s-1", "path": "/work/out.txt", "content": "ran ls"}),
                        ))
                        .await?;
                    call.status(ToolCallStatus::Completed).await?;
                }
            }
            "fail" => return Err(Error::internal_error("the model is unavailable")),
            "wait" => {
                session.message_chunk("waiting").await?;
                cx.cancelled().await;
                return Ok(PromptResponse::new(StopReason::Cancelled));
            }
            other => return Err(Error::invalid_params(format!("unknown script {other}"))),
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

fn message(chunks: Value) -> old::SendUserMessageParams {
    serde_json::from_value(json!({ "chunks": chunks })).unwrap()
}

#[tokio::test]
async fn their_editor_drives_our_v1_agent_through_negotiation_and_the_adapter() {
    LocalSet::new()
        .run_until(async {
            let (a, b) = tokio::io::duplex(64 * 1024);
            let (ar, aw) = tokio::io::split(a);
            let (br, bw) = tokio::io::split(b);
            let agent = OurAgent::default();
            let served = tokio::spawn(acp_agent::negotiate::serve(
                agent.clone(),
                ar,
                aw,
                acp_agent::negotiate::NegotiateOptions::default().with_legacy_cwd("/work"),
            ));
            let editor = OldEditor::default();
            let (conn, io) = old::AgentConnection::connect_to_agent(
                editor.clone(),
                bw.compat_write(),
                br.compat(),
                |fut| {
                    tokio::task::spawn_local(fut);
                },
            );
            tokio::task::spawn_local(io);

            // Their version check (an exact "0.0.9") passes.
            let init = within("initialize", conn.initialize()).await.unwrap();
            assert!(init.is_authenticated);
            let served = served.await.unwrap().unwrap();
            assert_eq!(served.dialect(), Dialect::Legacy009);

            // Streaming, with a path mention resolved against the session's cwd.
            within(
                "stream",
                conn.request(message(json!([{"text": "stream"}, {"path": "src/main.rs"}]))),
            )
            .await
            .unwrap();
            assert_eq!(
                editor.take(),
                ["thought:thinking...", "text:Hello ", "text:world"]
            );
            assert_eq!(
                agent.prompts.lock().unwrap()[0],
                json!([
                    {"type": "text", "text": "stream"},
                    {"type": "resource_link", "name": "src/main.rs", "uri": "file:///work/src/main.rs"}
                ])
            );

            // A tool call: pushed, the file read through the editor, then updated under the
            // id the editor chose.
            within("tools", conn.request(message(json!([{"text": "tools"}]))))
                .await
                .unwrap();
            assert_eq!(
                editor.take(),
                [
                    "push:Read README.md:FileSearch:/work/README.md",
                    "read:/work/README.md:Some(1):Some(10)",
                    "update:100:Finished:read 22 bytes"
                ]
            );

            // Each confirmation outcome selects the matching v1 option.
            let cases = [
                (old::ToolCallConfirmationOutcome::Allow, "once"),
                (old::ToolCallConfirmationOutcome::AlwaysAllow, "always"),
                (old::ToolCallConfirmationOutcome::AlwaysAllowMcpServer, "always"),
                (old::ToolCallConfirmationOutcome::AlwaysAllowTool, "always"),
                (old::ToolCallConfirmationOutcome::Reject, "no"),
                (old::ToolCallConfirmationOutcome::Cancel, "cancelled"),
            ];
            for (outcome, expected) in cases {
                editor.outcome.set(Some(outcome));
                within("confirm", conn.request(message(json!([{"text": "confirm"}]))))
                    .await
                    .unwrap();
                let got = match agent.outcomes.lock().unwrap().pop().unwrap() {
                    RequestPermissionOutcome::Selected(s) => s.option_id.0,
                    RequestPermissionOutcome::Cancelled => "cancelled".into(),
                    other => format!("{other:?}"),
                };
                assert_eq!(got, expected, "{outcome:?}");
                let events = editor.take();
                assert!(events[0].starts_with("push:Run ls:Terminal"), "{events:?}");
                assert_eq!(events[1], "confirm:Run ls:Terminal");
                assert_eq!(
                    editor.confirmations.borrow_mut().pop(),
                    Some(json!({"type": "execute", "command": "ls -la", "rootCommand": "ls", "description": "Run ls"}))
                );
                if expected == "once" || expected == "always" {
                    // Allowed: the file is written, and the update goes to the id the editor
                    // gave in its confirmation answer.
                    assert_eq!(events[2], "write:/work/out.txt:ran ls");
                    let confirmed_id = 100 + editor.next_id.get() - 1;
                    assert_eq!(events[3], format!("update:{confirmed_id}:Finished:-"));
                } else {
                    assert_eq!(events.len(), 2, "{events:?}");
                }
            }

            // An error reply reaches their editor with its code and message.
            let error = within("fail", conn.request(message(json!([{"text": "fail"}]))))
                .await
                .unwrap_err();
            assert_eq!(error.code, -32603);
            assert!(error.message.contains("the model is unavailable"), "{error:?}");

            // cancelSendMessage ends the running turn: sendUserMessage answers.
            let conn = Rc::new(conn);
            let turn = tokio::task::spawn_local({
                let conn = conn.clone();
                async move { conn.request(message(json!([{"text": "wait"}]))).await }
            });
            while editor.events.borrow().is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            within("cancel", conn.request(old::CancelSendMessageParams))
                .await
                .unwrap();
            within("the cancelled turn", turn).await.unwrap().unwrap();
            assert_eq!(editor.take(), ["text:waiting"]);
        })
        .await;
}

// ----------------------------------------------------------------------------------------
// Our client, their agent.
// ----------------------------------------------------------------------------------------

/// Their agent: streams, pushes and updates a tool call, reads and writes files through the
/// editor, asks for confirmation, fails on request, waits for cancellation.
#[derive(Clone, Default)]
struct OldAgent {
    client: Rc<RefCell<Option<Rc<old::ClientConnection>>>>,
    cancelled: Rc<tokio::sync::Notify>,
    /// The outcome of each confirmation.
    outcomes: Rc<RefCell<Vec<old::ToolCallConfirmationOutcome>>>,
    /// The messages it received, as JSON.
    messages: Rc<RefCell<Vec<Value>>>,
}

impl OldAgent {
    fn client(&self) -> Rc<old::ClientConnection> {
        self.client.borrow().clone().expect("connected")
    }
}

impl old::Agent for OldAgent {
    async fn initialize(
        &self,
        p: old::InitializeParams,
    ) -> Result<old::InitializeResponse, old::Error> {
        Ok(old::InitializeResponse {
            protocol_version: p.protocol_version,
            is_authenticated: true,
        })
    }

    async fn authenticate(&self) -> Result<(), old::Error> {
        Ok(())
    }

    async fn send_user_message(&self, p: old::SendUserMessageParams) -> Result<(), old::Error> {
        self.messages
            .borrow_mut()
            .push(serde_json::to_value(&p.chunks).unwrap());
        let client = self.client();
        let first = match &p.chunks[0] {
            old::UserMessageChunk::Text { text } => text.clone(),
            old::UserMessageChunk::Path { .. } => String::new(),
        };
        match first.as_str() {
            "stream" => {
                client
                    .request(old::StreamAssistantMessageChunkParams {
                        chunk: old::AssistantMessageChunk::Thought {
                            thought: "thinking...".into(),
                        },
                    })
                    .await?;
                client
                    .request(old::StreamAssistantMessageChunkParams {
                        chunk: old::AssistantMessageChunk::Text {
                            text: "Hello world".into(),
                        },
                    })
                    .await?;
            }
            "tools" => {
                let pushed = client
                    .request(old::PushToolCallParams {
                        label: "Read README.md".into(),
                        icon: old::Icon::FileSearch,
                        content: None,
                        locations: vec![old::ToolCallLocation {
                            path: "/work/README.md".into(),
                            line: Some(1),
                        }],
                    })
                    .await?;
                let read = client
                    .request(old::ReadTextFileParams {
                        path: "/work/README.md".into(),
                        line: Some(1),
                        limit: Some(10),
                    })
                    .await?;
                client
                    .request(old::UpdateToolCallParams {
                        tool_call_id: pushed.id,
                        status: old::ToolCallStatus::Finished,
                        content: Some(old::ToolCallContent::Markdown {
                            markdown: format!("read {} bytes", read.content.len()),
                        }),
                    })
                    .await?;
            }
            "confirm" => {
                let answer = client
                    .request(old::RequestToolCallConfirmationParams {
                        tool_call: old::PushToolCallParams {
                            label: "Run `ls`".into(),
                            icon: old::Icon::Terminal,
                            content: None,
                            locations: vec![],
                        },
                        confirmation: old::ToolCallConfirmation::Execute {
                            command: "ls -la".into(),
                            root_command: "ls".into(),
                            description: None,
                        },
                    })
                    .await?;
                self.outcomes.borrow_mut().push(answer.outcome);
                if answer.outcome == old::ToolCallConfirmationOutcome::Allow {
                    client
                        .request(old::WriteTextFileParams {
                            path: "/work/out.txt".into(),
                            content: "ran ls".into(),
                        })
                        .await?;
                    client
                        .request(old::UpdateToolCallParams {
                            tool_call_id: answer.id,
                            status: old::ToolCallStatus::Finished,
                            content: None,
                        })
                        .await?;
                }
            }
            "fail" => {
                return Err(old::Error::internal_error().with_data("the model is unavailable"));
            }
            "wait" => {
                client
                    .request(old::StreamAssistantMessageChunkParams {
                        chunk: old::AssistantMessageChunk::Text {
                            text: "waiting".into(),
                        },
                    })
                    .await?;
                self.cancelled.notified().await;
            }
            other => {
                return Err(old::Error::invalid_params().with_data(format!("unknown {other}")));
            }
        }
        Ok(())
    }

    async fn cancel_send_message(&self) -> Result<(), old::Error> {
        self.cancelled.notify_one();
        Ok(())
    }
}

/// Our v1 client: records updates and file calls, answers permission requests with the
/// option the test picks.
#[derive(Clone, Default)]
struct OurClient {
    updates: Arc<Mutex<Vec<SessionUpdate>>>,
    files: Arc<Mutex<Vec<String>>>,
    /// The option kind to select (`None`: answer "cancelled"), and the requests seen.
    pick: Arc<Mutex<Option<PermissionOptionKind>>>,
    permissions: Arc<Mutex<Vec<RequestPermissionRequest>>>,
}

#[acp_client::async_trait]
impl acp_client::Client for OurClient {
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        self.updates.lock().unwrap().push(n.update);
        Ok(())
    }

    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let pick = self.pick.lock().unwrap().clone();
        let outcome = match pick {
            Some(kind) => RequestPermissionOutcome::selected(
                p.options
                    .iter()
                    .find(|o| o.kind == kind)
                    .expect("an option of that kind")
                    .option_id
                    .clone(),
            ),
            None => RequestPermissionOutcome::Cancelled,
        };
        self.permissions.lock().unwrap().push(p);
        Ok(RequestPermissionResponse::new(outcome))
    }

    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.files.lock().unwrap().push(format!(
            "read:{}:{}:{:?}:{:?}",
            p.session_id.0, p.path, p.line, p.limit
        ));
        Ok(v(json!({"content": "hello from the client\n"})))
    }

    async fn write_text_file(
        &self,
        p: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.files
            .lock()
            .unwrap()
            .push(format!("write:{}:{}", p.path, p.content));
        Ok(WriteTextFileResponse::default())
    }
}

fn prompt(session: &SessionId, blocks: Value) -> PromptRequest {
    PromptRequest::new(session.clone(), v::<Vec<ContentBlock>>(blocks))
}

#[tokio::test]
async fn our_v1_client_drives_their_agent_through_negotiation_and_the_adapter() {
    LocalSet::new()
        .run_until(async {
            let (a, b) = tokio::io::duplex(64 * 1024);
            let (ar, aw) = tokio::io::split(a);
            let (br, bw) = tokio::io::split(b);
            let agent = OldAgent::default();
            let (conn, io) = old::ClientConnection::connect_to_client(
                agent.clone(),
                aw.compat_write(),
                ar.compat(),
                |fut| {
                    tokio::task::spawn_local(fut);
                },
            );
            *agent.client.borrow_mut() = Some(Rc::new(conn));
            tokio::task::spawn_local(io);

            let client = OurClient::default();
            let init: InitializeRequest = v(json!({
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}
            }));
            // Their agent drops the v1 handshake (an integer version does not parse), so the
            // 0.0.9 probe goes out after the timeout.
            let options = acp_client::negotiate::NegotiateOptions::new(init)
                .with_timeout(Duration::from_millis(300));
            let negotiated = within(
                "negotiation",
                acp_client::negotiate::connect(client.clone(), br, bw, options),
            )
            .await
            .unwrap();
            assert_eq!(negotiated.dialect, Dialect::Legacy009);
            assert!(negotiated.initialize.auth_methods.is_empty());
            let handle = negotiated.connection.agent().clone();
            let session = handle
                .new_session(v(json!({"cwd": "/work", "mcpServers": []})))
                .await
                .unwrap()
                .session_id;

            // Streaming; a resource link goes as a path mention.
            let (updates, result) = within(
                "stream",
                handle
                    .prompt_stream(prompt(
                        &session,
                        json!([
                            {"type": "text", "text": "stream"},
                            {"type": "resource_link", "name": "main.rs", "uri": "file:///work/src/main.rs"}
                        ]),
                    ))
                    .collect(),
            )
            .await;
            assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
            assert_eq!(
                updates,
                [
                    SessionUpdate::agent_thought_text("thinking..."),
                    SessionUpdate::agent_message_text("Hello world")
                ]
            );
            assert_eq!(
                agent.messages.borrow()[0],
                json!([{"text": "stream"}, {"path": "/work/src/main.rs"}])
            );

            // pushToolCall and updateToolCall become tool_call and tool_call_update.
            let (updates, result) = within(
                "tools",
                handle
                    .prompt_stream(prompt(&session, json!([{"type": "text", "text": "tools"}])))
                    .collect(),
            )
            .await;
            assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
            let updates = serde_json::to_value(&updates).unwrap();
            assert_eq!(
                updates,
                json!([
                    {"sessionUpdate": "tool_call", "toolCallId": "tool-0", "title": "Read README.md",
                     "kind": "read", "status": "in_progress",
                     "locations": [{"path": "/work/README.md", "line": 1}]},
                    {"sessionUpdate": "tool_call_update", "toolCallId": "tool-0", "status": "completed",
                     "content": [{"type": "content", "content": {"type": "text", "text": "read 22 bytes"}}]}
                ])
            );
            assert_eq!(
                client.files.lock().unwrap().drain(..).collect::<Vec<_>>(),
                ["read:legacy-0.0.9:/work/README.md:Some(1):Some(10)"]
            );

            // Each v1 answer becomes the matching 0.0.9 outcome.
            let cases = [
                (Some(PermissionOptionKind::AllowOnce), old::ToolCallConfirmationOutcome::Allow),
                (Some(PermissionOptionKind::AllowAlways), old::ToolCallConfirmationOutcome::AlwaysAllow),
                (Some(PermissionOptionKind::RejectOnce), old::ToolCallConfirmationOutcome::Reject),
                (None, old::ToolCallConfirmationOutcome::Cancel),
            ];
            for (pick, expected) in cases {
                *client.pick.lock().unwrap() = pick.clone();
                let (updates, result) = within(
                    "confirm",
                    handle
                        .prompt_stream(prompt(&session, json!([{"type": "text", "text": "confirm"}])))
                        .collect(),
                )
                .await;
                assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
                assert_eq!(agent.outcomes.borrow_mut().pop(), Some(expected));
                let asked = client.permissions.lock().unwrap().pop().unwrap();
                let ids: Vec<_> = asked.options.iter().map(|o| o.option_id.0.as_str()).collect();
                assert_eq!(ids, ["allow", "alwaysAllow", "reject"]);
                assert_eq!(asked.tool_call.kind, Some(ToolKind::Execute));
                assert_eq!(
                    asked.tool_call.raw_input,
                    Some(json!({"type": "execute", "command": "ls -la", "rootCommand": "ls"}))
                );
                // The tool call is shown (pending) before the question, under the same id.
                let SessionUpdate::ToolCall(shown) = &updates[0] else {
                    panic!("{updates:?}")
                };
                assert_eq!(shown.status, ToolCallStatus::Pending);
                assert_eq!(shown.tool_call_id, asked.tool_call.tool_call_id);
                if expected == old::ToolCallConfirmationOutcome::Allow {
                    assert_eq!(
                        client.files.lock().unwrap().drain(..).collect::<Vec<_>>(),
                        ["write:/work/out.txt:ran ls"]
                    );
                    let SessionUpdate::ToolCallUpdate(done) = &updates[1] else {
                        panic!("{updates:?}")
                    };
                    assert_eq!(done.tool_call_id, shown.tool_call_id);
                    assert_eq!(done.status, Some(ToolCallStatus::Completed));
                } else {
                    assert_eq!(updates.len(), 1, "{updates:?}");
                }
            }

            // Their error reply (always rewrapped as -32603 by that crate) reaches us.
            let error = within(
                "fail",
                handle.prompt(prompt(&session, json!([{"type": "text", "text": "fail"}]))),
            )
            .await
            .unwrap_err();
            assert_eq!(error.code, acp_rpc::ErrorCode::INTERNAL_ERROR);
            assert!(
                error.data.as_ref().is_some_and(|d| d.to_string().contains("the model is unavailable")),
                "{error:?}"
            );

            // session/cancel becomes cancelSendMessage; the turn ends "cancelled".
            let mut turn = handle.prompt_stream(prompt(&session, json!([{"type": "text", "text": "wait"}])));
            let first = within("the first chunk", turn.next()).await;
            assert!(matches!(first, Some(acp_client::PromptEvent::Update(_))), "{first:?}");
            handle
                .cancel(CancelNotification::new(session.clone()))
                .await
                .unwrap();
            let (rest, result) = within("the cancelled turn", turn.collect()).await;
            assert!(rest.is_empty());
            assert_eq!(result.unwrap().stop_reason, StopReason::Cancelled);
        })
        .await;
}
