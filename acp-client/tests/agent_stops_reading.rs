//! A client whose agent (a real child process) floods it with requests and never reads the
//! answers ends the connection with the write-stall error, failing its pending calls with
//! that error, instead of waiting forever: the demo that hung for 180 s now exits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::{Client, Config, ErrorCode};
use acp_rpc::CloseReason;
use acp_types::v1::InitializeRequest;

struct Quiet;

#[acp_client::async_trait]
impl Client for Quiet {}

#[tokio::test]
async fn an_agent_that_never_reads_fails_pending_calls_with_the_stall_named() {
    let stall = Duration::from_millis(300);
    // 100,000 permission questions (bounded, every one answered -32601 by this client), and
    // then the agent sleeps without reading a byte.
    let question = r#"{"jsonrpc":"2.0","id":1,"method":"_flood/question","params":{}}"#;
    let command = AgentCommand::new("sh")
        .arg("-c")
        .arg(format!("yes '{question}' | head -n 100000; exec sleep 30"));
    let mut process = AgentProcess::spawn(&command).expect("sh runs");
    let (stdout, stdin) = process.take_stdio().unwrap();
    let conn = acp_client::Builder::shared(Arc::new(Quiet))
        .config(Config::default().with_write_stall_timeout(Some(stall)))
        .io(stdout, stdin);
    let started = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        conn.agent().initialize(InitializeRequest::new(1)),
    )
    .await
    .expect("the pending call ends");
    let error = answer.expect_err("the agent never answers");
    assert_eq!(error.code, ErrorCode::CONNECTION_CLOSED, "{error:?}");
    assert!(
        error.message.contains("stopped reading"),
        "{}",
        error.message
    );
    assert_eq!(conn.closed().await, CloseReason::WriteStalled(stall));
    eprintln!("ended after {:?}", started.elapsed());
    let _ = process.shutdown(Duration::from_secs(1)).await;
}
