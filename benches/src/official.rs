//! The official crate (`agent-client-protocol` 5.2.0) doing the same work, written the way
//! its documentation shows: `Agent.v1()` with typed request handlers that spawn the work
//! that talks back to the client, served over its own `Stdio` adapter; `Client.v1()` with
//! typed handlers, connected to the agent through its own `AcpAgent` process adapter.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, ContentChunk, FileSystemCapabilities, Implementation,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, PromptResponse, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionId, SessionNotification, SessionUpdate, StopReason,
    TextContent, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{
    AcpAgent, AcpAgentConfig, Agent, ByteStreams, Client, ConnectTo, Error, Stdio,
    on_receive_notification, on_receive_request,
};
use agent_client_protocol_http::HttpClient;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::jobs::{AgentSide, run_job};
use crate::msg::{
    ALLOW_OPTION, CWD, ChunkCheck, Job, PERMISSION_TOOL_CALL, REJECT_OPTION, Report, content_for,
    session_id,
};
use crate::phases::ExitWatch;
use crate::plan::{ClientSide, Outcome, Plan, run_plan};

fn failure(message: impl std::fmt::Display) -> Error {
    Error::internal_error().data(message.to_string())
}

/// The agent's own state: every session it creates (id -> working directory).
#[derive(Default)]
struct Sessions {
    known: Mutex<HashMap<String, PathBuf>>,
    next: AtomicU64,
}

/// Serves the benchmark agent over `transport` until the client goes away.
pub async fn serve(transport: impl ConnectTo<Agent> + 'static) -> Result<(), Error> {
    agent().connect_to(transport).await
}

/// The benchmark agent as a component (what `agent-client-protocol-http`'s server makes one
/// of per connection).
pub fn agent() -> impl ConnectTo<Client> + 'static {
    let sessions = Arc::new(Sessions::default());
    let for_new = sessions.clone();
    let for_prompt = sessions;
    Agent
        .v1()
        .name("acp-bench")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(request.protocol_version)
                        .agent_info(Implementation::new("acp-bench", "0")),
                )
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, _cx| {
                let id = session_id(for_new.next.fetch_add(1, Ordering::Relaxed));
                for_new
                    .known
                    .lock()
                    .unwrap()
                    .insert(id.clone(), request.cwd);
                responder.respond(NewSessionResponse::new(id))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                if !for_prompt
                    .known
                    .lock()
                    .unwrap()
                    .contains_key(&*request.session_id.0)
                {
                    return responder.respond_with_error(failure("unknown session"));
                }
                let job = match request.prompt.first() {
                    Some(ContentBlock::Text(t)) => Job::parse(&t.text),
                    _ => None,
                };
                let Some(job) = job else {
                    return responder.respond_with_error(failure("not a benchmark job"));
                };
                let side = OfficialSide {
                    cx: cx.clone(),
                    session: request.session_id,
                };
                // Work that talks to the client must leave the dispatch loop.
                cx.spawn(async move {
                    let report = run_job(&side, job).await;
                    responder
                        .respond(PromptResponse::new(StopReason::EndTurn).meta(report.to_meta()))
                })
            },
            on_receive_request!(),
        )
}

/// A job's view of the official agent connection.
#[derive(Clone)]
struct OfficialSide {
    cx: ConnectionTo<Client>,
    session: SessionId,
}

impl AgentSide for OfficialSide {
    async fn chunk(&self, text: String) -> Result<(), String> {
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
            TextContent::new(text),
        )));
        self.cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
            .map_err(|e| e.to_string())
    }

    async fn read(&self, path: String) -> Result<String, String> {
        self.cx
            .send_request(ReadTextFileRequest::new(self.session.clone(), path))
            .block_task()
            .await
            .map(|r| r.content)
            .map_err(|e| e.to_string())
    }

    async fn permission(&self) -> Result<bool, String> {
        let options = vec![
            PermissionOption::new(ALLOW_OPTION, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(REJECT_OPTION, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(
            self.session.clone(),
            ToolCallUpdate::new(PERMISSION_TOOL_CALL, ToolCallUpdateFields::new()),
            options,
        );
        let response = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| e.to_string())?;
        Ok(matches!(response.outcome,
            RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == ALLOW_OPTION))
    }
}

/// Runs the agent on stdin/stdout with the official `Stdio` adapter (the child's body).
pub async fn serve_stdio() {
    if let Err(e) = serve(Stdio::new()).await {
        eprintln!("official agent: {e}");
    }
}

struct OfficialClient {
    cx: ConnectionTo<Agent>,
}

impl ClientSide for OfficialClient {
    async fn initialize(&self) -> Result<(), String> {
        let capabilities =
            ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true));
        let request = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(capabilities)
            .client_info(Implementation::new("acp-bench", "0"));
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    async fn new_session(&self) -> Result<String, String> {
        self.cx
            .send_request(NewSessionRequest::new(CWD))
            .block_task()
            .await
            .map(|r| r.session_id.0.to_string())
            .map_err(|e| e.to_string())
    }

    async fn prompt(&self, session: &str, job: Job) -> Result<Report, String> {
        let request = PromptRequest::new(
            SessionId::new(session),
            vec![ContentBlock::Text(TextContent::new(job.to_text()))],
        );
        let response = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| e.to_string())?;
        Report::from_meta(response.meta.as_ref()).ok_or_else(|| "no report in the answer".into())
    }
}

/// Runs `plan` with the official client over `transport`. With the phase trace on, an h
/// run leaves the watch of the agent's exit in `exit_watch`.
async fn run_client(
    transport: impl ConnectTo<Client> + 'static,
    plan: Plan,
    start: Instant,
    exit_watch: &Mutex<Option<ExitWatch>>,
) -> Result<Outcome, String> {
    let check = Arc::new(ChunkCheck::default());
    let for_updates = check.clone();
    Client
        .v1()
        .name("acp-bench")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                let text = match &n.update {
                    SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    },
                    _ => None,
                };
                for_updates.on_session_chunk(&n.session_id.0, text);
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| match request
                .options
                .iter()
                .find(|o| o.kind == PermissionOptionKind::AllowOnce)
            {
                Some(allow) => responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        allow.option_id.clone(),
                    )),
                )),
                None => responder.respond_with_error(failure("no allow option")),
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| match request
                .path
                .to_str()
                .and_then(content_for)
            {
                Some(content) => responder.respond(ReadTextFileResponse::new(content)),
                None => responder.respond_with_error(failure("no such file")),
            },
            on_receive_request!(),
        )
        .connect_with(transport, async |cx: ConnectionTo<Agent>| {
            // The agent process of the phase trace (h), found before it can exit.
            let watch = (plan == Plan::Exchange && crate::phases::enabled())
                .then(|| crate::phases::only_child().and_then(crate::phases::ExitWatch::start))
                .flatten();
            *exit_watch.lock().unwrap_or_else(|p| p.into_inner()) = watch;
            Ok(run_plan(&OfficialClient { cx }, &check, plan, start).await)
        })
        .await
        .map_err(|e| e.to_string())?
}

/// Runs `plan` against the official agent in a child process, spawned with `AcpAgent`.
pub async fn over_stdio(
    program: &std::path::Path,
    args: &[&str],
    plan: Plan,
) -> Result<Outcome, String> {
    let start = Instant::now();
    let mut config = AcpAgentConfig::new(program);
    for arg in args {
        config = config.arg(*arg);
    }
    for (key, value) in crate::child_env() {
        config = config.env(key, value);
    }
    let exit_watch = Mutex::new(None);
    let mut outcome = run_client(AcpAgent::new(config), plan, start, &exit_watch).await;
    // `run_client` returns once the connection and its process adapter are gone.
    if let (Plan::Exchange, Ok(outcome)) = (plan, &mut outcome) {
        outcome.elapsed = start.elapsed();
        if crate::phases::enabled() {
            let mut marks = outcome.marks.clone();
            marks.push(("returned", start + outcome.elapsed));
            let watch = exit_watch.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(died) = watch.and_then(ExitWatch::died_at) {
                marks.push(("agent exit", died.min(start + outcome.elapsed)));
            }
            crate::phases::record("official", start, &marks);
        }
    }
    outcome
}

/// Runs `plan` with the official client over `agent-client-protocol-http`'s `HttpClient`
/// (`http://` Streamable HTTP, `ws://` WebSocket) sending `token` as a bearer token.
pub async fn over_remote(url: &str, token: &str, plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let transport = http_client(url, token)?;
    run_client(transport, plan, start, &Mutex::new(None)).await
}

/// The official remote client for `url`, direct (no proxy), with a bearer token.
pub fn http_client(url: &str, token: &str) -> Result<HttpClient, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    let auth = format!("Bearer {token}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    headers.insert(reqwest::header::AUTHORIZATION, auth);
    HttpClient::builder_with_endpoint(url)
        .configure_http(|http| http.no_proxy().default_headers(headers))
        .build()
        .map_err(|e| e.to_string())
}

/// Opens a connection with the official client, `initialize`s, and holds it open until
/// `release` is notified (an idle connection of the 1,000). `ready` hears once it is open.
pub async fn hold_idle(
    transport: HttpClient,
    ready: tokio::sync::mpsc::Sender<Result<(), String>>,
    release: Arc<tokio::sync::Notify>,
) {
    let result = Client
        .v1()
        .name("acp-bench-idle")
        .connect_with(transport, async |cx: ConnectionTo<Agent>| {
            let client = OfficialClient { cx };
            let init = client.initialize().await;
            let ok = init.is_ok();
            let _ = ready.send(init).await;
            if ok {
                release.notified().await;
            }
            Ok(())
        })
        .await;
    if let Err(e) = result {
        let _ = ready.try_send(Err(e.to_string()));
    }
}

/// Runs `plan` against the official agent in this process over `tokio::io::duplex`.
pub async fn over_duplex(plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let (agent_end, client_end) = tokio::io::duplex(crate::DUPLEX_BUFFER);
    let (read, write) = tokio::io::split(agent_end);
    let agent = tokio::spawn(serve(ByteStreams::new(write.compat_write(), read.compat())));
    let (read, write) = tokio::io::split(client_end);
    let outcome = run_client(
        ByteStreams::new(write.compat_write(), read.compat()),
        plan,
        start,
        &Mutex::new(None),
    )
    .await;
    agent.abort();
    outcome
}
