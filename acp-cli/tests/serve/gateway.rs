//! One host: the built-in agent and a gateway to `acp agent` over both profiles, metrics and
//! the dashboard, the conformance kit through the gateway, and a session store.

use super::*;

#[test]
fn serve_the_builtin_agent_and_chat_over_both_profiles() {
    serve_and_chat("serve-builtin", &[]);
}

#[test]
fn serve_an_agent_command_as_a_gateway_and_chat_over_both_profiles() {
    let acp = acp();
    serve_and_chat("serve-gateway", &[acp.to_str().unwrap(), "agent"]);
}

/// `acp serve --metrics --dashboard` in front of a gateway: each chat starts an `acp agent`
/// process, `/metrics` counts them and their turns (the series as Prometheus text), and the
/// dashboard's events show both connections' turns, their ids told apart.
#[test]
fn serve_with_metrics_counts_the_gateway_agents_and_turns() {
    let scratch = Scratch::new("serve-metrics");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let acp = acp();
    let agent = [acp.to_str().unwrap(), "agent"];
    let server = Serve::start_with(&scratch, &token_file, &["--metrics", "--dashboard"], &agent);
    // The connection ends with the chat: its close frame over WebSocket, its goodbye
    // `DELETE` over HTTP (which the chat waits to get out before it exits), and the agent
    // process with it.
    for profile in [&["--ws"][..], &[][..]] {
        let out = chat(&scratch, &server.url, profile, Some("s3cret-token"));
        check_turn(&out, "ws");
    }
    let (status, _) = http_get(&server.url, "/readyz", "");
    assert!(status.contains(" 200 "), "{status}");
    let (status, _) = http_get(&server.url, "/metrics", "wrong");
    assert!(status.contains(" 401 "), "{status}");
    let value = |text: &str, series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map(|v| v.trim().parse::<f64>().unwrap())
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let (status, text) = http_get(&server.url, "/metrics", "s3cret-token");
        assert!(status.contains(" 200 "), "{status}");
        // The agents end with their connections (reaped in the background), well before the
        // idle timeout (10 minutes).
        if value(&text, "acp_agent_processes") == Some(0.0) || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(value(&text, "acp_agent_processes"), Some(0.0), "{text}");
    assert_eq!(
        value(&text, "acp_agent_processes_started_total"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(value(&text, "acp_connections_total"), Some(2.0), "{text}");
    let prompts = "acp_requests_total{method=\"session/prompt\",outcome=\"ok\"}";
    assert_eq!(value(&text, prompts), Some(2.0), "{text}");

    // The dashboard: behind the token, which a browser gives in the query.
    let (status, _) = http_get(&server.url, "/", "wrong");
    assert!(status.contains(" 401 "), "{status}");
    let (status, _) = http_get(&server.url, "/events?token=wrong", "");
    assert!(status.contains(" 401 "), "{status}");
    let (status, page) = http_get(&server.url, "/?token=s3cret-token", "");
    assert!(status.contains(" 200 "), "{status}");
    assert!(page.contains("<title>acp live: acp serve"), "{page}");
    assert!(page.contains("EventSource('events'+location.search)"));
    let data = first_event(&server.url, "/events?token=s3cret-token");
    assert_eq!(data["requests"]["session/prompt"]["requests"], 2, "{data}");
    assert_eq!(data["requests"]["session/prompt"]["errors"], 0, "{data}");
    assert!(data["live"]["total"].as_u64().unwrap() >= 10, "{data}");
    let ids: Vec<&str> = data["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["method"] == "session/prompt" && m["kind"] == "request")
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.len() == 2 && ids[0].starts_with("\"1:") && ids[1].starts_with("\"2:"),
        "prompt ids by connection: {ids:?}"
    );
    assert_eq!(data["problems"], serde_json::json!([]), "{data}");
}

/// `acp check --url URL [--ws] --token-file F` with a time limit.
fn check(scratch: &Scratch, url: &str, extra: &[&str], token_file: &str) -> Output {
    let child = Command::new(acp())
        .args([
            "check",
            "--timing-misses-ok",
            "--url",
            url,
            "--token-file",
            token_file,
        ])
        .args(extra)
        .current_dir(&scratch.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    support::output_within(
        child,
        Duration::from_secs(120),
        &format!("acp check --url {url} {extra:?}"),
    )
}

/// The conformance kit through the gateway gives the verdicts it gives over stdio: no check
/// fails over either profile (malformed lines, unknown sessions and cancellation included).
#[test]
fn check_grades_a_gateway_agent_over_both_profiles_as_over_stdio() {
    let scratch = Scratch::new("serve-check");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let acp = acp();
    // acp check's workspace is a fresh directory in the temporary directory, and its MCP
    // capability check names an http server on the discard port, which the host must allow.
    let tmp = std::env::temp_dir();
    let root = [
        "--root",
        tmp.to_str().unwrap(),
        "--mcp-allow-url",
        "http://127.0.0.1:9/",
    ];
    let agent = [acp.to_str().unwrap(), "agent"];
    let server = Serve::start_with(&scratch, &token_file, &root, &agent);
    let file = token_file.to_str().unwrap();
    for extra in [&[][..], &["--ws"][..]] {
        let out = check(&scratch, &server.url, extra, file);
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{extra:?}: {report}");
        assert!(report.contains(" 0 failed"), "{extra:?}: {report}");
    }
}

/// `acp serve --store DIR`: a session made over one connection is listed over another
/// (`acp sessions --url`) and loaded, with its history, over either profile
/// (`acp chat --url --load`: `session/load` with `Acp-Session-Id`, its stream opened after);
/// `/metrics` counts the store's operations (no session id in a label).
#[test]
fn serve_with_a_store_lists_and_loads_sessions_over_both_profiles() {
    let scratch = Scratch::new("serve-store");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let store = scratch.0.join("sessions");
    let server = Serve::start_with(
        &scratch,
        &token_file,
        &["--store", store.to_str().unwrap(), "--metrics"],
        &[],
    );
    let token = Some("s3cret-token");
    check_turn(&chat(&scratch, &server.url, &[], token), "first turn");
    let listed = acp_run(&scratch, &["sessions", "--url", &server.url], token);
    let listing = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.status.success(), "{listing}");
    let id = listing
        .split_whitespace()
        .next()
        .expect("one session listed")
        .to_owned();
    assert!(listing.contains("hello remote"), "{listing}");
    for profile in [&[][..], &["--ws"][..]] {
        let mut extra = profile.to_vec();
        extra.extend_from_slice(&["--load", &id]);
        let out = chat(&scratch, &server.url, &extra, token);
        check_turn(&out, "loaded");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("earlier turn"), "{profile:?}: {stdout}");
    }
    let missing = chat(&scratch, &server.url, &["--load", "no-such-session"], token);
    assert!(!missing.status.success());
    let (status, text) = http_get(&server.url, "/metrics", "s3cret-token");
    assert!(status.contains(" 200 "), "{status}");
    let count = |series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
    };
    let ops = "acp_store_operations_total";
    assert!(
        count(&format!("{ops}{{operation=\"create\",outcome=\"ok\"}}")) == 1.0,
        "{text}"
    );
    assert!(
        count(&format!("{ops}{{operation=\"append\",outcome=\"ok\"}}")) >= 3.0,
        "{text}"
    );
    assert!(
        count(&format!("{ops}{{operation=\"list\",outcome=\"ok\"}}")) >= 1.0,
        "{text}"
    );
    // Its `meta` answered "no such session": a lookup that worked (errors are counted by
    // their kind, acp-remote's metered_store tests).
    assert!(
        count(&format!("{ops}{{operation=\"meta\",outcome=\"ok\"}}")) >= 3.0,
        "{text}"
    );
    assert!(
        !text.contains("no-such-session"),
        "no session id as a label"
    );
}
