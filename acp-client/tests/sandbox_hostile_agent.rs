//! The client's sandbox against a hostile agent, a real child process
//! (`examples/hostile_agent.rs`, run as this same binary with `ACP_HOSTILE_AGENT=1`) that
//! attacks in loops under races it runs itself. For each attack:
//!
//! * no byte of the outside canary file is ever returned (counted by the agent in every
//!   answer, and by the client in every read it served);
//! * nothing outside the workspace is created or changed (the canary directory is
//!   snapshotted before and after);
//! * no request hangs (the agent counts answers later than 10 s; the whole turn has a
//!   timeout);
//! * the client's peak RSS (`VmHWM` of this process) stays bounded where memory is the point.
//!
//! A harness-less test (`harness = false`): `main` runs the scenarios one after the other
//! and panics on the first failure.

#[path = "../examples/hostile_agent.rs"]
mod agent;
#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_client::fs::SandboxedFs;
use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::terminal::{TerminalConfig, TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, Error, PromptEvent, async_trait};
use acp_types::v1::*;
use serde_json::Value;
use support::alive;

const SECRET: &str = "CANARY-SECRET-7f3a9c";

/// The client under test: the built-in handlers, plus a count of served reads that carried
/// the secret and a record of what the terminal policy was shown.
struct Sandboxed {
    fs: SandboxedFs,
    terminals: Terminals,
    outside: PathBuf,
    leaks: AtomicU64,
    shown: Mutex<Vec<TerminalRequest>>,
}

#[async_trait]
impl Client for Sandboxed {
    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        let r = self.fs.read_text_file(p).await;
        if r.as_ref().is_ok_and(|r| r.content.contains(SECRET)) {
            self.leaks.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
    /// Like a user reading each command: anything that names the outside directory is
    /// refused, the rest allowed (so the client's own limits are what is tested).
    async fn approve_terminal(&self, r: &TerminalRequest) -> TerminalDecision {
        self.shown.lock().unwrap().push(r.clone());
        let outside = self.outside.to_string_lossy();
        if r.args.iter().any(|a| a.contains(&*outside)) {
            TerminalDecision::deny("it writes outside the workspace")
        } else {
            TerminalDecision::Allow
        }
    }
    // `fs/write_text_file` and every terminal method: the trait's defaults, from these.
    fn file_system(&self) -> Option<&SandboxedFs> {
        Some(&self.fs)
    }
    fn terminals(&self) -> Option<&Terminals> {
        Some(&self.terminals)
    }
}

/// A workspace and a canary directory (with the secret) side by side, removed on drop.
struct Dirs {
    base: PathBuf,
    workspace: PathBuf,
    outside: PathBuf,
}

impl Dirs {
    fn new(tag: &str) -> Dirs {
        let base = std::env::temp_dir().join(format!("acp-hostile-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let workspace = base.join("workspace");
        let outside = base.join("outside");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        let base = std::fs::canonicalize(base).unwrap();
        Dirs {
            workspace: base.join("workspace"),
            outside: base.join("outside"),
            base,
        }
    }

    /// Every entry of the canary directory with its content.
    fn canary(&self) -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(&self.outside)
            .unwrap()
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap_or_default(),
                )
            })
            .collect()
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// This process's peak RSS in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap()
}

/// Runs the hostile agent with `attacks` against `client` (one prompt turn), closes the
/// terminals, and returns the agent's reports by attack.
async fn run_agent(dirs: &Dirs, attacks: &str, client: Arc<Sandboxed>) -> BTreeMap<String, Value> {
    let report = dirs.base.join("report.jsonl");
    let command = AgentCommand::new(std::env::current_exe().unwrap())
        .env("ACP_HOSTILE_AGENT", "1")
        .env("HOSTILE_ATTACKS", attacks)
        .env("HOSTILE_OUTSIDE", &dirs.outside)
        .env("HOSTILE_REPORT", &report)
        .env("HOSTILE_SECONDS", "2")
        .cwd(&dirs.workspace);
    let mut process = AgentProcess::spawn(&command).unwrap();
    let (stdout, stdin) = process.take_stdio().unwrap();
    let conn = acp_client::Builder::shared(client.clone()).io(stdout, stdin);
    let agent = conn.agent().clone();
    let turn = async {
        agent.initialize(InitializeRequest::new(1)).await.unwrap();
        let session = agent
            .new_session(NewSessionRequest::new(
                dirs.workspace.to_string_lossy(),
                Vec::<McpServer>::new(),
            ))
            .await
            .unwrap();
        client
            .terminals
            .add_session(session.session_id.clone(), &dirs.workspace, []);
        let mut turn = agent.prompt_stream(PromptRequest::new(
            session.session_id,
            [ContentBlock::text("attack")],
        ));
        while let Some(event) = turn.next().await {
            if let PromptEvent::Done(result) = event {
                assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(240), turn)
        .await
        .expect("the hostile turn ends: no request hung");
    client.terminals.close().await;
    conn.close();
    let _ = process.shutdown(Duration::from_secs(2)).await;
    std::fs::read_to_string(&report)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("HOSTILE "))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["attack"].as_str().unwrap().to_owned(), v))
        .collect()
}

fn client(dirs: &Dirs) -> Arc<Sandboxed> {
    Arc::new(Sandboxed {
        fs: SandboxedFs::new([&dirs.workspace]).unwrap(),
        terminals: Terminals::new()
            .with_config(TerminalConfig::default().with_max_live_per_session(8)),
        outside: dirs.outside.clone(),
        leaks: AtomicU64::new(0),
        shown: Mutex::new(Vec::new()),
    })
}

fn n(report: &Value, field: &str) -> u64 {
    report[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {report}"))
}

/// Every attack answered, none hung, no secret in any answer.
fn assert_answered_without_leaks(report: &Value) {
    assert!(n(report, "sent") > 0, "{report}");
    assert_eq!(n(report, "answered"), n(report, "sent"), "{report}");
    assert_eq!(n(report, "unanswered"), 0, "{report}");
    assert_eq!(n(report, "leaked"), 0, "{report}");
}

async fn file_attacks() {
    let dirs = Dirs::new("fs");
    let before = dirs.canary();
    let client = client(&dirs);
    let started = Instant::now();
    let reports = run_agent(&dirs, "fs-race,size-race,fifo", client.clone()).await;
    let took = started.elapsed();
    assert_eq!(
        client.leaks.load(Ordering::Relaxed),
        0,
        "a read served the secret"
    );
    assert_eq!(dirs.canary(), before, "the canary directory changed");

    let race = &reports["fs-race"];
    assert_answered_without_leaks(race);
    assert!(n(race, "swaps") > 1000, "the race ran: {race}");
    assert_eq!(n(race, "createdOutside"), 0, "{race}");
    // The race does not make every request fail: between swaps the client serves them.
    assert!(n(race, "readsOk") > 0 && n(race, "writesOk") > 0, "{race}");

    let size = &reports["size-race"];
    assert_answered_without_leaks(size);
    assert!(n(size, "swaps") > 1000, "the race ran: {size}");
    assert_eq!(n(size, "oversized"), 0, "{size}");
    assert!(n(size, "maxAnswerBytes") < 4096, "{size}");

    let fifo = &reports["fifo"];
    assert_answered_without_leaks(fifo);
    assert_eq!(n(fifo, "errors"), n(fifo, "sent"), "{fifo}");
    assert!(n(fifo, "slowestMs") < 2000, "{fifo}");
    assert!(
        fifo["messages"][0]
            .as_str()
            .is_some_and(|m| m.contains("not a regular file")),
        "{fifo}"
    );

    // The 100 MiB file is never held: far below its size (the old client peaked at 209 MiB).
    let peak = peak_rss_kib();
    assert!(peak < 64 * 1024, "client peak RSS {peak} KiB");
    println!(
        "file attacks held in {:.1} s, client peak RSS {} KiB\n  {race}\n  {size}\n  {fifo}",
        took.as_secs_f64(),
        peak
    );
}

async fn terminal_attacks() {
    let dirs = Dirs::new("term");
    let before = dirs.canary();
    let client = client(&dirs);
    let started = Instant::now();
    let reports = run_agent(
        &dirs,
        "term-escape,term-burst,term-flood,term-setsid,agent-setsid",
        client.clone(),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(dirs.canary(), before, "the canary directory changed");

    let escape = &reports["term-escape"];
    assert_answered_without_leaks(escape);
    assert_eq!(n(escape, "createdOutside"), 0, "{escape}");
    // The script naming the outside dir was shown to the policy and declined; the outside
    // cwd and the injected env were refused before the policy was asked.
    let messages = escape["messages"].to_string();
    assert!(messages.contains("declined by the client"), "{escape}");
    assert!(
        messages.contains("outside the session's directories"),
        "{escape}"
    );
    assert!(
        messages.contains("environment variables (INJECTED)"),
        "{escape}"
    );
    // Without `cwd`, the command ran in the session's directory, not ours.
    assert_eq!(
        escape["defaultCwd"].as_str().unwrap().trim_end(),
        dirs.workspace.to_string_lossy(),
        "{escape}"
    );
    let shown = client.shown.lock().unwrap().clone();
    assert!(
        shown.iter().any(|r| r.command == "sh"
            && r.args.len() == 2
            && r.args[1].contains("term-pwned")
            && r.cwd == dirs.workspace
            && r.env.is_empty()),
        "the policy saw the exact command: {shown:?}"
    );
    assert!(
        !shown
            .iter()
            .any(|r| !r.env.is_empty() || !r.cwd_inside_roots),
        "refused requests never reached the policy"
    );

    let burst = &reports["term-burst"];
    assert_answered_without_leaks(burst);
    assert_eq!(n(burst, "started"), 8, "{burst}");
    assert!(
        burst["firstRefusal"]
            .as_str()
            .is_some_and(|m| m.contains("already holds 8 terminals")),
        "{burst}"
    );

    let flood = &reports["term-flood"];
    assert_answered_without_leaks(flood);
    assert_eq!(n(flood, "outputBytes"), 16 * 1024 * 1024, "{flood}");
    assert_eq!(flood["truncated"], true, "{flood}");

    let setsid = &reports["term-setsid"];
    assert_answered_without_leaks(setsid);
    let pid = u32::try_from(n(setsid, "grandchildPid")).unwrap();
    // `close` ran: the grandchild that left the group is gone too.
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !alive(pid),
        "the setsid grandchild {pid} outlived the client's cleanup"
    );

    // The agent's own setsid grandchild is gone too (AgentProcess::shutdown swept it).
    let agent_setsid = &reports["agent-setsid"];
    let pid = u32::try_from(n(agent_setsid, "grandchildPid")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !alive(pid),
        "the agent's setsid grandchild {pid} outlived its shutdown"
    );

    // 500 MB printed, 16 MiB kept (the old client peaked at 1,440 MiB).
    let peak = peak_rss_kib();
    assert!(peak < 160 * 1024, "client peak RSS {peak} KiB");
    println!(
        "terminal attacks held in {:.1} s, client peak RSS {} KiB\n  {escape}\n  {burst}\n  {flood}\n  {setsid}",
        took.as_secs_f64(),
        peak
    );
}

fn main() {
    if std::env::var_os("ACP_HOSTILE_AGENT").is_some() {
        agent::main();
        return;
    }
    // `--list`, or a name filter meant for other tests (`cargo test -p acp-client foo`).
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if args.iter().any(|a| a == "--list")
        || (!filters.is_empty()
            && !filters
                .iter()
                .any(|f| "sandbox_hostile_agent".contains(f.as_str())))
    {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        file_attacks().await;
        terminal_attacks().await;
    });
    println!("sandbox_hostile_agent: every attack held");
}
