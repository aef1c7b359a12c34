//! `acp chat` driven as a person would: in a real terminal (tmux), typing keys and reading
//! the screen. Against the built-in agent (in process) and the echo agent (a child process).

mod support;

use support::{Scratch, Tmux, acp, echo_agent, have, sh};

fn chat_builtin(name: &str, dir: &Scratch) -> Tmux {
    Tmux::start(name, &format!("cd {} && {} chat", sh(&dir.0), sh(&acp())))
}

#[test]
fn builtin_permission_from_the_keyboard_and_a_refused_terminal() {
    if !have(
        "tmux",
        "builtin_permission_from_the_keyboard_and_a_refused_terminal",
    ) {
        return;
    }
    let dir = Scratch::new("perm");
    let t = chat_builtin("perm", &dir);
    t.wait_for("you>");
    t.line("hello there");
    t.wait_for("choose 1-3 >");
    t.line("1");
    let screen = t.wait_for("[y]es / [n]o >");
    assert!(
        screen.contains("the agent wants to run: echo 'hello from the built-in agent'"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("in: {}", dir.0.display())),
        "{screen}"
    );
    assert!(
        screen.contains("environment: inherited, nothing added"),
        "{screen}"
    );
    t.line("n");
    let screen = t.wait_for("── end_turn");
    assert!(screen.contains("the user refused to run"), "{screen}");
    // The edit's header was rewritten in place: one header line, now completed.
    assert_eq!(
        screen.matches("Edit NOTES.md (edit)").count(),
        1,
        "{screen}"
    );
    assert!(
        screen.contains("Edit NOTES.md (edit) ✓ completed"),
        "{screen}"
    );
    assert!(screen.contains("Run echo (execute) ✗ failed"), "{screen}");
    assert!(screen.contains("  You said: hello there"), "{screen}");
    assert!(screen.contains("☑ Reply"), "{screen}");
    // Allowing the terminal runs it and shows its output.
    t.line("again");
    t.wait_for_n("choose 1-3 >", 2);
    t.line("3");
    t.wait_for_n("[y]es / [n]o >", 2);
    t.line("y");
    let screen = t.wait_for_n("── end_turn", 2);
    assert!(screen.contains("rejected by the user"), "{screen}");
    assert!(
        screen.contains("│ hello from the built-in agent"),
        "{screen}"
    );
    t.end_input();
    t.wait_for("EXIT=0");
}

#[test]
fn builtin_ctrl_c_cancels_mid_stream_and_a_second_quits() {
    if !have(
        "tmux",
        "builtin_ctrl_c_cancels_mid_stream_and_a_second_quits",
    ) {
        return;
    }
    let dir = Scratch::new("cancel");
    let t = chat_builtin("cancel", &dir);
    t.wait_for("you>");
    t.line("/count 200");
    t.wait_for(" 3 ");
    // The spinner with the elapsed time runs after the streamed text.
    t.wait_for(" working ");
    t.send(&["C-c"]);
    let screen = t.wait_for("── cancelled");
    assert!(
        screen.contains("cancelling (Ctrl-C again to quit)"),
        "{screen}"
    );
    assert!(!screen.contains(" 200 "), "{screen}");
    // The spinner was erased when the turn ended.
    assert!(!screen.contains(" working "), "{screen}");
    t.wait_for_n("you>", 2);
    // A second Ctrl-C (at the prompt after the cancelled turn) quits.
    t.send(&["C-c"]);
    t.wait_for("EXIT=0");
    // Mid-turn, two Ctrl-C quit at once.
    let t = chat_builtin("cancel2", &dir);
    t.wait_for("you>");
    t.line("/count 200");
    t.wait_for(" 2 ");
    t.send(&["C-c"]);
    std::thread::sleep(std::time::Duration::from_millis(50));
    t.send(&["C-c"]);
    t.wait_for("EXIT=");
}

#[test]
fn builtin_slash_completion_mode_and_model_switch() {
    if !have("tmux", "builtin_slash_completion_mode_and_model_switch") {
        return;
    }
    let dir = Scratch::new("slash");
    std::fs::write(dir.0.join("notes-for-agent.txt"), "one\ntwo\n").unwrap();
    let t = chat_builtin("slash", &dir);
    // The agent's commands arrived before the first prompt.
    let screen = t.wait_for("you>");
    assert!(
        screen.contains("commands: /echo /count /mcp /help"),
        "{screen}"
    );
    t.send(&["/ec", "Tab"]);
    t.wait_for("you> /echo");
    t.line("round trip");
    t.wait_for("  round trip");
    t.wait_for("── end_turn");
    // @path completes and attaches (embedded: the agent advertises embeddedContext).
    t.send(&["-l", "look at @notes-f"]);
    t.send(&["Tab"]);
    t.wait_for("you> look at @notes-for-agent.txt");
    t.send(&["Enter"]);
    t.wait_for("choose 1-3 >");
    t.line("2");
    t.wait_for("[y]es / [n]o >");
    t.line("y");
    let screen = t.wait_for_n("── end_turn", 2);
    assert!(screen.contains("[attached: file://"), "{screen}");
    assert!(screen.contains("embedded)]"), "{screen}");
    t.line("/mode");
    let screen = t.wait_for("* ask");
    assert!(screen.contains("  code  Code"), "{screen}");
    t.line("/mode code");
    t.wait_for("mode: code");
    t.line("/model demo-slow");
    t.wait_for("model set to demo-slow");
    t.line("/mode nonsense");
    t.wait_for("mode not changed: unknown mode `nonsense`");
    // In code mode the edit needs no permission: only the terminal is asked.
    t.line("edit away");
    t.wait_for_n("[y]es / [n]o >", 2);
    t.line("y");
    let screen = t.wait_for_n("── end_turn", 3);
    assert_eq!(screen.matches("choose 1-3 >").count(), 1, "{screen}");
    t.line("/quit");
    t.wait_for("EXIT=0");
}

#[test]
fn echo_agent_child_permission_terminal_cancel_completion_and_mode() {
    if !have(
        "tmux",
        "echo_agent_child_permission_terminal_cancel_completion_and_mode",
    ) {
        return;
    }
    let agent = echo_agent();
    let dir = Scratch::new("echo");
    std::fs::write(dir.0.join("hello.txt"), "hello from the file\n").unwrap();
    let t = Tmux::start(
        "echo",
        &format!("cd {} && {} chat -- {}", sh(&dir.0), sh(&acp()), sh(&agent)),
    );
    let screen = t.wait_for("you>");
    assert!(screen.contains("connected to echo-agent"), "{screen}");
    assert!(screen.contains("commands: /echo"), "{screen}");
    // Slash completion from the child's available_commands_update.
    t.send(&["/ec", "Tab"]);
    t.wait_for("you> /echo");
    t.send(&["C-u"]);
    // Permission from the keyboard, then a refused terminal: the echo agent fails the turn.
    t.line("one two three");
    t.wait_for("choose 1-2 >");
    t.line("1");
    t.wait_for("the agent reads");
    t.wait_for("[y]es / [n]o >");
    t.line("n");
    let screen = t.wait_for("── error");
    assert!(
        screen.contains("Read ") && screen.contains("✓ completed"),
        "{screen}"
    );
    assert!(screen.contains("error: the prompt failed"), "{screen}");
    // Ctrl-C mid-stream.
    let words = (1..=150)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    t.line(&words);
    t.wait_for_n("choose 1-2 >", 2);
    t.line("1");
    t.wait_for_n("[y]es / [n]o >", 2);
    t.line("y");
    t.wait_for("w5 ");
    t.send(&["C-c"]);
    let screen = t.wait_for("── cancelled");
    // The echo stopped: the agent's lines (behind the gutter) never got to the last word.
    assert!(
        !screen
            .lines()
            .any(|l| l.starts_with("  ") && l.contains("w150")),
        "{screen}"
    );
    // Mode switch.
    t.line("/mode code");
    t.wait_for("mode: code");
    t.wait_for("mode set to code");
    t.end_input();
    t.wait_for("EXIT=0");
}

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

/// A conversation with the built-in agent kept in a store (`--store`), loaded in a later
/// run: the earlier turns are shown as they looked live, then the chat goes on.
#[test]
fn a_loaded_conversation_is_shown_like_a_live_one_and_goes_on() {
    if !have(
        "tmux",
        "a_loaded_conversation_is_shown_like_a_live_one_and_goes_on",
    ) {
        return;
    }
    let dir = Scratch::new("loadchat");
    let store = dir.0.join("store");
    let chat = |name: &str, extra: &str| {
        Tmux::start(
            name,
            &format!(
                "cd {} && {} chat --store {}{extra}",
                sh(&dir.0),
                sh(&acp()),
                sh(&store)
            ),
        )
    };
    let t = chat("loadchat1", "");
    t.wait_for("you>");
    t.line("/echo remember the milk");
    let screen = t.wait_for("── end_turn");
    let id = screen
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .expect(&screen)
        .trim()
        .to_owned();
    t.end_input();
    t.wait_for("EXIT=0");
    let t = chat("loadchat2", &format!(" --load {id}"));
    let screen = t.wait_for("── loaded: 1 earlier turn(s)");
    let typed = screen.find("you> /echo remember the milk").expect(&screen);
    let said = screen.find("  remember the milk").expect(&screen);
    let end = screen.find("── loaded").unwrap();
    assert!(typed < said && said < end, "{screen}");
    t.wait_for(&format!("session {id}"));
    t.line("/echo and eggs");
    let screen = t.wait_for("── end_turn");
    assert!(screen.contains("  and eggs"), "{screen}");
    t.end_input();
    t.wait_for("EXIT=0");
}

/// Keys typed while the agent streams do not land in its text: they wait, and the next
/// prompt line shows them intact, ready to submit.
#[test]
fn a_line_typed_ahead_during_a_turn_stays_intact_for_the_next_prompt() {
    if !have(
        "tmux",
        "a_line_typed_ahead_during_a_turn_stays_intact_for_the_next_prompt",
    ) {
        return;
    }
    let dir = Scratch::new("typeahead");
    let t = chat_builtin("typeahead", &dir);
    t.wait_for("you>");
    t.line("/count 12");
    t.wait_for(" 2 ");
    t.send(&["-l", "/echo typed ahead"]);
    let screen = t.wait_for("── end_turn");
    let streamed = screen
        .lines()
        .find(|l| l.starts_with("  1 2"))
        .expect(&screen);
    assert_eq!(
        streamed.trim_end(),
        "  1 2 3 4 5 6 7 8 9 10 11 12",
        "{screen}"
    );
    t.wait_for("you> /echo typed ahead");
    t.send(&["Enter"]);
    let screen = t.wait_for_n("── end_turn", 2);
    assert!(screen.contains("\n  typed ahead"), "{screen}");
    t.end_input();
    t.wait_for("EXIT=0");
}

/// `/mode ` completes the agent's mode ids.
#[test]
fn mode_ids_complete_after_slash_mode() {
    if !have("tmux", "mode_ids_complete_after_slash_mode") {
        return;
    }
    let dir = Scratch::new("modecomplete");
    let t = chat_builtin("modecomplete", &dir);
    t.wait_for("you>");
    t.send(&["-l", "/mode c"]);
    t.send(&["Tab"]);
    t.wait_for("you> /mode code");
    t.send(&["Enter"]);
    t.wait_for("mode set to code");
    // `/quit`, not Ctrl-D: typed before the line editor has the terminal back, a line waits
    // for it, while Ctrl-D would be taken by the terminal's line discipline.
    t.line("/quit");
    t.wait_for("EXIT=0");
}

/// The prompts of one run are recalled with Up in the next (the history file).
#[test]
fn prompt_history_is_kept_across_runs() {
    if !have("tmux", "prompt_history_is_kept_across_runs") {
        return;
    }
    let dir = Scratch::new("history");
    let history = dir.0.join("data/acp/history");
    let chat = |name: &str| {
        Tmux::start(
            name,
            &format!(
                "cd {} && XDG_DATA_HOME={} ACP_HISTORY= {} chat",
                sh(&dir.0),
                sh(&dir.0.join("data")),
                sh(&acp())
            ),
        )
    };
    let t = chat("history1");
    t.wait_for("you>");
    t.line("/echo from the first run");
    t.wait_for("── end_turn");
    t.end_input();
    t.wait_for("EXIT=0");
    // In the user's data directory, in rustyline's own format.
    let saved = std::fs::read_to_string(&history).unwrap();
    assert!(saved.contains("/echo from the first run"), "{saved}");
    let t = chat("history2");
    t.wait_for("you>");
    t.send(&["Up"]);
    t.wait_for("you> /echo from the first run");
    t.send(&["Enter"]);
    let screen = t.wait_for("── end_turn");
    assert!(screen.contains("  from the first run"), "{screen}");
    t.end_input();
    t.wait_for("EXIT=0");
}

/// What the agent offers beyond the basics, used from the keyboard: the built-in agent (served
/// on stdio by `acp agent`, recorded by `acp trace`) offers models as a config option of
/// category `model` (switched with `session/set_config_option`, the id completed with Tab),
/// titles the session after its first
/// prompt, and lets the client rename it (`session/set_title`).
#[test]
fn models_switch_and_the_title_is_shown_and_set() {
    if !have("tmux", "models_switch_and_the_title_is_shown_and_set") {
        return;
    }
    let dir = Scratch::new("offers");
    let trace = dir.0.join("run.ndjson");
    let t = Tmux::start(
        "offers",
        &format!(
            "cd {dir} && {acp} chat -- {acp} trace --out {trace} -- {acp} agent",
            dir = sh(&dir.0),
            acp = sh(&acp()),
            trace = sh(&trace)
        ),
    );
    let screen = t.wait_for("you>");
    assert!(
        screen.contains("models: demo-fast (current), demo-slow"),
        "{screen}"
    );
    t.send(&["-l", "/model demo-s"]);
    t.send(&["Tab"]);
    t.wait_for("you> /model demo-slow");
    t.send(&["Enter"]);
    t.wait_for("model set to demo-slow");
    t.line("/model");
    let screen = t.wait_for("* demo-slow  Demo (slow)");
    assert!(screen.contains("  demo-fast  Demo (fast)"), "{screen}");
    t.line("/model turbo");
    t.wait_for("model not changed: unknown model `turbo`");
    // Untitled until the first prompt, which names it.
    t.line("/title");
    t.wait_for("the agent has not titled this session");
    t.line("/echo plan the trip");
    t.wait_for("title: /echo plan the trip");
    t.wait_for("── end_turn");
    t.line("/title Trip to Lisbon");
    t.wait_for("title set to Trip to Lisbon");
    // The agent reported the change as well (a session_info_update).
    t.wait_for("title: Trip to Lisbon");
    t.line("/title");
    t.wait_for_n("title: Trip to Lisbon", 2);
    // `/quit` rather than Ctrl-D, which the terminal would swallow if typed before the line
    // editor is back.
    t.line("/quit");
    t.wait_for("EXIT=0");
    // The switches went over the wire as config option requests (the title as the unstable
    // request), answered without error.
    let recorded = std::fs::read_to_string(&trace).unwrap();
    let methods: Vec<String> = recorded
        .lines()
        .filter_map(|record| {
            let record: serde_json::Value = serde_json::from_str(record).ok()?;
            let message: serde_json::Value = serde_json::from_str(record["line"].as_str()?).ok()?;
            Some(message["method"].as_str()?.to_owned())
        })
        .collect();
    let count = |m: &str| methods.iter().filter(|x| *x == m).count();
    // demo-slow, then the refused turbo; one rename.
    assert_eq!(count("session/set_config_option"), 2, "{methods:?}");
    assert_eq!(count("session/set_title"), 1, "{methods:?}");
    assert_eq!(count("session/set_model"), 0, "{methods:?}");
}

/// An agent that offers neither models nor titles gets a clear message, not a request.
#[test]
fn model_and_title_commands_say_when_the_agent_offers_nothing() {
    if !have(
        "tmux",
        "model_and_title_commands_say_when_the_agent_offers_nothing",
    ) {
        return;
    }
    let agent = echo_agent();
    let dir = Scratch::new("nooffers");
    let t = Tmux::start(
        "nooffers",
        &format!("cd {} && {} chat -- {}", sh(&dir.0), sh(&acp()), sh(&agent)),
    );
    let screen = t.wait_for("you>");
    assert!(!screen.contains("models:"), "{screen}");
    t.line("/model fast");
    t.wait_for("this agent offers no model choice");
    t.line("/title Renamed");
    t.wait_for("this agent does not let clients set titles (no sessionCapabilities.title)");
    t.line("/quit");
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
