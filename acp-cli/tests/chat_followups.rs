//! Follow-up prompts in `acp chat` (issue 50), driven in a real terminal (tmux): a line
//! typed while a turn runs is queued and sent when the turn ends (the built-in agent), or
//! steered into the running turn where the agent advertises `_session/steering` (a small
//! agent of the test's own); a cancelled turn holds its queued lines, each offered on the
//! prompt line to be kept (Enter) or dropped (Ctrl-C).

mod support;

use support::{Scratch, Tmux, acp, have, sh};

fn chat_builtin(name: &str, dir: &Scratch) -> Tmux {
    Tmux::start(name, &format!("cd {} && {} chat", sh(&dir.0), sh(&acp())))
}

/// Where `needle` first shows on `screen` (panics with the screen when it does not).
fn at(screen: &str, needle: &str) -> usize {
    screen
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not on the screen:\n{screen}"))
}

#[test]
fn a_line_typed_during_a_turn_is_queued_and_sent_when_it_ends() {
    if !have(
        "tmux",
        "a_line_typed_during_a_turn_is_queued_and_sent_when_it_ends",
    ) {
        return;
    }
    let dir = Scratch::new("queue");
    let t = chat_builtin("queue", &dir);
    t.wait_for("you>");
    t.line("/count 12");
    t.wait_for(" 2 ");
    t.line("/echo after the count");
    t.wait_for("queued: /echo after the count");
    let screen = t.wait_for_n("── end_turn", 2);
    // The count ran to its end, then the queued line went as the next prompt.
    let counted = at(&screen, " 12");
    let first_end = at(&screen, "── end_turn");
    let sent = at(&screen, "you> /echo after the count");
    let echoed = at(&screen, "\n  after the count");
    assert!(
        counted < first_end && first_end < sent && sent < echoed,
        "{screen}"
    );
    t.end_input();
    t.wait_for("EXIT=0");
}

#[test]
fn a_cancelled_turn_holds_its_queued_lines_to_be_kept_or_dropped() {
    if !have(
        "tmux",
        "a_cancelled_turn_holds_its_queued_lines_to_be_kept_or_dropped",
    ) {
        return;
    }
    let dir = Scratch::new("queuecancel");
    let t = chat_builtin("queuecancel", &dir);
    t.wait_for("you>");
    t.line("/count 200");
    t.wait_for(" 2 ");
    t.line("/echo kept line");
    t.wait_for("queued: /echo kept line");
    t.line("/echo dropped line");
    t.wait_for("queued: /echo dropped line");
    t.send(&["C-c"]);
    let screen = t.wait_for("── cancelled");
    assert!(
        screen.contains("2 queued line(s) held, not sent"),
        "{screen}"
    );
    // Nothing was sent on its own: the first held line is on the prompt line.
    let screen = t.wait_for("you> /echo kept line");
    assert!(
        screen.contains("held: /echo kept line (Enter sends it, Ctrl-C drops it)"),
        "{screen}"
    );
    assert_eq!(screen.matches("── end_turn").count(), 0, "{screen}");
    // Kept: Enter sends it.
    t.send(&["Enter"]);
    t.wait_for("── end_turn");
    // The second is offered next; Ctrl-C drops it.
    t.wait_for("you> /echo dropped line");
    t.send(&["C-c"]);
    t.wait_for("dropped: /echo dropped line");
    t.end_input();
    let screen = t.wait_for("EXIT=0");
    assert!(screen.contains("\n  kept line"), "{screen}");
    assert!(!screen.contains("\n  dropped line"), "{screen}");
    assert_eq!(screen.matches("── end_turn").count(), 1, "{screen}");
}

/// An agent that advertises steering (`_meta.steering.supported`): a prompt's turn says
/// "working" and waits; a `_session/steering` message is taken into it ("injected"), said
/// back, and ends the turn.
const STEERABLE_AGENT: &str = r#"
turn=
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentInfo":{"name":"steerable","version":"1"},"_meta":{"steering":{"supported":true}}}}\n' "$id" ;;
    *'"session/new"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"session/prompt"'*)
      turn=$id
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"working\\n"}}}}\n' ;;
    *'"_session/steering"'*)
      text=$(printf '%s' "$line" | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"outcome":"injected"}}\n' "$id"
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"steered: %s\\n"}}}}\n' "$text"
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$turn" ;;
  esac
done
"#;

#[test]
fn a_line_typed_during_a_turn_steers_an_agent_that_takes_steering() {
    if !have(
        "tmux",
        "a_line_typed_during_a_turn_steers_an_agent_that_takes_steering",
    ) {
        return;
    }
    let dir = Scratch::new("steer");
    std::fs::write(dir.0.join("agent.sh"), STEERABLE_AGENT).unwrap();
    let t = Tmux::start(
        "steer",
        &format!(
            "cd {} && {} chat --dialect v1 -- sh agent.sh",
            sh(&dir.0),
            sh(&acp())
        ),
    );
    t.wait_for("you>");
    t.line("start the work");
    t.wait_for("  working");
    t.line("faster please");
    let screen = t.wait_for("── end_turn");
    assert!(screen.contains("steering: faster please"), "{screen}");
    let steered = at(&screen, "\n  steered: faster please");
    assert!(steered < at(&screen, "── end_turn"), "{screen}");
    t.wait_for("the agent took it into the running turn");
    // Steered, not queued: one turn, and nothing sent after it.
    t.end_input();
    let screen = t.wait_for("EXIT=0");
    assert!(!screen.contains("queued:"), "{screen}");
    assert_eq!(screen.matches("── end_turn").count(), 1, "{screen}");
    assert!(!screen.contains("you> faster please"), "{screen}");
}
