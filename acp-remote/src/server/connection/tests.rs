//! Tests of the connection: the engine's output as the router's fast path reads it, and the
//! bound on requests in flight.

use super::agent::{Output, Running};
use super::*;

/// A connection (not a WebSocket, no observer) whose agent is the returned port: the
/// agent's input and output, for a test to drive by hand.
pub(crate) fn over_frames(limits: Limits) -> (Arc<Conn>, acp_rpc::transport::FramePort) {
    let (ours, theirs) = acp_rpc::transport::memory_pair(256);
    let acp_rpc::transport::FramePort { sender, receiver } = ours.into_port();
    let conn = start(Output::Frames(receiver), sender, limits);
    (conn, theirs.into_port())
}

/// Starts a connection (not a WebSocket, no observer) of identity `t` on the agent's
/// `output` and `input`.
fn start(output: Output, input: acp_rpc::transport::FrameSender, limits: Limits) -> Arc<Conn> {
    let agent = Running {
        output,
        input: Input::Frames(input),
        guard: None,
    };
    let observers = Observers {
        metrics: None,
        other: None,
    };
    let identity = Identity("t".into());
    Conn::start("c".into(), identity, false, agent, limits.into(), observers)
}

/// A connection (not a WebSocket, no observer) whose agent's output is the returned
/// [`RoutedOutput`], for a test to write to as the agent's engine would; the agent's input
/// goes to the returned adapter, which no engine reads (the test holds it).
pub(crate) fn routed(
    limits: Limits,
) -> (
    Arc<Conn>,
    super::RoutedOutput,
    acp_rpc::transport::FrameAdapter,
) {
    let slot = Arc::new(super::OutputSlot::default());
    let output = super::RoutedOutput::new(slot.clone());
    let (input, sender) = acp_rpc::transport::FrameAdapter::writing(Closing, 64);
    let conn = start(Output::Routed(slot), sender, limits);
    (conn, output, input)
}

/// A sink that takes nothing (the adapter it is in is never run by an engine).
struct Closing;

impl acp_rpc::transport::FrameSink for Closing {
    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
    }

    fn send(&mut self, _frame: Bytes) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

/// A connection whose agent reads everything and answers nothing.
fn silent() -> (Arc<Conn>, acp_rpc::transport::FramePort) {
    // No message rate limit here (tests/bad_input/ covers it): the tests send
    // thousands of messages at once.
    over_frames(Limits {
        max_messages_per_second: u32::MAX,
        ..Limits::default()
    })
}

#[tokio::test]
async fn the_engine_writes_notifications_as_the_fast_path_expects() {
    let (ours, mut theirs) = acp_rpc::transport::frame_adapter(8);
    let engine = acp_rpc::Connection::over(ours, (), acp_rpc::Config::default());
    let update = serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "x"}});
    engine
        .peer()
        .notify("session/update", &update)
        .await
        .unwrap();
    let frame = theirs.receiver.recv().await.unwrap();
    let text = std::str::from_utf8(&frame).unwrap();
    let (method, _) = acp_rpc::envelope::plain_notification(text).expect(text);
    assert_eq!(method, "session/update");
    let read: Value = serde_json::from_str(text).unwrap();
    assert_eq!(read["method"], "session/update");
    engine.close();
}

#[tokio::test]
async fn requests_in_flight_are_bounded() {
    let (conn, mut agent) = silent();
    // The agent side drains what it is sent, never answering.
    tokio::spawn(async move { while agent.receiver.recv().await.is_some() {} });
    let generation = conn.main.attach();
    for id in 0..MAX_PENDING + 1 {
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "x/y"});
        conn.forward_to_agent(request, None).await.unwrap();
    }
    let refused = conn.main.next(generation).await.unwrap();
    let refused: Value = serde_json::from_slice(&refused).unwrap();
    assert_eq!(refused["id"], MAX_PENDING);
    assert_eq!(refused["error"]["code"], LIMIT_CODE);
    assert_eq!(lock(&conn.routing).pending.len(), MAX_PENDING);
    conn.close("test");
}
