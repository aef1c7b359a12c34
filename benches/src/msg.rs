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
/// The option id the exchange's permission request offers to allow (h).
pub const ALLOW_OPTION: &str = "allow";
/// The option id it offers to reject.
pub const REJECT_OPTION: &str = "reject";
/// The tool call the exchange asks permission for.
pub const PERMISSION_TOOL_CALL: &str = "call-1";
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

/// Nanoseconds since the Unix epoch: the wall clock both processes share, so a chunk's
/// latency can be read across the process boundary (g).
pub fn unix_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The text of timed chunk `i`, stamped with the moment the agent sent it (g).
pub fn timed_chunk_text(i: u64) -> String {
    format!("tok{i}@{} ", unix_nanos())
}

/// The index and send time a timed chunk text carries.
pub fn timed_chunk(text: &str) -> Option<(u64, u64)> {
    let (index, sent) = text
        .strip_prefix("tok")?
        .strip_suffix(' ')?
        .split_once('@')?;
    Some((index.parse().ok()?, sent.parse().ok()?))
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
    /// Call `session/request_permission` `n` times, one after the other (b of `acp-bench v2`
    /// with the same message in both versions: v2 has no `fs/*`).
    Permissions {
        /// How many.
        n: u64,
    },
    /// Send `n` `agent_message_chunk` updates stamped with their send time (g), then answer.
    TimedStream {
        /// How many.
        n: u64,
    },
    /// What a short real turn does (h): 5 `agent_message_chunk` updates, one
    /// `session/request_permission`, one small `fs/read_text_file`, then answer.
    Exchange,
    /// Report memory use.
    Memory,
}

/// How many updates a [`Job::Exchange`] turn streams.
pub const EXCHANGE_UPDATES: u64 = 5;

impl Job {
    /// The prompt text.
    pub fn to_text(self) -> String {
        match self {
            Job::Stream { n } => format!("stream {n}"),
            Job::Sequential { n } => format!("seq {n}"),
            Job::Concurrent { n, k } => format!("conc {n} {k}"),
            Job::Big { n, size } => format!("big {n} {size}"),
            Job::Permissions { n } => format!("perm {n}"),
            Job::TimedStream { n } => format!("tstream {n}"),
            Job::Exchange => "exchange".to_owned(),
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
            "perm" => Job::Permissions { n: num()? },
            "tstream" => Job::TimedStream { n: num()? },
            "exchange" => Job::Exchange,
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

/// Checks streamed chunks as they arrive: each must carry the next index. With
/// [`ChunkCheck::track_sessions`] (g) it checks each session's timed chunks separately and
/// keeps every chunk's latency.
#[derive(Debug, Default)]
pub struct ChunkCheck {
    next: std::sync::atomic::AtomicU64,
    errors: std::sync::atomic::AtomicU64,
    per_session: std::sync::atomic::AtomicBool,
    /// Keep each chunk's arrival time too (`ACP_BENCH_DUMP_CHUNKS`).
    keep_arrivals: std::sync::atomic::AtomicBool,
    sessions: std::sync::Mutex<std::collections::HashMap<String, SessionTrack, SessionIdHash>>,
}

/// The hasher of [`ChunkCheck`]'s session table: FNV-1a, a few instructions per byte. The
/// measuring client looks up a session for every chunk g streams; with std's SipHash that
/// lookup was about a tenth of the client's time in g (`perf record` over `--only g --many
/// 1000 --impls ours`), work of the harness, not of the library measured. The keys are the
/// session ids the agent chose; nothing hostile reaches this table.
type SessionIdHash = std::hash::BuildHasherDefault<Fnv1a>;

/// FNV-1a over the bytes written (see [`SessionIdHash`]).
#[derive(Debug)]
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The environment variable naming a file to which g writes every chunk it received: one
/// line per chunk, `session arrival_us latency_us session_p99_us` (the session's number in
/// this run, arrival in µs after the prompts were sent). For looking at how the sessions
/// shared the stream over time; the last g measurement of a run wins.
pub const DUMP_CHUNKS_VAR: &str = "ACP_BENCH_DUMP_CHUNKS";

/// Writes the chunks of every session to `path` (see [`DUMP_CHUNKS_VAR`]).
fn dump_chunks(
    sessions: &std::collections::HashMap<String, SessionTrack, SessionIdHash>,
    prompted_at: u64,
    path: &std::path::Path,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for (number, track) in sessions.values().enumerate() {
        let mut sorted = track.latencies.clone();
        sorted.sort_unstable();
        let p99 = percentile(&sorted, 99.0) / 1000;
        for (arrived, latency) in track.arrivals.iter().zip(&track.latencies) {
            let arrived = arrived.saturating_sub(prompted_at) / 1000;
            writeln!(out, "{number} {arrived} {} {p99}", latency / 1000)?;
        }
    }
    out.flush()
}

/// What arrived for one session in the many-sessions scenario (g).
#[derive(Debug, Default)]
struct SessionTrack {
    next: u64,
    errors: u64,
    /// Latency of each chunk: arrival minus the send time it carries (ns).
    latencies: Vec<u64>,
    /// When its first chunk arrived (Unix ns).
    first_at: Option<u64>,
    /// When each chunk arrived (Unix ns), kept only for `ACP_BENCH_DUMP_CHUNKS`.
    arrivals: Vec<u64>,
}

/// The figures of the many-sessions scenario (g), from the client's side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ManyFigures {
    /// Sessions tracked.
    pub sessions: u64,
    /// Chunks received in order, over all sessions.
    pub in_order: u64,
    /// Chunks wrong, out of order, or for a session nobody prompted.
    pub errors: u64,
    /// The median over sessions of each session's p99 chunk latency (ns).
    pub median_session_p99_ns: u64,
    /// The worst session's p99 chunk latency (ns).
    pub worst_session_p99_ns: u64,
    /// The longest wait of any session for its first chunk, from the moment all prompts were
    /// sent (ns): a session that starves behind the others shows here.
    pub worst_first_chunk_ns: u64,
}

impl ChunkCheck {
    /// Switches to per-session checking of timed chunks for `sessions` (g).
    pub fn track_sessions(&self, sessions: &[String]) {
        self.keep_arrivals.store(
            std::env::var_os(DUMP_CHUNKS_VAR).is_some(),
            std::sync::atomic::Ordering::Relaxed,
        );
        let mut map = self.sessions.lock().unwrap();
        map.clear();
        for s in sessions {
            map.insert(s.clone(), SessionTrack::default());
        }
        self.per_session
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// One chunk arrived for `session` (`None`: not a text chunk).
    pub fn on_session_chunk(&self, session: &str, text: Option<&str>) {
        if !self.per_session.load(std::sync::atomic::Ordering::Acquire) {
            return self.on_chunk(text);
        }
        let now = unix_nanos();
        let mut map = self.sessions.lock().unwrap();
        let Some(track) = map.get_mut(session) else {
            self.errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        };
        match text.and_then(timed_chunk) {
            Some((index, sent)) if index == track.next => {
                track.next += 1;
                track.latencies.push(now.saturating_sub(sent));
                if self
                    .keep_arrivals
                    .load(std::sync::atomic::Ordering::Relaxed)
                {
                    track.arrivals.push(now);
                }
                track.first_at.get_or_insert(now);
            }
            _ => track.errors += 1,
        }
    }

    /// The per-session figures; `prompted_at` is when the prompts were sent (Unix ns).
    pub fn many_figures(&self, prompted_at: u64) -> ManyFigures {
        let mut map = self.sessions.lock().unwrap();
        let mut figures = ManyFigures {
            errors: self.errors.load(std::sync::atomic::Ordering::Relaxed),
            ..ManyFigures::default()
        };
        figures.sessions = map.len() as u64;
        if let Some(path) = std::env::var_os(DUMP_CHUNKS_VAR)
            && let Err(e) = dump_chunks(&map, prompted_at, std::path::Path::new(&path))
        {
            eprintln!("acp-bench: {DUMP_CHUNKS_VAR}: {e}");
        }
        let mut p99s = Vec::with_capacity(map.len());
        for track in map.values_mut() {
            figures.in_order += track.next;
            figures.errors += track.errors;
            track.latencies.sort_unstable();
            p99s.push(percentile(&track.latencies, 99.0));
            let first = track
                .first_at
                .map_or(u64::MAX, |t| t.saturating_sub(prompted_at));
            figures.worst_first_chunk_ns = figures.worst_first_chunk_ns.max(first);
        }
        p99s.sort_unstable();
        if std::env::var_os("ACP_BENCH_SHOW_SESSIONS").is_some() {
            let deciles: Vec<String> = [0.0, 10.0, 50.0, 90.0, 95.0, 99.0, 100.0]
                .iter()
                .map(|p| format!("p{p}={}us", percentile(&p99s, *p) / 1000))
                .collect();
            eprintln!("per-session p99 chunk latency: {}", deciles.join(" "));
            let mut worst: Vec<(u64, u64)> = map
                .values()
                .map(|t| {
                    (
                        percentile(&t.latencies, 99.0),
                        t.first_at.unwrap_or(0).saturating_sub(prompted_at),
                    )
                })
                .collect();
            worst.sort_unstable();
            for (p99, first) in worst.iter().rev().take(5) {
                eprintln!(
                    "  a worst session: p99 {}us, first chunk after {}ms",
                    p99 / 1000,
                    first / 1_000_000
                );
            }
        }
        figures.median_session_p99_ns = percentile(&p99s, 50.0);
        figures.worst_session_p99_ns = p99s.last().copied().unwrap_or(0);
        figures
    }

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
            Job::TimedStream { n: 9 },
            Job::Permissions { n: 4 },
            Job::Exchange,
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
    fn timed_chunks_carry_index_and_send_time() {
        let (index, sent) = timed_chunk(&timed_chunk_text(42)).unwrap();
        assert_eq!(index, 42);
        assert!(sent > 0 && sent <= unix_nanos());
        assert_eq!(timed_chunk("tok42 "), None);
    }

    #[test]
    fn per_session_checking_keeps_sessions_apart_and_flags_strays() {
        let c = ChunkCheck::default();
        c.track_sessions(&["s1".to_owned(), "s2".to_owned()]);
        let start = unix_nanos();
        for i in 0..3 {
            c.on_session_chunk("s1", Some(&timed_chunk_text(i)));
        }
        c.on_session_chunk("s2", Some(&timed_chunk_text(0)));
        c.on_session_chunk("s2", Some(&timed_chunk_text(2)));
        c.on_session_chunk("nobody", Some(&timed_chunk_text(0)));
        let f = c.many_figures(start);
        assert_eq!((f.in_order, f.errors), (4, 2));
        assert!(f.worst_session_p99_ns >= f.median_session_p99_ns);
        assert!(f.worst_first_chunk_ns < 60_000_000_000);
    }

    #[test]
    fn the_chunk_dump_has_one_line_per_chunk_received_in_order() {
        let c = ChunkCheck::default();
        c.track_sessions(&["s1".to_owned(), "s2".to_owned()]);
        c.keep_arrivals
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let start = unix_nanos();
        for i in 0..3 {
            c.on_session_chunk("s1", Some(&timed_chunk_text(i)));
        }
        c.on_session_chunk("s2", Some(&timed_chunk_text(0)));
        c.on_session_chunk("s2", Some(&timed_chunk_text(5))); // out of order: not a chunk received
        let path = std::env::temp_dir().join(format!("acp-bench-dump-{}", std::process::id()));
        dump_chunks(&c.sessions.lock().unwrap(), start, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lines: Vec<Vec<u64>> = text
            .lines()
            .map(|l| l.split(' ').map(|f| f.parse().unwrap()).collect())
            .collect();
        assert_eq!(lines.len(), 4);
        assert!(lines.iter().all(|fields| fields.len() == 4));
        let mut per_session = std::collections::HashMap::new();
        for fields in &lines {
            *per_session.entry(fields[0]).or_insert(0) += 1;
        }
        let mut counts: Vec<u32> = per_session.into_values().collect();
        counts.sort_unstable();
        assert_eq!(counts, [1, 3]);
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
