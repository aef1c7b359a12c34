//! The terminal policy: nothing runs unless the application allows it, commands without
//! `cwd` run in the session's directory, a `cwd` outside the roots and env vars are refused
//! unless configured, `outputByteLimit` is clamped, live terminals per session are capped,
//! and a `setsid` grandchild is stopped with its terminal (SIGTERM first, then SIGKILL).

use std::path::{Path, PathBuf};

#[path = "support/mod.rs"]
mod support;

use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{TempDir, alive};

use acp_client::terminal::{TerminalConfig, TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, ErrorCode, async_trait};
use acp_types::v1::*;

/// A client whose policy answers `allow` and records what it was shown.
struct Policy {
    allow: bool,
    shown: Mutex<Vec<TerminalRequest>>,
}

impl Policy {
    fn allowing(allow: bool) -> Policy {
        Policy {
            allow,
            shown: Mutex::new(Vec::new()),
        }
    }
    fn shown(&self) -> Vec<TerminalRequest> {
        self.shown.lock().unwrap().clone()
    }
}

#[async_trait]
impl Client for Policy {
    async fn approve_terminal(&self, r: &TerminalRequest) -> TerminalDecision {
        self.shown.lock().unwrap().push(r.clone());
        if self.allow {
            TerminalDecision::Allow
        } else {
            TerminalDecision::deny("the user said no")
        }
    }
}

/// A client that keeps the trait's default policy.
struct Defaults;
impl Client for Defaults {}

fn create(command: &str, args: &[&str]) -> CreateTerminalRequest {
    CreateTerminalRequest::new("s1", command).args(args.iter().copied())
}

async fn finish(t: &Terminals, id: &TerminalId) -> TerminalOutputResponse {
    tokio::time::timeout(
        Duration::from_secs(30),
        t.wait_for_exit(WaitForTerminalExitRequest::new("s1", id.clone())),
    )
    .await
    .expect("the command exits")
    .unwrap();
    t.output(TerminalOutputRequest::new("s1", id.clone()))
        .await
        .unwrap()
}

fn session_terminals(ws: &Path) -> Terminals {
    let t = Terminals::new();
    t.add_session("s1".into(), ws, []);
    t
}

#[tokio::test]
async fn by_default_nothing_runs_and_the_refusal_says_why() {
    let ws = TempDir::new("default");
    let t = session_terminals(ws.path());
    let marker = ws.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let err = t
        .create(create("sh", &["-c", &cmd]), &Defaults)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(
        err.message.contains("declined by the client"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("unless the application allows"),
        "{}",
        err.message
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!marker.exists(), "a refused command ran");
    assert!(t.is_empty());

    let no = Policy::allowing(false);
    let err = t.create(create("true", &[]), &no).await.unwrap_err();
    assert!(err.message.contains("the user said no"), "{}", err.message);
}

#[tokio::test]
async fn an_allowed_command_runs_and_the_policy_saw_exactly_it() {
    let ws = TempDir::new("allowed");
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    let t = session_terminals(ws.path());
    let yes = Policy::allowing(true);
    let req = create("sh", &["-c", "echo \"it's $0\"; pwd", "arg zero"])
        .cwd(ws.path().join("sub").to_string_lossy())
        .output_byte_limit(1000);
    let id = t.create(req, &yes).await.unwrap().terminal_id;
    let out = finish(&t, &id).await;
    assert_eq!(
        out.output,
        format!("it's arg zero\n{}\n", ws.path().join("sub").display())
    );
    let shown = yes.shown();
    assert_eq!(shown.len(), 1);
    let r = &shown[0];
    assert_eq!(r.command, "sh");
    assert_eq!(r.args, ["-c", "echo \"it's $0\"; pwd", "arg zero"]);
    assert_eq!(r.cwd, ws.path().join("sub"));
    assert!(r.cwd_from_agent && r.cwd_inside_roots);
    assert!(r.env.is_empty());
    assert_eq!(r.output_byte_limit, 1000);
    // What an application prints when it asks: quoted so it reads back as the same words.
    assert_eq!(
        r.to_string(),
        format!(
            "`sh -c 'echo \"it'\\''s $0\"; pwd' 'arg zero'` in {}",
            ws.path().join("sub").display()
        )
    );
}

#[tokio::test]
async fn without_cwd_the_command_runs_in_the_sessions_directory() {
    let ws = TempDir::new("cwd");
    let t = session_terminals(ws.path());
    let yes = Policy::allowing(true);
    let id = t
        .create(create("pwd", &[]), &yes)
        .await
        .unwrap()
        .terminal_id;
    let out = finish(&t, &id).await;
    assert_eq!(out.output, format!("{}\n", ws.path().display()));
    assert_ne!(std::env::current_dir().unwrap(), ws.path());
    assert!(!yes.shown()[0].cwd_from_agent);

    // A session the client knows nothing of is refused, not run in our cwd.
    let other = CreateTerminalRequest::new("unknown", "pwd");
    let err = t.create(other, &yes).await.unwrap_err();
    assert!(
        err.message.contains("no working directory"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_cwd_outside_the_roots_is_refused_unless_allowed() {
    let ws = TempDir::new("outside");
    let elsewhere = TempDir::new("outside-other");
    std::os::unix::fs::symlink(elsewhere.path(), ws.path().join("link")).unwrap();
    let t = session_terminals(ws.path());
    let yes = Policy::allowing(true);
    for cwd in [
        elsewhere.path().to_path_buf(),
        ws.path().join("link"),
        PathBuf::from("/"),
    ] {
        let req = create("pwd", &[]).cwd(cwd.to_string_lossy());
        let err = t.create(req, &yes).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(
            err.message.contains("outside the session's directories"),
            "{}",
            err.message
        );
    }
    let req = create("pwd", &[]).cwd("relative");
    assert!(t.create(req, &yes).await.is_err());
    assert!(
        yes.shown().is_empty(),
        "refused requests are not put to the policy"
    );

    let t = Terminals::new()
        .with_config(TerminalConfig::default().with_cwd_outside_roots_allowed(true));
    t.add_session("s1".into(), ws.path(), []);
    let req = create("pwd", &[]).cwd(elsewhere.path().to_string_lossy());
    let id = t.create(req, &yes).await.unwrap().terminal_id;
    assert_eq!(
        finish(&t, &id).await.output,
        format!("{}\n", elsewhere.path().display())
    );
    assert!(!yes.shown()[0].cwd_inside_roots);

    // An additional root counts as inside.
    let t = Terminals::new();
    t.add_session("s1".into(), ws.path(), [elsewhere.path().to_path_buf()]);
    let req = create("pwd", &[]).cwd(elsewhere.path().to_string_lossy());
    assert!(t.create(req, &yes).await.is_ok());
}

#[tokio::test]
async fn environment_variables_are_refused_unless_allowed() {
    let ws = TempDir::new("env");
    let t = session_terminals(ws.path());
    let yes = Policy::allowing(true);
    let req = create("true", &[]).env([EnvVariable::new("LD_PRELOAD", "/tmp/evil.so")]);
    let err = t.create(req, &yes).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(
        err.message.contains("environment variables (LD_PRELOAD)"),
        "{}",
        err.message
    );
    assert!(yes.shown().is_empty());

    let t = Terminals::new().with_config(TerminalConfig::default().with_env_allowed(true));
    t.add_session("s1".into(), ws.path(), []);
    let req = create("sh", &["-c", "echo $ACP_TEST_VALUE"])
        .env([EnvVariable::new("ACP_TEST_VALUE", "shown")]);
    let id = t.create(req, &yes).await.unwrap().terminal_id;
    assert_eq!(finish(&t, &id).await.output, "shown\n");
    assert_eq!(
        yes.shown()[0].env,
        [("ACP_TEST_VALUE".to_owned(), "shown".to_owned())]
    );
}

#[tokio::test]
async fn the_output_limit_is_clamped_to_the_client_maximum() {
    let ws = TempDir::new("clamp");
    let t = Terminals::new()
        .with_config(TerminalConfig::default().with_max_output_byte_limit(64 * 1024));
    t.add_session("s1".into(), ws.path(), []);
    let yes = Policy::allowing(true);
    let req = create(
        "sh",
        &["-c", "head -c 5000000 /dev/zero | tr '\\0' a; echo END"],
    )
    .output_byte_limit(1 << 62);
    let id = t.create(req, &yes).await.unwrap().terminal_id;
    let out = finish(&t, &id).await;
    assert_eq!(yes.shown()[0].output_byte_limit, 64 * 1024);
    assert!(out.truncated);
    assert_eq!(out.output.len(), 64 * 1024);
    assert!(out.output.ends_with("aaaEND\n"));
    // The default maximum is 16 MiB.
    assert_eq!(
        TerminalConfig::default().max_output_byte_limit,
        16 * 1024 * 1024
    );
}

#[tokio::test]
async fn live_terminals_per_session_are_capped_until_one_is_released() {
    let ws = TempDir::new("cap");
    let t = Terminals::new().with_config(TerminalConfig::default().with_max_live_per_session(3));
    t.add_session("s1".into(), ws.path(), []);
    t.add_session("s2".into(), ws.path(), []);
    let yes = Policy::allowing(true);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(
            t.create(create("sleep", &["30"]), &yes)
                .await
                .unwrap()
                .terminal_id,
        );
    }
    let err = t.create(create("sleep", &["30"]), &yes).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(
        err.message.contains("already holds 3 terminals"),
        "{}",
        err.message
    );
    // Another session has its own allowance.
    let other = CreateTerminalRequest::new("s2", "true");
    assert!(t.create(other, &yes).await.is_ok());
    t.release(ReleaseTerminalRequest::new("s1", held[0].clone()))
        .await
        .unwrap();
    assert!(t.create(create("true", &[]), &yes).await.is_ok());
    t.close().await;
    assert!(t.is_empty());
}

/// Its process group id, from `/proc/<pid>/stat`.
fn pgrp(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit(')').next().unwrap();
    after.split_whitespace().nth(2).unwrap().parse().unwrap()
}

async fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

/// Waits (up to 5 s) until `pid` leads its own process group, as it does once `setsid` ran.
async fn wait_for_own_group(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && pgrp(pid) != pid && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Starts `script` (which prints a pid and keeps running or exits) and returns that pid once
/// printed.
async fn grandchild(t: &Terminals, script: &str) -> (TerminalId, u32) {
    let yes = Policy::allowing(true);
    let id = t
        .create(create("sh", &["-c", script]), &yes)
        .await
        .unwrap()
        .terminal_id;
    for _ in 0..500 {
        let out = t
            .output(TerminalOutputRequest::new("s1", id.clone()))
            .await
            .unwrap();
        if let Ok(pid) = out.output.trim().parse::<u32>() {
            if script.starts_with("setsid ") {
                // `$!` is printed as soon as the shell forks, which can be before the child
                // has called setsid(2): wait for it to lead its own group.
                wait_for_own_group(pid).await;
            }
            return (id, pid);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid printed");
}

#[tokio::test]
async fn a_setsid_grandchild_is_killed_on_release_and_on_close() {
    let ws = TempDir::new("setsid");
    let t = session_terminals(ws.path());
    // The shell keeps running: its grandchild left the group but still has a live parent
    // inside it until the group is killed.
    let (id, pid) = grandchild(&t, "setsid sleep 300 & echo $!; wait").await;
    assert!(alive(pid));
    assert_eq!(
        pgrp(pid),
        pid,
        "the grandchild left the terminal's process group"
    );
    t.release(ReleaseTerminalRequest::new("s1", id.clone()))
        .await
        .unwrap();
    assert!(
        gone_within(pid, Duration::from_secs(5)).await,
        "{pid} survived release"
    );

    // The shell exits at once: the grandchild is an orphan (reparented to us, the subreaper)
    // before anything is killed.
    let (_id, pid) = grandchild(&t, "setsid sleep 300 & echo $!").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(alive(pid));
    t.close().await;
    assert!(
        gone_within(pid, Duration::from_secs(5)).await,
        "{pid} survived close"
    );
}

#[tokio::test]
async fn a_setsid_grandchild_gets_sigterm_and_time_to_clean_up_before_sigkill() {
    let ws = TempDir::new("setsid-term");
    let marker = ws.path().join("cleaned");
    let t = session_terminals(ws.path());
    // The shell stays until its group is killed; then its grandchild, outside the group, is
    // an orphan that cleans up on SIGTERM.
    let script = format!(
        "setsid sh -c 'trap \"echo cleaned > {}; exit 0\" TERM; echo $$; \
         while :; do sleep 0.05; done' & wait",
        marker.display()
    );
    let (_id, pid) = grandchild(&t, &script).await;
    assert!(alive(pid));
    t.close().await;
    let survived = !gone_within(pid, Duration::from_secs(5)).await;
    if survived {
        // SAFETY: killing the escaped test process by its pid.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(!survived, "{pid} survived close");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default().trim(),
        "cleaned",
        "the orphan got SIGKILL without a SIGTERM and a grace period first"
    );
}

#[tokio::test]
async fn without_orphan_reaping_a_setsid_grandchild_escapes() {
    // The control for the test above: the same command, reaping off, the grandchild lives.
    let ws = TempDir::new("setsid-off");
    let t = Terminals::new().with_config(TerminalConfig::default().with_orphan_reaping(false));
    t.add_session("s1".into(), ws.path(), []);
    let (_id, pid) = grandchild(&t, "setsid sleep 300 & echo $!; wait").await;
    t.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let survived = alive(pid);
    // SAFETY: killing the escaped test process by its pid.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(
        survived,
        "the group kill alone should not have caught a setsid grandchild"
    );
}

/// Whether `pid` is a zombie child of ours.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// Being a subreaper means inheriting orphans: one that exits on its own must be reaped, not
/// left as a zombie of the client for as long as it runs.
#[tokio::test]
async fn an_orphan_that_exits_on_its_own_is_reaped() {
    let ws = TempDir::new("zombie");
    let t = session_terminals(ws.path());
    // The subshell exits at once, so `sleep 0.3` is orphaned (reparented to us) and then
    // exits while the terminal's shell keeps running.
    let (_id, pid) = grandchild(&t, "(sleep 0.3 & echo $!); exec sleep 30").await;
    let deadline = Instant::now() + Duration::from_secs(8);
    while (alive(pid) || zombie(pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!zombie(pid), "orphan {pid} left as a zombie");
    assert!(!alive(pid));
    t.close().await;
}
