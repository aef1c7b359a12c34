//! Our v1 client, through `acp_client::negotiate` and the 0.0.9 adapter, drives their
//! `Agent` (which drops the v1 handshake, so negotiation falls back to 0.0.9).

use super::*;

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
                acp_client::Builder::new(client.clone()).negotiate(options).io(br, bw),
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
