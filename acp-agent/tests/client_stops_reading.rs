//! An agent whose client floods it with requests and never reads the answers (a real child
//! process, `sh`, on real pipes) ends the connection with the write-stall error instead of
//! waiting forever, so the agent process can exit.

use std::process::Stdio;
use std::time::Duration;

use acp_agent::types::{InitializeRequest, InitializeResponse};
use acp_agent::{Agent, AgentContext, Config, Error};
use acp_rpc::CloseReason;
use tokio::process::Command;

struct Idle;

#[acp_agent::async_trait]
impl Agent for Idle {
    async fn initialize(
        &self,
        params: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(params.protocol_version))
    }
}

#[tokio::test]
async fn a_client_that_never_reads_is_cut_off_by_the_write_stall_timeout() {
    let stall = Duration::from_millis(300);
    // 100,000 `initialize` requests (bounded), each answered, none read.
    let request =
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("yes '{request}' | head -n 100000; exec sleep 30"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("sh runs");
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let conn = acp_agent::Builder::new(Idle)
        .config(Config::default().with_write_stall_timeout(Some(stall)))
        .io(stdout, stdin);
    let reason = tokio::time::timeout(Duration::from_secs(20), conn.closed())
        .await
        .expect("the agent's connection ends by itself");
    assert_eq!(reason, CloseReason::WriteStalled(stall));
    let _ = child.kill().await;
}
