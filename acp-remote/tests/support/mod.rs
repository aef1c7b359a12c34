//! The agent and the client every remote test drives: a turn with a tool call, a permission
//! request the client answers, a file read through the client and streamed chunks; a slow
//! turn for the kill tests.

#![allow(dead_code)]

pub mod raw;
pub mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use acp_client::{Client, ClientConnection, PromptEvent};

/// The agent: `initialize` names its process id (`agent_info.version`), so the gateway tests
/// can watch the child.
#[derive(Default)]
pub struct TestAgent {
    sessions: AtomicUsize,
}

#[acp_agent::async_trait]
impl Agent for TestAgent {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(
            InitializeResponse::new(ProtocolVersion::V1).agent_info(Implementation::new(
                "test-agent",
                std::process::id().to_string(),
            )),
        )
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed);
        Ok(NewSessionResponse::new(format!("s-{n}")))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let session = cx.session();
        let said = match p.prompt.first() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        if said == "slow" {
            for i in 0..200 {
                if cx.is_cancelled() {
                    return Ok(PromptResponse::new(StopReason::Cancelled));
                }
                session.message_chunk(format!("tick {i}\n")).await?;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            return Ok(PromptResponse::new(StopReason::EndTurn));
        }
        let tool = session
            .start_tool_call(ToolCall::new("read-1", "Read notes.md").kind(ToolKind::Read))
            .await?;
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("deny", "Deny", PermissionOptionKind::RejectOnce),
        ];
        match session.request_permission(tool.blank(), options).await? {
            RequestPermissionOutcome::Selected(s) if s.option_id.0 == "allow" => {}
            _ => return Ok(PromptResponse::new(StopReason::Refusal)),
        }
        let file = cx
            .client()
            .read_text_file(ReadTextFileRequest::new(
                p.session_id.clone(),
                "/w/notes.md",
            ))
            .await?;
        tool.complete(vec![]).await?;
        for line in file.content.lines() {
            session.message_chunk(format!("{line}\n")).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// The client: allows once, serves `notes.md` from memory, counts what it was asked.
#[derive(Clone, Default)]
pub struct TestClient {
    pub permissions: Arc<AtomicUsize>,
    pub reads: Arc<AtomicUsize>,
}

#[acp_client::async_trait]
impl Client for TestClient {
    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        self.permissions.fetch_add(1, Ordering::Relaxed);
        let allow = p
            .options
            .iter()
            .find(|o| o.kind == PermissionOptionKind::AllowOnce);
        Ok(RequestPermissionResponse::new(match allow {
            Some(o) => RequestPermissionOutcome::selected(o.option_id.clone()),
            None => RequestPermissionOutcome::Cancelled,
        }))
    }

    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        assert_eq!(p.path, "/w/notes.md");
        Ok(ReadTextFileResponse::new("alpha\nbeta\ngamma"))
    }
}

/// The `initialize` the tests send: file reading advertised.
pub fn init() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
        ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true)),
    )
}

/// One whole conversation on `conn`: initialize, a session, the full turn. Returns the
/// agent's `agent_info.version` (its pid) and the text it streamed.
pub async fn converse(conn: &ClientConnection) -> (String, String) {
    let agent = conn.agent();
    let info = agent.initialize(init()).await.expect("initialize");
    let version = info.agent_info.map(|i| i.version).unwrap_or_default();
    let session = agent
        .new_session(NewSessionRequest::new("/w", []))
        .await
        .expect("session/new");
    let mut turn = agent.prompt_stream(PromptRequest::new(session.session_id, ["go".into()]));
    let mut text = String::new();
    let mut saw_tool_call = false;
    let mut stop = None;
    while let Some(event) = turn.next().await {
        match event {
            PromptEvent::Update(SessionUpdate::ToolCall(_)) => saw_tool_call = true,
            PromptEvent::Update(SessionUpdate::AgentMessageChunk(chunk)) => {
                assert!(saw_tool_call, "the tool call comes before the chunks");
                if let ContentBlock::Text(t) = chunk.content {
                    text.push_str(&t.text);
                }
            }
            PromptEvent::Update(_) => {}
            PromptEvent::Done(result) => stop = Some(result.expect("prompt").stop_reason),
        }
    }
    assert_eq!(stop, Some(StopReason::EndTurn));
    (version, text)
}

/// Runs `f` with a deadline, so no test hangs.
pub async fn within<T>(secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("timed out")
}

/// Whether process `pid` is gone (exited and reaped: no `/proc/PID`, not even a zombie)
/// within 10 s.
pub async fn reaped(pid: &str) -> bool {
    let path = format!("/proc/{pid}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if !std::path::Path::new(&path).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
