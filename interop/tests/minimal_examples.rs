//! The four minimal examples (`examples/minimal_*`), each client against each agent as real
//! processes: every pair streams both chunks and ends the turn, so the side-by-side code stays
//! working code on both libraries.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `cargo test` builds the examples beside the test binaries: `target/<profile>/examples`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = profile.join("examples").join(name);
    assert!(path.exists(), "{} is not built", path.display());
    path
}

fn run(client: &str, agent: &str) -> String {
    let mut child = Command::new(example(client))
        .arg(example(agent))
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the client starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child
        .try_wait()
        .expect("the client can be waited on")
        .is_none()
    {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{client} against {agent} did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("the client's output");
    assert!(
        output.status.success(),
        "{client} against {agent}: {}",
        output.status
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

#[test]
fn every_minimal_client_streams_from_every_minimal_agent() {
    for client in ["minimal_client_ours", "minimal_client_official"] {
        for agent in ["minimal_agent_ours", "minimal_agent_official"] {
            assert_eq!(
                run(client, agent),
                "Hello, world.\nstop: EndTurn\n",
                "{client} against {agent}"
            );
        }
    }
}
