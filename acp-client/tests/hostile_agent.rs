//! The client against a hostile agent: this test binary re-runs itself as a fault-injecting
//! agent (a real child process over real pipes, `HOSTILE_AGENT=<scenario>`), and each
//! scenario checks that the client neither panics nor hangs, keeps its memory bounded where
//! that is the point, and gives the application a clear error.
//!
//! `cargo test -p acp-client --test hostile_agent [-- <name filter>]`. Memory is measured as
//! the growth of this process's peak RSS (`VmHWM`, reset through `/proc/self/clear_refs`
//! before each scenario that measures it).

use std::time::{Duration, Instant};

use acp_client::process::{AgentCommand, AgentProcess, ProcessError};
use acp_client::{Client, ClientConnection, Error, ErrorCode, PromptEvent, RequestTimeouts};
use acp_types::v1::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
};

const AGENT_ENV: &str = "HOSTILE_AGENT";

#[path = "hostile_agent/agent.rs"]
mod agent;

use agent::{run_agent, scale};

// ---------------------------------------------------------------------------------------
// The client side (the test process)
// ---------------------------------------------------------------------------------------

struct Quiet;
impl Client for Quiet {}

struct Collect(std::sync::Mutex<Vec<SessionNotification>>);
#[acp_client::async_trait]
impl Client for Collect {
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        self.0.lock().unwrap().push(n);
        Ok(())
    }
}

fn spawn(scenario: &str) -> AgentProcess {
    spawn_with(scenario, &[])
}

fn spawn_with(scenario: &str, env: &[(&str, &str)]) -> AgentProcess {
    let mut cmd = AgentCommand::new(std::env::current_exe().unwrap()).env(AGENT_ENV, scenario);
    for (k, v) in env {
        cmd = cmd.env(*k, *v);
    }
    AgentProcess::spawn(&cmd).unwrap()
}

fn connect(p: &mut AgentProcess) -> ClientConnection {
    acp_client::Builder::new(Quiet).attach(p).unwrap()
}

async fn within<T>(what: &str, secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("hung: {what}"))
}

async fn initialize(conn: &ClientConnection) -> Result<(), Error> {
    conn.agent()
        .initialize(InitializeRequest::new(1))
        .await
        .map(|_| ())
}

async fn session(conn: &ClientConnection) -> String {
    let s = conn
        .agent()
        .new_session(NewSessionRequest::new(
            "/",
            Vec::<acp_types::v1::McpServer>::new(),
        ))
        .await
        .unwrap();
    s.session_id.0
}

fn prompt(session: &str) -> PromptRequest {
    PromptRequest::new(session.to_owned(), [ContentBlock::text("hi")])
}

/// Resets the peak RSS so the next [`peak_rss_mib`] measures from now.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

fn peak_rss_mib() -> u64 {
    status_kib("VmHWM:") / 1024
}

fn rss_mib() -> u64 {
    status_kib("VmRSS:") / 1024
}

async fn a_silent_agent_times_out_after_the_handshake() {
    let mut p = spawn("silent_after_initialize");
    let mut conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    conn.set_request_timeouts(
        RequestTimeouts::default().method("session/new", Some(Duration::from_millis(300))),
    );
    let start = Instant::now();
    let err = within("session/new", 10, async {
        conn.agent()
            .new_session(NewSessionRequest::new(
                "/",
                Vec::<acp_types::v1::McpServer>::new(),
            ))
            .await
            .unwrap_err()
    })
    .await;
    assert_eq!(err.code, ErrorCode::REQUEST_TIMED_OUT, "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
    // The defaults: a minute for ordinary requests, none for those that wait on a person.
    let d = RequestTimeouts::default();
    assert_eq!(d.for_method("session/new"), Some(Duration::from_secs(60)));
    for untimed in [
        "session/prompt",
        "authenticate",
        "session/request_permission",
    ] {
        assert_eq!(d.for_method(untimed), None, "{untimed}");
    }
    assert_eq!(
        conn.agent().timeouts().for_method("session/new"),
        Some(Duration::from_millis(300))
    );
}

async fn invalid_utf8_before_initialize_is_skipped() {
    let mut p = spawn("invalid_utf8_before_initialize");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    within("session", 10, session(&conn)).await;
}

async fn invalid_utf8_mid_prompt_is_skipped_and_the_turn_completes() {
    let mut p = spawn("invalid_utf8_mid_prompt");
    let conn = acp_client::Builder::new(Collect(Default::default()))
        .attach(&mut p)
        .unwrap();
    within("initialize", 10, initialize(&conn)).await.unwrap();
    let s = within("session", 10, session(&conn)).await;
    let (updates, result) = within(
        "prompt",
        10,
        conn.agent().prompt_stream(prompt(&s)).collect(),
    )
    .await;
    result.unwrap();
    assert_eq!(updates.len(), 2, "{updates:?}");
}

async fn a_200_mib_line_is_skipped_in_bounded_memory() {
    reset_peak();
    let before = rss_mib();
    let mut p = spawn("line_200mib");
    let conn = connect(&mut p);
    within("initialize", 120, initialize(&conn)).await.unwrap();
    let grew = peak_rss_mib().saturating_sub(before);
    println!("    200 MiB line: peak RSS grew {grew} MiB");
    // At most the 64 MiB limit is ever assembled (and then dropped).
    assert!(grew < 100, "peak RSS grew {grew} MiB for a skipped line");
    // And the memory is given back once the line is skipped.
    let kept = rss_mib().saturating_sub(before);
    println!("    200 MiB line: RSS after the skip {kept} MiB above the start");
    assert!(kept < 32, "{kept} MiB kept after skipping the line");
}

async fn a_60_mib_update_costs_about_twice_its_size() {
    let mut p = spawn("notification_60mib");
    let conn = acp_client::Builder::new(Collect(Default::default()))
        .attach(&mut p)
        .unwrap();
    within("initialize", 10, initialize(&conn)).await.unwrap();
    let s = within("session", 10, session(&conn)).await;
    reset_peak();
    let before = rss_mib();
    within("prompt", 120, conn.agent().prompt(prompt(&s)))
        .await
        .unwrap();
    let grew = peak_rss_mib().saturating_sub(before);
    println!("    60 MiB update: peak RSS grew {grew} MiB");
    assert!(grew < 200, "peak RSS grew {grew} MiB for a 60 MiB update");
}

async fn a_line_cut_by_eof_fails_initialize_and_names_the_exit() {
    let mut p = spawn("line_cut_by_eof");
    let conn = connect(&mut p);
    let err = within("initialize", 10, initialize(&conn))
        .await
        .unwrap_err();
    assert!(err.is_connection_closed(), "{err}");
    let exited = within("exit", 10, p.wait_exit()).await.to_string();
    assert!(exited.contains("exit status: 7"), "{exited}");
    assert!(exited.contains("cutting my answer short"), "{exited}");
}

async fn a_million_updates_stream_through_in_bounded_memory() {
    let n = scale();
    let mut p = spawn("million_updates");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    let s = within("session", 10, session(&conn)).await;
    reset_peak();
    let before = rss_mib();
    let mut stream = conn.agent().prompt_stream(prompt(&s));
    // A slow consumer at first: the agent must be held back, not buffered.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut updates = 0;
    let done = within("a million updates", 600, async {
        loop {
            match stream.next().await {
                Some(PromptEvent::Update(_)) => updates += 1,
                Some(PromptEvent::Done(result)) => break result,
                None => panic!("stream ended without Done"),
            }
        }
    })
    .await;
    done.unwrap();
    assert_eq!(updates, n);
    let grew = peak_rss_mib().saturating_sub(before);
    println!("    {n} updates: peak RSS grew {grew} MiB");
    assert!(grew < 64, "peak RSS grew {grew} MiB");
}

async fn responses_to_unknown_and_duplicate_ids_are_ignored() {
    let mut p = spawn("unknown_and_duplicate_ids");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    within("session", 10, session(&conn)).await;
    assert_eq!(conn.peer().pending_requests(), 0);
}

async fn result_and_error_together_fail_the_caller_and_a_stray_one_is_not_answered() {
    let mut p = spawn("result_and_error");
    let conn = connect(&mut p);
    let err = within("initialize", 10, initialize(&conn))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_REQUEST, "{err}");
    assert!(err.message.contains("both"), "{err}");
    let exited = within("agent checks", 20, p.wait_exit()).await;
    let ProcessError::Exited {
        status,
        stderr_tail,
        ..
    } = &exited
    else {
        panic!("{exited}")
    };
    assert_eq!(
        status.code(),
        Some(0),
        "the stray response was answered: {stderr_tail}"
    );
    drop(conn);
}

async fn odd_ids_unknown_methods_and_wrong_params_each_get_one_answer() {
    let mut p = spawn("odd_ids_unknown_methods_wrong_params");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    let exited = within("agent checks", 20, p.wait_exit()).await;
    let ProcessError::Exited {
        status,
        stderr_tail,
        ..
    } = &exited
    else {
        panic!("{exited}")
    };
    assert_eq!(status.code(), Some(0), "{stderr_tail}");
    // 2^70 is named exactly; the unknown method and bad params get their codes.
    assert!(stderr_tail.contains("null:-32600"), "{stderr_tail}");
    assert!(stderr_tail.contains("\"\":-32601"), "{stderr_tail}");
    assert!(
        stderr_tail.contains("7:-32602") || stderr_tail.contains("7:-32601"),
        "{stderr_tail}"
    );
    drop(conn);
}

async fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let mut p = spawn("deep_nesting");
    let conn = connect(&mut p);
    within("initialize", 20, initialize(&conn)).await.unwrap();
    within("session", 10, session(&conn)).await;
}

async fn a_stderr_flood_keeps_only_a_bounded_tail() {
    let mut p = spawn("stderr_flood");
    let conn = connect(&mut p);
    within("initialize", 60, initialize(&conn)).await.unwrap();
    // Let the forwarder catch up with the flood.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !p.stderr_tail().ends_with("the last line") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tail = p.stderr_tail();
    assert!(tail.ends_with("the last line"));
    assert!(tail.len() <= acp_client::process::STDERR_TAIL_BYTES + 64);
}

async fn an_exit_mid_prompt_fails_the_prompt_and_names_status_and_stderr() {
    let mut p = spawn("exit_mid_prompt");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    let s = within("session", 10, session(&conn)).await;
    let (updates, result) = within(
        "prompt",
        10,
        conn.agent().prompt_stream(prompt(&s)).collect(),
    )
    .await;
    assert_eq!(updates.len(), 1);
    let err = result.unwrap_err();
    assert!(err.is_connection_closed(), "{err}");
    let exited = within("exit", 10, p.wait_exit()).await.to_string();
    assert!(exited.contains("exit status: 3"), "{exited}");
    assert!(exited.contains("out of cheese"), "{exited}");
}

async fn stdout_closed_while_running_fails_the_prompt() {
    let mut p = spawn("stdout_closed");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    let s = within("session", 10, session(&conn)).await;
    let err = within("prompt", 10, conn.agent().prompt(prompt(&s)))
        .await
        .unwrap_err();
    assert!(err.is_connection_closed(), "{err}");
    within("shutdown", 20, p.shutdown(Duration::from_millis(200)))
        .await
        .unwrap();
}

async fn stdin_closed_while_running_fails_the_next_request() {
    let mut p = spawn("stdin_closed");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut conn = conn;
    conn.set_request_timeouts(RequestTimeouts::new(Some(Duration::from_secs(2))));
    let err = within("session/new", 10, async {
        conn.agent()
            .new_session(NewSessionRequest::new(
                "/",
                Vec::<acp_types::v1::McpServer>::new(),
            ))
            .await
            .unwrap_err()
    })
    .await;
    // The write fails (broken pipe) and closes the connection, or the timeout fires.
    assert!(
        err.is_connection_closed() || err.code == ErrorCode::REQUEST_TIMED_OUT,
        "{err}"
    );
    within("shutdown", 20, p.shutdown(Duration::from_millis(200)))
        .await
        .unwrap();
}

async fn escape_sequences_in_agent_text_arrive_as_data() {
    let mut p = spawn("escape_sequences");
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    let s = within("session", 10, session(&conn)).await;
    let (updates, result) = within(
        "prompt",
        10,
        conn.agent().prompt_stream(prompt(&s)).collect(),
    )
    .await;
    result.unwrap();
    let text = format!("{updates:?}");
    assert!(text.contains("\\u{1b}[2J"), "{text}");
}

async fn a_million_requests_from_an_agent_that_never_reads_stay_in_bounded_memory() {
    let n = scale();
    reset_peak();
    let before = rss_mib();
    let mut p = spawn("requests_never_read");
    let conn = connect(&mut p);
    // The client answers until its pipe to the agent is full, then stops reading: the
    // agent blocks in its writes. Give it time to try.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let grew = peak_rss_mib().saturating_sub(before);
    println!("    {n} unread requests: peak RSS grew {grew} MiB");
    assert!(
        !p.stderr_tail().contains("wrote all"),
        "the client kept reading"
    );
    assert!(grew < 64, "peak RSS grew {grew} MiB");
    drop(conn);
    within("shutdown", 20, p.shutdown(Duration::from_millis(200)))
        .await
        .unwrap();
}

async fn shutdown_lets_the_agents_helpers_clean_up() {
    let dir = std::env::temp_dir().join(format!("acp-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("cleaned");
    let mut p = spawn_with("leaves_a_helper", &[("MARKER", marker.to_str().unwrap())]);
    let conn = connect(&mut p);
    within("initialize", 10, initialize(&conn)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = within("shutdown", 20, p.shutdown(Duration::from_secs(2)))
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let cleaned = std::fs::read_to_string(&marker).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        cleaned.trim(),
        "cleaned",
        "the helper got SIGKILL, not SIGTERM"
    );
}

type Scenario = fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        [$((stringify!($name), (|| Box::pin($name()) as _) as Scenario)),*]
    };
}

fn main() {
    if let Ok(scenario) = std::env::var(AGENT_ENV) {
        run_agent(&scenario);
        return;
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Memory-measuring scenarios first, each from a reset peak.
    let all = scenarios![
        a_million_requests_from_an_agent_that_never_reads_stay_in_bounded_memory,
        a_million_updates_stream_through_in_bounded_memory,
        a_200_mib_line_is_skipped_in_bounded_memory,
        a_60_mib_update_costs_about_twice_its_size,
        a_silent_agent_times_out_after_the_handshake,
        invalid_utf8_before_initialize_is_skipped,
        invalid_utf8_mid_prompt_is_skipped_and_the_turn_completes,
        a_line_cut_by_eof_fails_initialize_and_names_the_exit,
        responses_to_unknown_and_duplicate_ids_are_ignored,
        result_and_error_together_fail_the_caller_and_a_stray_one_is_not_answered,
        odd_ids_unknown_methods_and_wrong_params_each_get_one_answer,
        deep_nesting_is_refused_without_overflowing_the_stack,
        a_stderr_flood_keeps_only_a_bounded_tail,
        an_exit_mid_prompt_fails_the_prompt_and_names_status_and_stderr,
        stdout_closed_while_running_fails_the_prompt,
        stdin_closed_while_running_fails_the_next_request,
        escape_sequences_in_agent_text_arrive_as_data,
        shutdown_lets_the_agents_helpers_clean_up,
    ];
    for (name, scenario) in all {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let start = Instant::now();
        rt.block_on(scenario());
        println!("test {name} ... ok ({:?})", start.elapsed());
    }
}
