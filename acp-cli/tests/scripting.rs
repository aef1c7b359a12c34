//! `acp chat --prompt` for scripts, and what happens with agents that misbehave: an agent
//! that does not exist, one that exits at once, one that writes garbage, one whose text is
//! full of escape sequences. Each gives one clear error line or a safe rendering, a non-zero
//! status where the turn failed, and ends (every run has a time limit).

mod support;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{Scratch, acp, mcp_test_server};

/// Runs `acp args...` with a time limit; panics if it hangs.
fn run(args: &[&str], cwd: &std::path::Path) -> Output {
    let child = Command::new(acp())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    support::output_within(child, Duration::from_secs(30), &format!("acp {args:?}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn one_turn_prints_a_transcript_and_exits_by_stop_reason() {
    let dir = Scratch::new("prompt");
    let out = run(&["chat", "--prompt", "hello script", "--yes"], &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("you> hello script"), "{stdout}");
    assert!(stdout.contains("Allow (--yes)"), "{stdout}");
    assert!(
        stdout.contains("│ hello from the built-in agent"),
        "{stdout}"
    );
    assert!(stdout.contains("  You said: hello script"), "{stdout}");
    assert!(stdout.contains("── end_turn"), "{stdout}");
    // Not a terminal: no escape sequences in the transcript.
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
    // Without --yes everything is refused, and the built-in agent still ends its turn.
    let out = run(&["chat", "--prompt", "hello"], &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("Reject (no --yes)"), "{stdout}");
    assert!(stdout.contains("rejected by the user"), "{stdout}");
    assert!(stdout.contains("the user refused to run"), "{stdout}");
}

/// `acp chat --help` names the chat's own commands; a scripted turn with the built-in agent
/// shows the models it offers and the title it gives the session.
#[test]
fn help_names_the_chat_commands_and_a_turn_shows_models_and_title() {
    let dir = Scratch::new("offers");
    let out = run(&["chat", "--help"], &dir.0);
    let help = text(&out.stdout);
    assert!(out.status.success(), "{help}");
    for command in ["/mode [ID]", "/model [ID]", "/title [TEXT]", "/quit"] {
        assert!(help.contains(command), "{command} missing from:\n{help}");
    }
    let out = run(&["chat", "--prompt", "/echo name me"], &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("models: demo-fast (current), demo-slow"),
        "{stdout}"
    );
    assert!(stdout.contains("title: /echo name me"), "{stdout}");
}

#[test]
fn json_events_are_one_object_per_line() {
    let dir = Scratch::new("json");
    let out = run(&["chat", "--prompt", "/echo a b", "--json"], &dir.0);
    assert_eq!(out.status.code(), Some(0));
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let chunks: String = events
        .iter()
        .filter(|e| e["event"] == "update" && e["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|e| e["update"]["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(chunks, "a b\n");
    let last = events.last().unwrap();
    assert_eq!(last["event"], "done");
    assert_eq!(last["stopReason"], "end_turn");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "prompt" && e["text"] == "/echo a b")
    );
}

#[test]
fn logs_go_to_stderr_never_stdout() {
    let dir = Scratch::new("logs");
    let mut cmd = Command::new(acp());
    cmd.args(["chat", "--prompt", "/echo x", "--json"])
        .current_dir(&dir.0)
        .env("RUST_LOG", "trace");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    for line in text(&out.stdout).lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    }
    assert!(!out.stderr.is_empty(), "RUST_LOG=trace logged nothing");
}

#[test]
fn a_missing_agent_is_one_clear_error() {
    let dir = Scratch::new("missing");
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--",
            "/nonexistent/agent",
            "--flag",
        ],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("error: failed to start agent `/nonexistent/agent --flag`"),
        "{stdout}"
    );
}

#[test]
fn an_agent_that_exits_at_once_is_reported_with_its_status_and_stderr() {
    let dir = Scratch::new("exits");
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--",
            "sh",
            "-c",
            "echo 'no api key' >&2; exit 3",
        ],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let first = stdout.lines().next().unwrap_or("");
    assert!(first.starts_with("error: agent `sh -c"), "{stdout}");
    assert!(first.contains("exit status: 3"), "{stdout}");
    assert!(stdout.contains("no api key"), "{stdout}");
}

#[test]
fn an_agent_writing_garbage_fails_cleanly() {
    let dir = Scratch::new("garbage");
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--dialect",
            "v1",
            "--timeout",
            "1",
            "--",
            "sh",
            "-c",
            "while read -r line; do echo 'garbage \u{1b}]0;title\u{7}'; done",
        ],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("error: "), "{stdout}");
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
}

/// An agent, as a shell script, whose every text is hostile.
const HOSTILE_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentInfo":{"name":"evil\\u001b]0;owned\\u0007","version":"1"}}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*)
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"safe\\r\\u001b[2J\\u001b[H\\u001b]52;c;cm0gLXJmIC8=\\u0007\\nyou> forged\\n\\u009b31mred"}}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t\\u001b[1A","title":"x\\u001b]0;t\\u0007y","kind":"edit","status":"pending"}}}\n'
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"refusal"}}\n' "$id" ;;
  esac
done
"#;

#[test]
fn escape_heavy_agent_text_is_rendered_safely_and_refusal_exits_3() {
    let dir = Scratch::new("hostile");
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--dialect",
            "v1",
            "--",
            "sh",
            "-c",
            HOSTILE_AGENT,
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\r') && !stdout.contains('\u{9b}'),
        "{stdout:?}"
    );
    assert!(stdout.contains("connected to evil 1"), "{stdout}");
    assert!(stdout.contains("  safe\n  you> forged\n  red"), "{stdout}");
    assert!(stdout.contains("⏺ xy (edit)"), "{stdout}");
    assert!(
        !stdout.lines().any(|l| l.starts_with("you> forged")),
        "{stdout}"
    );
    assert!(stdout.contains("── refusal"), "{stdout}");
}

#[test]
fn loading_a_session_the_agent_cannot_load_is_an_error() {
    let dir = Scratch::new("load");
    let out = run(&["chat", "--prompt", "hi", "--load", "old-1"], &dir.0);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "error: the agent cannot load sessions (no loadSession capability); old-1 not loaded"
        ),
        "{stdout}"
    );
}

#[test]
fn sessions_are_listed_or_their_absence_explained() {
    let dir = Scratch::new("sessions");
    let acp = acp();
    let acp = acp.to_str().unwrap();
    // The built-in agent as a child (`acp agent`): it lists sessions; a fresh one has none.
    let out = run(&["sessions", "--", acp, "agent"], &dir.0);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("no sessions"),
        "{}",
        text(&out.stdout)
    );
    let out = run(
        &[
            "sessions",
            "--dialect",
            "v1",
            "--",
            "sh",
            "-c",
            HOSTILE_AGENT,
        ],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("does not list its sessions"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn the_builtin_agent_speaks_every_dialect() {
    let dir = Scratch::new("dialects");
    for dialect in ["v1", "legacy-0.0.9", "threads"] {
        let out = run(
            &["chat", "--dialect", dialect, "--prompt", "/echo over it"],
            &dir.0,
        );
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{dialect}: {stdout}");
        assert!(stdout.contains(&format!("({dialect})")), "{stdout}");
        assert!(stdout.contains("  over it"), "{stdout}");
        assert!(!out.stderr.contains(&0x1b), "no colours in logs to a pipe");
    }
}

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

/// An agent that, like Claude, sends several `tool_call_update`s per tool call with the same
/// status (adding its input, then its content), then one that completes it.
const CHATTY_TOOL_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentInfo":{"name":"chatty","version":"1"}}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*)
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read","kind":"read","status":"pending"}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"pending","rawInput":{"path":"NOTES.md"}}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Read NOTES.md","status":"pending"}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"pending"}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}\n'
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
  esac
done
"#;

/// Issue 32: every `tool_call_update` printed a new "⏺ ... pending" line; a transcript shows
/// a tool call's line once per status.
#[test]
fn a_tool_call_is_printed_once_per_status_however_many_updates_it_gets() {
    let dir = Scratch::new("chatty-tool");
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--dialect",
            "v1",
            "--",
            "sh",
            "-c",
            CHATTY_TOOL_AGENT,
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let tool_lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("⏺ ")).collect();
    assert_eq!(
        tool_lines,
        [
            "⏺ Read (read) … pending",
            "⏺ Read NOTES.md (read) ✓ completed"
        ],
        "{stdout}"
    );
}

/// Issue 32: offered a version it does not know, Claude's agent answers `2` with a v2-shaped
/// result. `acp chat --dialect v1` offers only 1 and says so in one line.
#[test]
fn an_agent_answering_a_version_we_did_not_offer_is_one_plain_error() {
    let dir = Scratch::new("version-2");
    let agent = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":2,"agent":{"name":"claude"},"capabilities":{}}}\n' "$id"
done
"#;
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--dialect",
            "v1",
            "--",
            "sh",
            "-c",
            agent,
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "the agent answered protocol version 2, which we did not offer (we offered protocol version 1)"
        ),
        "{stdout}"
    );
}

/// An agent that asks permission once per turn with the options in `$1` (a JSON array) and
/// then says which option the client chose (`chose <optionId>`, or `chose cancelled`).
const ASKING_AGENT: &str = r#"
while IFS= read -r line; do
  case "$line" in
    *'"id":"perm-1"'*)
      chosen=$(printf '%s' "$line" | sed -n 's/.*"optionId":"\([^"]*\)".*/\1/p')
      [ -n "$chosen" ] || chosen=cancelled
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chose %s"}}}}\n' "$chosen"
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$prompt"
      continue ;;
  esac
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*)
      prompt=$id
      printf '{"jsonrpc":"2.0","id":"perm-1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"Edit NOTES.md"},"options":%s}}\n' "$1" ;;
  esac
done
"#;

/// Runs one scripted turn against [`ASKING_AGENT`] offering `options`; the transcript.
fn ask_with(options: &str, flags: &[&str]) -> String {
    let dir = Scratch::new("asking");
    let mut args = vec!["chat", "--prompt", "edit it", "--dialect", "v1"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", ASKING_AGENT, "asking-agent", options]);
    let out = run(&args, &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    stdout
}

/// Issue 32: Qwen lists its "always" options first and `--yes` answered "Always Allow in
/// project", a permanent grant. `--yes` takes the one-time allow; an agent that offers none
/// is refused (and told why) unless `--yes-always` is given; without `--yes` the refusal is
/// `reject_once`, else `reject_always`, else `cancelled`.
#[test]
fn yes_grants_only_the_one_action_whatever_the_order_of_the_options() {
    let qwen = r#"[{"optionId":"always","name":"Always Allow in project","kind":"allow_always"},{"optionId":"once","name":"Allow once","kind":"allow_once"},{"optionId":"never","name":"Always reject","kind":"reject_always"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]"#;
    let stdout = ask_with(qwen, &["--yes"]);
    assert!(stdout.contains("Allow once (--yes)"), "{stdout}");
    assert!(stdout.contains("chose once"), "{stdout}");
    let stdout = ask_with(qwen, &[]);
    assert!(stdout.contains("chose reject"), "{stdout}");
    let stdout = ask_with(qwen, &["--yes-always"]);
    assert!(stdout.contains("chose once"), "{stdout}");

    let always_only = r#"[{"optionId":"always","name":"Always Allow","kind":"allow_always"},{"optionId":"never","name":"Always reject","kind":"reject_always"}]"#;
    let stdout = ask_with(always_only, &["--yes"]);
    assert!(stdout.contains("chose never"), "{stdout}");
    assert!(
        stdout.contains("the agent offers no one-time allow (allow_once)"),
        "{stdout}"
    );
    assert!(stdout.contains("--yes-always"), "{stdout}");
    let stdout = ask_with(always_only, &["--yes-always"]);
    assert!(stdout.contains("Always Allow (--yes-always)"), "{stdout}");
    assert!(stdout.contains("chose always"), "{stdout}");

    let allow_only = r#"[{"optionId":"once","name":"Allow","kind":"allow_once"}]"#;
    let stdout = ask_with(allow_only, &[]);
    assert!(stdout.contains("chose cancelled"), "{stdout}");
}

/// `acp chat --mcp-config FILE` passes the file's stdio and http servers in session/new
/// (the built-in agent connects both; the http one here has nothing listening); its `/mcp`
/// lists each server with its tools or why it has none, and `/mcp SERVER TOOL {json}` runs
/// the tool as a tool call after asking permission: completed with its result, failed when
/// refused or when the server crashes mid-call, and the turn ends either way. No server
/// process outlives `acp`.
#[test]
fn mcp_config_servers_are_listed_and_called_as_tool_calls_by_the_builtin_agent() {
    let dir = Scratch::new("mcp");
    let server = mcp_test_server();
    let pids = dir.0.join("pids");
    let config = serde_json::json!({"mcpServers": {
        "tester": {"command": server, "args": ["--pid-file", pids], "env": {"ACP_MCP_TEST_VALUE": "from the config"}},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
        "ghost": {"command": "/nonexistent/mcp-server"},
    }});
    let file = dir.0.join("mcp.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let file = file.to_str().unwrap();

    let out = run(&["chat", "--prompt", "/mcp", "--mcp-config", file], &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("not passed"), "{stdout}");
    assert!(stdout.contains("- web: unavailable:"), "{stdout}");
    assert!(
        stdout.contains(
            "- tester: echo, add, image, resource, sleep, flood, fail, crash, env, header"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("- ghost: unavailable: MCP server \"ghost\": cannot start"),
        "{stdout}"
    );

    let call = r#"/mcp tester env {"name": "ACP_MCP_TEST_VALUE"}"#;
    let out = run(
        &["chat", "--prompt", call, "--mcp-config", file, "--yes"],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("the agent asks permission: tester/env"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tester/env (other) ✓ completed"),
        "{stdout}"
    );
    assert!(stdout.contains("from the config"), "{stdout}");

    let out = run(&["chat", "--prompt", call, "--mcp-config", file], &dir.0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("tester/env (other) ✗ failed"), "{stdout}");
    assert!(stdout.contains("rejected by the user"), "{stdout}");
    assert!(stdout.contains("── end_turn"), "{stdout}");

    let out = run(
        &[
            "chat",
            "--prompt",
            "/mcp tester crash",
            "--mcp-config",
            file,
            "--yes",
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("tester/crash (other) ✗ failed"), "{stdout}");
    assert!(stdout.contains("crashing on purpose"), "{stdout}");
    assert!(stdout.contains("── end_turn"), "{stdout}");

    // Every run's server is gone once acp has exited (the last run wrote the pid file last).
    let pid = std::fs::read_to_string(&pids).unwrap();
    let pid = pid.lines().next().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.contains(") Z") {
            break;
        }
        assert!(Instant::now() < deadline, "MCP server {pid} outlived acp");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A proxy chain from the command line: `acp chat` -> `acp conduct` -> `acp tag-proxy` ->
/// the built-in agent completes a turn, the permission request crossing the chain both
/// ways, the agent's text tagged by the proxy.
#[test]
fn a_turn_crosses_a_proxy_chain_of_child_processes() {
    let dir = Scratch::new("chain");
    let acp = acp();
    let acp = acp.to_str().unwrap();
    let out = run(
        &[
            "chat",
            "--prompt",
            "hello script",
            "--yes",
            "--dialect",
            "v1",
            "--",
            acp,
            "conduct",
            "--",
            acp,
            "tag-proxy",
            "--prefix",
            "<tag>",
            "--",
            acp,
            "agent",
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("Allow (--yes)"), "{stdout}");
    assert!(stdout.contains("<tag>"), "{stdout}");
    assert!(stdout.contains("── end_turn"), "{stdout}");
}

/// A proxy that exits as soon as it is spoken to fails the chat with one clear error naming
/// it, and `acp conduct` reaps the agent it started (the run ends within its time limit).
#[test]
fn a_proxy_that_dies_fails_the_chat_with_its_name() {
    let dir = Scratch::new("chain-dies");
    let acp = acp();
    let acp = acp.to_str().unwrap();
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--dialect",
            "v1",
            "--",
            acp,
            "conduct",
            "--",
            "sh",
            "-c",
            "read line; exit 3",
            "--",
            acp,
            "agent",
        ],
        &dir.0,
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("read line; exit 3"), "{all}");
}

/// `acp conduct` as an editor's agent: once its client closes its side, the chain's
/// components exit on their closed input and `acp conduct` exits 0 (a session that ended is
/// no failure); a component that ends first makes it exit 1, naming it.
#[test]
fn acp_conduct_exits_0_when_its_client_leaves_and_1_when_a_component_fails_first() {
    use std::io::{BufRead, BufReader, Write};
    let acp = acp();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
    let conduct = |chain: &[&str]| {
        let mut child = Command::new(&acp)
            .arg("conduct")
            .arg("--")
            .args(chain)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("acp conduct starts");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{init}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut answer)
            .unwrap();
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "acp conduct did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (answer, status.code(), stderr)
    };
    let acp = acp.to_str().unwrap();
    let (answer, code, stderr) = conduct(&[acp, "tag-proxy", "--", acp, "agent"]);
    assert!(answer.contains("\"protocolVersion\":1"), "{answer}{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    let (answer, code, stderr) = conduct(&["sh", "-c", "read line; exit 3", "--", acp, "agent"]);
    assert!(answer.contains("\"error\""), "{answer}");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("read line; exit 3"), "{stderr}");
}

/// `acp trace` in the middle of a chain: wrapping the proxy (its command simply last, no
/// `--`, which `acp conduct` would take for a separator), it records the conductor's hop to
/// the proxy, `proxy/initialize` and the `proxy/successor` envelopes, and the turn goes on.
#[test]
fn a_trace_inside_a_chain_records_the_hop_to_a_proxy() {
    let dir = Scratch::new("chain-trace");
    let acp = acp();
    let acp = acp.to_str().unwrap();
    let hop = dir.0.join("hop.ndjson");
    let out = run(
        &[
            "chat",
            "--prompt",
            "hello script",
            "--yes",
            "--dialect",
            "v1",
            "--",
            acp,
            "conduct",
            "--",
            acp,
            "trace",
            "--out",
            hop.to_str().unwrap(),
            acp,
            "tag-proxy",
            "--prefix",
            "<tag>",
            "--",
            acp,
            "agent",
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("<tag>"), "{stdout}");
    let recorded = std::fs::read_to_string(&hop).expect("the trace of the hop");
    assert!(recorded.contains("proxy/initialize"), "{recorded}");
    assert!(recorded.contains("proxy/successor"), "{recorded}");
}

/// An agent that, like OpenCode, sends a tool call's output with `in_progress` and the same
/// output again with `completed` (and once more with an update that keeps the status).
pub const REPEATING_TOOL_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*)
      out='{"type":"content","content":{"type":"text","text":"NOTES.md\nsrc-listing-line"}}'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"execute","status":"pending"}}}\n'
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress","content":[%s]}}}\n' "$out"
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress","content":[%s]}}}\n' "$out"
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","content":[%s]}}}\n' "$out"
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"listed"}}}}\n'
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
  esac
done
"#;

/// Issue 52: OpenCode repeats a tool call's output with each status update, and the
/// transcript printed it with each: the output appeared two or three times. It is printed
/// once (the status lines still show each status).
#[test]
fn a_tool_calls_repeated_content_is_printed_once() {
    let dir = Scratch::new("repeating-tool");
    let out = run(
        &[
            "chat",
            "--prompt",
            "list",
            "--dialect",
            "v1",
            "--",
            "sh",
            "-c",
            REPEATING_TOOL_AGENT,
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.matches("src-listing-line").count(), 1, "{stdout}");
    let tool_lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("⏺ ")).collect();
    assert_eq!(
        tool_lines,
        [
            "⏺ ls (execute) … pending",
            "⏺ ls (execute) ⟳ running",
            "⏺ ls (execute) ✓ completed"
        ],
        "{stdout}"
    );
    assert!(
        stdout
            .contains("⟳ running\n    NOTES.md\n    src-listing-line\n⏺ ls (execute) ✓ completed"),
        "{stdout}"
    );
}

/// An agent that fails every turn with an internal error.
const FAILING_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"Internal error","data":"model quota exceeded"}}\n' "$id" ;;
  esac
done
"#;

/// Issue 52: a failed turn printed a raw log line on stderr (`ERROR acp::chat: turn
/// failed ...`) as well as the error in the transcript. One message, in the transcript,
/// with the agent's detail; the log line only when asked for with `RUST_LOG`. The agent is
/// alive (it answered): no wait for it to exit.
#[test]
fn a_failed_turn_is_one_message_and_the_log_line_only_with_rust_log() {
    let dir = Scratch::new("failing-turn");
    let args = [
        "chat",
        "--prompt",
        "hi",
        "--dialect",
        "v1",
        "--",
        "sh",
        "-c",
        FAILING_AGENT,
    ];
    let started = Instant::now();
    let out = run(&args, &dir.0);
    let elapsed = started.elapsed();
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.is_empty(), "nothing on stderr: {stderr}");
    let errors: Vec<&str> = stdout.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 2, "{stdout}");
    assert_eq!(
        errors[0], "error: the prompt failed: Internal error (-32603): model quota exceeded",
        "{stdout}"
    );
    assert!(errors[1].starts_with("── error · "), "{stdout}");
    assert!(elapsed < Duration::from_millis(1800), "{elapsed:?}");
    // With RUST_LOG the log line is there, for whoever asked.
    let mut child = Command::new(acp());
    child
        .args(args)
        .current_dir(&dir.0)
        .env("RUST_LOG", "acp=info")
        .stdin(Stdio::null());
    let out = child.output().unwrap();
    assert!(
        text(&out.stderr).contains("turn failed"),
        "{}",
        text(&out.stderr)
    );
}

/// `--prompt` given several times is a scripted sequence: one turn each, in order, in the
/// transcript and in `--json` events (issue 50).
#[test]
fn repeated_prompts_run_one_turn_each_in_order() {
    let dir = Scratch::new("prompts");
    let args = [
        "chat",
        "--prompt",
        "/echo first",
        "--prompt",
        "/echo second",
    ];
    let out = run(&args, &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let at = |needle: &str| {
        stdout
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?}: {stdout}"))
    };
    assert!(at("you> /echo first") < at("\n  first"), "{stdout}");
    assert!(at("\n  first") < at("you> /echo second"), "{stdout}");
    assert!(at("you> /echo second") < at("\n  second"), "{stdout}");
    assert_eq!(stdout.matches("── end_turn").count(), 2, "{stdout}");
    let args = [
        "chat", "--json", "--prompt", "/echo a", "--prompt", "/echo b",
    ];
    let out = run(&args, &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let prompts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(r#""event":"prompt""#))
        .collect();
    assert_eq!(prompts.len(), 2, "{stdout}");
    assert!(
        prompts[0].contains("/echo a") && prompts[1].contains("/echo b"),
        "{stdout}"
    );
    assert_eq!(stdout.matches(r#""event":"done""#).count(), 2, "{stdout}");
}
