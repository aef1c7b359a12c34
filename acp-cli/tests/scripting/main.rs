//! `acp chat --prompt` for scripts, and what happens with agents that misbehave: an agent
//! that does not exist, one that exits at once, one that writes garbage, one whose text is
//! full of escape sequences. Each gives one clear error line or a safe rendering, a non-zero
//! status where the turn failed, and ends (every run has a time limit).

#[path = "../support/mod.rs"]
mod support;

mod chains;
mod protocol;
mod sessions;
mod tools;

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
    // v1: the terminal step needs the client's terminals, which v2 (the default) lacks.
    let out = run(
        &[
            "chat",
            "--protocol",
            "1",
            "--prompt",
            "hello script",
            "--yes",
        ],
        &dir.0,
    );
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
    let out = run(&["chat", "--protocol", "1", "--prompt", "hello"], &dir.0);
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
