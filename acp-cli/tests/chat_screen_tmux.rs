//! `acp chat` in a real terminal (tmux): what the screen shows while the agent works.
//! Output that arrives while the user types waits for the line to be submitted, and a tool
//! call keeps one line and shows its content once, however many updates it gets.

mod support;

use support::{Scratch, Tmux, acp, have, sh};

/// An agent that says something a second after the session started, while the user types.
const LATE_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id" ;;
    *'"session/new"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id"
      (sleep 1.5; printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"late news"}}}}\n') & ;;
  esac
done
"#;

#[test]
fn an_update_between_turns_waits_until_the_typed_line_is_submitted() {
    if !have(
        "tmux",
        "an_update_between_turns_waits_until_the_typed_line_is_submitted",
    ) {
        return;
    }
    let dir = Scratch::new("late");
    std::fs::write(dir.0.join("agent.sh"), LATE_AGENT).unwrap();
    let t = Tmux::start(
        "late",
        &format!(
            "cd {} && {} chat --dialect v1 -- sh agent.sh",
            sh(&dir.0),
            sh(&acp())
        ),
    );
    t.wait_for("you>");
    t.send(&["-l", "/mode"]);
    t.wait_for("you> /mode");
    // The update arrives while the line is being typed: the line stays intact.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let screen = t.screen();
    assert!(!screen.contains("late news"), "{screen}");
    let last = screen.lines().rfind(|l| !l.trim().is_empty());
    assert_eq!(last, Some("you> /mode"), "{screen}");
    // Submitted, the held output shows, then the command's own.
    t.send(&["Enter"]);
    let screen = t.wait_for("this agent offers no modes");
    let news = screen.find("  late news").expect(&screen);
    assert!(
        news < screen.find("this agent offers no modes").unwrap(),
        "{screen}"
    );
    t.end_input();
    t.wait_for("EXIT=0");
}

/// An agent that, like Claude, sends several `tool_call_update`s per tool call with the same
/// status, then one that completes it.
const CHATTY_TOOL_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*)
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read","kind":"read","status":"pending"}}}\n'
      i=0
      while [ "$i" -lt "${1:-0}" ]; do
        i=$((i + 1))
        printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"row %s\\n"}}}}\n' "$i"
      done
      for i in 1 2 3; do
        sleep 0.1
        printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Read NOTES.md","status":"pending"}}}\n'
      done
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}\n'
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
  esac
done
"#;

/// Runs `acp chat` in tmux against [`CHATTY_TOOL_AGENT`] writing `rows` lines of text
/// between the tool call and its updates; the screen (and scrollback) after one turn.
fn chatty_turn(name: &str, rows: usize) -> String {
    let dir = Scratch::new(name);
    let agent = dir.0.join("agent.sh");
    std::fs::write(&agent, CHATTY_TOOL_AGENT).unwrap();
    let t = Tmux::start(
        name,
        &format!(
            "cd {} && {} chat --dialect v1 -- sh {} {rows}",
            sh(&dir.0),
            sh(&acp()),
            sh(&agent)
        ),
    );
    t.wait_for("you>");
    t.line("read it");
    let screen = t.wait_for("── end_turn");
    t.line("/quit");
    t.wait_for("EXIT=0");
    screen
}

/// Issue 32: each `tool_call_update` printed a new "⏺ ... pending" line. In a terminal the
/// tool call keeps one line, rewritten in place as its title and status change, while that
/// line is on screen; once it has scrolled away, it is printed again only when its status
/// changes. (A terminal already rewrote in place before the fix, so this guards the
/// terminal's behaviour; the transcript tests in `scripting.rs` and `view.rs` are the ones
/// that failed before it.)
#[test]
fn a_tool_call_keeps_one_line_however_many_updates_it_gets() {
    if !have(
        "tmux",
        "a_tool_call_keeps_one_line_however_many_updates_it_gets",
    ) {
        return;
    }
    let screen = chatty_turn("chatty", 0);
    assert_eq!(screen.matches("⏺ ").count(), 1, "{screen}");
    assert!(
        screen.contains("⏺ Read NOTES.md (read) ✓ completed"),
        "{screen}"
    );
    // 60 rows of text push the line off the 50-row window: three updates that keep the
    // status print nothing, the completion prints the line once more.
    let screen = chatty_turn("chatty-scrolled", 60);
    let lines: Vec<&str> = screen.lines().filter(|l| l.starts_with("⏺ ")).collect();
    assert_eq!(
        lines,
        [
            "⏺ Read (read) … pending",
            "⏺ Read NOTES.md (read) ✓ completed"
        ],
        "{screen}"
    );
}

/// An agent that, like OpenCode, repeats a tool call's output with each status update
/// (`t1`), and one whose output grows and is then replaced (`t2`).
const REPEATING_TOOL_AGENT: &str = r#"
update() {
  printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":%s}}\n' "$1"
  sleep 0.1
}
content() {
  printf '[{"type":"content","content":{"type":"text","text":"%s"}}]' "$1"
}
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*)
      out=$(content 'NOTES.md\nsrc-listing-line')
      update '{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"execute","status":"pending"}'
      update "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t1\",\"status\":\"in_progress\",\"content\":$out}"
      update "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t1\",\"status\":\"in_progress\",\"content\":$out}"
      update "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t1\",\"status\":\"completed\",\"content\":$out}"
      update '{"sessionUpdate":"tool_call","toolCallId":"t2","title":"build","kind":"execute","status":"in_progress"}'
      update "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t2\",\"content\":$(content 'step-one')}"
      update "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t2\",\"content\":$(content 'step-one\nstep-two')}"
      update "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t2\",\"status\":\"completed\",\"content\":$(content 'all-done')}"
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
  esac
done
"#;

/// Issue 52: a tool call's content was printed again with each `tool_call_update`. In a
/// terminal it is on screen once, as it is now: repeated content is not written again, and
/// content that changes is redrawn in place (the call's header keeps one line).
#[test]
fn a_tool_calls_content_is_on_screen_once_as_it_is_now() {
    if !have(
        "tmux",
        "a_tool_calls_content_is_on_screen_once_as_it_is_now",
    ) {
        return;
    }
    let dir = Scratch::new("repeating");
    let agent = dir.0.join("agent.sh");
    std::fs::write(&agent, REPEATING_TOOL_AGENT).unwrap();
    let t = Tmux::start(
        "repeating",
        &format!(
            "cd {} && {} chat --dialect v1 -- sh {}",
            sh(&dir.0),
            sh(&acp()),
            sh(&agent)
        ),
    );
    t.wait_for("you>");
    t.line("list");
    let screen = t.wait_for("── end_turn");
    t.line("/quit");
    t.wait_for("EXIT=0");
    assert_eq!(screen.matches("src-listing-line").count(), 1, "{screen}");
    assert_eq!(screen.matches("NOTES.md").count(), 1, "{screen}");
    assert_eq!(screen.matches("⏺ ").count(), 2, "{screen}");
    assert!(
        screen.contains("⏺ ls (execute) ✓ completed\n    NOTES.md\n    src-listing-line\n⏺ build"),
        "{screen}"
    );
    assert!(
        screen.contains("⏺ build (execute) ✓ completed\n    all-done\n"),
        "{screen}"
    );
    assert!(!screen.contains("step-"), "{screen}");
}
