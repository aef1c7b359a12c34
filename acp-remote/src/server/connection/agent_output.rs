//! The agent's output on its way to the router, one message at a time: read from a gateway
//! child's stdout through acp-rpc's bounded [`LineCodec`] (as a client over stdio reads an
//! agent), taken whole from an agent served in process on a memory pair (its frames), or
//! handed over by the writer of an agent served on frames itself ([`RoutedOutput`], with no
//! task and no channel between the agent's engine and the router).
//!
//! A line that is not UTF-8 is skipped and the connection goes on. A message over the limit
//! (a line is not assembled) ends the connection ([`Conn::fail`]): the client's requests
//! waiting for an answer (the oversized message was likely one) are answered with an error
//! saying so, and the agent is ended, rather than a request left waiting forever. Both hold
//! the agent back while its client has not taken
//! [`Limits::max_buffered_bytes`](crate::Limits::max_buffered_bytes) of output
//! ([`Conn::room_for_more`]). An in-process agent's messages are acp-rpc's output, so
//! routing may trust their shape ([`Conn::route`]'s `trusted`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, ready};

use acp_rpc::{Frame, LineCodec};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::io::AsyncRead;
use tokio_util::codec::FramedRead;

use super::Conn;
use super::agent::OutputSlot;

/// Reads a gateway child's stdout and routes each line, until the output ends, fails or the
/// connection closes; then the connection closes.
pub(crate) fn pump_from_pipe(conn: Arc<Conn>, output: Box<dyn AsyncRead + Send + Unpin>) {
    tokio::spawn(async move {
        let _closer = CloseOnDrop(conn.clone(), "the agent's output ended");
        let max = conn.limits.max_message_bytes;
        let mut lines = FramedRead::new(output, LineCodec::new(max));
        // One wait on the end for the whole loop: a wait made per line would register with
        // the token (a lock) and leave it again every time.
        let ended = conn.closed.cancelled();
        tokio::pin!(ended);
        loop {
            let frame = tokio::select! {
                l = lines.next() => l,
                () = &mut ended => None,
            };
            match frame {
                Some(Ok(frame)) => {
                    if take(&conn, frame, false) && !conn.room_for_more().await {
                        break;
                    }
                    if conn.closed.is_cancelled() {
                        break;
                    }
                }
                Some(Err(error)) => {
                    tracing::warn!(conn = %conn.id, %error, "agent output unreadable");
                    break;
                }
                None => break,
            }
        }
    });
}

/// Routes each message of an agent served on frames, in order, until its output ends or the
/// connection closes; then the connection closes. A message over the limit ends the
/// connection as an over-long line does; the agent is held back the same way.
pub(crate) fn pump_frames(conn: Arc<Conn>, mut frames: acp_rpc::transport::FrameReceiver) {
    tokio::spawn(async move {
        let _closer = CloseOnDrop(conn.clone(), "the agent's output ended");
        let max = conn.limits.max_message_bytes;
        let ended = conn.closed.cancelled();
        tokio::pin!(ended);
        loop {
            let frame = tokio::select! {
                f = frames.recv() => f,
                () = &mut ended => None,
            };
            let Some(frame) = frame else { break };
            if take(&conn, engine_frame(frame, max), true) && !conn.room_for_more().await {
                break;
            }
            if conn.closed.is_cancelled() {
                break;
            }
        }
    });
}

/// Where an in-process agent's engine hands its messages: straight to the router of the
/// connection it serves (once the connection is made, [`OutputSlot::attach`]), as
/// [`pump_frames`] does from a channel. The agent is held back while its client has not
/// taken [`Limits::max_buffered_bytes`](crate::Limits::max_buffered_bytes) of output; a
/// message over the limit ends the connection; the agent ending its output, or its
/// writer ending, closes the connection.
pub(crate) struct RoutedOutput {
    slot: Arc<OutputSlot>,
    /// The wait for the client to take some output, while the connection has no room.
    waiting: Option<Pin<Box<dyn Future<Output = bool> + Send>>>,
}

impl RoutedOutput {
    pub(crate) fn new(slot: Arc<OutputSlot>) -> Self {
        RoutedOutput {
            slot,
            waiting: None,
        }
    }

    /// The connection, `Pending` until it is set, an error once it is gone.
    fn poll_conn(&self, cx: &mut Context<'_>) -> Poll<io::Result<Arc<Conn>>> {
        let conn = match self.slot.conn.get() {
            Some(conn) => conn,
            None => {
                self.slot.waker.register(cx.waker());
                match self.slot.conn.get() {
                    Some(conn) => conn,
                    None => return Poll::Pending,
                }
            }
        };
        match conn.upgrade() {
            Some(conn) if !conn.closed.is_cancelled() => Poll::Ready(Ok(conn)),
            _ => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }
}

impl acp_rpc::transport::FrameSink for RoutedOutput {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let conn = ready!(self.poll_conn(cx))?;
        if self.waiting.is_none() {
            if conn.has_room() {
                return Poll::Ready(Ok(()));
            }
            self.waiting = Some(Box::pin(async move { conn.room_for_more().await }));
        }
        let waiting = self.waiting.as_mut().expect("set above");
        let room = ready!(waiting.as_mut().poll(cx));
        self.waiting = None;
        match room {
            true => Poll::Ready(Ok(())),
            false => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn send(&mut self, frame: Bytes) -> io::Result<()> {
        let conn = self
            .slot
            .conn
            .get()
            .and_then(Weak::upgrade)
            .ok_or(io::ErrorKind::BrokenPipe)?;
        take(
            &conn,
            engine_frame(frame, conn.limits.max_message_bytes),
            true,
        );
        Ok(())
    }

    fn poll_close(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.end();
        Poll::Ready(Ok(()))
    }
}

impl RoutedOutput {
    /// The agent's output has ended: so has the connection.
    fn end(&self) {
        if let Some(conn) = self.slot.conn.get().and_then(Weak::upgrade) {
            conn.close("the agent's output ended");
        }
    }
}

impl Drop for RoutedOutput {
    fn drop(&mut self) {
        self.end();
    }
}

/// A message an in-process agent's engine wrote, as the router takes it: over `max` bytes
/// it is refused whole; otherwise it is text already, routed as it is, not copied.
fn engine_frame(frame: Bytes, max: usize) -> Frame {
    match frame.len() > max {
        true => Frame::Oversized { len: frame.len() },
        false => Frame::Line(frame),
    }
}

/// Routes one frame of the agent's output; `true` when it was a line (routed).
fn take(conn: &Conn, frame: Frame, trusted: bool) -> bool {
    let max = conn.limits.max_message_bytes;
    match frame {
        // Checked UTF-8 already: routed as the codec's bytes, not copied.
        Frame::Line(line) => {
            conn.route(line, trusted);
            true
        }
        Frame::Oversized { len } => {
            tracing::warn!(conn = %conn.id, len, max, "agent wrote a line over the message limit; closing");
            conn.fail(&format!(
                "the agent wrote a message of {len} bytes, over this server's limit of {max} \
                 bytes; the connection is closed"
            ));
            false
        }
        Frame::InvalidUtf8 => {
            tracing::warn!(conn = %conn.id, "agent wrote a line that is not UTF-8; skipped");
            false
        }
    }
}

/// Ends the connection when a pump ends, however it ends (a panic included): a connection
/// never outlives either direction of its agent.
pub(crate) struct CloseOnDrop(pub(crate) Arc<Conn>, pub(crate) &'static str);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use acp_rpc::transport::{FramePort, FrameSink};

    use super::*;
    use crate::security::Limits;
    use crate::server::connection::tests::{over_frames, routed};

    /// How the agent's output reaches the router.
    #[derive(Clone, Copy, Debug)]
    enum Kind {
        /// Through a channel and [`pump_frames`].
        Pumped,
        /// Handed over by the agent's writer ([`RoutedOutput`]).
        Routed,
    }

    const KINDS: [Kind; 2] = [Kind::Pumped, Kind::Routed];

    /// The agent's side, driven by hand: what its engine would write.
    enum Agent {
        Pumped(FramePort),
        /// The output, and the agent's input (read by no engine, held open).
        Routed {
            output: RoutedOutput,
            _input: Option<acp_rpc::transport::FrameAdapter>,
        },
    }

    impl Agent {
        /// Writes one message as the agent's engine would: waiting while it is held back.
        async fn send(&mut self, text: String) -> Result<(), String> {
            match self {
                Agent::Pumped(port) => port.sender.send(text).await.map_err(|e| e.to_string()),
                Agent::Routed { output, .. } => {
                    std::future::poll_fn(|cx| output.poll_ready(cx))
                        .await
                        .map_err(|e| e.to_string())?;
                    output.send(Bytes::from(text)).map_err(|e| e.to_string())
                }
            }
        }
    }

    /// A connection whose agent's messages the test sends by hand, holding `buffered` bytes
    /// before the agent is held back.
    fn connection(kind: Kind, buffered: usize) -> (Arc<Conn>, Agent) {
        let limits = Limits {
            max_buffered_bytes: buffered,
            max_message_bytes: 256,
            max_output_stall: Duration::from_secs(5),
            ..Limits::default()
        };
        match kind {
            Kind::Pumped => {
                let (conn, port) = over_frames(limits);
                (conn, Agent::Pumped(port))
            }
            Kind::Routed => {
                let (conn, output, input) = routed(limits);
                let agent = Agent::Routed {
                    output,
                    _input: Some(input),
                };
                (conn, agent)
            }
        }
    }

    fn note(method: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{}}}}"#)
    }

    async fn next(conn: &Conn, generation: u64) -> String {
        let line = conn.main.next(generation).await.expect("a message");
        String::from_utf8(line.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn the_agents_messages_are_routed_whole_and_in_order() {
        for kind in KINDS {
            let (conn, mut agent) = connection(kind, 1 << 20);
            let generation = conn.main.attach();
            for method in ["a", "b", "c"] {
                agent.send(note(method)).await.unwrap();
            }
            for method in ["a", "b", "c"] {
                assert_eq!(next(&conn, generation).await, note(method), "{kind:?}");
            }
        }
    }

    /// A message over the limit ends the connection: the request waiting for an answer gets
    /// an error naming the limit, then the stream ends (what follows is not routed).
    #[tokio::test]
    async fn a_message_over_the_limit_answers_what_waits_with_an_error_and_ends_the_connection() {
        for kind in KINDS {
            let (conn, mut agent) = connection(kind, 1 << 20);
            let generation = conn.main.attach();
            let request = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "x/y"});
            conn.forward_to_agent(request, None).await.unwrap();
            let long = format!(
                r#"{{"jsonrpc":"2.0","id":7,"result":"{}"}}"#,
                "y".repeat(300)
            );
            agent.send(long).await.unwrap();
            let after = agent.send(note("after")).await;
            if let Kind::Routed = kind {
                assert!(after.is_err(), "the agent learns its output has ended");
            }
            let answer: serde_json::Value =
                serde_json::from_str(&next(&conn, generation).await).unwrap();
            assert_eq!(answer["id"], 7, "{kind:?}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("over this server's limit of 256"),
                "{kind:?}: {message}"
            );
            assert!(
                conn.main.next(generation).await.is_none(),
                "{kind:?}: the stream ends"
            );
            assert!(conn.closed.is_cancelled(), "{kind:?}");
        }
    }

    #[tokio::test]
    async fn the_agent_is_held_back_while_its_client_takes_nothing() {
        for kind in KINDS {
            let line = note("tick");
            // Room for one message: the second fills it.
            let (conn, mut agent) = connection(kind, line.len() + 1);
            let sent = tokio::spawn(async move {
                for _ in 0..300 {
                    agent.send(note("tick")).await.unwrap();
                }
                agent
            });
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert!(
                !sent.is_finished(),
                "{kind:?}: held back: the router stopped taking"
            );
            let generation = conn.main.attach();
            for _ in 0..300 {
                assert_eq!(next(&conn, generation).await, line, "{kind:?}");
            }
            let _agent = sent.await.unwrap();
            assert!(!conn.closed.is_cancelled(), "{kind:?}");
        }
    }

    #[tokio::test]
    async fn the_end_of_the_agents_output_ends_the_connection() {
        for kind in KINDS {
            let (conn, agent) = connection(kind, 1 << 20);
            drop(agent);
            tokio::time::timeout(Duration::from_secs(5), conn.closed.cancelled())
                .await
                .unwrap_or_else(|_| panic!("{kind:?}: closed"));
        }
    }

    /// An agent that writes before its connection is set waits for it, then is routed.
    #[tokio::test]
    async fn output_written_before_the_connection_is_set_waits_for_it() {
        let slot = Arc::new(OutputSlot::default());
        let mut agent = Agent::Routed {
            output: RoutedOutput::new(slot.clone()),
            _input: None,
        };
        let sent = tokio::spawn(async move {
            agent.send(note("early")).await.unwrap();
            agent
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!sent.is_finished(), "no connection to route to yet");
        let (conn, _unused, _input) = routed(Limits::default());
        slot.attach(&conn);
        let generation = conn.main.attach();
        let _agent = tokio::time::timeout(Duration::from_secs(5), sent)
            .await
            .expect("routed once the connection is set")
            .unwrap();
        assert_eq!(next(&conn, generation).await, note("early"));
    }
}
