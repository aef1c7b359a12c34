//! acp-agent's MCP connector against real MCP servers we did not write the protocol side of:
//! the `mcp_test_server` example (rmcp's own server side) started as child processes over
//! stdio. Covers listing and calling, start failures, crashes and restarts, timeouts,
//! cancellation, the output bound, several servers at once, and that no process is left.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_agent::CancellationToken;
use acp_agent::mcp::{McpConfig, McpConnector, McpError, mcp_capabilities};
use acp_agent::types::{EnvVariable, McpServer, McpServerHttp, McpServerSse, McpServerStdio};
use serde_json::{Value, json};

fn server_path() -> String {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().unwrap().parent().unwrap();
    let path = debug
        .join("examples")
        .join(format!("mcp_test_server{}", std::env::consts::EXE_SUFFIX));
    path.to_string_lossy().into_owned()
}

fn stdio(name: &str, args: &[&str]) -> McpServer {
    McpServer::Stdio(McpServerStdio::new(
        name,
        server_path(),
        args.iter().copied(),
        [],
    ))
}

fn args(value: Value) -> Option<acp_agent::mcp::JsonObject> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn text_of(result: &acp_agent::mcp::CallToolResult) -> String {
    let v = serde_json::to_value(&result.content).unwrap();
    v[0]["text"].as_str().unwrap_or_default().to_owned()
}

/// A fresh temporary directory for marker and pid files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-mcp-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The pids written by `--pid-file`, once the server has written them.
async fn read_pids(path: &std::path::Path) -> Vec<i32> {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path) {
            let pids: Vec<i32> = text.lines().filter_map(|l| l.parse().ok()).collect();
            if !pids.is_empty() {
                return pids;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid file at {}", path.display());
}

/// Whether a process still runs (a zombie counts as gone only once `reaped_too` is false).
fn alive(pid: i32, zombie_counts: bool) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            zombie_counts || !state.starts_with('Z')
        }
    }
}

async fn wait_gone(pid: i32, zombie_counts: bool) -> bool {
    for _ in 0..300 {
        if !alive(pid, zombie_counts) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn tools_are_listed_namespaced_and_called_with_arguments_and_env() {
    let mut spec = McpServerStdio::new("tester", server_path(), Vec::<String>::new(), []);
    spec.env = vec![EnvVariable::new("ACP_MCP_TEST_VALUE", "from the client")];
    let connector = McpConnector::start(&[McpServer::Stdio(spec)], McpConfig::default());
    let listed = connector.tools().await;
    assert_eq!(listed.len(), 1);
    let (server, tools) = &listed[0];
    assert_eq!(server, "tester");
    let tools = tools.as_ref().unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.qualified, "tester/echo");
    assert_eq!(echo.input_schema["properties"]["text"]["type"], "string");
    assert_eq!(
        connector.resolve("tester/echo"),
        Some(("tester".into(), "echo"))
    );

    let cancel = CancellationToken::new();
    let r = connector
        .call_tool("tester", "echo", args(json!({"text": "hi"})), &cancel)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "hi");
    let r = connector
        .call_tool("tester", "add", args(json!({"a": 2, "b": 3})), &cancel)
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 5.0})));
    let r = connector
        .call_tool(
            "tester",
            "env",
            args(json!({"name": "ACP_MCP_TEST_VALUE"})),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r), "from the client");
    let r = connector
        .call_tool("tester", "fail", None, &cancel)
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let e = connector
        .call_tool("tester", "nope", None, &cancel)
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::UnknownTool { .. }), "{e:?}");
    let e = connector
        .call_tool("other", "echo", None, &cancel)
        .await
        .unwrap_err();
    assert_eq!(e, McpError::UnknownServer("other".into()));
    connector.close().await;
}

#[tokio::test]
async fn stdio_servers_do_not_inherit_the_token_or_the_store() {
    // SAFETY: no other test of this binary reads or writes these variables; std's own
    // environment lock orders this with the spawns of other tests.
    unsafe {
        std::env::set_var("ACP_TOKEN", "the host's secret");
        std::env::set_var("ACP_STORE", "postgres://user:pw@db/acp");
        std::env::set_var("ACP_MCP_TEST_INHERITED", "kept");
    }
    let mut spec = McpServerStdio::new("tester", server_path(), Vec::<String>::new(), []);
    spec.env = vec![EnvVariable::new("ACP_STORE", "the client's own")];
    let connector = McpConnector::start(&[McpServer::Stdio(spec)], McpConfig::default());
    let cancel = CancellationToken::new();
    let mut seen = Vec::new();
    for name in ["ACP_TOKEN", "ACP_STORE", "ACP_MCP_TEST_INHERITED"] {
        let r = connector
            .call_tool("tester", "env", args(json!({"name": name})), &cancel)
            .await
            .unwrap();
        seen.push(text_of(&r));
    }
    assert_eq!(seen, ["", "the client's own", "kept"]);
    connector.close().await;
}

#[tokio::test]
async fn results_become_acp_content_text_image_resource_and_structured() {
    let connector = McpConnector::start(&[stdio("t", &[])], McpConfig::default());
    let cancel = CancellationToken::new();
    let mut shapes = Vec::new();
    for tool in ["echo", "image", "resource"] {
        let r = connector
            .call_tool("t", tool, args(json!({"text": "x"})), &cancel)
            .await
            .unwrap();
        let content = acp_agent::mcp::result_content(&r);
        let v = serde_json::to_value(&content).unwrap();
        shapes.push((v[0]["type"].clone(), v[0]["content"]["type"].clone()));
    }
    assert_eq!(
        shapes,
        [
            (json!("content"), json!("text")),
            (json!("content"), json!("image")),
            (json!("content"), json!("resource")),
        ]
    );
    connector.close().await;
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let missing = McpServer::Stdio(McpServerStdio::new(
        "ghost",
        "/nonexistent/mcp-server",
        Vec::<String>::new(),
        [],
    ));
    let connector = McpConnector::start(&[missing], McpConfig::default());
    let (_, tools) = connector.tools().await.remove(0);
    let e = tools.unwrap_err();
    assert!(
        matches!(&e, McpError::Spawn { command, .. } if command == "/nonexistent/mcp-server"),
        "{e:?}"
    );
    assert!(e.to_string().contains("cannot start"), "{e}");
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_fails_within_the_bound_quoting_its_stderr() {
    let config = McpConfig::default().start_timeout(Duration::from_millis(700));
    let connector = McpConnector::start(&[stdio("mute", &["--silent"])], config);
    let started = Instant::now();
    let (_, tools) = connector.tools().await.remove(0);
    let e = tools.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e, McpError::StartTimeout { .. }), "{e:?}");
    assert!(e.to_string().contains("mcp_test_server: starting"), "{e}");
    connector.close().await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_fails_that_call_and_is_restarted() {
    let dir = temp_dir("crash");
    let marker = dir.join("crashed");
    let config = McpConfig::default().restart_backoff(Duration::from_millis(10));
    let server = stdio("fragile", &["--crash-once", marker.to_str().unwrap()]);
    let connector = McpConnector::start(&[server], config);
    let cancel = CancellationToken::new();
    let e = connector
        .call_tool("fragile", "crash", None, &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Exited { stderr, .. } if stderr.contains("crashing on purpose")),
        "{e:?}"
    );
    let restarted = Instant::now();
    let r = connector
        .call_tool("fragile", "crash", None, &cancel)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "survived");
    eprintln!(
        "figure: restart after a crash answered in {:?}",
        restarted.elapsed()
    );
    connector.close().await;
}

#[tokio::test]
async fn restarts_are_bounded_then_the_server_is_given_up_with_a_typed_error() {
    let config = McpConfig::default()
        .restart_backoff(Duration::from_millis(5))
        .max_restarts(2);
    let connector = McpConnector::start(&[stdio("doomed", &[])], config);
    let cancel = CancellationToken::new();
    let mut errors = Vec::new();
    for _ in 0..4 {
        errors.push(
            connector
                .call_tool("doomed", "crash", None, &cancel)
                .await
                .unwrap_err(),
        );
    }
    // Three processes crashed (the first and two restarts); then the slot stays failed.
    assert!(
        errors.iter().all(|e| matches!(e, McpError::Exited { .. })),
        "{errors:?}"
    );
    let (_, tools) = connector.tools().await.remove(0);
    assert!(matches!(tools, Err(McpError::Exited { .. })));
    connector.close().await;
}

#[tokio::test]
async fn calls_are_bounded_in_time_and_size_and_cancellable() {
    let config = McpConfig::default()
        .call_timeout(Duration::from_millis(300))
        .max_output_bytes(64 * 1024);
    let connector = McpConnector::start(&[stdio("t", &[])], config);
    let cancel = CancellationToken::new();
    let e = connector
        .call_tool("t", "sleep", args(json!({"ms": 5000})), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::CallTimeout { .. }), "{e:?}");

    let e = connector
        .call_tool("t", "flood", args(json!({"bytes": 200_000})), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(e, McpError::OutputTooLarge { size, .. } if size > 200_000),
        "{e:?}"
    );

    let token = CancellationToken::new();
    let fire = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        fire.cancel();
    });
    let started = Instant::now();
    let e = connector
        .call_tool("t", "sleep", args(json!({"ms": 5000})), &token)
        .await
        .unwrap_err();
    assert_eq!(e, McpError::Cancelled);
    assert!(started.elapsed() < Duration::from_millis(250));
    // The server still serves after all that.
    let r = connector
        .call_tool("t", "echo", args(json!({"text": "ok"})), &cancel)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "ok");
    connector.close().await;
}

#[tokio::test]
async fn three_servers_start_concurrently_and_a_slow_one_holds_up_nobody() {
    let servers = [
        stdio("a", &[]),
        stdio("slow", &["--slow-start", "1500"]),
        stdio("a", &[]),
    ];
    let started = Instant::now();
    let connector = McpConnector::start(&servers, McpConfig::default());
    let start_returned = started.elapsed();
    assert!(
        start_returned < Duration::from_millis(100),
        "{start_returned:?}"
    );
    assert_eq!(connector.servers(), ["a", "slow", "a~2"]);
    let cancel = CancellationToken::new();
    connector
        .call_tool("a~2", "echo", None, &cancel)
        .await
        .unwrap();
    let fast = started.elapsed();
    assert!(
        fast < Duration::from_millis(1400),
        "a fast server waited for the slow one: {fast:?}"
    );
    let listed = connector.tools().await;
    let all = started.elapsed();
    assert!(
        listed
            .iter()
            .all(|(_, t)| t.as_ref().is_ok_and(|t| t.len() == 11))
    );
    assert!(all < Duration::from_millis(3000), "{all:?}");
    connector.close().await;
}

#[tokio::test]
async fn a_tool_list_change_is_followed() {
    let connector = McpConnector::start(&[stdio("t", &[])], McpConfig::default());
    let names = async || -> Vec<String> {
        let tools = connector.tools().await.remove(0).1.unwrap();
        tools.into_iter().map(|t| t.name).collect()
    };
    assert!(!names().await.contains(&"extra".to_owned()));
    let cancel = CancellationToken::new();
    connector
        .call_tool("t", "grow", None, &cancel)
        .await
        .unwrap();
    // notifications/tools/list_changed makes the connector list the tools again.
    let started = Instant::now();
    while !names().await.contains(&"extra".to_owned()) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never refreshed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = connector
        .call_tool("t", "extra", None, &cancel)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "extra ran");
    connector.close().await;
}

#[tokio::test]
async fn sse_servers_and_http_ones_without_the_feature_are_refused_as_not_advertised() {
    let caps = mcp_capabilities();
    assert!(!caps.sse);
    assert_eq!(caps.http, cfg!(feature = "mcp-http"));
    let mut servers = vec![McpServer::Sse(McpServerSse::new(
        "old",
        "http://127.0.0.1:9/sse",
        [],
    ))];
    let mut expected = vec!["sse"];
    if !caps.http {
        servers.push(McpServer::Http(McpServerHttp::new(
            "web",
            "http://127.0.0.1:9/mcp",
            [],
        )));
        expected.push("http");
    }
    let connector = McpConnector::start(&servers, McpConfig::default());
    let listed = connector.tools().await;
    let transports: Vec<_> = listed
        .into_iter()
        .map(|(_, t)| match t {
            Err(McpError::Unsupported { transport, .. }) => transport,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(transports, expected);
}

#[tokio::test]
async fn close_kills_and_reaps_every_server_and_its_process_group() {
    let dir = temp_dir("close");
    let (p1, p2) = (dir.join("one"), dir.join("two"));
    let servers = [
        stdio("one", &["--grandchild", "--pid-file", p1.to_str().unwrap()]),
        stdio("two", &["--silent", "--pid-file", p2.to_str().unwrap()]),
    ];
    let connector = McpConnector::start(&servers, McpConfig::default());
    let one = read_pids(&p1).await;
    let two = read_pids(&p2).await;
    assert_eq!(one.len(), 2, "server and grandchild");
    assert!(one.iter().chain(&two).all(|&p| alive(p, false)));
    connector.close().await;
    // Our direct children are reaped by close itself (no zombie left either).
    assert!(!alive(one[0], true) && !alive(two[0], true));
    // The grandchild was killed with its group (init reaps it).
    assert!(
        wait_gone(one[1], false).await,
        "grandchild {} survived",
        one[1]
    );
}

#[tokio::test]
async fn dropping_the_connector_kills_the_servers() {
    let dir = temp_dir("drop");
    let p = dir.join("pid");
    let connector = McpConnector::start(
        &[stdio(
            "one",
            &["--grandchild", "--pid-file", p.to_str().unwrap()],
        )],
        McpConfig::default(),
    );
    let pids = read_pids(&p).await;
    drop(connector);
    for pid in pids {
        assert!(wait_gone(pid, false).await, "{pid} survived the drop");
    }
}

#[path = "mcp_connector/by_hand.rs"]
mod by_hand;
