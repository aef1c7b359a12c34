//! `acp chat` in a real terminal (tmux): the session beyond one conversation. A conversation
//! kept in a store is loaded and goes on; models and the title are shown, switched and set
//! from the keyboard, or explained when the agent offers none.

mod support;

use support::{Scratch, Tmux, acp, echo_agent, have, sh};

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

/// What the agent offers beyond the basics, used from the keyboard: the built-in agent (served
/// on stdio by `acp agent`, recorded by `acp trace`) offers models as a config option of
/// category `model` (switched with `session/set_config_option`, the id completed with Tab),
/// titles the session after its first
/// prompt, and lets the client rename it (`session/set_title`). Pinned to v1: v2 has no
/// `session/set_title` (over v2 `acp agent` offers no renaming, as the mapping says).
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
            "cd {dir} && {acp} chat --protocol 1 -- {acp} trace --out {trace} -- {acp} agent",
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

/// The built-in agent over v2 (`--protocol 2`: the v1 agent through the v1<->v2 translation)
/// shows the same transcript as over v1 (its default), but for the header naming the version:
/// the commands, the session, the models (a config option over v2), the title, the reply, and
/// the modes (v2's config option of category `mode`) listed and switched.
#[test]
fn the_built_in_agent_over_v2_shows_the_v1_transcript() {
    if !have("tmux", "the_built_in_agent_over_v2_shows_the_v1_transcript") {
        return;
    }
    let dir = Scratch::new("v2chat");
    let transcript = |name: &str, extra: &str| {
        let t = Tmux::start(
            name,
            &format!("cd {} && {} chat{extra}", sh(&dir.0), sh(&acp())),
        );
        t.wait_for("you>");
        t.line("/echo the same words");
        t.wait_for("── end_turn");
        t.line("/mode");
        t.wait_for("* ask");
        t.line("/mode code");
        t.wait_for("mode: code");
        t.line("/quit");
        let screen = t.wait_for("EXIT=0");
        // The header, which the terminal may wrap: from "connected to" to the commands line.
        let header: String = screen
            .lines()
            .skip_while(|l| !l.contains("connected to"))
            .take_while(|l| !l.starts_with("commands:"))
            .collect();
        // From the commands line to the exit, the turn's duration left out.
        let body: Vec<String> = screen
            .lines()
            .skip_while(|l| !l.starts_with("commands:"))
            .take_while(|l| !l.contains("EXIT="))
            .map(|l| l.split(" · ").next().unwrap_or(l).trim_end().to_owned())
            .collect();
        (header, body, screen)
    };
    let (v1_header, v1, v1_screen) = transcript("v2chat1", "");
    let (v2_header, v2, v2_screen) = transcript("v2chat2", " --protocol 2");
    assert!(v1_header.ends_with("(v1)"), "{v1_screen}");
    assert!(
        v2_header.ends_with("(v2, the built-in v1 agent through the v1<->v2 translation)"),
        "{v2_screen}"
    );
    assert!(
        v2.iter()
            .any(|l| l.contains("models: demo-fast (current), demo-slow")),
        "{v2_screen}"
    );
    assert!(
        v2.iter().any(|l| l.trim() == "the same words"),
        "{v2_screen}"
    );
    assert!(v2.iter().any(|l| l.contains("mode: code")), "{v2_screen}");
    assert_eq!(v1, v2, "v1:\n{v1_screen}\nv2:\n{v2_screen}");
}
