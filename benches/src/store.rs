//! `acp-bench store`: the figures behind the choice of the embedded session store, for both
//! candidates (`jsonl`: `acp_agent::store::JsonlStore`, `sqlite`: [`SqliteStore`]) side by
//! side in one run.
//!
//! - **replay**: `session/load` of a stored session of `--events` events (a recorded
//!   conversation: prompt, thought, tool call, answer, repeated), timed at the client until
//!   the answer with every replayed update received, and the agent process's peak resident
//!   memory during it above its resident memory before (`VmHWM` after `clear_refs`).
//! - **list**: `session/list` over `--sessions` stored sessions: the first page, and the full
//!   walk with cursors (100 per page).
//! - **idle memory**: the agent process's resident memory after `initialize` with the store
//!   of `--sessions` sessions, minus the same with an empty store, per session.
//! - **stream**: scenario a (one prompt streaming `--chunks` `agent_message_chunk`s, in
//!   process over duplex) with the store attached, as a ratio of a without a store.
//!
//! Each figure is the median of `--runs` runs; every agent process is fresh.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_agent::store::{JsonlStore, SessionMeta, SessionStore, StoreError, StoredEvent};
use acp_agent::types::{
    ContentBlock, InitializeRequest, ListSessionsRequest, LoadSessionRequest, McpServer,
    ProtocolVersion, SessionId, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus,
};
use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::{Client, Config};

use crate::msg::{CWD, Job};
use crate::plan::Plan;
use crate::store_sqlite::SqliteStore;

/// The argument that turns this binary into a store-backed agent process.
pub const STORE_PEER_ARG: &str = "__store-peer";

const USAGE: &str = "\
usage: acp-bench store [options]
  --runs N       runs per figure and store; medians are reported (default 5)
  --events N     replay: events in the stored session (default 10000)
  --sessions N   list and idle memory: stored sessions (default 10000)
  --chunks N     stream: notifications per prompt (default 200000)
  --smoke        tiny sizes, one run";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Jsonl,
    Sqlite,
}

impl Backend {
    const ALL: [Backend; 2] = [Backend::Jsonl, Backend::Sqlite];

    fn name(self) -> &'static str {
        match self {
            Backend::Jsonl => "jsonl",
            Backend::Sqlite => "sqlite",
        }
    }

    fn parse(s: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == s)
    }

    fn open(self, dir: &Path) -> Result<Arc<dyn SessionStore>, StoreError> {
        Ok(match self {
            Backend::Jsonl => Arc::new(JsonlStore::open(dir)?),
            Backend::Sqlite => Arc::new(SqliteStore::open(dir)?),
        })
    }
}

struct Options {
    runs: usize,
    events: u64,
    sessions: u64,
    chunks: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        runs: 5,
        events: 10_000,
        sessions: 10_000,
        chunks: 200_000,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match arg.as_str() {
            "--runs" => o.runs = num("--runs")? as usize,
            "--events" => o.events = num("--events")?,
            "--sessions" => o.sessions = num("--sessions")?,
            "--chunks" => o.chunks = num("--chunks")?,
            "--smoke" => {
                o.runs = 1;
                o.events = 200;
                o.sessions = 250;
                o.chunks = 2_000;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// The body of a store-backed agent process: `__store-peer <backend> <dir>`.
pub fn peer(args: &[String]) -> ExitCode {
    let (Some(backend), Some(dir)) = (args.first().and_then(|b| Backend::parse(b)), args.get(1))
    else {
        eprintln!("usage: {STORE_PEER_ARG} <jsonl|sqlite> DIR");
        return ExitCode::from(2);
    };
    let store = match backend.open(Path::new(dir)) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("store peer: {e}");
            return ExitCode::FAILURE;
        }
    };
    crate::runtime().block_on(crate::ours::serve_stdio_stored(store));
    ExitCode::SUCCESS
}

/// One recorded turn: four events, about 1 KiB on disk, the shape a coding agent's turn has.
fn turn(i: u64) -> [StoredEvent; 4] {
    let mut call = ToolCall::new(format!("call-{i}"), format!("Read src/module_{i}.rs"));
    call.status = ToolCallStatus::Completed;
    call.content = vec![ToolCallContent::content(ContentBlock::text(
        "fn main() {\n    println!(\"hello\");\n}\n".repeat(4),
    ))];
    [
        StoredEvent::Prompt(vec![ContentBlock::text(format!(
            "Please look at module {i} and explain what it does."
        ))]),
        StoredEvent::Update(SessionUpdate::agent_thought_text(
            "The user wants an explanation; reading the file first. ".repeat(2),
        )),
        StoredEvent::Update(SessionUpdate::ToolCall(Box::new(call))),
        StoredEvent::Update(SessionUpdate::agent_message_text(format!(
            "Module {i} prints a greeting from its main function. {}",
            "It has no other items and no dependencies. ".repeat(4)
        ))),
    ]
}

/// A store with one session of `events` events (`long`).
async fn prepare_history(backend: Backend, dir: &Path, events: u64) -> Result<(), String> {
    let store = backend.open(dir).map_err(|e| e.to_string())?;
    let id = SessionId("long".into());
    store
        .create(SessionMeta::new(id.clone(), CWD))
        .await
        .map_err(|e| e.to_string())?;
    let mut written = 0;
    let mut i = 0;
    while written < events {
        let take = (events - written).min(4) as usize;
        let batch: Vec<StoredEvent> = turn(i).into_iter().take(take).collect();
        written += batch.len() as u64;
        store.append(&id, batch).await.map_err(|e| e.to_string())?;
        i += 1;
    }
    Ok(())
}

/// A store with `n` sessions (one turn each), half in [`CWD`], half elsewhere.
async fn prepare_sessions(backend: Backend, dir: &Path, n: u64) -> Result<(), String> {
    let store = backend.open(dir).map_err(|e| e.to_string())?;
    for i in 0..n {
        let id = SessionId(crate::msg::session_id(i));
        let cwd = if i % 2 == 0 { CWD } else { "/tmp/elsewhere" };
        store
            .create(SessionMeta::new(id.clone(), cwd))
            .await
            .map_err(|e| e.to_string())?;
        store
            .append(&id, turn(i).to_vec())
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

struct Quiet;

#[acp_client::async_trait]
impl Client for Quiet {}

/// `(VmRSS, VmHWM)` of a process in KiB.
fn memory_of(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A fresh store-backed agent process, initialized.
async fn start_agent(
    backend: Backend,
    dir: &Path,
) -> Result<(AgentProcess, acp_client::ClientConnection, u32), String> {
    let command = AgentCommand::new(crate::exe())
        .arg(STORE_PEER_ARG)
        .arg(backend.name())
        .arg(dir.as_os_str().to_owned());
    let mut process = AgentProcess::spawn(&command).map_err(|e| e.to_string())?;
    let pid = process.id().ok_or("no pid")?;
    let conn = process
        .connect(Quiet, Config::default())
        .map_err(|e| e.to_string())?;
    let init = conn
        .agent()
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .map_err(|e| e.to_string())?;
    if !init.agent_capabilities.load_session {
        return Err("the agent does not advertise loadSession".into());
    }
    Ok((process, conn, pid))
}

struct ReplayRun {
    elapsed: Duration,
    peak_over_kib: i64,
    updates: usize,
}

async fn replay_once(backend: Backend, dir: &Path) -> Result<ReplayRun, String> {
    let (process, conn, pid) = start_agent(backend, dir).await?;
    // Reset the peak to the current resident size, then read it after the load.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").map_err(|e| e.to_string())?;
    let (before, _) = memory_of(pid);
    let request = LoadSessionRequest::new(Vec::<McpServer>::new(), CWD, "long");
    let t = Instant::now();
    let loaded = conn
        .agent()
        .load_session_history(request)
        .await
        .map_err(|e| e.to_string())?;
    let elapsed = t.elapsed();
    let (_, peak) = memory_of(pid);
    conn.close();
    let _ = process.shutdown(Duration::from_secs(5)).await;
    Ok(ReplayRun {
        elapsed,
        peak_over_kib: peak as i64 - before as i64,
        updates: loaded.history.len(),
    })
}

struct ListRun {
    first_page: Duration,
    walk: Duration,
    rows: usize,
    idle_rss_kib: u64,
}

async fn list_once(backend: Backend, dir: &Path) -> Result<ListRun, String> {
    let (process, conn, pid) = start_agent(backend, dir).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (idle_rss_kib, _) = memory_of(pid);
    let agent = conn.agent();
    let t = Instant::now();
    let first = agent
        .list_sessions(ListSessionsRequest::new())
        .await
        .map_err(|e| e.to_string())?;
    let first_page = t.elapsed();
    let t = Instant::now();
    let mut rows = 0;
    let mut cursor: Option<String> = None;
    loop {
        let request = match cursor.take() {
            Some(c) => ListSessionsRequest::new().cursor(c),
            None => ListSessionsRequest::new(),
        };
        let page = agent
            .list_sessions(request)
            .await
            .map_err(|e| e.to_string())?;
        rows += page.sessions.len();
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let walk = t.elapsed();
    if first.sessions.is_empty() && rows > 0 {
        return Err("the first page is empty".into());
    }
    conn.close();
    let _ = process.shutdown(Duration::from_secs(5)).await;
    Ok(ListRun {
        first_page,
        walk,
        rows,
        idle_rss_kib,
    })
}

async fn stream_once(store: Option<(Backend, PathBuf)>, chunks: u64) -> Result<f64, String> {
    let store = match &store {
        Some((backend, dir)) => {
            let _ = std::fs::remove_dir_all(dir);
            Some(backend.open(dir).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let outcome =
        crate::ours::over_duplex_stored(Plan::Job(Job::Stream { n: chunks }), store).await?;
    let (in_order, wrong) = outcome.chunks;
    if in_order != chunks || wrong != 0 {
        return Err(format!(
            "{in_order} of {chunks} chunks arrived in order, {wrong} wrong"
        ));
    }
    Ok(chunks as f64 / outcome.elapsed.as_secs_f64())
}

fn median<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// `acp-bench store ...`.
pub fn main(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match crate::duplex_runtime().block_on(run(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("acp-bench store: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(o: &Options) -> Result<(), String> {
    let root = std::env::temp_dir().join(format!("acp-bench-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    println!(
        "acp-bench store: runs {}, replay {} events, list {} sessions, stream {} chunks",
        o.runs, o.events, o.sessions, o.chunks
    );
    println!(
        "| store | replay {} events | agent peak over idle while replaying | list: first page | list: full walk | idle memory per stored session | stream with store / without |",
        o.events
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for backend in Backend::ALL {
        let base = root.join(backend.name());
        let (history, many, empty) = (base.join("history"), base.join("many"), base.join("empty"));
        let t = Instant::now();
        prepare_history(backend, &history, o.events).await?;
        let history_write = t.elapsed();
        let t = Instant::now();
        prepare_sessions(backend, &many, o.sessions).await?;
        let sessions_write = t.elapsed();
        std::fs::create_dir_all(&empty).map_err(|e| e.to_string())?;
        eprintln!(
            "{}: wrote {} events in {} ({} appends), {} sessions in {}",
            backend.name(),
            o.events,
            ms(history_write),
            o.events.div_ceil(4),
            o.sessions,
            ms(sessions_write)
        );

        let mut replays = Vec::new();
        let mut lists = Vec::new();
        let mut empties = Vec::new();
        for _ in 0..o.runs {
            let r = replay_once(backend, &history).await?;
            // One update per event: each prompt has one content block.
            let expected = o.events;
            if r.updates as u64 != expected {
                return Err(format!("replayed {} of {expected} updates", r.updates));
            }
            replays.push(r);
            let l = list_once(backend, &many).await?;
            if l.rows as u64 != o.sessions {
                return Err(format!("listed {} of {} sessions", l.rows, o.sessions));
            }
            lists.push(l);
            empties.push(list_once(backend, &empty).await?.idle_rss_kib);
        }
        // The stream figure is the noisiest (one in-process prompt, well under a second):
        // more pairs, alternating which goes first, and the ratio of the medians.
        let mut with_rates = Vec::new();
        let mut without_rates = Vec::new();
        for pair in 0..(2 * o.runs + 1) {
            let dir = base.join("stream");
            if pair % 2 == 0 {
                without_rates.push(stream_once(None, o.chunks).await?);
                with_rates.push(stream_once(Some((backend, dir)), o.chunks).await?);
            } else {
                with_rates.push(stream_once(Some((backend, dir)), o.chunks).await?);
                without_rates.push(stream_once(None, o.chunks).await?);
            }
        }
        let with = median(with_rates.clone());
        let without = median(without_rates.clone());
        eprintln!(
            "{}: stream medians {with:.0} chunks/s with the store, {without:.0} without (with: {:?}; without: {:?})",
            backend.name(),
            with_rates.iter().map(|r| *r as u64).collect::<Vec<_>>(),
            without_rates.iter().map(|r| *r as u64).collect::<Vec<_>>(),
        );
        let replay = median(replays.iter().map(|r| r.elapsed).collect());
        let peak = median(replays.iter().map(|r| r.peak_over_kib).collect());
        let first = median(lists.iter().map(|l| l.first_page).collect());
        let walk = median(lists.iter().map(|l| l.walk).collect());
        let idle_many = median(lists.iter().map(|l| l.idle_rss_kib).collect());
        let idle_empty = median(empties);
        let per_session = (idle_many as f64 - idle_empty as f64) * 1024.0 / o.sessions as f64;
        let ratio = with / without;
        // On a shared machine the runs split into disturbed and undisturbed ones; the best
        // run of each side compares the undisturbed ones.
        let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let best_ratio = best(&with_rates) / best(&without_rates);
        println!(
            "| {} | {} | {} KiB | {} | {} | {:.0} B ({} KiB vs {} KiB empty) | {:.0}% (best runs {:.0}%) |",
            backend.name(),
            ms(replay),
            peak,
            ms(first),
            ms(walk),
            per_session,
            idle_many,
            idle_empty,
            ratio * 100.0,
            best_ratio * 100.0
        );
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
