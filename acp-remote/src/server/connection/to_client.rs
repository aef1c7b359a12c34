//! Agent to client: each message of the agent's output routed by its envelope (an answer
//! to the client's request, a session's update, a request of the agent's) to the outbox it
//! belongs to, and the agent held back while the client has not taken its output.

use std::sync::Arc;

use bytes::Bytes;

use crate::server::outbox::Outbox;
use acp_rpc::Direction;
use acp_rpc::envelope::Envelope;
use acp_rpc::sync::lock;

use super::{Conn, Pending, observe_answer, observe_message};

impl Conn {
    /// Routes one message of the agent's output: read in one pass for its method, id and
    /// session ([`Envelope`]), and queued as it is.
    ///
    /// `trusted`: the message is acp-rpc's `serde_json` output (an in-process agent), so
    /// JSON. On a WebSocket with no observer, a notification in the engine's usual shape
    /// ([`acp_rpc::envelope::plain_notification`]) goes down the socket unread (reading a
    /// streamed chunk to its end cost the most).
    pub(crate) fn route(&self, line: Bytes, trusted: bool) {
        // An in-process agent's engine writes only UTF-8 frames (`acp_rpc::FrameSink`), so
        // its usual notification goes on without a pass over all of it.
        if trusted
            && self.websocket
            && self.observer.is_none()
            && acp_rpc::envelope::is_plain_notification(&line)
        {
            self.push(&self.main, line);
            return;
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            tracing::warn!(conn = %self.id, "agent wrote a line that is not UTF-8; dropped");
            return;
        };
        let Some(message) = Envelope::read(text) else {
            tracing::warn!(conn = %self.id, "agent wrote a line that is not JSON; dropped");
            return;
        };
        if let Some(o) = &self.observer {
            observe_message(o.as_ref(), Direction::Outgoing, &message, &line);
        }
        // On a WebSocket everything the agent sends unasked goes down the one socket.
        if self.websocket && message.method.is_some() {
            self.push(&self.main, line);
            return;
        }
        let target = {
            let mut routing = lock(&self.routing);
            if message.method.is_some() {
                let session = message.params_session.as_deref();
                match session.and_then(|s| routing.sessions.get(s)) {
                    Some(outbox) => outbox.clone(),
                    None => self.main.clone(),
                }
            } else {
                let key = message.id_key().unwrap_or_default();
                let waiting = routing.pending.remove(&key).map(|w| {
                    if let Some((since, method)) = &w.timing {
                        let latency = since.elapsed();
                        if let Some(o) = &self.observer {
                            observe_answer(o.as_ref(), &message, method, latency);
                        }
                    }
                    w.to
                });
                match waiting {
                    Some(Pending::Initialize(tx)) => {
                        let _ = tx.send(line.clone());
                        return;
                    }
                    Some(Pending::Answer { session, creates }) => {
                        if creates {
                            routing.creating = routing.creating.saturating_sub(1);
                            if let Some(s) = message.result_session.as_deref()
                                && !routing.sessions.contains_key(s)
                            {
                                let budget = self.budget.clone();
                                routing
                                    .sessions
                                    .insert(s.to_owned(), Arc::new(Outbox::new(budget)));
                                if let Some(metrics) = &self.metrics {
                                    metrics.session_opened();
                                }
                            }
                        }
                        match session.and_then(|s| routing.sessions.get(&s)) {
                            Some(outbox) => outbox.clone(),
                            None => self.main.clone(),
                        }
                    }
                    None => self.main.clone(),
                }
            }
        };
        self.push(&target, line);
    }

    /// Queues a message for a stream: JSON text, so UTF-8 (the agent's lines are checked
    /// by the codec or by [`Conn::route`], an in-process engine writes only text, and the
    /// server's own answers are `serde_json`'s), which the WebSocket sends as a text
    /// message without looking again. The agent's output is held at
    /// [`Limits::max_buffered_bytes`] by [`Conn::room_for_more`]; what the server adds itself
    /// (refusals of a client's requests) may pass it, up to twice the limit, where the
    /// connection is closed (memory stays bounded whatever the client does).
    pub(super) fn push(&self, outbox: &Outbox, message: Bytes) {
        debug_assert!(
            std::str::from_utf8(&message).is_ok(),
            "a stream's message is text"
        );
        if outbox.push(message) > self.limits.max_buffered_bytes.saturating_mul(2) {
            tracing::warn!(conn = %self.id, "the client does not read its streams; closing");
            self.close("buffer limit");
        }
    }

    /// Whether the agent's output may be read on now (see [`Conn::room_for_more`]).
    pub(crate) fn has_room(&self) -> bool {
        self.budget.queued() < self.limits.max_buffered_bytes
    }

    /// Backpressure: while the connection holds [`Limits::max_buffered_bytes`] of output its
    /// client has not taken, the agent's output is not read (a process agent's pipe fills
    /// and its writes wait). `false`, with the connection closed, when the client took
    /// nothing for [`Limits::max_output_stall`]: it stopped reading, or never opened the
    /// stream the output is for.
    pub(crate) async fn room_for_more(&self) -> bool {
        if self.has_room() {
            return true;
        }
        let (limit, stall) = (self.limits.max_buffered_bytes, self.limits.max_output_stall);
        let room = tokio::select! {
            room = self.budget.room_below(limit, stall) => room,
            () = self.closed.cancelled() => return false,
        };
        if !room {
            tracing::warn!(conn = %self.id, ?stall, "the client took none of its output; closing");
            self.close("output stalled");
        }
        room
    }
}
