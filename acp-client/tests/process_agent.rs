//! `AgentProcess`: spawn failures and early exits explain themselves (with the stderr tail),
//! stderr is kept bounded, shutdown is graceful then forceful, a real child speaks ACP over
//! stdio, and dropping the handle kills the whole process group (grandchildren included).

use std::time::{Duration, Instant};

use acp_client::Client;
use acp_client::process::{
    AgentCommand, AgentProcess, ProcessChain, ProcessError, STDERR_TAIL_LINES,
};
use acp_types::v1::InitializeRequest;
use tokio::io::{AsyncBufReadExt, BufReader};

struct Nothing;
impl Client for Nothing {}

fn sh(script: &str) -> AgentCommand {
    AgentCommand::new("sh").arg("-c").arg(script)
}

fn init() -> InitializeRequest {
    serde_json::from_value(serde_json::json!({"protocolVersion": 1})).unwrap()
}

#[tokio::test]
async fn spawn_failure_names_the_command_and_the_os_error() {
    let err = AgentProcess::spawn(&AgentCommand::new("/no/such/agent").arg("--acp")).unwrap_err();
    assert!(matches!(err, ProcessError::Spawn { .. }));
    let text = err.to_string();
    assert!(text.contains("/no/such/agent --acp"), "{text}");
    assert!(text.contains("No such file"), "{text}");
}

#[tokio::test]
async fn early_exit_reports_status_and_stderr_tail_and_pending_calls_fail_promptly() {
    let mut p = AgentProcess::spawn(&sh("echo 'fatal: no API key' >&2; exit 7")).unwrap();
    let conn = acp_client::Builder::new(Nothing).attach(&mut p).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), conn.agent().initialize(init()))
        .await
        .expect("no hang");
    assert!(r.unwrap_err().is_connection_closed());
    let err = tokio::time::timeout(Duration::from_secs(5), p.wait_exit())
        .await
        .expect("exit observed");
    let text = err.to_string();
    assert!(text.contains("exited"), "{text}");
    assert!(text.contains('7'), "{text}");
    assert!(text.contains("fatal: no API key"), "{text}");
    match err {
        ProcessError::Exited {
            status,
            stderr_tail,
            ..
        } => {
            assert_eq!(status.code(), Some(7));
            assert_eq!(stderr_tail, "fatal: no API key");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn the_stderr_tail_is_bounded_to_the_last_lines() {
    let mut p = AgentProcess::spawn(&sh(
        "i=1; while [ $i -le 200 ]; do echo line$i >&2; i=$((i+1)); done",
    ))
    .unwrap();
    let err = p.wait_exit().await;
    let ProcessError::Exited { stderr_tail, .. } = err else {
        panic!("{err}")
    };
    let lines: Vec<&str> = stderr_tail.lines().collect();
    assert_eq!(lines.len(), STDERR_TAIL_LINES);
    assert_eq!(lines.last(), Some(&"line200"));
    assert_eq!(lines[0], format!("line{}", 200 - STDERR_TAIL_LINES + 1));
}

#[tokio::test]
async fn a_huge_stderr_line_is_split_and_the_tail_stays_within_its_byte_limit() {
    let mut p = AgentProcess::spawn(&sh(
        "head -c 100000 /dev/zero | tr '\\0' x >&2; echo end >&2",
    ))
    .unwrap();
    let ProcessError::Exited { stderr_tail, .. } = p.wait_exit().await else {
        panic!()
    };
    assert!(stderr_tail.len() <= acp_client::process::STDERR_TAIL_BYTES + STDERR_TAIL_LINES);
    assert!(
        stderr_tail.ends_with("xxend"),
        "{}",
        &stderr_tail[stderr_tail.len() - 20..]
    );
}

#[tokio::test]
async fn a_real_child_answers_initialize_over_stdio() {
    // A minimal "agent": reads the request line and answers id 1.
    let script = r#"read line; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'; cat >/dev/null"#;
    let mut p = AgentProcess::spawn(&sh(script)).unwrap();
    let conn = acp_client::Builder::new(Nothing).attach(&mut p).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), conn.agent().initialize(init()))
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(serde_json::to_value(r.protocol_version).unwrap(), 1);
    // Closing stdin lets `cat` end: graceful shutdown without a kill.
    let status = p.shutdown(Duration::from_secs(5)).await.unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn shutdown_kills_an_agent_that_ignores_stdin_eof_after_the_grace_period() {
    let p = AgentProcess::spawn(&sh("trap '' TERM; exec sleep 30")).unwrap();
    let start = Instant::now();
    let status = p.shutdown(Duration::from_millis(200)).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9));
}

fn is_gone(pid: u32) -> bool {
    // Gone, or a zombie nobody has reaped yet (PID 1 in a container may not reap).
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

#[tokio::test]
async fn dropping_the_handle_kills_grandchildren_in_the_process_group() {
    let mut p = AgentProcess::spawn(&sh("sleep 60 & echo $! ; wait")).unwrap();
    let (stdout, _stdin) = p.take_stdio().unwrap();
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(5),
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("grandchild pid printed")
    .unwrap();
    let grandchild: u32 = line.trim().parse().unwrap();
    assert!(
        !is_gone(grandchild),
        "grandchild {grandchild} should be running"
    );
    drop(p);
    let deadline = Instant::now() + Duration::from_secs(1);
    while !is_gone(grandchild) {
        assert!(
            Instant::now() < deadline,
            "grandchild {grandchild} survived the drop"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn an_agent_dying_mid_prompt_ends_the_prompt_with_an_error_at_once() {
    // Answers initialize (id 1) and session/new (id 2), streams one update for the prompt
    // (id 3), then crashes without answering it.
    let script = r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'
read l; echo '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}'
read l; echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"partial"}}}}'
echo 'panic: model backend went away' >&2; exit 101"#;
    let mut p = AgentProcess::spawn(&sh(script)).unwrap();
    let conn = acp_client::Builder::new(Nothing).attach(&mut p).unwrap();
    let agent = conn.agent();
    agent.initialize(init()).await.unwrap();
    let session = agent
        .new_session(
            serde_json::from_value(serde_json::json!({"cwd": "/tmp", "mcpServers": []})).unwrap(),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let turn = agent.prompt_stream(
        serde_json::from_value(serde_json::json!({
            "sessionId": session.session_id.0, "prompt": [{"type": "text", "text": "hi"}]
        }))
        .unwrap(),
    );
    let (updates, result) = tokio::time::timeout(Duration::from_secs(5), turn.collect())
        .await
        .expect("the prompt must not hang when the agent dies");
    assert_eq!(
        updates.len(),
        1,
        "the update sent before the crash is delivered"
    );
    let err = result.expect_err("no answer can come from a dead agent");
    assert!(err.is_connection_closed(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    match p.wait_exit().await {
        ProcessError::Exited { .. } => {}
        other => panic!("unexpected {other}"),
    }
    assert!(
        p.stderr_tail().contains("model backend went away"),
        "{}",
        p.stderr_tail()
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_agents_stdio_pipes_get_the_large_buffer() {
    use std::os::fd::{AsFd, AsRawFd};
    let capacity = |fd: std::os::fd::BorrowedFd<'_>| {
        // SAFETY: F_GETPIPE_SZ reads the pipe's capacity and touches no memory of ours.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) as usize }
    };
    let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(acp_rpc::stdio::PIPE_CAPACITY);
    let mut agent = AgentProcess::spawn(&sh("cat")).unwrap();
    let (stdout, stdin) = agent.take_stdio().unwrap();
    let expected = acp_rpc::stdio::PIPE_CAPACITY.min(max);
    assert_eq!(capacity(stdin.as_fd()), expected);
    assert_eq!(capacity(stdout.as_fd()), expected);
    drop(stdin);
    drop(stdout);
    let _ = agent.shutdown(std::time::Duration::from_secs(5)).await;
}

/// A chain member whose end ended the chain is reported with how it exited, even when its
/// output closed well before its exit status existed (a process closes its files before it
/// exits; `acp conduct` once printed nothing about the component that failed its chain).
#[tokio::test]
async fn a_chain_reports_the_member_that_ended_it_even_if_it_exits_after_closing_its_output() {
    let commands = [
        sh("exec >&-; echo going >&2; sleep 0.3; exit 3"),
        sh("cat >/dev/null"),
    ];
    let (chain, members) = ProcessChain::spawn(&commands).unwrap();
    let mut members = members.into_iter();
    let mut first = BufReader::new(members.next().unwrap().stdout);
    let _second_still_open = members.next().unwrap();
    let mut line = String::new();
    assert_eq!(
        first.read_line(&mut line).await.unwrap(),
        0,
        "its output closed"
    );
    let exits = chain.shutdown(Some(0), Duration::from_secs(1)).await;
    assert_eq!(exits.len(), 1, "{exits:?}");
    let text = exits[0].to_string();
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("going"), "{text}");
}

/// Without a member that ended it (the client left), the members' exits are the normal end
/// and nothing is reported.
#[tokio::test]
async fn a_chain_the_client_left_reports_nothing() {
    let commands = [sh("exit 3"), sh("cat >/dev/null")];
    let (chain, _members) = ProcessChain::spawn(&commands).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        chain
            .shutdown(None, Duration::from_secs(5))
            .await
            .is_empty()
    );
}

/// `env_clear`: the child sees the variables given and none of this process's (the cleanup
/// tag aside), so a secret in the parent's environment stays there.
#[tokio::test]
async fn a_cleared_environment_holds_only_the_given_variables() {
    assert!(
        std::env::var_os("PATH").is_some(),
        "the test runs with a PATH"
    );
    let cleared = AgentCommand::new("/bin/sh")
        .arg("-c")
        .arg("env")
        .env("GIVEN", "yes")
        .env_clear();
    let names = env_names(&cleared).await;
    // `sh` itself may add PWD, SHLVL and `_`; the cleanup tag is the process module's.
    let others: Vec<_> = names
        .iter()
        .filter(|n| !["GIVEN", "PWD", "SHLVL", "_", "ACP_RS_CLEANUP_TAG"].contains(&n.as_str()))
        .collect();
    assert!(names.contains(&"GIVEN".to_owned()), "{names:?}");
    assert!(others.is_empty(), "nothing inherited: {names:?}");
    // Without it, this process's environment is inherited.
    let inherited = env_names(&AgentCommand::new("/bin/sh").arg("-c").arg("env")).await;
    assert!(inherited.contains(&"PATH".to_owned()), "{inherited:?}");
}

/// The names of the variables `command` (which runs `env`) prints.
async fn env_names(command: &AgentCommand) -> Vec<String> {
    let mut p = AgentProcess::spawn(command).unwrap();
    let (stdout, _stdin) = p.take_stdio().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut names = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("env ends")
        .unwrap()
    {
        names.push(line.split('=').next().unwrap_or_default().to_owned());
    }
    names
}

/// `new_session`: the child leads a session of its own (no controlling terminal) and, as
/// without it, its own process group; without it, it stays in this process's session.
#[tokio::test]
async fn a_child_in_a_new_session_leads_its_session_and_its_group() {
    // SAFETY: getsid and getpgid only read the process table.
    let ids = |pid: i32| unsafe { (libc::getsid(pid), libc::getpgid(pid)) };
    let ours = ids(0).0;
    let own = AgentProcess::spawn(&sh("sleep 30").new_session()).unwrap();
    let pid = own.id().unwrap() as i32;
    assert_eq!(ids(pid), (pid, pid));
    let shared = AgentProcess::spawn(&sh("sleep 30")).unwrap();
    let pid = shared.id().unwrap() as i32;
    assert_eq!(ids(pid), (ours, pid));
    // Both are stopped the same way.
    for child in [own, shared] {
        let status = child.shutdown(Duration::from_millis(200)).await.unwrap();
        assert!(!status.success());
    }
}
