//! `acp chat` driven as a person would: in a real terminal (tmux), typing keys and reading
//! the screen. Against the built-in agent (in process) and the echo agent (a child process):
//! the keyboard (questions, Ctrl-C, completion, keys typed ahead, history). The screen's
//! rendering is in `chat_screen_tmux.rs`, sessions, models and titles in
//! `chat_session_tmux.rs`, follow-up prompts in `chat_followups.rs`.

mod support;

use support::{Scratch, Tmux, acp, echo_agent, have, sh};

/// The built-in agent pinned to v1: its terminal step needs the client's terminals, which
/// v2 (the default) does not carry.
fn chat_builtin(name: &str, dir: &Scratch) -> Tmux {
    Tmux::start(
        name,
        &format!("cd {} && {} chat --protocol 1", sh(&dir.0), sh(&acp())),
    )
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
        // v1 pinned: the echo agent speaks v2 too, which carries no client terminals or modes.
        &format!(
            "cd {} && {} chat --protocol 1 -- {}",
            sh(&dir.0),
            sh(&acp()),
            sh(&agent)
        ),
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
