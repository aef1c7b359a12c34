//! The official crate's v2 side (`agent-client-protocol` 5.2.0, feature
//! `unstable_protocol_v2`) doing `acp-bench v2`'s work, written the way its v2 examples are
//! (and as acp-interop's v2 peers): `Agent.v2()` with typed request handlers, the prompt's
//! job spawned beside the dispatch loop (it talks back to the client); `Client.v2()` with a
//! typed notification and request handler. Both in process over `tokio::io::duplex`,
//! through the crate's own `ByteStreams`, as [`crate::official::over_duplex`] is for v1.
//!
//! The jobs are [`crate::v2`]'s: a streams `agent_message_chunk`s with a `messageId`; b's
//! round trip is `session/request_permission` (v2 has no `fs/*`), its allow option standing
//! for the file's content.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v2::schema::{
    ContentBlock, ContentChunk, Implementation, InitializeRequest, InitializeResponse,
    NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionId, SessionUpdate, TextContent, UpdateSessionNotification,
};
use agent_client_protocol::v2::{ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, ByteStreams, Client, ConnectTo, Error, on_receive_notification, on_receive_request,
};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::jobs::{AgentSide, run_job};
use crate::msg::{
    ALLOW_OPTION, CWD, ChunkCheck, Job, REJECT_OPTION, Report, SMALL_CONTENT, session_id,
};
use crate::plan::{ClientSide, Outcome, Plan, run_plan};

fn failure(message: impl std::fmt::Display) -> Error {
    Error::internal_error().data(message.to_string())
}

/// The official v2 benchmark agent: answers a prompt with the inserted message's id and the
/// job's report in `_meta`, once its job has run.
fn agent() -> impl ConnectTo<Client> + 'static {
    let next = Arc::new(AtomicU64::new(0));
    Agent
        .v2()
        .name("acp-bench")
        .on_receive_request(
            async move |_request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: ConnectionTo<Client>| {
                responder.respond(InitializeResponse::new(
                    ProtocolVersion::V2,
                    Implementation::new("acp-bench", "0"),
                ))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        _cx: ConnectionTo<Client>| {
                let id = session_id(next.fetch_add(1, Ordering::Relaxed));
                responder.respond(NewSessionResponse::new(id))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let job = match request.prompt.first() {
                    Some(ContentBlock::Text(t)) => Job::parse(&t.text),
                    _ => None,
                };
                let Some(job) = job else {
                    return responder.respond_with_error(failure("not a benchmark job"));
                };
                let side = OfficialSideV2 {
                    cx: cx.clone(),
                    session: request.session_id,
                };
                // Work that talks to the client must leave the dispatch loop.
                cx.spawn(async move {
                    let report = run_job(&side, job).await;
                    let mut response = PromptResponse::new("user-1");
                    response.meta = Some(report.to_meta());
                    responder.respond(response)
                })
            },
            on_receive_request!(),
        )
}

/// A job's view of the official v2 agent connection.
#[derive(Clone)]
struct OfficialSideV2 {
    cx: ConnectionTo<Client>,
    session: SessionId,
}

impl OfficialSideV2 {
    async fn ask_permission(&self) -> Result<bool, String> {
        let options = vec![
            PermissionOption::new(ALLOW_OPTION, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(REJECT_OPTION, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(self.session.clone(), "bench", options);
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

impl AgentSide for OfficialSideV2 {
    async fn chunk(&self, text: String) -> Result<(), String> {
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text)),
            "agent-1",
        ));
        self.cx
            .send_notification(UpdateSessionNotification::new(self.session.clone(), update))
            .map_err(|e| e.to_string())
    }

    /// As [`crate::v2`]'s: an allowed permission request stands for the file's content.
    async fn read(&self, _path: String) -> Result<String, String> {
        match self.ask_permission().await? {
            true => Ok(SMALL_CONTENT.to_owned()),
            false => Err("the client did not allow".into()),
        }
    }

    async fn permission(&self) -> Result<bool, String> {
        self.ask_permission().await
    }
}

/// The official v2 client's calls, for [`run_plan`].
struct OfficialClientV2 {
    cx: ConnectionTo<Agent>,
}

impl ClientSide for OfficialClientV2 {
    async fn initialize(&self) -> Result<(), String> {
        let request =
            InitializeRequest::new(ProtocolVersion::V2, Implementation::new("acp-bench", "0"));
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
        let text = ContentBlock::Text(TextContent::new(job.to_text()));
        let request = PromptRequest::new(SessionId::new(session), vec![text]);
        let response = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| e.to_string())?;
        Report::from_meta(response.meta.as_ref()).ok_or_else(|| "no report in the answer".into())
    }
}

/// Runs `plan` against the official v2 agent with the official v2 client, in this process
/// over `tokio::io::duplex`.
pub async fn over_duplex(plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let (agent_end, client_end) = tokio::io::duplex(crate::DUPLEX_BUFFER);
    let (read, write) = tokio::io::split(agent_end);
    let transport = ByteStreams::new(write.compat_write(), read.compat());
    let agent = tokio::spawn(agent().connect_to(transport));
    let (read, write) = tokio::io::split(client_end);
    let check = Arc::new(ChunkCheck::default());
    let for_updates = check.clone();
    let outcome = Client
        .v2()
        .name("acp-bench")
        .on_receive_notification(
            async move |n: UpdateSessionNotification, _cx: ConnectionTo<Agent>| {
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
            async move |request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx: ConnectionTo<Agent>| {
                match request
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
                }
            },
            on_receive_request!(),
        )
        .connect_with(
            ByteStreams::new(write.compat_write(), read.compat()),
            async |cx: ConnectionTo<Agent>| {
                Ok(run_plan(&OfficialClientV2 { cx }, &check, plan, start).await)
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    agent.abort();
    outcome
}
