//! The `echo_agent` example as a real child process over stdio: the full flow with
//! permission, file read and terminal served by a raw acp-rpc client.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::Error;
use acp_rpc::{Config, Connection, Handler, NotificationContext, Params, RawValue, RequestContext};
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct DemoClient {
    log: Arc<Mutex<Vec<Value>>>,
}

#[acp_rpc::async_trait]
impl Handler for DemoClient {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let p: Value = params.parse()?;
        self.log
            .lock()
            .unwrap()
            .push(json!({"request": method, "params": p}));
        let answer = match method {
            "session/request_permission" => {
                json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
            }
            "fs/read_text_file" => {
                json!({"content": format!("contents of {}", p["path"].as_str().unwrap_or_default())})
            }
            "terminal/create" => json!({"terminalId": "t-1"}),
            "terminal/wait_for_exit" => json!({"exitCode": 0}),
            "terminal/output" => json!({"output": "hello from a terminal\n", "truncated": false}),
            "terminal/release" | "terminal/kill" => json!({}),
            _ => return Err(Error::method_not_found(method)),
        };
        acp_rpc::to_raw(&answer)
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        let p: Value = params.parse()?;
        self.log
            .lock()
            .unwrap()
            .push(json!({"notification": method, "params": p}));
        Ok(())
    }
}

fn example_path() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().unwrap().parent().unwrap();
    debug
        .join("examples")
        .join(format!("echo_agent{}", std::env::consts::EXE_SUFFIX))
}

#[tokio::test]
async fn the_echo_agent_example_runs_the_whole_flow_over_stdio() {
    let path = example_path();
    assert!(
        path.exists(),
        "cargo test builds examples: {path:?} is missing"
    );
    let mut child = tokio::process::Command::new(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = DemoClient::default();
    let conn = Connection::new(
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
        client.clone(),
        Config::default().with_default_timeout(Some(Duration::from_secs(20))),
    );
    let peer = conn.peer();
    let init: Value = peer
        .request(
            "initialize",
            &json!({"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": true}, "terminal": true}}),
        )
        .await
        .unwrap();
    assert_eq!(init["agentInfo"]["name"], "echo-agent");
    let new: Value = peer
        .request("session/new", &json!({"cwd": "/work", "mcpServers": []}))
        .await
        .unwrap();
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(new["modes"]["currentModeId"], "ask");
    let _: Value = peer
        .request(
            "session/set_mode",
            &json!({"sessionId": sid, "modeId": "code"}),
        )
        .await
        .unwrap();
    let done: Value = peer
        .request(
            "session/prompt",
            &json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello world"}]}),
        )
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    let log = client.log.lock().unwrap().clone();
    let requests: Vec<&str> = log.iter().filter_map(|m| m["request"].as_str()).collect();
    assert_eq!(
        requests,
        [
            "session/request_permission",
            "fs/read_text_file",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let updates: Vec<&Value> = log
        .iter()
        .filter(|m| m["notification"] == "session/update")
        .map(|m| &m["params"]["update"])
        .collect();
    let kinds: Vec<&str> = updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    for kind in [
        "available_commands_update",
        "current_mode_update",
        "agent_thought_chunk",
        "plan",
        "tool_call",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let reply: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(reply, "hello world ");
    let completed: Vec<&&Value> = updates
        .iter()
        .filter(|u| u["status"] == "completed")
        .collect();
    assert_eq!(completed.len(), 2);
    assert_eq!(
        completed[0]["content"][0]["content"]["text"],
        "contents of /work/hello.txt"
    );
    conn.close();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}
