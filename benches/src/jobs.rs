//! The agent's side of every job, written once over [`AgentSide`] so our agent and the
//! official one run exactly the same loop and measure it the same way.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::msg::{
    EXCHANGE_UPDATES, Job, Report, SMALL_CONTENT, SMALL_PATH, big_path, chunk_text,
    timed_chunk_text,
};

/// What a job needs from an agent connection.
pub trait AgentSide: Clone + Send + Sync + 'static {
    /// Sends `agent_message_chunk` number `i` (text [`chunk_text`]) for the prompted session.
    fn chunk(&self, text: String) -> impl Future<Output = Result<(), String>> + Send;
    /// Calls `fs/read_text_file` on the client and returns the content.
    fn read(&self, path: String) -> impl Future<Output = Result<String, String>> + Send;
    /// Calls `session/request_permission` with an allow and a reject option; `true` when the
    /// client selected the allow option.
    fn permission(&self) -> impl Future<Output = Result<bool, String>> + Send;
}

/// Runs `job` and reports on it (memory included).
pub async fn run_job<S: AgentSide>(side: &S, job: Job) -> Report {
    let mut report = Report::default();
    let start = Instant::now();
    match job {
        Job::Stream { n } => {
            for i in 0..n {
                if side.chunk(chunk_text(i)).await.is_err() {
                    report.errors += n - i;
                    break;
                }
                report.count += 1;
            }
        }
        Job::Sequential { n } => {
            let mut samples = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let t = Instant::now();
                let answer = side.read(SMALL_PATH.to_owned()).await;
                samples.push(t.elapsed().as_nanos() as u64);
                tally(&mut report, answer, SMALL_CONTENT.len());
            }
            report.set_latencies(&mut samples);
        }
        Job::Concurrent { n, k } => {
            let claimed = Arc::new(AtomicU64::new(0));
            let mut workers = tokio::task::JoinSet::new();
            for _ in 0..k.max(1) {
                let side = side.clone();
                let claimed = claimed.clone();
                workers.spawn(async move {
                    let mut part = Report::default();
                    let mut samples = Vec::new();
                    while claimed.fetch_add(1, Ordering::Relaxed) < n {
                        let t = Instant::now();
                        let answer = side.read(SMALL_PATH.to_owned()).await;
                        samples.push(t.elapsed().as_nanos() as u64);
                        tally(&mut part, answer, SMALL_CONTENT.len());
                    }
                    (part, samples)
                });
            }
            let mut samples = Vec::with_capacity(n as usize);
            while let Some(joined) = workers.join_next().await {
                match joined {
                    Ok((part, s)) => {
                        report.count += part.count;
                        report.errors += part.errors;
                        report.bytes += part.bytes;
                        samples.extend(s);
                    }
                    Err(_) => report.errors += 1,
                }
            }
            report.set_latencies(&mut samples);
        }
        Job::Big { n, size } => {
            let path = big_path(size as usize);
            let mut samples = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let t = Instant::now();
                let answer = side.read(path.clone()).await;
                samples.push(t.elapsed().as_nanos() as u64);
                tally(&mut report, answer, size as usize);
            }
            report.set_latencies(&mut samples);
        }
        Job::Permissions { n } => {
            let mut samples = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let t = Instant::now();
                let answer = side.permission().await;
                samples.push(t.elapsed().as_nanos() as u64);
                report.count += 1;
                if !matches!(answer, Ok(true)) {
                    report.errors += 1;
                }
            }
            report.set_latencies(&mut samples);
        }
        Job::TimedStream { n } => {
            for i in 0..n {
                if side.chunk(timed_chunk_text(i)).await.is_err() {
                    report.errors += n - i;
                    break;
                }
                report.count += 1;
            }
        }
        Job::Exchange => {
            for i in 0..EXCHANGE_UPDATES {
                match side.chunk(chunk_text(i)).await {
                    Ok(()) => report.count += 1,
                    Err(_) => report.errors += 1,
                }
            }
            match side.permission().await {
                Ok(true) => report.count += 1,
                _ => report.errors += 1,
            }
            let answer = side.read(SMALL_PATH.to_owned()).await;
            tally(&mut report, answer, SMALL_CONTENT.len());
        }
        Job::Memory => {}
    }
    report.elapsed_ns = start.elapsed().as_nanos() as u64;
    report.set_memory();
    report
}

/// Counts one call: an answer of the expected length counts, anything else is an error.
fn tally(report: &mut Report, answer: Result<String, String>, expected_len: usize) {
    report.count += 1;
    match answer {
        Ok(content) if content.len() == expected_len => report.bytes += content.len() as u64,
        _ => report.errors += 1,
    }
}
