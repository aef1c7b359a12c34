//! Their editor (`agentic_coding_protocol::AgentConnection`) drives our v1 agent, served by
//! `acp_agent::negotiate`, which detects the dialect and runs the 0.0.9 adapter.

use super::*;

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
            let served = tokio::spawn(acp_agent::Builder::new(agent.clone()).negotiate(acp_agent::negotiate::NegotiateOptions::default().with_legacy_cwd("/work")).io(ar, aw));
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
