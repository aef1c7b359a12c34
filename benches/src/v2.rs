//! `acp-bench v2`: scenarios a and b over draft protocol v2 beside v1, in one run, ours and
//! the official crate's v2, in process over `tokio::io::duplex` (as `dialects` is measured).
//!
//! * a: one prompt whose agent streams `n` `agent_message_chunk` updates before answering
//!   (v1: `session/prompt` answered with its stop reason; v2: answered with the inserted
//!   `messageId`, the updates carrying a `messageId` each).
//! * b: one prompt whose agent makes `n` requests of the client one after the other. v1 calls
//!   `fs/read_text_file` (scenario b of the main table); v2 has no `fs/*`, so its agent calls
//!   `session/request_permission`, v2's agent-to-client request, answered with the allow
//!   option.
//! * b': b with the same message in both versions: `n` `session/request_permission` calls
//!   (an allow and a reject option each; v1's names a tool call, v2's has a title). b's
//!   ratio mixes the version with the payload; b' is the version alone.
//!
//! ```text
//! acp-bench v2 [--chunks N] [--requests N] [--runs R] [--ours-only] [--only COLUMNS]
//! ```
//!
//! Defaults: 200,000 chunks, 20,000 requests, the median of 5 runs. `--only` keeps the
//! comma-separated columns named (`v1`, `v2`, `official`, `translated`), for profiling one
//! path; the others print `NaN`.
//!
//! The last columns are the official crate's v2 side (`agent-client-protocol` 5.2.0 with
//! `unstable_protocol_v2`, [`crate::official_v2`]) doing the same jobs, and its time over
//! ours over v2. For a, one more: our v1 bench agent served to the v2 bench client through
//! the v1<->v2 translation ([`over_translation`]), as a share of the same agent served in
//! v1 (the "ours v1" column).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use acp_agent::v2 as agent2;
use acp_agent::v2::types as v2;
use acp_client::v2 as client2;
use acp_rpc::Error;

use crate::jobs::{AgentSide, run_job};
use crate::msg::{
    ALLOW_OPTION, CWD, ChunkCheck, Job, REJECT_OPTION, Report, SMALL_CONTENT, session_id,
};
use crate::plan::{ClientSide, Outcome, Plan, run_plan};

/// Parses the arguments and prints each scenario's v1 and v2 figures and their ratio.
pub fn main(args: &[String]) -> ExitCode {
    let (mut chunks, mut requests, mut runs) = (200_000u64, 20_000u64, 5usize);
    const USAGE: &str = "usage: acp-bench v2 [--chunks N] [--requests N] [--runs R] [--ours-only] [--only v1,v2,official,translated]";
    const NAMES: [&str; 4] = ["v1", "v2", "official", "translated"];
    let mut kept = [true; 4];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--ours-only" {
            kept[2] = false;
            continue;
        }
        if arg == "--only" {
            let Some(list) = args.next() else {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            };
            kept = [false; 4];
            for name in list.split(',') {
                let Some(column) = NAMES.iter().position(|n| *n == name) else {
                    eprintln!("acp-bench v2: no column `{name}` (the columns: {NAMES:?})");
                    return ExitCode::from(2);
                };
                kept[column] = true;
            }
            continue;
        }
        let value = args.next().and_then(|v| v.parse::<u64>().ok());
        match (arg.as_str(), value) {
            ("--chunks", Some(n)) => chunks = n,
            ("--requests", Some(n)) => requests = n,
            ("--runs", Some(n)) => runs = n.max(1) as usize,
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let all = [
        "ours v1",
        "ours v2",
        "official v2",
        "v1 agent via translation",
    ];
    let columns: [&str; 4] = std::array::from_fn(|i| if kept[i] { all[i] } else { "" });
    let runtime = crate::runtime();
    println!(
        "scenario\tours v1 (median of {runs})\tours v2\tv2/v1 time\tofficial v2\tofficial/ours v2 time\tv1 agent via translation\ttranslated/v1"
    );
    let scenarios = [
        ("a: chunks/s", Job::Stream { n: chunks }, chunks),
        ("b: requests/s", Job::Sequential { n: requests }, requests),
        (
            "b': permission requests/s",
            Job::Permissions { n: requests },
            requests,
        ),
    ];
    for (name, job, n) in scenarios {
        let mut rates = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        // Interleaved, so drift of the machine's load falls on every column alike.
        for _ in 0..runs {
            for (column, side) in columns.iter().enumerate() {
                // The translation's column is a's alone (its b would be v1's file reads,
                // which a v2 client does not serve).
                let translated = matches!(job, Job::Stream { .. });
                let outcome = match column {
                    _ if side.is_empty() => continue,
                    0 => runtime.block_on(crate::ours::over_duplex(Plan::Job(job))),
                    1 => runtime.block_on(over_duplex_v2(Plan::Job(job))),
                    2 => runtime.block_on(crate::official_v2::over_duplex(Plan::Job(job))),
                    _ if translated => runtime.block_on(over_translation(Plan::Job(job))),
                    _ => continue,
                };
                match outcome.and_then(|o| check(o, job, n)) {
                    Ok(secs) => rates[column].push(n as f64 / secs),
                    Err(e) => {
                        eprintln!("{name} {side}: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        let [m1, m2, official, translated] = rates.map(|mut r| {
            if r.is_empty() {
                f64::NAN
            } else {
                median(&mut r)
            }
        });
        // The translation's column is a's alone: "-" in the other rows.
        let through_translation = if translated.is_nan() {
            "-\t-".to_owned()
        } else {
            format!("{translated:.0}\t{:.3}", translated / m1)
        };
        println!(
            "{name}\t{m1:.0}\t{m2:.0}\t{:.3}\t{official:.0}\t{:.3}\t{through_translation}",
            m1 / m2,
            m2 / official,
        );
    }
    ExitCode::SUCCESS
}

fn median(rates: &mut [f64]) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// The run's seconds, once its counts are right.
fn check(outcome: Outcome, job: Job, n: u64) -> Result<f64, String> {
    if let Job::Stream { .. } = job
        && (outcome.chunks.0 != n || outcome.chunks.1 != 0)
    {
        return Err(format!(
            "{} chunks in order and {} wrong, of {n}",
            outcome.chunks.0, outcome.chunks.1
        ));
    }
    if outcome.report.errors != 0 {
        return Err(format!(
            "{} errors in the agent's job",
            outcome.report.errors
        ));
    }
    Ok(outcome.elapsed.as_secs_f64())
}

/// Runs `plan` against the v2 bench agent in this process over `tokio::io::duplex`.
pub async fn over_duplex_v2(plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let (agent_end, client_end) = tokio::io::duplex(crate::DUPLEX_BUFFER);
    let (read, write) = tokio::io::split(agent_end);
    let agent = agent2::serve(BenchAgentV2::default(), read, write);
    let check = Arc::new(ChunkCheck::default());
    let (read, write) = tokio::io::split(client_end);
    let client = BenchClientV2 {
        check: check.clone(),
        idle: None,
    };
    let conn = client2::connect(client, read, write);
    let outcome = run_plan(conn.agent(), &check, plan, start).await;
    conn.close();
    agent.close();
    outcome
}

/// Runs `plan` with our v1 bench agent served to the v2 bench client through the v1<->v2
/// translation (`acp_agent::v2::serve_v1`, in process over `tokio::io::duplex`): a v1
/// application behind the translation. The translation answers a v2 prompt once it is
/// inserted and ends the turn with `state_update` idle, which the client side waits for.
pub async fn over_translation(plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let (agent_end, client_end) = tokio::io::duplex(crate::DUPLEX_BUFFER);
    let (read, write) = tokio::io::split(agent_end);
    let served = acp_agent::v2::serve_v1(
        crate::ours::BenchAgent::default(),
        read,
        write,
        Default::default(),
    );
    let check = Arc::new(ChunkCheck::default());
    let idle = Arc::new(tokio::sync::Notify::new());
    let (read, write) = tokio::io::split(client_end);
    let client = BenchClientV2 {
        check: check.clone(),
        idle: Some(idle.clone()),
    };
    let conn = client2::connect(client, read, write);
    let side = Translated {
        agent: conn.agent().clone(),
        idle,
    };
    let outcome = run_plan(&side, &check, plan, start).await;
    conn.close();
    served.close();
    outcome
}

/// The v2 client's side of [`over_translation`]: a prompt ends at the turn's idle state.
struct Translated {
    agent: client2::AgentHandle,
    idle: Arc<tokio::sync::Notify>,
}

impl ClientSide for Translated {
    async fn initialize(&self) -> Result<(), String> {
        ClientSide::initialize(&self.agent).await
    }

    async fn new_session(&self) -> Result<String, String> {
        ClientSide::new_session(&self.agent).await
    }

    /// The v1 agent's report stays in its v1 answer, which becomes the idle state: the
    /// report here is empty, and the chunks are counted by the client.
    async fn prompt(&self, session: &str, job: Job) -> Result<Report, String> {
        let text = v2::ContentBlock::Text(v2::TextContent::new(job.to_text()));
        let request = v2::PromptRequest::new(session, [text]);
        client2::AgentHandle::session_prompt(&self.agent, request)
            .await
            .map_err(|e| e.to_string())?;
        self.idle.notified().await;
        Ok(Report::default())
    }
}

/// The v2 benchmark agent: runs the prompt's job, answers with the inserted message's id
/// and the job's report in `_meta`.
#[derive(Default)]
struct BenchAgentV2 {
    next: std::sync::atomic::AtomicU64,
}

#[acp_agent::async_trait]
impl agent2::Agent for BenchAgentV2 {
    async fn initialize(
        &self,
        _p: v2::InitializeRequest,
        _cx: &agent2::Context,
    ) -> Result<v2::InitializeResponse, Error> {
        Ok(v2::InitializeResponse::new(
            2,
            v2::Implementation::new("acp-bench", "0"),
        ))
    }

    async fn session_new(
        &self,
        _p: v2::NewSessionRequest,
        _cx: &agent2::Context,
    ) -> Result<v2::NewSessionResponse, Error> {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(v2::NewSessionResponse::new(session_id(n)))
    }

    async fn session_prompt(
        &self,
        p: v2::PromptRequest,
        cx: &agent2::Context,
    ) -> Result<v2::PromptResponse, Error> {
        let job = match p.prompt.first() {
            Some(v2::ContentBlock::Text(t)) => Job::parse(&t.text),
            _ => None,
        }
        .ok_or_else(|| Error::invalid_params("the prompt is not a benchmark job"))?;
        let side = SideV2 {
            client: cx.client().clone(),
            session: p.session_id.clone(),
        };
        let report = run_job(&side, job).await;
        let mut response = v2::PromptResponse::new("user-1");
        response.meta = Some(report.to_meta().into());
        Ok(response)
    }
}

/// A job's view of the v2 agent connection.
#[derive(Clone)]
struct SideV2 {
    client: agent2::ClientHandle,
    session: v2::SessionId,
}

impl SideV2 {
    async fn ask_permission(&self) -> Result<bool, String> {
        let options = [
            v2::PermissionOption::new(ALLOW_OPTION, "Allow", v2::PermissionOptionKind::AllowOnce),
            v2::PermissionOption::new(
                REJECT_OPTION,
                "Reject",
                v2::PermissionOptionKind::RejectOnce,
            ),
        ];
        let request = v2::RequestPermissionRequest::new(self.session.clone(), "bench", options);
        let answer = self
            .client
            .session_request_permission(request)
            .await
            .map_err(|e| e.to_string())?;
        Ok(matches!(answer.outcome,
            v2::RequestPermissionOutcome::Selected(s) if s.option_id.0 == ALLOW_OPTION))
    }
}

impl AgentSide for SideV2 {
    async fn chunk(&self, text: String) -> Result<(), String> {
        let update = v2::SessionUpdate::AgentMessageChunk(v2::ContentChunk::new(
            "agent-1",
            v2::ContentBlock::Text(v2::TextContent::new(text)),
        ));
        self.client
            .session_update(v2::UpdateSessionNotification::new(
                self.session.clone(),
                update,
            ))
            .await
            .map_err(|e| e.to_string())
    }

    /// v2 has no `fs/*`: b's round trip is a permission request (see the module docs). An
    /// allowed one stands for the file's content, which the job checks by length.
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

/// The v2 benchmark client: counts the chunks, allows every permission request, and tells
/// `idle` (when it has one) of each turn's end.
struct BenchClientV2 {
    check: Arc<ChunkCheck>,
    idle: Option<Arc<tokio::sync::Notify>>,
}

#[acp_client::async_trait]
impl client2::Client for BenchClientV2 {
    async fn session_update(&self, n: v2::UpdateSessionNotification) -> Result<(), Error> {
        let text = match &n.update {
            v2::SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                v2::ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            },
            v2::SessionUpdate::StateUpdate(s) => {
                if let (v2::StateUpdate::Idle(_), Some(idle)) = (&s.state, &self.idle) {
                    idle.notify_one();
                }
                return Ok(());
            }
            // The translation's echo of the prompt (a v2 agent of ours sends none).
            v2::SessionUpdate::UserMessage(_) if self.idle.is_some() => return Ok(()),
            _ => None,
        };
        self.check.on_session_chunk(&n.session_id.0, text);
        Ok(())
    }

    async fn session_request_permission(
        &self,
        p: v2::RequestPermissionRequest,
    ) -> Result<v2::RequestPermissionResponse, Error> {
        let allow = p
            .options
            .iter()
            .find(|o| o.kind == v2::PermissionOptionKind::AllowOnce)
            .ok_or_else(|| Error::invalid_params("no allow option"))?;
        Ok(v2::RequestPermissionResponse::new(
            v2::RequestPermissionOutcome::Selected(v2::SelectedPermissionOutcome::new(
                allow.option_id.clone(),
            )),
        ))
    }
}

impl ClientSide for client2::AgentHandle {
    async fn initialize(&self) -> Result<(), String> {
        let request = v2::InitializeRequest::new(2, v2::Implementation::new("acp-bench", "0"));
        client2::AgentHandle::initialize(self, request)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    async fn new_session(&self) -> Result<String, String> {
        client2::AgentHandle::session_new(self, v2::NewSessionRequest::new(CWD))
            .await
            .map(|r| r.session_id.0)
            .map_err(|e| e.to_string())
    }

    async fn prompt(&self, session: &str, job: Job) -> Result<Report, String> {
        let text = v2::ContentBlock::Text(v2::TextContent::new(job.to_text()));
        let request = v2::PromptRequest::new(session, [text]);
        let response = client2::AgentHandle::session_prompt(self, request)
            .await
            .map_err(|e| e.to_string())?;
        Report::from_meta(response.meta.as_deref()).ok_or_else(|| "no report in the answer".into())
    }
}
