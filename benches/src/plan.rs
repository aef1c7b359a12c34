//! The client's side of one measurement, written once over [`ClientSide`]: handshake, a
//! session, then the measured step, then a memory report from the agent.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::msg::{ChunkCheck, Job, Report};

/// What one measurement does after connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// `initialize` only, timed from before the agent process was spawned (f).
    Handshake,
    /// One prompt running this job, timed by the client (a..d).
    Job(Job),
    /// `n` more `session/new`, with the agent's memory before and after (e).
    Sessions(u64),
}

/// What one measurement observed.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Client-side wall time of the measured step.
    pub elapsed: Duration,
    /// The agent's report of the measured job.
    pub report: Report,
    /// The agent's memory report before the measured step (sessions only).
    pub before: Report,
    /// The agent's memory report after the measured step.
    pub after: Report,
    /// Chunks the client received in order, and chunks that were wrong or out of order.
    pub chunks: (u64, u64),
}

/// What the plan needs from a client connection.
pub trait ClientSide {
    /// `initialize`, advertising `fs.readTextFile`.
    fn initialize(&self) -> impl Future<Output = Result<(), String>>;
    /// `session/new`; the new session's id.
    fn new_session(&self) -> impl Future<Output = Result<String, String>>;
    /// `session/prompt` with the job's text; the agent's report from the answer's `_meta`.
    fn prompt(&self, session: &str, job: Job) -> impl Future<Output = Result<Report, String>>;
}

/// Runs `plan`. `start` is when the measurement began (before spawning, for f).
pub async fn run_plan<C: ClientSide>(
    client: &C,
    check: &ChunkCheck,
    plan: Plan,
    start: Instant,
) -> Result<Outcome, String> {
    client.initialize().await?;
    let mut outcome = Outcome::default();
    if plan == Plan::Handshake {
        outcome.elapsed = start.elapsed();
        return Ok(outcome);
    }
    let session = client.new_session().await?;
    match plan {
        Plan::Handshake => unreachable!("answered above"),
        Plan::Job(job) => {
            check.reset();
            let t = Instant::now();
            outcome.report = client.prompt(&session, job).await?;
            outcome.elapsed = t.elapsed();
            outcome.chunks = check.counts();
        }
        Plan::Sessions(n) => {
            outcome.before = client.prompt(&session, Job::Memory).await?;
            let t = Instant::now();
            for _ in 0..n {
                client.new_session().await?;
            }
            outcome.elapsed = t.elapsed();
            outcome.report.count = n;
        }
    }
    outcome.after = client.prompt(&session, Job::Memory).await?;
    Ok(outcome)
}
