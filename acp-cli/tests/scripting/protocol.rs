//! `acp chat` and the protocol version: without `--protocol` an agent command is offered v2
//! first and the version it answers is spoken (v1 with acp-agent's v1-only echo agent, v2
//! with `acp agent`), the in-process built-in agent is spoken to in v1 (its terminals, MCP
//! servers and `--load` do not cross the translation yet); the header names the version;
//! `--protocol 1|2` pins. Over 2 the built-in v1 agent is served as v2 and the chat's v1
//! client drives it through the other translation; the transcript is the v1 one, but for
//! the header and the terminal step (v2 carries no client terminals).

use super::{run, text};
use crate::support::{Scratch, echo_agent};

/// The transcript from the line after the header, without the turns' durations (`── end_turn
/// · 0.1s` becomes `── end_turn`), which differ from run to run.
fn after_header(stdout: &str) -> String {
    stdout
        .lines()
        .skip_while(|l| !l.contains("connected to"))
        .skip(1)
        .map(|l| l.split(" · ").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_built_in_agent_over_v2_gives_the_v1_transcript() {
    let dir = Scratch::new("protocol");
    let args = |p: &'static str| {
        [
            "chat",
            "--protocol",
            p,
            "--prompt",
            "/echo the same words",
            "--prompt",
            "/help",
        ]
    };
    let v1 = run(&args("1"), &dir.0);
    let v2 = run(&args("2"), &dir.0);
    let (v1_out, v2_out) = (text(&v1.stdout), text(&v2.stdout));
    assert_eq!(v1.status.code(), Some(0), "{v1_out}{}", text(&v1.stderr));
    assert_eq!(v2.status.code(), Some(0), "{v2_out}{}", text(&v2.stderr));
    assert!(v1_out.contains("(v1)"), "{v1_out}");
    assert!(
        v2_out.contains("(v2, the built-in v1 agent through the v1<->v2 translation)"),
        "{v2_out}"
    );
    assert_eq!(after_header(&v1_out), after_header(&v2_out));
}

#[test]
fn a_full_turn_over_v2_asks_edits_and_ends() {
    let dir = Scratch::new("protocol-turn");
    let out = run(
        &["chat", "--protocol", "2", "--prompt", "hello v2", "--yes"],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("you> hello v2"), "{stdout}");
    assert!(stdout.contains("Allow (--yes)"), "{stdout}");
    assert!(stdout.contains("  You said: hello v2"), "{stdout}");
    assert!(
        stdout.contains("the client offers no terminals"),
        "{stdout}"
    );
    assert!(stdout.contains("── end_turn"), "{stdout}");
}

/// The header line of a run: `connected to NAME (SPOKEN)`.
fn header(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.contains("connected to"))
        .unwrap_or_default()
}

#[test]
fn without_protocol_the_built_in_agent_speaks_v1_and_says_so() {
    let dir = Scratch::new("protocol-default");
    let out = run(&["chat", "--prompt", "/echo default"], &dir.0);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(header(&stdout).ends_with("(v1)"), "{stdout}");
    assert!(stdout.contains("  default"), "{stdout}");
}

/// acp-agent's echo agent with `--protocol 1` speaks v1 only (as it does built without
/// `v2`): offered v2 it answers 1, and the chat goes on in v1 as before; pinned to 2 it is
/// refused with both versions named.
#[test]
fn a_v1_only_agent_is_spoken_to_in_v1_and_protocol_2_is_refused_naming_both_versions() {
    let dir = Scratch::new("protocol-agent");
    let agent = echo_agent();
    let agent = agent.to_str().unwrap();
    std::fs::write(dir.0.join("hello.txt"), "hello from the file\n").unwrap();
    for pinned in [&[][..], &["--protocol", "1"][..]] {
        let mut args = vec!["chat"];
        args.extend_from_slice(pinned);
        args.extend([
            "--prompt",
            "hello v1",
            "--yes",
            "--",
            agent,
            "--protocol",
            "1",
        ]);
        let out = run(&args, &dir.0);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(header(&stdout).ends_with("(v1)"), "{args:?}: {stdout}");
        assert!(stdout.contains("you> hello v1"), "{stdout}");
        // The terminal step: v1 carries the client's terminals.
        assert!(stdout.contains("hello from a terminal"), "{stdout}");
        assert!(stdout.contains("── end_turn"), "{stdout}");
    }
    let out = run(
        &[
            "chat",
            "--protocol",
            "2",
            "--prompt",
            "x",
            "--",
            agent,
            "--protocol",
            "1",
        ],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains(
            "the agent answered protocol version 1, which we did not offer (we offered protocol version 2)"
        ),
        "{all}"
    );
    assert!(
        all.contains("--protocol 2 needs an agent that speaks v2"),
        "{all}"
    );
}

#[test]
fn protocol_2_with_a_v1_only_way_of_reaching_the_agent_is_refused_with_a_reason() {
    let dir = Scratch::new("protocol-refused");
    let out = run(
        &[
            "chat",
            "--protocol",
            "2",
            "--dialect",
            "v1",
            "--prompt",
            "x",
        ],
        &dir.0,
    );
    assert_eq!(out.status.code(), Some(1));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains("--protocol 2 cannot be spoken with --dialect, --store or --url"),
        "{all}"
    );
    let out = run(&["chat", "--protocol", "3", "--prompt", "x"], &dir.0);
    assert_eq!(out.status.code(), Some(2), "only 1 and 2 exist");
    assert!(
        text(&out.stderr).contains("--protocol"),
        "{}",
        text(&out.stderr)
    );
}

/// `acp agent` serves the version the client offers: `acp chat` offers v2 first to an agent
/// command and gets it (the built-in v1 agent through the v1<->v2 translation on the agent's
/// side, which runs the agent's `echo` terminal for it, as a v2 client runs none); pinned
/// to 1 it gets v1, where the chat's client runs the terminal. Both turns end.
#[test]
fn acp_agent_serves_v2_when_offered_and_v1_when_pinned() {
    let dir = Scratch::new("protocol-acp-agent");
    let acp = crate::support::acp();
    let acp = acp.to_str().unwrap();
    for (pinned, spoken) in [(None, "(v2)"), (Some("1"), "(v1)")] {
        let mut args = vec!["chat"];
        if let Some(version) = pinned {
            args.extend(["--protocol", version]);
        }
        args.extend(["--prompt", "hello agent", "--yes", "--", acp, "agent"]);
        let out = run(&args, &dir.0);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(header(&stdout).ends_with(spoken), "{args:?}: {stdout}");
        assert!(stdout.contains("  You said: hello agent"), "{stdout}");
        assert!(
            !stdout.contains("the client offers no terminals"),
            "{args:?}: the terminal step ran: {stdout}"
        );
        assert!(
            stdout.contains("hello from the built-in agent"),
            "{args:?}: {stdout}"
        );
        assert!(stdout.contains("── end_turn"), "{stdout}");
    }
}
