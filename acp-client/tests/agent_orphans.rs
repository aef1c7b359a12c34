//! `AgentProcess::shutdown` kills the agent's grandchild that left its process group with
//! `setsid` (Linux: the client is a child subreaper and finds it by its cleanup tag).
//! Orphans get SIGTERM and a grace period before SIGKILL, like the helpers in the group.

use std::time::{Duration, Instant};

use acp_client::process::{AgentCommand, AgentProcess};

#[path = "support/mod.rs"]
mod support;

use support::alive;

#[tokio::test]
async fn shutdown_kills_a_setsid_grandchild_of_the_agent() {
    let pidfile = std::env::temp_dir().join(format!("acp-agent-orphan-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    // An "agent" that starts a grandchild in a new session, then stays until stdin closes.
    let script = format!(
        "setsid sleep 300 & echo $! > {}; cat > /dev/null",
        pidfile.display()
    );
    let process = AgentProcess::spawn(&AgentCommand::new("sh").arg("-c").arg(script)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the agent never wrote its grandchild's pid"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(alive(pid));
    process.shutdown(Duration::from_millis(500)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let survived = alive(pid);
    if survived {
        // SAFETY: killing the escaped test process by its pid.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let _ = std::fs::remove_file(&pidfile);
    assert!(
        !survived,
        "the agent's setsid grandchild {pid} outlived shutdown"
    );
}

/// Starts an "agent" (`sh`) whose helper leaves the agent's process group with `setsid`,
/// runs `helper_body` (after `trap ... TERM` set by the caller), and writes its pid to a
/// file; the agent itself stays until its stdin closes, then exits cleanly. Returns the
/// process and the helper's pid.
async fn agent_with_setsid_helper(dir: &std::path::Path, trap: &str) -> (AgentProcess, u32) {
    let pidfile = dir.join("helper.pid");
    let helper = format!(
        "{trap}; echo $$ > {pid}; while :; do sleep 0.05; done",
        pid = pidfile.display()
    );
    let script = format!("setsid sh -c '{helper}' & cat > /dev/null");
    let process = AgentProcess::spawn(&AgentCommand::new("sh").arg("-c").arg(script)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the agent's helper never wrote its pid"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(alive(pid));
    (process, pid)
}

/// Kills `pid` if it is still alive (a test that failed must not leak it); whether it was.
fn kill_if_alive(pid: u32) -> bool {
    let survived = alive(pid);
    if survived {
        // SAFETY: killing the escaped test process (and its group) by its pid.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
    survived
}

#[tokio::test]
async fn an_orphaned_helper_gets_sigterm_and_time_to_clean_up_before_any_sigkill() {
    let dir = support::TempDir::new("orphan-term");
    let marker = dir.path().join("cleaned");
    let trap = format!("trap \"echo cleaned > {}; exit 0\" TERM", marker.display());
    let (process, pid) = agent_with_setsid_helper(dir.path(), &trap).await;
    process.shutdown(Duration::from_secs(2)).await.unwrap();
    let survived = kill_if_alive(pid);
    let cleaned = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(!survived, "the orphaned helper {pid} outlived shutdown");
    assert_eq!(
        cleaned.trim(),
        "cleaned",
        "the orphaned helper got SIGKILL without a SIGTERM and a grace period first"
    );
}

#[tokio::test]
async fn an_orphaned_helper_that_ignores_sigterm_is_killed_after_the_grace() {
    let dir = support::TempDir::new("orphan-kill");
    let (process, pid) = agent_with_setsid_helper(dir.path(), "trap \"\" TERM").await;
    let grace = Duration::from_millis(300);
    let started = Instant::now();
    process.shutdown(grace).await.unwrap();
    let took = started.elapsed();
    let survived = kill_if_alive(pid);
    assert!(
        !survived,
        "the orphaned helper {pid} that ignores SIGTERM outlived shutdown"
    );
    assert!(
        took >= grace && took < Duration::from_secs(5),
        "shutdown took {took:?} with a grace of {grace:?}: the helper was not given the grace"
    );
}
