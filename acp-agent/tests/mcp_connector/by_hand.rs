//! The connector's tests that do not run in the plain test run: the figures of the notes
//! (run by hand) and the official reference server from the interop cache (CI runs it after
//! `cargo xtask interop`).

use super::*;

/// Figures for the notes (run by hand, release or debug):
/// `cargo build -p acp-agent --features mcp --example mcp_test_server && cargo test -p acp-agent --features mcp --test mcp_connector -- --ignored --nocapture figures`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "figures, run by hand"]
async fn figures_start_round_trip_and_restart() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    const CALLS: u32 = 500;

    let servers = [stdio("a", &[]), stdio("b", &[]), stdio("c", &[])];
    let started = Instant::now();
    let connector = McpConnector::start(&servers, McpConfig::default());
    let start_returned = started.elapsed();
    let listed = connector.tools().await;
    let all_listed = started.elapsed();
    assert!(listed.iter().all(|(_, t)| t.is_ok()));
    eprintln!(
        "figure: McpConnector::start returned in {start_returned:?}; 3 stdio servers' tools listed after {all_listed:?}"
    );

    let cancel = CancellationToken::new();
    let a = args(json!({"text": "ping"}));
    let t = Instant::now();
    for _ in 0..CALLS {
        connector
            .call_tool("a", "echo", a.clone(), &cancel)
            .await
            .unwrap();
    }
    let through = t.elapsed() / CALLS;

    let mut cmd = tokio::process::Command::new(server_path());
    cmd.kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let direct = ().serve(transport).await.unwrap();
    let t = Instant::now();
    for _ in 0..CALLS {
        let mut p = CallToolRequestParams::new("echo");
        p.arguments = a.clone();
        direct.peer().call_tool(p).await.unwrap();
    }
    let plain = t.elapsed() / CALLS;
    eprintln!(
        "figure: echo round trip through the connector {through:?}, direct rmcp client {plain:?} (mean of {CALLS})"
    );
    let _ = direct.cancel().await;

    let dir = temp_dir("figures");
    let marker = dir.join("crashed");
    let config = McpConfig::default().restart_backoff(Duration::from_millis(100));
    let fragile = McpConnector::start(
        &[stdio("f", &["--crash-once", marker.to_str().unwrap()])],
        config,
    );
    let _ = fragile
        .call_tool("f", "crash", None, &cancel)
        .await
        .unwrap_err();
    let t = Instant::now();
    fragile.call_tool("f", "echo", None, &cancel).await.unwrap();
    eprintln!(
        "figure: a crashed server answered again {:?} after its failed call (the 100 ms backoff runs from the crash)",
        t.elapsed()
    );
    fragile.close().await;
    connector.close().await;
}

/// The interop cache where `cargo xtask interop` installs the npm packages (the same rule as
/// interop/src/cache.rs).
fn interop_npm() -> PathBuf {
    let cache = std::env::var_os("ACP_INTEROP_CACHE")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(std::env::temp_dir)
                .join("acp-rs-interop")
        });
    cache.join("npm")
}

/// The official TypeScript SDK's reference server, `@modelcontextprotocol/server-everything`
/// over stdio, from the interop cache: tools listed, called with arguments, text, image and
/// structured results. Ignored in the plain test run (CI installs the cache afterwards, with
/// `cargo xtask interop`, then runs it: .ci/run); skips with the reason when the cache lacks
/// it, and fails instead under `CI=true`.
#[tokio::test]
#[ignore = "needs the interop npm cache: cargo xtask interop"]
async fn the_reference_server_everything_is_listed_and_called() {
    let script =
        interop_npm().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.is_file() {
        let msg = format!("{} missing: run `cargo xtask interop`", script.display());
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg} (CI installs it before this test: .ci/run)");
        }
        eprintln!("\n!!! SKIPPED: {msg} !!!\n");
        return;
    }
    let server = McpServer::Stdio(McpServerStdio::new(
        "everything",
        "node",
        [script.to_string_lossy().into_owned(), "stdio".into()],
        [],
    ));
    let connector = McpConnector::start(&[server], McpConfig::default());
    let (_, tools) = connector.tools().await.remove(0);
    let tools = tools.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for tool in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
    ] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    let cancel = CancellationToken::new();
    let r = connector
        .call_tool(
            "everything",
            "echo",
            args(json!({"message": "hi"})),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r), "Echo: hi");
    let r = connector
        .call_tool(
            "everything",
            "get-sum",
            args(json!({"a": 2, "b": 40})),
            &cancel,
        )
        .await
        .unwrap();
    assert!(text_of(&r).contains("42"), "{r:?}");
    let r = connector
        .call_tool("everything", "get-tiny-image", None, &cancel)
        .await
        .unwrap();
    let content = serde_json::to_value(acp_agent::mcp::result_content(&r)).unwrap();
    assert!(
        content
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["content"]["type"] == "image"),
        "{content}"
    );
    let r = connector
        .call_tool(
            "everything",
            "get-structured-content",
            args(json!({"location": "Chicago"})),
            &cancel,
        )
        .await
        .unwrap();
    assert!(
        r.structured_content
            .as_ref()
            .is_some_and(|s| s["temperature"].is_number()),
        "{r:?}"
    );
    connector.close().await;
}
