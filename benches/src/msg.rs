//! What every implementation's agent and client agree on: the job a prompt asks for (its
//! text), the report the agent sends back (in the prompt response's `_meta`), the text of
//! each streamed chunk, the files the client serves, and process memory.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The working directory every `session/new` names.
pub const CWD: &str = "/tmp/acp-bench";
/// The file of the small reads (b, c).
pub const SMALL_PATH: &str = "/bench/small.rs";
/// Its content.
pub const SMALL_CONTENT: &str = "fn main() {\n    println!(\"hello\");\n}\n";
/// The `_meta` key of the agent's report.
pub const REPORT_KEY: &str = "acpBench";

/// The path of a big file of `size` bytes (d).
pub fn big_path(size: usize) -> String {
    format!("/bench/big/{size}")
}

/// A text of exactly `size` bytes that looks like source code (newlines and quotes, so the
/// JSON string has escapes, as real file contents do).
pub fn big_content(size: usize) -> String {
    const LINE: &str = "    let answer = compute(\"agent client protocol\", 42); // line\n";
    let mut s = String::with_capacity(size + LINE.len());
    while s.len() < size {
        s.push_str(LINE);
    }
    s.truncate(size);
    s
}

/// What the client answers for `path` (`None`: no such file).
pub fn content_for(path: &str) -> Option<String> {
    if path == SMALL_PATH {
        return Some(SMALL_CONTENT.to_owned());
    }
    let size = path.strip_prefix("/bench/big/")?.parse().ok()?;
    Some(big_content(size))
}

/// The text of streamed chunk `i` (small, like a model token).
pub fn chunk_text(i: u64) -> String {
    format!("tok{i} ")
}

/// The index a chunk text carries.
pub fn chunk_index(text: &str) -> Option<u64> {
    text.strip_prefix("tok")?.strip_suffix(' ')?.parse().ok()
}

/// A session id shaped like the UUIDs real agents use (36 bytes), unique per `n`.
pub fn session_id(n: u64) -> String {
    format!(
        "{:08x}-0000-4000-8000-{:012x}",
        n >> 48,
        n & 0xffff_ffff_ffff
    )
}

/// What one prompt asks the agent to do; the prompt's text is [`Job::to_text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// Send `n` `agent_message_chunk` updates, then answer.
    Stream {
        /// How many.
        n: u64,
    },
    /// Call `fs/read_text_file` `n` times, one after the other.
    Sequential {
        /// How many.
        n: u64,
    },
    /// Call `fs/read_text_file` `n` times with `k` outstanding at once.
    Concurrent {
        /// How many in all.
        n: u64,
        /// How many outstanding.
        k: u64,
    },
    /// Call `fs/read_text_file` `n` times (one after the other) for a file of `size` bytes.
    Big {
        /// How many.
        n: u64,
        /// Bytes per file.
        size: u64,
    },
    /// Report memory use.
    Memory,
}

impl Job {
    /// The prompt text.
    pub fn to_text(self) -> String {
        match self {
            Job::Stream { n } => format!("stream {n}"),
            Job::Sequential { n } => format!("seq {n}"),
            Job::Concurrent { n, k } => format!("conc {n} {k}"),
            Job::Big { n, size } => format!("big {n} {size}"),
            Job::Memory => "mem".to_owned(),
        }
    }

    /// Reads a prompt text.
    pub fn parse(text: &str) -> Option<Job> {
        let mut words = text.split_whitespace();
        let verb = words.next()?;
        let mut num = || words.next()?.parse::<u64>().ok();
        Some(match verb {
            "stream" => Job::Stream { n: num()? },
            "seq" => Job::Sequential { n: num()? },
            "conc" => Job::Concurrent {
                n: num()?,
                k: num()?,
            },
            "big" => Job::Big {
                n: num()?,
                size: num()?,
            },
            "mem" => Job::Memory,
            _ => return None,
        })
    }
}

/// What the agent reports about a job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Calls made or chunks sent.
    pub count: u64,
    /// Calls that failed or answered something unexpected.
    pub errors: u64,
    /// Wall time of the job, measured by the agent.
    pub elapsed_ns: u64,
    /// Median call latency (calls only).
    pub p50_ns: u64,
    /// 99th percentile call latency (calls only).
    pub p99_ns: u64,
    /// Content bytes received (calls only).
    pub bytes: u64,
    /// Resident memory of the agent process now (KiB).
    pub rss_kib: u64,
    /// Peak resident memory of the agent process so far (KiB).
    pub hwm_kib: u64,
}

impl Report {
    /// The report as a `_meta` object.
    pub fn to_meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(
            REPORT_KEY.to_owned(),
            serde_json::to_value(self).expect("a report serializes"),
        );
        meta
    }

    /// The report inside a `_meta` object.
    pub fn from_meta(meta: Option<&Map<String, Value>>) -> Option<Report> {
        serde_json::from_value(meta?.get(REPORT_KEY)?.clone()).ok()
    }

    /// Sets the latency fields from the samples (sorted in place).
    pub fn set_latencies(&mut self, samples: &mut [u64]) {
        samples.sort_unstable();
        self.p50_ns = percentile(samples, 50.0);
        self.p99_ns = percentile(samples, 99.0);
    }

    /// Sets the memory fields from `/proc/self/status`.
    pub fn set_memory(&mut self) {
        let (rss, hwm) = self_memory();
        self.rss_kib = rss;
        self.hwm_kib = hwm;
    }

    /// The job's wall time.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns)
    }
}

/// The `p`th percentile of sorted samples (nearest rank); 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `(VmRSS, VmHWM)` of this process in KiB (zeros where `/proc` is unavailable).
pub fn self_memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Checks streamed chunks as they arrive: each must carry the next index.
#[derive(Debug, Default)]
pub struct ChunkCheck {
    next: std::sync::atomic::AtomicU64,
    errors: std::sync::atomic::AtomicU64,
}

impl ChunkCheck {
    /// One chunk arrived (`None`: not a text chunk).
    pub fn on_chunk(&self, text: Option<&str>) {
        use std::sync::atomic::Ordering::Relaxed;
        let next = self.next.load(Relaxed);
        if text.and_then(chunk_index) == Some(next) {
            self.next.store(next + 1, Relaxed);
        } else {
            self.errors.fetch_add(1, Relaxed);
        }
    }

    /// Chunks received in order so far, and chunks that were wrong or out of order.
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.next.load(Relaxed), self.errors.load(Relaxed))
    }

    /// Starts over.
    pub fn reset(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        self.next.store(0, Relaxed);
        self.errors.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_round_trip_through_their_text() {
        for job in [
            Job::Stream { n: 7 },
            Job::Sequential { n: 3 },
            Job::Concurrent { n: 10, k: 4 },
            Job::Big { n: 2, size: 100 },
            Job::Memory,
        ] {
            assert_eq!(Job::parse(&job.to_text()), Some(job));
        }
        assert_eq!(Job::parse("dance"), None);
    }

    #[test]
    fn chunk_texts_carry_their_index() {
        assert_eq!(chunk_index(&chunk_text(123_456)), Some(123_456));
        assert_eq!(chunk_index("tok12"), None);
    }

    #[test]
    fn big_content_has_the_exact_size_and_escapes() {
        let s = big_content(1000);
        assert_eq!(s.len(), 1000);
        assert!(s.contains('\n') && s.contains('"'));
        assert_eq!(content_for(&big_path(1000)), Some(s));
        assert_eq!(session_id(5).len(), 36);
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn the_chunk_check_counts_in_order_chunks_and_flags_the_rest() {
        let c = ChunkCheck::default();
        c.on_chunk(Some("tok0 "));
        c.on_chunk(Some("tok1 "));
        c.on_chunk(Some("tok3 "));
        c.on_chunk(None);
        assert_eq!(c.counts(), (2, 2));
    }
}
