//! A permission question never reaches the application before the `session/update` that
//! announced its tool call, through acp-client alone: a real child agent (this binary, run
//! with `ACP_ORDERING_AGENT=1`) sends 1,000 `tool_call` updates, each followed at once (in
//! the same write) by a `session/request_permission` about it, and the client checks at
//! every question that it has already seen the call. acp-rpc orders each request of the
//! agent after the notifications read before it; without that, the requests run while the
//! updates wait for the notification worker and the questions overtake their calls.
//!
//! A harness-less test (`harness = false`): the agent writes raw JSON lines on stdout,
//! which the test harness's own output would corrupt.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use acp_client::process::{AgentCommand, AgentProcess};
use acp_client::{Client, Error, async_trait};
use acp_types::v1::*;
use serde_json::{Value, json};

const CALLS: usize = 1_000;

/// Records the tool calls it was shown, and every question about one it had not seen.
#[derive(Default)]
struct Recorder {
    seen: Mutex<HashSet<String>>,
    updates: AtomicU64,
    questions: AtomicU64,
    early: Mutex<Vec<String>>,
}

#[async_trait]
impl Client for Recorder {
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        if let SessionUpdate::ToolCall(call) = n.update {
            // A notification handler that takes a moment now and then (as one that draws on
            // a screen does), so the worker falls behind the reader.
            if self
                .updates
                .fetch_add(1, Ordering::SeqCst)
                .is_multiple_of(50)
            {
                tokio::time::sleep(Duration::from_millis(2)).await;
            } else {
                tokio::task::yield_now().await;
            }
            self.seen
                .lock()
                .unwrap()
                .insert(call.tool_call_id.0.to_string());
        }
        Ok(())
    }

    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        self.questions.fetch_add(1, Ordering::SeqCst);
        let id = p.tool_call.tool_call_id.0.to_string();
        if !self.seen.lock().unwrap().contains(&id) {
            self.early.lock().unwrap().push(id);
        }
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::Cancelled,
        ))
    }
}

/// The agent: raw JSON lines on stdio. On `session/prompt` it writes each tool call and its
/// question together, without waiting for answers, then ends the turn once every question
/// is answered.
fn agent() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut lines = stdin.lock().lines();
    let mut answered = 0;
    let mut prompt_id = None;
    while let Some(Ok(line)) = lines.next() {
        let message: Value = serde_json::from_str(&line).expect("the client sends JSON");
        let reply =
            |result: Value| json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
        match message["method"].as_str() {
            Some("initialize") => {
                let answer = reply(json!({"protocolVersion": 1, "agentCapabilities": {}}));
                writeln!(out, "{answer}").unwrap();
            }
            Some("session/new") => {
                writeln!(out, "{}", reply(json!({"sessionId": "s1"}))).unwrap();
            }
            Some("session/prompt") => {
                prompt_id = Some(message["id"].clone());
                let mut burst = String::new();
                for i in 0..CALLS {
                    let call = format!("call-{i}");
                    let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                        "sessionId": "s1",
                        "update": {"sessionUpdate": "tool_call", "toolCallId": call,
                                   "title": "edit", "kind": "edit", "status": "pending"}}});
                    let question = json!({"jsonrpc": "2.0", "id": i, "method": "session/request_permission", "params": {
                        "sessionId": "s1",
                        "toolCall": {"toolCallId": call},
                        "options": [{"optionId": "once", "name": "Allow", "kind": "allow_once"}]}});
                    burst.push_str(&format!("{update}\n{question}\n"));
                    if burst.len() > 16 * 1024 {
                        out.write_all(burst.as_bytes()).unwrap();
                        burst.clear();
                    }
                }
                out.write_all(burst.as_bytes()).unwrap();
            }
            Some(_) => {}
            // An answer to one of our questions.
            None => {
                answered += 1;
                if answered == CALLS {
                    let id = prompt_id.take().expect("a prompt runs");
                    let done =
                        json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}});
                    writeln!(out, "{done}").unwrap();
                }
            }
        }
        out.flush().unwrap();
    }
}

fn main() {
    if std::env::var_os("ACP_ORDERING_AGENT").is_some() {
        agent();
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if args.iter().any(|a| a == "--list")
        || (!filters.is_empty()
            && !filters
                .iter()
                .any(|f| "permission_after_update".contains(f.as_str())))
    {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
    println!(
        "permission_after_update: every question came after its tool call (1 passed, 0 failed)"
    );
}

async fn run() {
    let command =
        AgentCommand::new(std::env::current_exe().unwrap()).env("ACP_ORDERING_AGENT", "1");
    let mut process = AgentProcess::spawn(&command).unwrap();
    let (stdout, stdin) = process.take_stdio().unwrap();
    let client = std::sync::Arc::new(Recorder::default());
    let conn = acp_client::Builder::shared(client.clone()).io(stdout, stdin);
    let agent = conn.agent().clone();
    let turn = async {
        agent.initialize(InitializeRequest::new(1)).await.unwrap();
        let session = agent
            .new_session(NewSessionRequest::new("/", Vec::<McpServer>::new()))
            .await
            .unwrap();
        agent
            .prompt(PromptRequest::new(
                session.session_id,
                [ContentBlock::text("go")],
            ))
            .await
            .unwrap()
    };
    let done = tokio::time::timeout(Duration::from_secs(120), turn)
        .await
        .expect("the turn ends");
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    conn.close();
    let _ = process.shutdown(Duration::from_secs(2)).await;
    assert_eq!(client.questions.load(Ordering::SeqCst), CALLS as u64);
    assert_eq!(client.seen.lock().unwrap().len(), CALLS);
    let early = client.early.lock().unwrap();
    assert!(
        early.is_empty(),
        "{} of {CALLS} questions reached the client before their tool call, first {:?}",
        early.len(),
        early.iter().take(5).collect::<Vec<_>>()
    );
}
