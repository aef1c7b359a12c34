//! `SupervisedAgent`: a real agent process that exits in the middle of a turn is respawned,
//! negotiated with again, and its session resumed (or loaded, without showing the replay
//! twice); the prompt in flight fails with an error naming the restart; retries follow the
//! policy's table, and a manual policy waits for `reconnect`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::negotiate::NegotiateOptions;
use acp_client::process::AgentCommand;
use acp_client::restart::{
    Backoff, FailureKind, RestartPolicy, RetryRule, SessionRestore, SupervisedAgent,
    SupervisorStatus,
};
use acp_client::{Client, Dialect, Error, ErrorCode};
use acp_types::v1::*;

/// Records the text of every update it is shown.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

#[acp_client::async_trait]
impl Client for Recorder {
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        if let SessionUpdate::AgentMessageChunk(chunk) = &n.update
            && let ContentBlock::Text(text) = &chunk.content
        {
            self.0.lock().unwrap().push(text.text.clone());
        }
        Ok(())
    }
}

/// An agent whose first run dies in the middle of its first prompt; later runs advertise
/// `$CAPS` and answer resume, load (replaying one chunk) and prompts. Every run appends a
/// line to `$DIR/runs`.
const AGENT: &str = r#"
echo run >> "$DIR/runs"
runs=$(wc -l < "$DIR/runs")
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*)
      if [ "$runs" -gt 1 ] && [ -n "$FAIL_AFTER_FIRST" ]; then exit 9; fi
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":%s}}\n' "$id" "$CAPS" ;;
    *'"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s-1"}}\n' "$id" ;;
    *'"session/resume"'*'"s-1"'*) echo resumed >> "$DIR/log"; printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *'"session/load"'*'"s-1"'*)
      echo loaded >> "$DIR/log"
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"replayed"}}}}\n'
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *'"session/prompt"'*)
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"run %s"}}}}\n' "$runs"
      if [ "$runs" -eq 1 ]; then sleep 0.2; echo "dying mid-turn" >&2; exit 3; fi
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
  esac
done
"#;

struct Scratch(std::path::PathBuf);
impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("acp-restart-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.0.join(file)).unwrap_or_default()
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn command(dir: &Scratch, caps: &str) -> AgentCommand {
    AgentCommand::new("sh")
        .arg("-c")
        .arg(AGENT)
        .env("DIR", &dir.0)
        .env("CAPS", caps)
}

fn options() -> NegotiateOptions {
    NegotiateOptions::new(InitializeRequest::new(ProtocolVersion::V1))
        .with_dialects([Dialect::V1])
        .with_timeout(Duration::from_secs(5))
}

fn fast(policy: RestartPolicy) -> RestartPolicy {
    RestartPolicy {
        timeout: RetryRule {
            retries: 3,
            backoff: Backoff::Exponential {
                first: Duration::from_millis(10),
            },
        },
        ..policy
    }
}

async fn started(
    dir: &Scratch,
    caps: &str,
    policy: RestartPolicy,
) -> (SupervisedAgent<Recorder>, Recorder, SessionId) {
    let recorder = Recorder::default();
    let agent = SupervisedAgent::start(command(dir, caps), recorder.clone(), options(), policy)
        .await
        .expect("the agent starts");
    let session = agent
        .new_session(NewSessionRequest::new("/tmp", []))
        .await
        .unwrap()
        .session_id;
    (agent, recorder, session)
}

fn prompt(session: &SessionId) -> PromptRequest {
    PromptRequest::new(session.clone(), [ContentBlock::text("go")])
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("no hang")
}

#[tokio::test]
async fn an_agent_dying_mid_turn_is_restarted_and_the_session_resumed() {
    let dir = Scratch::new("resume");
    let caps = r#"{"sessionCapabilities":{"resume":{}},"loadSession":true}"#;
    let (agent, recorder, session) = started(&dir, caps, fast(RestartPolicy::default())).await;
    let error = within(agent.prompt(prompt(&session))).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::CONNECTION_CLOSED);
    assert!(
        error.message.contains("restarted (restart 1)")
            && error.message.contains("session was resumed")
            && error.message.contains("not retried"),
        "{}",
        error.message
    );
    let data = error.data.unwrap();
    assert_eq!(data["restart"]["restarted"], true);
    assert_eq!(data["restart"]["session"], "resumed");
    assert_eq!(data["restart"]["sessionId"], "s-1");
    assert_eq!(agent.status(), SupervisorStatus::Running { restarts: 1 });
    assert_eq!(
        agent.last_restore(),
        vec![(session.clone(), SessionRestore::Resumed)]
    );
    // Resume, not load, when both are advertised; the prompt itself was not re-sent.
    assert_eq!(dir.read("log"), "resumed\n");
    assert_eq!(dir.read("runs").lines().count(), 2);
    // The same session id goes on working with the new process.
    let response = within(agent.prompt(prompt(&session))).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(*recorder.0.lock().unwrap(), ["run 1", "run 2"]);
    agent.shutdown(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn without_resume_the_session_is_loaded_and_its_replay_not_shown_again() {
    let dir = Scratch::new("load");
    let (agent, recorder, session) = started(
        &dir,
        r#"{"loadSession":true}"#,
        fast(RestartPolicy::default()),
    )
    .await;
    let error = within(agent.prompt(prompt(&session))).await.unwrap_err();
    assert!(
        error.message.contains("session was loaded"),
        "{}",
        error.message
    );
    assert_eq!(dir.read("log"), "loaded\n");
    let response = within(agent.prompt(prompt(&session))).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    // "replayed" went to the muted session: the application saw each chunk once.
    assert_eq!(*recorder.0.lock().unwrap(), ["run 1", "run 2"]);
    agent.shutdown(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn an_agent_that_can_neither_resume_nor_load_loses_the_session_clearly() {
    let dir = Scratch::new("lost");
    let (agent, _, session) = started(&dir, "{}", fast(RestartPolicy::default())).await;
    let error = within(agent.prompt(prompt(&session))).await.unwrap_err();
    assert!(
        error.message.contains(
            "session was lost (the restarted agent can neither resume nor load sessions)"
        ),
        "{}",
        error.message
    );
    assert!(matches!(
        agent.last_restore().as_slice(),
        [(_, SessionRestore::Lost(_))]
    ));
    agent.shutdown(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn an_agent_that_keeps_dying_is_retried_per_the_table_then_reported_failed() {
    let dir = Scratch::new("fail");
    let recorder = Recorder::default();
    let agent = SupervisedAgent::start(
        command(&dir, "{}").env("FAIL_AFTER_FIRST", "1"),
        recorder,
        options(),
        fast(RestartPolicy::default()),
    )
    .await
    .unwrap();
    let session = agent
        .new_session(NewSessionRequest::new("/tmp", []))
        .await
        .unwrap()
        .session_id;
    let error = within(agent.prompt(prompt(&session))).await.unwrap_err();
    assert!(
        error.message.contains("restarting it failed"),
        "{}",
        error.message
    );
    assert!(matches!(agent.status(), SupervisorStatus::Failed { .. }));
    // The first run, then the first restart attempt and its 3 retries (unreachable agent).
    assert_eq!(dir.read("runs").lines().count(), 1 + 1 + 3);
    agent.shutdown(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn a_manual_policy_waits_for_reconnect() {
    let dir = Scratch::new("manual");
    let caps = r#"{"sessionCapabilities":{"resume":{}}}"#;
    let (agent, _, session) = started(&dir, caps, fast(RestartPolicy::manual())).await;
    let error = within(agent.prompt(prompt(&session))).await.unwrap_err();
    assert!(
        error.message.contains("manual restart policy"),
        "{}",
        error.message
    );
    let mut status = agent.watch_status();
    within(status.wait_for(|s| matches!(s, SupervisorStatus::Restarting { .. })))
        .await
        .unwrap();
    assert_eq!(
        dir.read("runs").lines().count(),
        1,
        "nothing respawned by itself"
    );
    within(agent.reconnect()).await.unwrap();
    assert_eq!(agent.status(), SupervisorStatus::Running { restarts: 1 });
    let response = within(agent.prompt(prompt(&session))).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    agent.shutdown(Duration::from_secs(2)).await;
}

#[test]
fn the_default_table_is_the_seeds() {
    let policy = RestartPolicy::default();
    assert!(policy.automatic);
    assert_eq!(policy.rule(FailureKind::Timeout).retries, 3);
    assert_eq!(
        policy.rule(FailureKind::Timeout).backoff.delay(3),
        Duration::from_millis(800)
    );
    assert_eq!(
        policy.rule(FailureKind::Server),
        RetryRule {
            retries: 2,
            backoff: Backoff::Immediate
        }
    );
    assert_eq!(policy.rule(FailureKind::Authentication).retries, 0);
    assert_eq!(policy.rule(FailureKind::Protocol).retries, 0);
    assert_eq!(
        FailureKind::of(&Error::new(ErrorCode::AUTH_REQUIRED, "x")),
        FailureKind::Authentication
    );
    assert_eq!(
        FailureKind::of(&Error::new(ErrorCode::INVALID_PARAMS, "x")),
        FailureKind::Protocol
    );
    assert_eq!(
        FailureKind::of(&Error::new(ErrorCode::INTERNAL_ERROR, "x")),
        FailureKind::Server
    );
    assert!(!RestartPolicy::manual().automatic);
}
