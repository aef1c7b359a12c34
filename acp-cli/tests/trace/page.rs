//! The recorded trace viewed: the summary and the page (in headless Chromium), and trace
//! files that are cut or foreign.

use super::*;

/// Our client and our agent through the proxy, then the trace viewed as text and as a page.
/// Pinned to v1, whose agent-to-client requests (`terminal/create`) the summary must show;
/// `a_v2_run_is_viewed_as_v2` views a v2 run.
#[test]
fn our_client_and_agent_through_the_proxy_and_the_page_in_chromium() {
    let dir = Scratch::new("trace-chat");
    let acp = acp();
    let trace = dir.0.join("chat.ndjson");
    let out = Command::new(&acp)
        .args([
            "chat",
            "--protocol",
            "1",
            "--prompt",
            "traced turn",
            "--yes",
            "--",
        ])
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
