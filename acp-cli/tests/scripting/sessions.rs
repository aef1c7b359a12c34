//! Turns that end early and sessions that last: Ctrl-C on a stuck agent, a loaded
//! session's history, the built-in agent's store.

use super::*;

/// An agent that takes prompts and never answers them, recording what it reads.
const STUCK_AGENT: &str = r#"
while IFS= read -r line; do
  printf '%s\n' "$line" >> seen.log
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
  esac
done
"#;

#[test]
fn ctrl_c_sends_session_cancel_and_a_second_quits_an_agent_that_ignores_it() {
    let dir = Scratch::new("stuck");
    let mut child = Command::new(acp())
        .args([
            "chat",
            "--dialect",
            "v1",
            "--prompt",
            "hi",
            "--",
            "sh",
            "-c",
            STUCK_AGENT,
        ])
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let log = std::fs::read_to_string(dir.0.join("seen.log")).unwrap_or_default();
            if log.contains(what) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the agent never saw {what}: {log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    seen("session/prompt");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    seen("session/cancel");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "a second Ctrl-C did not quit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("cancelling (Ctrl-C again to quit)"),
        "{stdout}"
    );
    assert!(stdout.contains("second Ctrl-C: quitting"), "{stdout}");
}

/// An agent that can load session `old-7`: it replays one exchange, then answers prompts.
const LOADING_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}\n' "$id" ;;
    *'"session/load"'*'"old-7"'*)
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old-7","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"what was said before"}}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"the old answer"}}}}\n'
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *'"session/load"'*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32002,"message":"no such session"}}\n' "$id" ;;
    *'"session/prompt"'*'"old-7"'*)
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"continuing"}}}}\n'
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
  esac
done
"#;

#[test]
fn a_loaded_session_replays_its_history_then_takes_the_prompt() {
    let dir = Scratch::new("loaded");
    let out = run(
        &[
            "chat",
            "--dialect",
            "v1",
            "--load",
            "old-7",
            "--prompt",
            "go on",
            "--",
            "sh",
            "-c",
            LOADING_AGENT,
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // The earlier prompt looks as it did when it was typed; the replay ends with a line.
    let replay = stdout.find("you> what was said before").expect(&stdout);
    let old = stdout.find("  the old answer").expect(&stdout);
    let end = stdout.find("── loaded: 1 earlier turn(s)").expect(&stdout);
    let new = stdout.find("  continuing").expect(&stdout);
    assert!(replay < old && old < end && end < new, "{stdout}");
    let out = run(
        &[
            "chat",
            "--dialect",
            "v1",
            "--load",
            "old-8",
            "--prompt",
            "go on",
            "--",
            "sh",
            "-c",
            LOADING_AGENT,
        ],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("error: session old-8 could not be loaded: no such session")
    );
}

/// `acp agent --store DIR` keeps its sessions there: a later agent process lists and loads
/// them (driven by `acp chat` and `acp sessions` as the client).
#[test]
fn the_builtin_agent_served_with_a_store_keeps_its_sessions_across_runs() {
    let dir = Scratch::new("agent-store");
    let store = dir.0.join("store");
    let store = store.to_str().unwrap();
    let acp_bin = acp();
    let acp_bin = acp_bin.to_str().unwrap();
    let agent = ["--", acp_bin, "agent", "--store", store];
    let first: Vec<&str> = ["chat", "--prompt", "/echo keep me"]
        .into_iter()
        .chain(agent)
        .collect();
    let out = run(&first, &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let listed: Vec<&str> = ["sessions"].into_iter().chain(agent).collect();
    let out = run(&listed, &dir.0);
    let list = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{list}{}", text(&out.stderr));
    let id = list.split('\t').next().unwrap().trim().to_owned();
    assert!(id.starts_with("builtin-"), "{list}");
    let again: Vec<&str> = ["chat", "--load", &id, "--prompt", "/echo and more"]
        .into_iter()
        .chain(agent)
        .collect();
    let out = run(&again, &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let before = stdout.find("you> /echo keep me").expect(&stdout);
    let said = stdout.find("  keep me").expect(&stdout);
    let end = stdout.find("── loaded: 1 earlier turn(s)").expect(&stdout);
    let now = stdout.find("  and more").expect(&stdout);
    assert!(before < said && said < end && end < now, "{stdout}");
}

#[test]
fn store_is_refused_with_an_agent_command_and_an_unusable_store_is_one_error() {
    let dir = Scratch::new("store-bad");
    let out = run(
        &["chat", "--store", "x", "--prompt", "hi", "--", "true"],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--store is for the built-in agent"),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(dir.0.join("file"), "not a directory").unwrap();
    let out = run(&["chat", "--store", "file/store", "--prompt", "hi"], &dir.0);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("error: the session store file/store"),
        "{stdout}"
    );
}
