//! Proxy chains of child processes: a turn across one, a proxy that dies, `acp conduct`'s exit
//! status, and `acp trace` as a hop.

use super::*;

/// A proxy chain from the command line: `acp chat` -> `acp conduct` -> `acp tag-proxy` ->
/// the built-in agent completes a turn, the permission request crossing the chain both
/// ways, the agent's text tagged by the proxy.
#[test]
fn a_turn_crosses_a_proxy_chain_of_child_processes() {
    let dir = Scratch::new("chain");
    let acp = acp();
    let acp = acp.to_str().unwrap();
    let out = run(
        &[
            "chat",
            "--prompt",
            "hello script",
            "--yes",
            "--dialect",
            "v1",
            "--",
            acp,
            "conduct",
            "--",
            acp,
            "tag-proxy",
            "--prefix",
            "<tag>",
            "--",
            acp,
            "agent",
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("Allow (--yes)"), "{stdout}");
    assert!(stdout.contains("<tag>"), "{stdout}");
    assert!(stdout.contains("── end_turn"), "{stdout}");
}

/// A proxy that exits as soon as it is spoken to fails the chat with one clear error naming
/// it, and `acp conduct` reaps the agent it started (the run ends within its time limit).
#[test]
fn a_proxy_that_dies_fails_the_chat_with_its_name() {
    let dir = Scratch::new("chain-dies");
    let acp = acp();
    let acp = acp.to_str().unwrap();
    let out = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--dialect",
            "v1",
            "--",
            acp,
            "conduct",
            "--",
            "sh",
            "-c",
            "read line; exit 3",
            "--",
            acp,
            "agent",
        ],
        &dir.0,
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("read line; exit 3"), "{all}");
}

/// `acp conduct` as an editor's agent: once its client closes its side, the chain's
/// components exit on their closed input and `acp conduct` exits 0 (a session that ended is
/// no failure); a component that ends first makes it exit 1, naming it.
#[test]
fn acp_conduct_exits_0_when_its_client_leaves_and_1_when_a_component_fails_first() {
    use std::io::{BufRead, BufReader, Write};
    let acp = acp();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
    let conduct = |chain: &[&str]| {
        let mut child = Command::new(&acp)
            .arg("conduct")
            .arg("--")
            .args(chain)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("acp conduct starts");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{init}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut answer)
            .unwrap();
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "acp conduct did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (answer, status.code(), stderr)
    };
    let acp = acp.to_str().unwrap();
    let (answer, code, stderr) = conduct(&[acp, "tag-proxy", "--", acp, "agent"]);
    assert!(answer.contains("\"protocolVersion\":1"), "{answer}{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    let (answer, code, stderr) = conduct(&["sh", "-c", "read line; exit 3", "--", acp, "agent"]);
    assert!(answer.contains("\"error\""), "{answer}");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("read line; exit 3"), "{stderr}");
}

/// `acp trace` in the middle of a chain: wrapping the proxy (its command simply last, no
/// `--`, which `acp conduct` would take for a separator), it records the conductor's hop to
/// the proxy, `proxy/initialize` and the `proxy/successor` envelopes, and the turn goes on.
#[test]
fn a_trace_inside_a_chain_records_the_hop_to_a_proxy() {
    let dir = Scratch::new("chain-trace");
    let acp = acp();
    let acp = acp.to_str().unwrap();
    let hop = dir.0.join("hop.ndjson");
    let out = run(
        &[
            "chat",
            "--prompt",
            "hello script",
            "--yes",
            "--dialect",
            "v1",
            "--",
            acp,
            "conduct",
            "--",
            acp,
            "trace",
            "--out",
            hop.to_str().unwrap(),
            acp,
            "tag-proxy",
            "--prefix",
            "<tag>",
            "--",
            acp,
            "agent",
        ],
        &dir.0,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("<tag>"), "{stdout}");
    let recorded = std::fs::read_to_string(&hop).expect("the trace of the hop");
    assert!(recorded.contains("proxy/initialize"), "{recorded}");
    assert!(recorded.contains("proxy/successor"), "{recorded}");
}
