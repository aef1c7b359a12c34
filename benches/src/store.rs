//! `acp-bench store`: the session store figures, side by side in one run: the embedded
//! stores (`sqlite`: `acp_store::SqliteStore`, the default every process on a machine
//! shares; `jsonl`: `acp_store::JsonlStore`, one process at a time) and the store for
//! several hosts (`postgres`: `acp_store_postgres::PostgresStore`, on a PostgreSQL
//! server the run starts from Debian's binaries in a temporary directory, as the tests do;
//! left out with a note when they are missing).
//!
//! - **append**: events per second written into a fresh store in batches of four (one
//!   recorded turn each), the way a connection appends a turn.
//! - **replay**: `session/load` of a stored session of `--events` events (a recorded
//!   conversation: prompt, thought, tool call, answer, repeated), timed at the client until
//!   the answer with every replayed update received, and the agent process's peak resident
//!   memory during it above its resident memory before (`VmHWM` after `clear_refs`).
//! - **list**: `session/list` over `--sessions` stored sessions: the first page, and the full
//!   walk with cursors (100 per page).
//! - **idle memory**: the agent process's resident memory after `initialize` with the store
//!   of `--sessions` sessions, minus the same with an empty store, per session.
//! - **stream**: scenario a (one prompt streaming `--chunks` `agent_message_chunk`s, in
//!   process over duplex) with the store attached, as a ratio of a without a store, at each
//!   durability setting (`event` appends the updates of each transport write in one append:
//!   a round trip per write for PostgreSQL, not per chunk).
//!
//! Each figure is the median of `--runs` runs; every agent process is fresh. `--stream-only`
//! takes only the stream figure (the short run BENCHMARKS.md quotes).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_agent::store::{
    Durability, JsonlStore, SessionMeta, SessionStore, SqliteStore, StoreError, StoredEvent,
};
use acp_agent::types::{
    ContentBlock, InitializeRequest, ListSessionsRequest, LoadSessionRequest, McpServer,
    ProtocolVersion, SessionId, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus,
};
use acp_client::Client;
use acp_client::process::{AgentCommand, AgentProcess};

use crate::msg::{CWD, Job};
use crate::pg;
use crate::plan::Plan;

/// The argument that turns this binary into a store-backed agent process.
pub const STORE_PEER_ARG: &str = "__store-peer";

const USAGE: &str = "\
usage: acp-bench store [options]
  --runs N       runs per figure and store; medians are reported (default 5)
  --events N     replay: events in the stored session (default 10000)
  --sessions N   list and idle memory: stored sessions (default 10000)
  --chunks N     stream: notifications per prompt (default 200000)
  --smoke        tiny sizes, one run
  --stream-only  only the stream figure (with the store / without)";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Jsonl,
    Sqlite,
    Postgres,
}

const INTERVAL_50MS: Durability = Durability::Interval(Duration::from_millis(50));

impl Backend {
    const ALL: [Backend; 3] = [Backend::Sqlite, Backend::Jsonl, Backend::Postgres];

    fn name(self) -> &'static str {
        match self {
            Backend::Jsonl => "jsonl",
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    fn parse(s: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == s)
    }

    /// Opens the store at `at`: a directory for the embedded stores, a database URL for
    /// PostgreSQL.
    async fn open(
        self,
        at: &str,
        durability: Durability,
    ) -> Result<Arc<dyn SessionStore>, StoreError> {
        Ok(match self {
            Backend::Jsonl => {
                Arc::new(JsonlStore::open(Path::new(at))?.with_durability(durability))
            }
            Backend::Sqlite => {
                Arc::new(SqliteStore::open(Path::new(at))?.with_durability(durability))
            }
            Backend::Postgres => Arc::new(
                acp_store_postgres::PostgresStore::open(at)
                    .await?
                    .with_durability(durability),
            ),
        })
    }

    /// The durability settings the stream figure is taken at.
    fn durabilities(self) -> &'static [Durability] {
        match self {
            Backend::Jsonl => &[
                Durability::Event,
                Durability::EventSyncTurn,
                INTERVAL_50MS,
                Durability::Turn,
            ],
            Backend::Sqlite => &[Durability::Event, INTERVAL_50MS, Durability::Turn],
            Backend::Postgres => &[Durability::Event, INTERVAL_50MS, Durability::Turn],
        }
    }
}

/// Where a figure's store lives: a fresh directory under `root`, or a fresh database.
fn place(backend: Backend, root: &Path, name: &str, server: Option<&pg::Server>) -> String {
    match (backend, server) {
        (Backend::Postgres, Some(server)) => server.fresh_db(),
        _ => {
            let dir = root.join(backend.name()).join(name);
            let _ = std::fs::remove_dir_all(&dir);
            dir.to_string_lossy().into_owned()
        }
    }
}

struct Options {
    runs: usize,
    events: u64,
    sessions: u64,
    chunks: u64,
    stream_only: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        runs: 5,
        events: 10_000,
        sessions: 10_000,
        chunks: 200_000,
        stream_only: false,
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
            "--stream-only" => o.stream_only = true,
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

/// The body of a store-backed agent process: `__store-peer <backend> <dir or URL>`.
pub fn peer(args: &[String]) -> ExitCode {
    let (Some(backend), Some(at)) = (args.first().and_then(|b| Backend::parse(b)), args.get(1))
    else {
        eprintln!("usage: {STORE_PEER_ARG} <jsonl|sqlite|postgres> <DIR|URL>");
        return ExitCode::from(2);
    };
    let runtime = crate::runtime();
    let store = match runtime.block_on(backend.open(at, Durability::default())) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("store peer: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(crate::ours::serve_stdio_stored(store));
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
async fn prepare_history(backend: Backend, at: &str, events: u64) -> Result<(), String> {
    let store = backend
        .open(at, Durability::default())
        .await
        .map_err(|e| e.to_string())?;
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
async fn prepare_sessions(backend: Backend, at: &str, n: u64) -> Result<(), String> {
    let store = backend
        .open(at, Durability::default())
        .await
        .map_err(|e| e.to_string())?;
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
    at: &str,
) -> Result<(AgentProcess, acp_client::ClientConnection, u32), String> {
    let command = AgentCommand::new(crate::exe())
        .arg(STORE_PEER_ARG)
        .arg(backend.name())
        .arg(at);
    let mut process = AgentProcess::spawn(&command).map_err(|e| e.to_string())?;
    let pid = process.id().ok_or("no pid")?;
    let conn = acp_client::Builder::new(Quiet)
        .attach(&mut process)
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

async fn replay_once(backend: Backend, at: &str) -> Result<ReplayRun, String> {
    let (process, conn, pid) = start_agent(backend, at).await?;
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

async fn list_once(backend: Backend, at: &str) -> Result<ListRun, String> {
    let (process, conn, pid) = start_agent(backend, at).await?;
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

/// One streamed prompt's chunks per second; `store`: the backend, where its store is (a
/// directory is emptied first), and the durability.
async fn stream_once(
    store: Option<(Backend, &str, Durability)>,
    chunks: u64,
) -> Result<f64, String> {
    let store = match store {
        Some((backend, at, durability)) => {
            if backend != Backend::Postgres {
                let _ = std::fs::remove_dir_all(at);
            }
            Some(
                backend
                    .open(at, durability)
                    .await
                    .map_err(|e| e.to_string())?,
            )
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
    let server = pg::Server::start();
    if server.is_none() {
        eprintln!("(the postgres rows are left out: no PostgreSQL server binaries)");
    }
    println!(
        "acp-bench store: runs {}, replay {} events, list {} sessions, stream {} chunks",
        o.runs, o.events, o.sessions, o.chunks
    );
    if !o.stream_only {
        println!(
            "| store | append (batches of 4) | replay {} events | agent peak over idle while replaying | list: first page | list: full walk | idle memory per stored session |",
            o.events
        );
        println!("| --- | --- | --- | --- | --- | --- | --- |");
    }
    let backends: Vec<Backend> = Backend::ALL
        .into_iter()
        .filter(|b| *b != Backend::Postgres || server.is_some())
        .collect();
    let mut streams = Vec::new();
    for &backend in &backends {
        let at = |name: &str| place(backend, &root, name, server.as_ref());
        if !o.stream_only {
            table_row(o, backend, &at).await?;
        }
        for &durability in backend.durabilities() {
            let chunks = o.chunks;
            // A fresh store for every prompt (the bench agent's session id is always the same).
            let fresh = || at("stream");
            let ratio = stream_ratio(o, backend, &fresh, durability, chunks).await?;
            streams.push((backend, durability, chunks, ratio));
        }
    }
    println!();
    println!("| store | durability | chunks | stream with store / without (medians; best runs) |");
    println!("| --- | --- | --- | --- |");
    for (backend, durability, chunks, (ratio, best)) in streams {
        println!(
            "| {} | {durability:?} | {chunks} | {:.1}% ({:.1}%) |",
            backend.name(),
            ratio * 100.0,
            best * 100.0
        );
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

/// The append, replay, list and memory figures of one store, as a row of the first table.
async fn table_row(
    o: &Options,
    backend: Backend,
    at: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let (history, many, empty) = (at("history"), at("many"), at("empty"));
    let t = Instant::now();
    prepare_history(backend, &history, o.events).await?;
    let history_write = t.elapsed();
    let t = Instant::now();
    prepare_sessions(backend, &many, o.sessions).await?;
    let sessions_write = t.elapsed();
    if backend != Backend::Postgres {
        std::fs::create_dir_all(&empty).map_err(|e| e.to_string())?;
    }
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
    let replay = median(replays.iter().map(|r| r.elapsed).collect());
    let peak = median(replays.iter().map(|r| r.peak_over_kib).collect());
    let first = median(lists.iter().map(|l| l.first_page).collect());
    let walk = median(lists.iter().map(|l| l.walk).collect());
    let idle_many = median(lists.iter().map(|l| l.idle_rss_kib).collect());
    let idle_empty = median(empties);
    let per_session = (idle_many as f64 - idle_empty as f64) * 1024.0 / o.sessions as f64;
    println!(
        "| {} | {:.0} events/s | {} | {} KiB | {} | {} | {:.0} B ({} KiB vs {} KiB empty) |",
        backend.name(),
        o.events as f64 / history_write.as_secs_f64(),
        ms(replay),
        peak,
        ms(first),
        ms(walk),
        per_session,
        idle_many,
        idle_empty,
    );
    Ok(())
}

/// Scenario a with the store over scenario a without: the ratio of the medians and of the
/// best runs. The noisiest figure (one in-process prompt, well under a second): more pairs,
/// alternating which goes first.
async fn stream_ratio(
    o: &Options,
    backend: Backend,
    fresh: &dyn Fn() -> String,
    durability: Durability,
    chunks: u64,
) -> Result<(f64, f64), String> {
    let mut with_rates = Vec::new();
    let mut without_rates = Vec::new();
    for pair in 0..(2 * o.runs + 1) {
        let at = fresh();
        let with = Some((backend, at.as_str(), durability));
        if pair % 2 == 0 {
            without_rates.push(stream_once(None, chunks).await?);
            with_rates.push(stream_once(with, chunks).await?);
        } else {
            with_rates.push(stream_once(with, chunks).await?);
            without_rates.push(stream_once(None, chunks).await?);
        }
    }
    let with = median(with_rates.clone());
    let without = median(without_rates.clone());
    eprintln!(
        "{} {durability:?}: stream medians {with:.0} chunks/s with the store, {without:.0} without (with: {:?}; without: {:?})",
        backend.name(),
        with_rates.iter().map(|r| *r as u64).collect::<Vec<_>>(),
        without_rates.iter().map(|r| *r as u64).collect::<Vec<_>>(),
    );
    // On a shared machine the runs split into disturbed and undisturbed ones; the best run
    // of each side compares the undisturbed ones.
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    Ok((with / without, best(&with_rates) / best(&without_rates)))
}
