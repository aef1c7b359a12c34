//! Tool calls, permission and MCP servers as a script sees them, and a version we did not
//! offer.

use super::*;

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
