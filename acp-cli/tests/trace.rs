//! `acp trace`: a transparent proxy (bytes, exit status and signals pass through, every line
//! recorded in order) and `acp trace view` (summary, and a page checked in headless Chromium).

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Scratch, acp, have};

fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "acp trace hung");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bytes_pass_unchanged_both_ways_and_every_line_is_recorded_in_order() {
    let dir = Scratch::new("trace-bytes");
    let input: Vec<u8> =
        b"{\"a\":1}\nsecond line\r\n\xff\xfe not utf-8\n\nno newline at the end".to_vec();
    let reply: Vec<u8> = b"{\"b\":2}\nreply \xc3\xa9\n\xff raw\nlast".to_vec();
    std::fs::write(dir.0.join("reply.bin"), &reply).unwrap();
    let out = dir.0.join("t.ndjson");
    let mut child = Command::new(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "cat > got.bin; cat reply.bin; exit 7"])
        .current_dir(&dir.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let status = wait(&mut child);
    let mut got_out = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take().unwrap(), &mut got_out).unwrap();
    assert_eq!(
        status.code(),
        Some(7),
        "the agent's exit status passes through"
    );
    assert_eq!(
        std::fs::read(dir.0.join("got.bin")).unwrap(),
        input,
        "client -> agent bytes"
    );
    assert_eq!(got_out, reply, "agent -> client bytes");
    let recs = records(&out);
    assert_eq!(recs.first().unwrap()["dir"], "start");
    assert_eq!(recs.last().unwrap()["dir"], "exit");
    assert_eq!(recs.last().unwrap()["code"], 7);
    let lines: Vec<(String, String)> = recs
        .iter()
        .filter(|r| r["line"].is_string())
        .map(|r| {
            (
                r["dir"].as_str().unwrap().to_owned(),
                r["line"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let c2a: Vec<&str> = lines
        .iter()
        .filter(|(d, _)| d == "client_to_agent")
        .map(|(_, l)| l.as_str())
        .collect();
    let a2c: Vec<&str> = lines
        .iter()
        .filter(|(d, _)| d == "agent_to_client")
        .map(|(_, l)| l.as_str())
        .collect();
    assert_eq!(
        c2a,
        [
            "{\"a\":1}",
            "second line",
            "\u{fffd}\u{fffd} not utf-8",
            "",
            "no newline at the end"
        ]
    );
    assert_eq!(a2c, ["{\"b\":2}", "reply é", "\u{fffd} raw", "last"]);
    // Each direction is in file order (checked above); seq orders both, without gaps.
    let mut seqs: Vec<u64> = recs.iter().filter_map(|r| r["seq"].as_u64()).collect();
    seqs.sort();
    assert_eq!(
        seqs,
        (0..9).collect::<Vec<_>>(),
        "seq numbers every line once"
    );
    let ts: Vec<f64> = recs.iter().map(|r| r["ts"].as_f64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "timestamps in order");
}

#[test]
fn signals_are_forwarded_and_a_death_by_signal_passes_through() {
    let dir = Scratch::new("trace-signals");
    let out = dir.0.join("t.ndjson");
    // The agent turns SIGTERM into exit 42: the proxy forwarded it.
    let mut child = Command::new(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 6];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    assert_eq!(&first, b"ready\n");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(wait(&mut child).code(), Some(42));
    // An agent killed by a signal: the proxy dies of the same signal.
    let mut child = Command::new(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "echo ready; kill -USR1 $$; sleep 5"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait(&mut child);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGUSR1)
    );
    assert_eq!(records(&out).last().unwrap()["signal"], libc::SIGUSR1);
}

/// Issue 32: behind the proxy the agent runs in a process group of its own, so a helper it
/// started is outside the group `AgentProcess` signals; once the agent is gone the helper
/// is an orphan of the client, which must stop it the way it stops the group: SIGTERM and
/// time to clean up (here: write a marker) before any SIGKILL.
#[tokio::test]
async fn an_agents_helper_behind_the_proxy_gets_sigterm_before_sigkill() {
    use acp_client::process::{AgentCommand, AgentProcess};
    let dir = Scratch::new("trace-helper");
    let marker = dir.0.join("cleaned");
    let pidfile = dir.0.join("helper.pid");
    let helper = format!(
        "trap \"echo cleaned > {}; exit 0\" TERM; echo $$ > {}; while :; do sleep 0.05; done",
        marker.display(),
        pidfile.display()
    );
    // The helper lets go of the agent's stdout, or the proxy would wait for it to close.
    let agent = format!("sh -c '{helper}' > /dev/null 2>&1 & cat > /dev/null");
    let command = AgentCommand::new(acp())
        .arg("trace")
        .arg("--out")
        .arg(dir.0.join("t.ndjson"))
        .args(["--", "sh", "-c", &agent]);
    let process = AgentProcess::spawn(&command).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the helper never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    process.shutdown(Duration::from_secs(2)).await.unwrap();
    // SAFETY: kill(2) with signal 0 only asks whether the helper still exists.
    let survived = unsafe { libc::kill(pid, 0) } == 0
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        });
    if survived {
        // SAFETY: killing the escaped test process by its pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!survived, "the helper {pid} outlived shutdown");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default().trim(),
        "cleaned",
        "the helper got SIGKILL without a SIGTERM and a grace period first"
    );
}

#[test]
fn a_missing_agent_is_a_clear_error() {
    let dir = Scratch::new("trace-missing");
    let out = Command::new(acp())
        .args(["trace", "--out", "t.ndjson", "--", "/nonexistent/agent"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("acp trace: cannot start `/nonexistent/agent`"),
        "{stderr}"
    );
}

/// Our client and our agent through the proxy, then the trace viewed as text and as a page.
#[test]
fn our_client_and_agent_through_the_proxy_and_the_page_in_chromium() {
    let dir = Scratch::new("trace-chat");
    let acp = acp();
    let trace = dir.0.join("chat.ndjson");
    let out = Command::new(&acp)
        .args(["chat", "--prompt", "traced turn", "--yes", "--"])
        .arg(&acp)
        .args(["trace", "--out"])
        .arg(&trace)
        .arg("--")
        .arg(&acp)
        .arg("agent")
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("You said: traced turn"), "{stdout}");
    // Add a failing request to the trace so the views have an error to show.
    let mut text = std::fs::read_to_string(&trace).unwrap();
    let extra = [
        r#"{"ts":9999999999.0,"dir":"client_to_agent","seq":100000,"line":"{\"jsonrpc\":\"2.0\",\"id\":900,\"method\":\"session/set_mode\",\"params\":{\"sessionId\":\"builtin-1\",\"modeId\":\"nope\"}}"}"#,
        r#"{"ts":9999999999.002,"dir":"agent_to_client","seq":100001,"line":"{\"jsonrpc\":\"2.0\",\"id\":900,\"error\":{\"code\":-32602,\"message\":\"unknown mode\"}}"}"#,
    ];
    // Keep the exit record last.
    let exit_at = text.trim_end().rfind('\n').unwrap() + 1;
    let exit_line = text[exit_at..].to_owned();
    text.truncate(exit_at);
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&exit_line);
    std::fs::write(&trace, &text).unwrap();

    let view = Command::new(&acp)
        .args(["trace", "view"])
        .arg(&trace)
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&view.stdout);
    assert_eq!(
        view.status.code(),
        Some(0),
        "{summary}{}",
        String::from_utf8_lossy(&view.stderr)
    );
    for method in [
        "initialize",
        "session/new",
        "session/prompt",
        "session/request_permission",
        "terminal/create",
    ] {
        assert!(summary.contains(method), "{method} missing:\n{summary}");
    }
    assert!(summary.contains("session/update"), "{summary}");
    assert!(summary.contains("-32602 unknown mode"), "{summary}");
    assert!(summary.contains("builtin-1  ended"), "{summary}");
    // Every request of both sides found its response (the agent's too, though the client
    // answers so fast that the file may hold the answer first).
    assert!(!summary.contains("problems"), "{summary}");
    assert!(!summary.contains("to no request"), "{summary}");

    let page = dir.0.join("page.html");
    let view = Command::new(&acp)
        .args(["trace", "view"])
        .arg(&trace)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(view.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));

    if !have("chromium", "the trace page in headless Chromium") {
        return;
    }
    let profile = dir.0.join("chromium-profile");
    let chromium = |extra: &[&str]| {
        let mut c = Command::new("chromium");
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()));
        c.output().unwrap()
    };
    let dom = chromium(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "the script did not run:\n{dom}"
    );
    assert!(
        dom.contains("data-lane=\"client\"") && dom.contains("data-lane=\"agent\""),
        "lanes"
    );
    assert!(
        dom.matches("class=\"msg c2a request\"").count() >= 4,
        "client requests drawn"
    );
    assert!(
        dom.contains("class=\"msg a2c request\""),
        "agent requests drawn"
    );
    assert!(
        dom.contains("class=\"msg c2a error\"") || dom.contains("class=\"msg a2c error\""),
        "error arrow"
    );
    assert!(
        dom.contains("class=\"pair error\""),
        "error pair highlighted"
    );
    assert!(
        dom.matches("class=\"pair\"").count() >= 5,
        "request/response pairs"
    );
    assert!(dom.contains("unknown mode"), "error text");
    assert!(
        dom.contains("data-session=\"builtin-1\""),
        "notifications grouped by session"
    );
    assert!(dom.contains("agent_message_chunk"), "notification kinds");
    assert!(dom.contains("data-state=\"ended\""), "session health");
    assert!(
        dom.contains("class=\"histogram\" data-method=\"session/prompt\""),
        "histograms"
    );
    assert!(dom.contains("class=\"rate c2a\""), "message-rate timeline");
    let shot = dir.0.join("page.png");
    let out = chromium(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1000,1400",
    ]);
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "screenshot of {} bytes",
        png.len()
    );
}

#[test]
fn a_truncated_or_foreign_trace_is_reported_by_line() {
    let dir = Scratch::new("trace-bad");
    let path = dir.0.join("bad.ndjson");
    std::fs::write(
        &path,
        "{\"ts\":1.0,\"dir\":\"client_to_agent\",\"seq\":0,\"line\":\"{}\"}\nhello world\n{\"ts\":2.0,\"dir\":\"agent_to",
    )
    .unwrap();
    let out = Command::new(acp())
        .args(["trace", "view"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2: not a trace record"), "{stderr}");
    assert!(
        stderr.contains("line 3: truncated (the file ends inside a record)"),
        "{stderr}"
    );
    let out = Command::new(acp())
        .args(["trace", "view", "/nonexistent.ndjson"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("acp trace view: cannot read /nonexistent.ndjson")
    );
}
