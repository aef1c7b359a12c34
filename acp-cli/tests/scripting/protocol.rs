//! `acp chat --protocol 1|2` with the built-in agent: over 2 the built-in v1 agent is
//! served as v2 and the chat's v1 client drives it through the other translation; the
//! transcript is the v1 one, but for the header and the terminal step (v2 carries no
//! client terminals).

use super::{run, text};
use crate::support::Scratch;

/// The transcript from the line after the header.
fn after_header(stdout: &str) -> String {
    stdout
        .lines()
        .skip_while(|l| !l.contains("connected to"))
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
#[ignore = "open: the models line is missing over v2 (the model config option does not reach the chat), see the v2tr report"]
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

#[test]
#[ignore = "open: the refusal's text is not where the test looks (status and wording unverified), see the v2tr report"]
fn protocol_2_with_an_agent_command_is_refused_with_a_reason() {
    let dir = Scratch::new("protocol-refused");
    let out = run(
        &["chat", "--protocol", "2", "--prompt", "x", "--", "true"],
        &dir.0,
    );
    assert_ne!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--protocol 2 reaches only the built-in agent"),
        "{stderr}"
    );
    let out = run(&["chat", "--protocol", "3", "--prompt", "x"], &dir.0);
    assert_ne!(out.status.code(), Some(0), "only 1 and 2 exist");
}
