//! The message-flow log (`acp_rpc::flow`): a prompt turn between our client and our agent,
//! captured with a `tracing` subscriber, shows every message at DEBUG with its direction,
//! method, id and session id, each request's start and end at INFO with its duration (in a
//! span carrying the same fields), and a failed request at ERROR.

use std::sync::{Arc, Mutex};

use acp_agent::{Agent, AgentContext, PromptContext};
use acp_client::{Client, async_trait};
use acp_rpc::Error;
use acp_types::v1::*;

struct Talker;

#[async_trait]
impl Agent for Talker {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1))
    }
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("flow-1"))
    }
    async fn prompt(&self, _: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        cx.session().message_chunk("hi").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
    async fn set_session_mode(
        &self,
        _: SetSessionModeRequest,
        _: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        Err(Error::internal_error("the mode store is down"))
    }
}

struct Quiet;
impl Client for Quiet {}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Capture {
        self.clone()
    }
}

#[tokio::test]
async fn every_message_is_logged_with_its_session_and_each_request_with_its_duration() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(capture.clone())
        .with_ansi(false)
        .without_time()
        .with_env_filter("acp_rpc::flow=debug")
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let _agent = acp_agent::Builder::new(Talker).io(ar, aw);
    let conn = acp_client::Builder::new(Quiet).io(br, bw);
    let agent = conn.agent();
    agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    let session = agent
        .new_session(NewSessionRequest::new("/w", []))
        .await
        .unwrap()
        .session_id;
    agent
        .prompt(PromptRequest::new(
            session.clone(),
            [ContentBlock::text("go")],
        ))
        .await
        .unwrap();
    let failed = agent
        .set_session_mode(SetSessionModeRequest::new(session.clone(), "fast"))
        .await;
    assert!(failed.is_err());
    conn.close();
    drop(_default);

    let log = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let find = |parts: &[&str]| -> Vec<&str> {
        lines
            .iter()
            .copied()
            .filter(|l| parts.iter().all(|p| l.contains(p)))
            .collect()
    };
    // The client's prompt, as it leaves: DEBUG, with its id and session.
    let sent =
        "sent direction=\"outgoing\" method=\"session/prompt\" message_id=3 session_id=\"flow-1\"";
    assert_eq!(find(&["DEBUG", sent]).len(), 1, "{log}");
    // The same request arriving at the agent.
    let received = "received direction=\"incoming\" method=\"session/prompt\" message_id=3 session_id=\"flow-1\"";
    assert_eq!(find(&["DEBUG", received]).len(), 1, "{log}");
    // The update the agent sent, on both sides.
    assert_eq!(
        find(&[
            "DEBUG",
            "method=\"session/update\"",
            "session_id=\"flow-1\""
        ])
        .len(),
        2,
        "{log}"
    );
    // Each side's flow of the prompt: started and completed at INFO, in a span with the
    // same fields, the end with its duration.
    for span in ["outgoing_request{", "request{direction=\"incoming\""] {
        let started = find(&[
            "INFO",
            span,
            "method=\"session/prompt\"",
            "session_id=\"flow-1\"",
            "request started",
        ]);
        assert_eq!(started.len(), 1, "{span}: {log}");
        let completed = find(&[
            "INFO",
            span,
            "method=\"session/prompt\"",
            "session_id=\"flow-1\"",
            "request completed",
            "ok=true",
        ]);
        assert_eq!(completed.len(), 1, "{span}: {log}");
        let duration = completed[0]
            .split("duration_ms=")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|ms| ms.parse::<f64>().ok())
            .expect(completed[0]);
        assert!(duration >= 0.0, "{}", completed[0]);
    }
    // The failed request is an ERROR on both sides, naming the error.
    let failed = find(&[
        "ERROR",
        "session/set_mode",
        "request failed",
        "the mode store is down",
    ]);
    assert_eq!(failed.len(), 2, "{log}");
    // Only the flow target was asked for, and nothing else is in it.
    assert!(lines.iter().all(|l| l.contains("acp_rpc::flow")), "{log}");
}
