//! The agent's output on its way to the router, one line per message: read from a gateway
//! child's stdout, or written straight into the router by an agent served in process.
//!
//! Both go through acp-rpc's bounded [`LineCodec`], as a client over stdio reads an agent: a
//! line that is not UTF-8 is skipped and the connection goes on. A line over the message
//! limit is not assembled, and it ends the connection ([`Conn::fail`]): the client's requests
//! waiting for an answer (the oversized line was likely one) are answered with an error
//! saying so, and the agent is ended, rather than a request left waiting forever. Both hold the agent back while its client has not
//! taken [`Limits::max_buffered_bytes`](crate::Limits::max_buffered_bytes) of output
//! ([`Conn::room_for_more`]).
//!
//! An in-process agent's connection writes into [`AgentOutput`]: its writer's buffer is cut
//! into lines and routed in that write, with no pipe, no second copy and no task between the
//! agent and the streams. Its lines are `serde_json`'s output (acp-rpc's writer), so routing
//! may trust their shape ([`Conn::route`]'s `trusted`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use acp_rpc::{Frame, LineCodec};
use bytes::BytesMut;
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Decoder, FramedRead};

use super::connection::Conn;

/// What an agent served in process reads the remote client's messages from (the reader of the
/// connection [`Server::in_process_with`](crate::Server::in_process_with) starts): JSON
/// lines, one per message.
pub type AgentInput = tokio::io::DuplexStream;

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

/// What an agent served in process writes its messages to (the writer of the connection
/// [`Server::in_process_with`](crate::Server::in_process_with) starts): each write's complete
/// lines are routed to the remote client's streams before it returns, with no pipe and no
/// task in between. A write waits while the client has not taken
/// [`Limits::max_buffered_bytes`](crate::Limits::max_buffered_bytes) of output, and fails
/// once the client took nothing for [`Limits::max_output_stall`](crate::Limits::max_output_stall)
/// or the remote connection has ended (which ends the agent's connection). Shutting it down
/// or dropping it ends the remote connection.
pub struct AgentOutput {
    conn: Arc<Conn>,
    codec: LineCodec,
    /// The start of a line whose end has not been written yet.
    partial: BytesMut,
    /// Set while a write waits for the client to take some output.
    room: Option<Pin<Box<dyn Future<Output = bool> + Send>>>,
}

impl std::fmt::Debug for AgentOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOutput")
            .field("conn", &self.conn.id)
            .finish()
    }
}

impl AgentOutput {
    pub(crate) fn new(conn: Arc<Conn>) -> Self {
        let codec = LineCodec::new(conn.limits.max_message_bytes);
        AgentOutput {
            conn,
            codec,
            partial: BytesMut::new(),
            room: None,
        }
    }

    /// Ready once the connection may take more of the agent's output.
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if let Some(room) = &mut self.room {
                let room = ready!(room.as_mut().poll(cx));
                self.room = None;
                if !room {
                    return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
                }
            }
            if self.conn.closed.is_cancelled() {
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            if self.conn.has_room() {
                return Poll::Ready(Ok(()));
            }
            let conn = self.conn.clone();
            self.room = Some(Box::pin(async move { conn.room_for_more().await }));
        }
    }
}

impl AsyncWrite for AgentOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_room(cx))?;
        // One buffer for the whole write, the lines cut out of it and shared with it (a
        // buffer per line, which `BytesMut` makes once the previous line's bytes are
        // shared, cost two allocations a message).
        this.partial.reserve(data.len());
        // Line by line, and no further than the room lasts: the rest of a write the writer
        // hands over again, and waits for room then (the connection holds at most one line
        // over its limit, as when a pipe is read).
        let mut written = 0;
        while written < data.len() {
            let rest = &data[written..];
            let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |at| at + 1);
            this.partial.extend_from_slice(&rest[..end]);
            written += end;
            let mut routed = false;
            while let Some(frame) = this.codec.decode(&mut this.partial)? {
                routed |= take(&this.conn, frame, true);
            }
            if routed && !this.conn.has_room() {
                break;
            }
        }
        if this.partial.is_empty() {
            // Lets the buffer go with the last of its lines (an idle connection keeps none).
            this.partial = BytesMut::new();
        }
        Poll::Ready(Ok(written))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The connection ends with the agent's output, as when a gateway child's stdout
        // closes (what is still queued for the client goes with it).
        self.conn.close("the agent's output ended");
        Poll::Ready(Ok(()))
    }
}

impl Drop for AgentOutput {
    fn drop(&mut self) {
        self.conn.close("the agent's output ended");
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

    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::security::Limits;
    use crate::server::connection::tests::over_pipe;

    /// A connection whose agent output the test writes by hand, holding `buffered` bytes
    /// before the agent waits; the pipe end keeps its other pump alive.
    fn connection(buffered: usize) -> (Arc<Conn>, AgentOutput, tokio::io::DuplexStream) {
        let (conn, pipe) = over_pipe(Limits {
            max_buffered_bytes: buffered,
            max_message_bytes: 256,
            max_output_stall: Duration::from_secs(5),
            ..Limits::default()
        });
        (conn.clone(), AgentOutput::new(conn), pipe)
    }

    fn note(method: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{}}}}"#)
    }

    async fn next(conn: &Conn, generation: u64) -> String {
        let line = conn.main.next(generation).await.expect("a message");
        String::from_utf8(line.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn lines_cut_across_writes_are_routed_whole_and_in_order() {
        let (conn, mut out, _pipe) = connection(1 << 20);
        let generation = conn.main.attach();
        let both = format!("{}\n{}\n", note("a"), note("b"));
        let (first, second) = both.split_at(45);
        out.write_all(first.as_bytes()).await.unwrap();
        out.write_all(second.as_bytes()).await.unwrap();
        assert_eq!(next(&conn, generation).await, note("a"));
        assert_eq!(next(&conn, generation).await, note("b"));
    }

    /// The lines of a write are cut out of one buffer (they were a buffer each, two
    /// allocations a message), and the buffer is let go when no partial line is left.
    #[tokio::test]
    async fn the_lines_of_a_write_share_one_buffer_that_is_let_go_after_it() {
        let (conn, mut out, _pipe) = connection(1 << 20);
        let generation = conn.main.attach();
        let lines = [note("a"), note("b"), note("c")];
        out.write_all(format!("{}\n", lines.join("\n")).as_bytes())
            .await
            .unwrap();
        let mut taken = Vec::new();
        for line in &lines {
            let message = conn.main.next(generation).await.expect("a message");
            assert_eq!(message, line.as_bytes());
            taken.push(message);
        }
        for pair in taken.windows(2) {
            // Each line starts right after the previous one and its newline.
            assert_eq!(
                pair[1].as_ptr(),
                pair[0].as_ptr().wrapping_add(pair[0].len() + 1)
            );
        }
        assert_eq!(out.partial.capacity(), 0, "no buffer kept between writes");
        out.write_all(b"{\"half").await.unwrap();
        assert_eq!(&out.partial[..], b"{\"half", "a partial line is kept");
    }

    /// A line over the limit ends the connection: the request waiting for an answer gets an
    /// error naming the limit, then the stream ends (what follows the line is not routed).
    #[tokio::test]
    async fn a_line_over_the_limit_answers_what_waits_with_an_error_and_ends_the_connection() {
        let (conn, mut out, _pipe) = connection(1 << 20);
        let generation = conn.main.attach();
        let request = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "x/y"});
        conn.forward_to_agent(request, None).await.unwrap();
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":"{}"}}"#,
            "y".repeat(300)
        );
        let _ = out
            .write_all(format!("{long}\n{}\n", note("after")).as_bytes())
            .await;
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
    async fn a_write_stops_where_the_room_ends_and_the_rest_waits_for_the_client() {
        let line = format!("{}\n", note("tick"));
        // Room for one line: the second fills it.
        let (conn, mut out, _pipe) = connection(line.len() + 1);
        let five = line.repeat(5);
        let written = out.write(five.as_bytes()).await.unwrap();
        assert_eq!(
            written,
            2 * line.len(),
            "routed up to the limit, no further"
        );
        let waits = tokio::time::timeout(Duration::from_millis(100), out.write(line.as_bytes()));
        assert!(waits.await.is_err(), "a write with no room waits");
        let generation = conn.main.attach();
        let writer = tokio::spawn(async move {
            out.write_all(&five.as_bytes()[written..]).await.unwrap();
            out
        });
        for _ in 0..5 {
            assert_eq!(next(&conn, generation).await, note("tick"));
        }
        let _out = writer.await.unwrap();
        assert!(!conn.closed.is_cancelled());
    }

    #[tokio::test]
    async fn a_write_after_the_connection_ended_fails_and_shutting_down_ends_it() {
        let (conn, mut out, _pipe) = connection(1 << 20);
        out.shutdown().await.unwrap();
        assert!(conn.closed.is_cancelled());
        let error = out.write_all(b"{}\n").await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test]
    async fn dropping_the_output_ends_the_connection() {
        let (conn, out, _pipe) = connection(1 << 20);
        drop(out);
        assert!(conn.closed.is_cancelled());
    }
}
