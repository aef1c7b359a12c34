//! `acp-bench dialects`: scenario a (one prompt streaming `agent_message_chunk`s) through each
//! legacy dialect's translations, both of them back to back: our v1 client drives a legacy
//! agent (`acp_client::Builder::dialect`), which is our v1 bench agent put in front of a
//! legacy editor (`acp_agent::Builder::dialect`), over an in-memory byte pipe in the
//! dialect's wire format. Each translation runs its own connections (the legacy wire and the
//! user's v1 side), so this measures what the translations cost a stream.
//!
//! ```text
//! acp-bench dialects [--chunks N] [--runs R] [--only NAME]
//!                                   # default 20,000 chunks, median of 5, every dialect
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_agent::Dialect;

use crate::msg::{ChunkCheck, Job, Report};
use crate::ours::{BenchAgent, BenchClient};
use crate::plan::{ClientSide, Plan, run_plan};

const DIALECTS: [Dialect; 4] = [
    Dialect::Legacy009,
    Dialect::Threads,
    Dialect::Probe,
    Dialect::Crow,
];

/// Parses the arguments and prints chunks per second per dialect (median of the runs).
pub fn main(args: &[String]) -> ExitCode {
    let mut chunks = 20_000u64;
    let mut runs = 5usize;
    let mut only: Option<String> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = args.next();
        let number = value.and_then(|v| v.parse::<u64>().ok());
        match (arg.as_str(), number) {
            ("--chunks", Some(n)) => chunks = n,
            ("--runs", Some(n)) => runs = n.max(1) as usize,
            ("--only", _) if value.is_some() => only = value.cloned(),
            _ => {
                eprintln!(
                    "usage: acp-bench dialects [--chunks N] [--runs R] [--only Legacy009|Threads|Probe|Crow]"
                );
                return ExitCode::from(2);
            }
        }
    }
    let chosen = |dialect: &Dialect| {
        only.as_deref()
            .is_none_or(|name| format!("{dialect:?}").eq_ignore_ascii_case(name))
    };
    if !DIALECTS.iter().any(chosen) {
        eprintln!("acp-bench dialects: no dialect named {only:?}");
        return ExitCode::from(2);
    }
    let runtime = crate::runtime();
    println!("dialect\tchunks/s (median of {runs})\tmin\tmax");
    for dialect in DIALECTS.into_iter().filter(chosen) {
        let mut rates = Vec::new();
        for _ in 0..runs {
            match runtime.block_on(over_dialect(dialect, chunks)) {
                Ok(elapsed) => rates.push(chunks as f64 / elapsed.as_secs_f64()),
                Err(e) => {
                    eprintln!("{dialect:?}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "{dialect:?}\t{:.0}\t{:.0}\t{:.0}",
            rates[rates.len() / 2],
            rates[0],
            rates[rates.len() - 1]
        );
    }
    ExitCode::SUCCESS
}

/// One run of a through `dialect`'s two translations; the client's time of the prompt.
async fn over_dialect(dialect: Dialect, chunks: u64) -> Result<Duration, String> {
    let start = Instant::now();
    let (agent_end, client_end) = tokio::io::duplex(crate::DUPLEX_BUFFER);
    let (read, write) = tokio::io::split(agent_end);
    let options = acp_agent::legacy::AdapterOptions::default();
    let agent = acp_agent::Builder::new(BenchAgent::default())
        .dialect(dialect)
        .legacy(options)
        .io(read, write)
        .ok_or("this build has no such dialect")?;
    let check = Arc::new(ChunkCheck::default());
    let client = BenchClient {
        check: check.clone(),
    };
    let (read, write) = tokio::io::split(client_end);
    let options = acp_client::legacy::AdapterOptions::default();
    let conn = acp_client::Builder::new(client)
        .dialect(dialect)
        .legacy(options)
        .io(read, write)
        .ok_or("this build has no such dialect")?;
    let outcome = run_plan(
        &ThroughDialect(conn.agent()),
        &check,
        Plan::Job(Job::Stream { n: chunks }),
        start,
    )
    .await;
    conn.close();
    drop(agent);
    let outcome = outcome?;
    if outcome.chunks.0 != chunks || outcome.chunks.1 != 0 {
        return Err(format!(
            "{dialect:?}: {} chunks in order and {} wrong, of {chunks}",
            outcome.chunks.0, outcome.chunks.1
        ));
    }
    Ok(outcome.elapsed)
}

/// Our client through a legacy dialect: as [`AgentHandle`]'s own bench client, but a prompt's
/// answer may come without the agent's report (0.0.9's answer has no `_meta` to carry it);
/// the chunks themselves are checked as they arrive.
struct ThroughDialect<'a>(&'a acp_client::AgentHandle);

impl ClientSide for ThroughDialect<'_> {
    async fn initialize(&self) -> Result<(), String> {
        ClientSide::initialize(self.0).await
    }

    async fn new_session(&self) -> Result<String, String> {
        ClientSide::new_session(self.0).await
    }

    async fn prompt(&self, session: &str, job: Job) -> Result<Report, String> {
        use acp_agent::types::{ContentBlock, PromptRequest};
        let request = PromptRequest::new(session, [ContentBlock::text(job.to_text())]);
        let response = acp_client::AgentHandle::prompt(self.0, request)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Report::from_meta(response.meta.as_deref()).unwrap_or_default())
    }
}
