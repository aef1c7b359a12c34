//! The client's side of one measurement, written once over [`ClientSide`]: handshake, a
//! session, then the measured step, then a memory report from the agent.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::msg::{ChunkCheck, Job, ManyFigures, Report, unix_nanos};

/// What one measurement does after connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// `initialize` only, timed from before the agent process was spawned (f).
    Handshake,
    /// One prompt running this job, timed by the client (a..d).
    Job(Job),
    /// `n` more `session/new`, with the agent's memory before and after (e).
    Sessions(u64),
    /// `sessions` sessions, then one prompt in each at once, each streaming `chunks` timed
    /// chunks (g).
    Many {
        /// Sessions prompted at once.
        sessions: u64,
        /// Chunks each prompt streams.
        chunks: u64,
    },
    /// One short real turn ([`Job::Exchange`]), timed from before the agent process was
    /// spawned until it was shut down (h).
    Exchange,
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
    /// The per-session figures (g only).
    pub many: Option<ManyFigures>,
    /// When each step ended (h only, for `ACP_BENCH_SHOW_PHASES`): `initialize`,
    /// `session/new`, `prompt`; the caller adds its own.
    pub marks: Vec<(&'static str, Instant)>,
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
    outcome.marks.push(("initialize", Instant::now()));
    if plan == Plan::Handshake {
        outcome.elapsed = start.elapsed();
        return Ok(outcome);
    }
    let session = client.new_session().await?;
    outcome.marks.push(("session/new", Instant::now()));
    match plan {
        Plan::Handshake => unreachable!("answered above"),
        Plan::Job(job) => {
            check.reset();
            let t = Instant::now();
            outcome.report = client.prompt(&session, job).await?;
            outcome.elapsed = t.elapsed();
            outcome.chunks = check.counts();
        }
        Plan::Many { sessions, chunks } => {
            let mut ids = Vec::with_capacity(sessions as usize);
            for _ in 0..sessions {
                ids.push(client.new_session().await?);
            }
            check.track_sessions(&ids);
            let prompted_at = unix_nanos();
            let t = Instant::now();
            let turns = ids
                .iter()
                .map(|id| Box::pin(client.prompt(id, Job::TimedStream { n: chunks })));
            for report in join_all(turns).await {
                let report = report?;
                outcome.report.count += report.count;
                outcome.report.errors += report.errors;
            }
            outcome.elapsed = t.elapsed();
            outcome.many = Some(check.many_figures(prompted_at));
        }
        Plan::Exchange => {
            outcome.report = client.prompt(&session, Job::Exchange).await?;
            outcome.marks.push(("prompt", Instant::now()));
            // The caller adds the shutdown and sets the elapsed time.
            return Ok(outcome);
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

/// Runs every future at once on this task and returns their outputs in order (the turns of
/// g share one client connection, whose futures need not be `Send`).
pub async fn join_all<F: Future + Unpin>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<Option<F>> = futures.into_iter().map(Some).collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    let mut left = pending.len();
    std::future::poll_fn(|cx| {
        for (slot, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            if let Some(future) = slot
                && let std::task::Poll::Ready(value) = std::pin::Pin::new(future).poll(cx)
            {
                *output = Some(value);
                *slot = None;
                left -= 1;
            }
        }
        if left == 0 {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}
