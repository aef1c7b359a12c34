//! `AgentProcess::shutdown` kills the agent's grandchild that left its process group with
//! `setsid` (Linux: the client is a child subreaper and finds it by its cleanup tag).

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
