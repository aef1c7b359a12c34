//! The built-in agent's tests.

use super::turn::describe_prompt;
use super::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// The built-in agent served over an in-memory pipe, spoken to in JSON lines.
struct Wire {
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
    next: i64,
    /// The text of the agent's message chunks so far.
    said: String,
    /// The option picked when the agent asks for permission (`allow` or `reject`).
    permit: &'static str,
    /// How many times the agent asked for permission.
    asked: usize,
    /// The statuses of the tool call updates so far.
    statuses: Vec<String>,
}

impl Wire {
    async fn start() -> Wire {
        let (client, agent) = tokio::io::duplex(1 << 20);
        let (agent_read, agent_write) = tokio::io::split(agent);
        acp_agent::Builder::new(BuiltinAgent::default()).io(agent_read, agent_write);
        Self::over(client).await
    }

    /// The built-in agent served with an in-memory session store (it loads and resumes).
    async fn start_with_store() -> Wire {
        let (client, agent) = tokio::io::duplex(1 << 20);
        let (agent_read, agent_write) = tokio::io::split(agent);
        let store = acp_agent::store::MemoryStore::new();
        let config = acp_agent::Config::default();
        acp_agent::Builder::new(BuiltinAgent::with_store())
            .store(store)
            .config(config)
            .io(agent_read, agent_write);
        Self::over(client).await
    }

    async fn over(client: DuplexStream) -> Wire {
        let (read, out) = tokio::io::split(client);
        let mut wire = Wire {
            lines: BufReader::new(read).lines(),
            out,
            next: 0,
            said: String::new(),
            permit: "allow",
            asked: 0,
            statuses: Vec::new(),
        };
        wire.call("initialize", json!({"protocolVersion": 1})).await;
        wire
    }

    async fn send(&mut self, message: Value) {
        self.out
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The whole answer (`result` or `error`) to a request; notifications are skipped.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let request =
            json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        self.send(request).await;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("the agent answers");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "session/request_permission" {
                self.asked += 1;
                let outcome = json!({"outcome": "selected", "optionId": self.permit});
                let answer =
                    json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}});
                self.send(answer).await;
                continue;
            }
            let update = &message["params"]["update"];
            if let Some(status) = update["status"].as_str() {
                self.statuses.push(status.to_owned());
            }
            if update["sessionUpdate"] == "agent_message_chunk" {
                self.said
                    .push_str(update["content"]["text"].as_str().unwrap_or_default());
            }
            if message["id"] == json!(self.next) && message.get("method").is_none() {
                return message;
            }
        }
    }

    async fn new_session(&mut self, cwd: &str) -> Value {
        let answer = self
            .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        answer["result"].clone()
    }

    /// Every page of `session/list` with `params` (plus the cursor): the ids, and how many
    /// pages there were.
    async fn list_all(&mut self, params: Value) -> (Vec<String>, usize) {
        let mut ids = Vec::new();
        let mut pages = 0;
        let mut cursor = Value::Null;
        loop {
            let mut params = params.clone();
            if !cursor.is_null() {
                params["cursor"] = cursor.clone();
            }
            let page = self.call("session/list", params).await;
            let page = &page["result"];
            pages += 1;
            for s in page["sessions"].as_array().expect("a list") {
                ids.push(s["sessionId"].as_str().unwrap().to_owned());
            }
            cursor = page["nextCursor"].clone();
            if cursor.is_null() {
                return (ids, pages);
            }
        }
    }
}

/// Issue 32: `session/list` returned every session, ignoring `cwd` and the cursor. The
/// spec: only sessions with a matching `cwd`, an empty array when none match; pages
/// follow `nextCursor`.
#[tokio::test]
async fn session_list_filters_by_cwd_and_pages_with_a_cursor() {
    let mut wire = Wire::start().await;
    let mut in_a = Vec::new();
    for i in 0..LIST_PAGE + 5 {
        in_a.push(wire.new_session("/a").await["sessionId"].clone());
        if i % 20 == 0 {
            wire.new_session("/b").await;
        }
    }
    let (a, pages) = wire.list_all(json!({"cwd": "/a"})).await;
    assert_eq!(pages, 2);
    assert_eq!(a.len(), LIST_PAGE + 5);
    let in_a: Vec<String> = in_a
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(a, in_a, "oldest first, each once");
    let (b, pages) = wire.list_all(json!({"cwd": "/b"})).await;
    assert_eq!((b.len(), pages), (3, 1));
    let none = wire.call("session/list", json!({"cwd": "/nowhere"})).await;
    assert_eq!(none["result"]["sessions"], json!([]), "{none}");
    assert!(none["result"].get("nextCursor").is_none(), "{none}");
    let (all, pages) = wire.list_all(json!({})).await;
    assert_eq!((all.len(), pages), (LIST_PAGE + 8, 2));
    let bad = wire.call("session/list", json!({"cursor": "nope"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

/// Issue 32: the answer to `session/new` carried gemini-cli's `models` at its root, where
/// the spec forbids custom fields; the models are a config option of category `model`.
#[tokio::test]
async fn models_are_offered_as_a_config_option_not_at_the_root() {
    let mut wire = Wire::start().await;
    let new = wire.new_session("/a").await;
    assert!(new.get("models").is_none(), "{new}");
    let options = new["configOptions"].as_array().expect("config options");
    let model = options
        .iter()
        .find(|o| o["category"] == "model")
        .expect("a model option");
    assert_eq!(model["currentValue"], "demo-fast", "{model}");
}

#[test]
fn titles_are_the_first_line_of_bounded_length() {
    assert_eq!(
        title_from("\n  fix the build \nand more").as_deref(),
        Some("fix the build")
    );
    assert_eq!(title_from(" \n\t").as_deref(), None);
    assert_eq!(
        title_from(&"é".repeat(100)).map(|t| t.chars().count()),
        Some(TITLE_MAX)
    );
}

#[test]
fn attachments_are_described_by_kind() {
    let prompt = vec![
        ContentBlock::text(" hi "),
        proto::embedded_text("file:///a.txt".into(), "1\n2\n".into()),
        proto::resource_link("file:///b.bin".into(), "b.bin".into(), Some(3)),
    ];
    let (text, attachments) = describe_prompt(&prompt);
    assert_eq!(text, "hi");
    assert_eq!(
        attachments,
        ["file:///a.txt (2 lines, embedded)", "file:///b.bin (link)"]
    );
}

/// acp-agent's `mcp_test_server` example, built into this target directory when missing
/// (`cargo test --workspace` builds it, as acp-cli turns on acp-agent's `mcp`).
fn mcp_test_server() -> String {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().unwrap().parent().unwrap();
    let server = debug.join("examples/mcp_test_server");
    if server.exists() {
        return server.to_string_lossy().into_owned();
    }
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .args([
            "-p",
            "acp-agent",
            "--features",
            "mcp",
            "--example",
            "mcp_test_server",
        ])
        .env("CARGO_TARGET_DIR", debug.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "building the MCP test server failed");
    debug
        .join("examples/mcp_test_server")
        .to_string_lossy()
        .into_owned()
}

/// `session/new` answers before the session's MCP servers are up (one of them takes 1.5 s
/// to start); the first `/mcp` waits for all of them. Prints both times.
#[tokio::test]
async fn session_new_does_not_wait_for_its_mcp_servers() {
    let server = mcp_test_server();
    let stdio = |name: &str, args: &[&str]| json!({"name": name, "command": server, "args": args, "env": []});
    let mut wire = Wire::start().await;
    let started = std::time::Instant::now();
    let created = wire
        .call(
            "session/new",
            json!({"cwd": "/tmp", "mcpServers": [stdio("a", &[]), stdio("b", &[]), stdio("slow", &["--slow-start", "1500"])]}),
        )
        .await;
    let answered = started.elapsed();
    let id = created["result"]["sessionId"].clone();
    assert!(id.is_string(), "{created}");
    assert!(
        answered < Duration::from_millis(1000),
        "session/new took {answered:?}"
    );
    let turn = wire
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "/mcp"}]}),
        )
        .await;
    let listed = started.elapsed();
    assert_eq!(turn["result"]["stopReason"], "end_turn", "{turn}");
    assert!(
        listed >= Duration::from_millis(1500),
        "/mcp did not wait: {listed:?}"
    );
    eprintln!(
        "figure: session/new answered in {answered:?}; /mcp listed 3 servers (one starting in 1.5 s) {listed:?} after session/new was sent"
    );
}

/// `session/load` and `session/resume` connect the servers they are given, as `session/new`
/// does: `/mcp` lists them after each.
#[tokio::test]
async fn session_load_and_resume_connect_their_mcp_servers() {
    let server = mcp_test_server();
    let stdio = |name: &str| json!({"name": name, "command": server, "args": [], "env": []});
    let mut wire = Wire::start_with_store().await;
    let id = wire.new_session("/tmp").await["sessionId"].clone();
    for (method, name) in [("session/load", "loaded"), ("session/resume", "resumed")] {
        let params = json!({"sessionId": id, "cwd": "/tmp", "mcpServers": [stdio(name)]});
        let answer = wire.call(method, params).await;
        assert!(answer.get("result").is_some(), "{method}: {answer}");
        wire.said.clear();
        let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": "/mcp"}]});
        let turn = wire.call("session/prompt", prompt).await;
        assert_eq!(turn["result"]["stopReason"], "end_turn", "{turn}");
        assert!(
            wire.said.contains(&format!("- {name}: echo")),
            "{method}: {}",
            wire.said
        );
    }
}

/// `/mcp SERVER TOOL` asks permission before calling, in mode `code` too; a rejection is a
/// failed tool call and the turn still ends.
#[tokio::test]
async fn mcp_tool_calls_ask_permission_in_every_mode() {
    let server = mcp_test_server();
    let mut wire = Wire::start().await;
    let servers = json!([{"name": "t", "command": server, "args": [], "env": []}]);
    let created = wire
        .call("session/new", json!({"cwd": "/tmp", "mcpServers": servers}))
        .await;
    let id = created["result"]["sessionId"].clone();
    let call = json!({"sessionId": id, "prompt": [{"type": "text", "text": "/mcp t echo {\"text\": \"hello\"}"}]});
    for (mode, permit) in [("ask", "allow"), ("code", "allow"), ("code", "reject")] {
        let set = json!({"sessionId": id, "modeId": mode});
        assert!(
            wire.call("session/set_mode", set)
                .await
                .get("result")
                .is_some()
        );
        let asked = wire.asked;
        wire.permit = permit;
        let turn = wire.call("session/prompt", call.clone()).await;
        assert_eq!(turn["result"]["stopReason"], "end_turn", "{turn}");
        assert_eq!(wire.asked, asked + 1, "mode {mode}: asked once");
        let want = if permit == "allow" {
            "completed"
        } else {
            "failed"
        };
        assert_eq!(
            wire.statuses.last().map(String::as_str),
            Some(want),
            "{mode} {permit}"
        );
    }
}
