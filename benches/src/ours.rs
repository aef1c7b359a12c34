//! Our side of the benchmark, written the way a user writes it: an [`Agent`] served with
//! `acp_agent::Builder` streaming through [`SessionHandle`], and a [`Client`]
//! run by `acp_client::ClientConnection` (over `AgentProcess` for the two-process runs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_agent::store::SessionStore;
use acp_agent::types::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, PromptResponse, ProtocolVersion, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification, SessionUpdate, StopReason, ToolCallUpdate,
};
use acp_agent::{Agent, AgentContext, Error, PromptContext, SessionHandle};
use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::{AgentHandle, Client, ClientConnection};

use crate::jobs::{AgentSide, run_job};
use crate::msg::{
    ALLOW_OPTION, CWD, ChunkCheck, Job, PERMISSION_TOOL_CALL, REJECT_OPTION, Report, content_for,
    session_id,
};
use crate::plan::{ClientSide, Outcome, Plan, run_plan};

/// The benchmark agent: keeps every session it creates (id -> working directory).
#[derive(Default)]
pub struct BenchAgent {
    sessions: Mutex<HashMap<String, String>>,
    next: AtomicU64,
}

#[acp_agent::async_trait]
impl Agent for BenchAgent {
    async fn initialize(
        &self,
        p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(p.protocol_version)
            .agent_info(Implementation::new("acp-bench", "0")))
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let id = session_id(self.next.fetch_add(1, Ordering::Relaxed));
        self.sessions.lock().unwrap().insert(id.clone(), p.cwd);
        Ok(NewSessionResponse::new(id))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        if !self.sessions.lock().unwrap().contains_key(&p.session_id.0) {
            return Err(Error::resource_not_found("unknown session"));
        }
        let job = match p.prompt.first() {
            Some(ContentBlock::Text(t)) => Job::parse(&t.text),
            _ => None,
        }
        .ok_or_else(|| Error::invalid_params("the prompt is not a benchmark job"))?;
        let side = OurSide {
            session: cx.session().clone(),
        };
        let report = run_job(&side, job).await;
        let mut response = PromptResponse::new(StopReason::EndTurn);
        response.meta = Some(report.to_meta().into());
        Ok(response)
    }
}

/// A job's view of our agent connection.
#[derive(Clone)]
struct OurSide {
    session: SessionHandle,
}

impl AgentSide for OurSide {
    async fn chunk(&self, text: String) -> Result<(), String> {
        self.session
            .message_chunk(text)
            .await
            .map_err(|e| e.to_string())
    }

    async fn read(&self, path: String) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session.id().clone(), path);
        self.session
            .client()
            .read_text_file(request)
            .await
            .map(|r| r.content)
            .map_err(|e| e.to_string())
    }

    async fn permission(&self) -> Result<bool, String> {
        let options = vec![
            PermissionOption::new(ALLOW_OPTION, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(REJECT_OPTION, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let outcome = self
            .session
            .request_permission(ToolCallUpdate::new(PERMISSION_TOOL_CALL), options)
            .await
            .map_err(|e| e.to_string())?;
        Ok(
            matches!(outcome, RequestPermissionOutcome::Selected(s) if s.option_id.0 == ALLOW_OPTION),
        )
    }
}

/// Runs the agent on stdin/stdout until the client closes it (the child process's body).
pub async fn serve_stdio() {
    let conn = acp_agent::Builder::new(BenchAgent::default()).stdio();
    conn.closed().await;
}

/// [`serve_stdio`] with the sessions kept in `store`.
pub async fn serve_stdio_stored(store: Arc<dyn SessionStore>) {
    let conn = acp_agent::Builder::new(BenchAgent::default())
        .shared_store(store)
        .stdio();
    conn.closed().await;
}

/// The benchmark client: answers reads, checks chunks.
pub struct BenchClient {
    pub(crate) check: Arc<ChunkCheck>,
}

#[acp_client::async_trait]
impl Client for BenchClient {
    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        match content_for(&p.path) {
            Some(content) => Ok(ReadTextFileResponse::new(content)),
            None => Err(Error::resource_not_found(p.path)),
        }
    }

    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        // The user of a benchmark allows: the first allow option the agent offers.
        let allow = p
            .options
            .iter()
            .find(|o| o.kind == PermissionOptionKind::AllowOnce)
            .ok_or_else(|| Error::invalid_params("no allow option"))?;
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::selected(allow.option_id.clone()),
        ))
    }

    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        let text = match &n.update {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            },
            _ => None,
        };
        self.check.on_session_chunk(&n.session_id.0, text);
        Ok(())
    }
}

impl ClientSide for AgentHandle {
    async fn initialize(&self) -> Result<(), String> {
        let request = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(
                ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true)),
            )
            .client_info(Implementation::new("acp-bench", "0"));
        AgentHandle::initialize(self, request)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    async fn new_session(&self) -> Result<String, String> {
        let request = NewSessionRequest::new(CWD, []);
        AgentHandle::new_session(self, request)
            .await
            .map(|r| r.session_id.0)
            .map_err(|e| e.to_string())
    }

    async fn prompt(&self, session: &str, job: Job) -> Result<Report, String> {
        let request = PromptRequest::new(session, [ContentBlock::text(job.to_text())]);
        let response = AgentHandle::prompt(self, request)
            .await
            .map_err(|e| e.to_string())?;
        Report::from_meta(response.meta.as_deref()).ok_or_else(|| "no report in the answer".into())
    }
}

/// Runs `plan` against our agent in a child process (`program args...`) over its stdio.
pub async fn over_stdio(program: &AgentCommand, plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let mut process = AgentProcess::spawn(program).map_err(|e| e.to_string())?;
    let spawned = Instant::now();
    let trace = plan == Plan::Exchange && crate::phases::enabled();
    let watch = trace
        .then(|| process.id().and_then(crate::phases::ExitWatch::start))
        .flatten();
    let check = Arc::new(ChunkCheck::default());
    let client = BenchClient {
        check: check.clone(),
    };
    let conn = acp_client::Builder::new(client)
        .attach(&mut process)
        .map_err(|e| e.to_string())?;
    let mut outcome = run_plan(conn.agent(), &check, plan, start).await;
    let _ = process.shutdown(Duration::from_secs(5)).await;
    if let (Plan::Exchange, Ok(outcome)) = (plan, &mut outcome) {
        outcome.elapsed = start.elapsed();
        if trace {
            let mut marks = outcome.marks.clone();
            marks.push(("spawn", spawned));
            marks.push(("returned", start + outcome.elapsed));
            if let Some(died) = watch.and_then(crate::phases::ExitWatch::died_at) {
                marks.push(("agent exit", died.min(start + outcome.elapsed)));
            }
            crate::phases::record("ours", start, &marks);
        }
    }
    outcome
}

/// Runs `plan` against our agent behind acp-remote's server at `url` (`http://` Streamable
/// HTTP, `ws://` WebSocket), reached with `acp_remote::connect_transport`.
pub async fn over_remote(url: &str, token: &str, plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let options = acp_remote::ConnectOptions::new().token(token);
    let link = acp_remote::connect_transport(url, &options)
        .await
        .map_err(|e| e.to_string())?;
    let finished = link.finished();
    let check = Arc::new(ChunkCheck::default());
    let client = BenchClient {
        check: check.clone(),
    };
    let conn = acp_client::Builder::new(client).over(link);
    let outcome = run_plan(conn.agent(), &check, plan, start).await;
    conn.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), finished.wait()).await;
    outcome
}

/// Opens a connection to `url` with our client and `initialize`s it (an idle connection of
/// the 1,000); dropping what it returns ends it.
pub async fn open_idle(url: &str, token: &str) -> Result<ClientConnection, String> {
    let options = acp_remote::ConnectOptions::new().token(token);
    let link = acp_remote::connect_transport(url, &options)
        .await
        .map_err(|e| e.to_string())?;
    let client = BenchClient {
        check: Arc::new(ChunkCheck::default()),
    };
    let conn = acp_client::Builder::new(client).over(link);
    ClientSide::initialize(conn.agent()).await?;
    Ok(conn)
}

/// Runs `plan` against our agent in this process over `tokio::io::duplex`.
pub async fn over_duplex(plan: Plan) -> Result<Outcome, String> {
    over_duplex_stored(plan, None).await
}

/// [`over_duplex`] with the agent's sessions recorded in `store` (when given).
pub async fn over_duplex_stored(
    plan: Plan,
    store: Option<Arc<dyn SessionStore>>,
) -> Result<Outcome, String> {
    let start = Instant::now();
    let (agent_end, client_end) = tokio::io::duplex(crate::DUPLEX_BUFFER);
    let (read, write) = tokio::io::split(agent_end);
    let agent = match store {
        Some(store) => acp_agent::Builder::new(BenchAgent::default())
            .store(store)
            .io(read, write),
        None => acp_agent::Builder::new(BenchAgent::default()).io(read, write),
    };
    let check = Arc::new(ChunkCheck::default());
    let (read, write) = tokio::io::split(client_end);
    let client = BenchClient {
        check: check.clone(),
    };
    let conn = acp_client::Builder::new(client).io(read, write);
    let outcome = run_plan(conn.agent(), &check, plan, start).await;
    conn.close();
    agent.close();
    outcome
}
