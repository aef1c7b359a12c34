//! The agent's output on its way to the router, one message at a time: read from a gateway
//! child's stdout through acp-rpc's bounded [`LineCodec`] (as a client over stdio reads an
//! agent), or taken whole from an agent served in process (its frames).
//!
//! A line that is not UTF-8 is skipped and the connection goes on. A message over the limit
//! (a line is not assembled) ends the connection ([`Conn::fail`]): the client's requests
//! waiting for an answer (the oversized message was likely one) are answered with an error
//! saying so, and the agent is ended, rather than a request left waiting forever. Both hold
//! the agent back while its client has not taken
//! [`Limits::max_buffered_bytes`](crate::Limits::max_buffered_bytes) of output
//! ([`Conn::room_for_more`]). An in-process agent's messages are acp-rpc's output, so
//! routing may trust their shape ([`Conn::route`]'s `trusted`).

use std::sync::Arc;

use acp_rpc::{Frame, LineCodec};
use futures_util::StreamExt;
use tokio::io::AsyncRead;
use tokio_util::codec::FramedRead;

use super::Conn;

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
            let frame = match frame.len() > max {
                true => Frame::Oversized { len: frame.len() },
                // The engine's output: text already, routed as it is, not copied.
                false => Frame::Line(frame),
            };
            if take(&conn, frame, true) && !conn.room_for_more().await {
                break;
            }
            if conn.closed.is_cancelled() {
                break;
            }
        }
    });
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

    use acp_rpc::transport::FramePort;

    use super::*;
    use crate::security::Limits;
    use crate::server::connection::tests::over_frames;

    /// A connection whose agent's messages the test sends by hand, holding `buffered` bytes
    /// before the agent is held back.
    fn connection(buffered: usize) -> (Arc<Conn>, FramePort) {
        over_frames(Limits {
            max_buffered_bytes: buffered,
            max_message_bytes: 256,
            max_output_stall: Duration::from_secs(5),
            ..Limits::default()
        })
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
        let (conn, agent) = connection(1 << 20);
        let generation = conn.main.attach();
        for method in ["a", "b", "c"] {
            agent.sender.send(note(method)).await.unwrap();
        }
        for method in ["a", "b", "c"] {
            assert_eq!(next(&conn, generation).await, note(method));
        }
    }

    /// A message over the limit ends the connection: the request waiting for an answer gets
    /// an error naming the limit, then the stream ends (what follows is not routed).
    #[tokio::test]
    async fn a_message_over_the_limit_answers_what_waits_with_an_error_and_ends_the_connection() {
        let (conn, agent) = connection(1 << 20);
        let generation = conn.main.attach();
        let request = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "x/y"});
        conn.forward_to_agent(request, None).await.unwrap();
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":"{}"}}"#,
            "y".repeat(300)
        );
        agent.sender.send(long).await.unwrap();
        let _ = agent.sender.send(note("after")).await;
        let answer: serde_json::Value =
            serde_json::from_str(&next(&conn, generation).await).unwrap();
        assert_eq!(answer["id"], 7);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("over this server's limit of 256"),
            "{message}"
        );
        assert!(
            conn.main.next(generation).await.is_none(),
            "the stream ends"
        );
        assert!(conn.closed.is_cancelled());
    }

    #[tokio::test]
    async fn the_agent_is_held_back_while_its_client_takes_nothing() {
        let line = note("tick");
        // Room for one message: the second fills it.
        let (conn, agent) = connection(line.len() + 1);
        let sent = tokio::spawn(async move {
            for _ in 0..300 {
                agent.sender.send(note("tick")).await.unwrap();
            }
            agent
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!sent.is_finished(), "held back: the pump stopped taking");
        let generation = conn.main.attach();
        for _ in 0..300 {
            assert_eq!(next(&conn, generation).await, line);
        }
        let _agent = sent.await.unwrap();
        assert!(!conn.closed.is_cancelled());
    }

    #[tokio::test]
    async fn the_end_of_the_agents_output_ends_the_connection() {
        let (conn, agent) = connection(1 << 20);
        drop(agent);
        tokio::time::timeout(Duration::from_secs(5), conn.closed.cancelled())
            .await
            .expect("closed");
    }
}
