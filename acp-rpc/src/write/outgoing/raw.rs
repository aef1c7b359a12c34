//! The raw-send escape hatch: a line written exactly as given.
//!
//! A conformance kit (acp-check) has to send what no well-behaved peer sends: a line that
//! is not JSON, an answer with a wrong id, a line over the peer's limit. [`Peer::send_raw`]
//! queues such a line on the connection's own writer, so it leaves whole and in order with
//! everything else the connection writes, and an observer is told of it like of any other
//! line ([`Observer::line`](crate::Observer::line)). The engine neither checks nor tracks
//! it: nothing is registered for it, so an answer to a request sent this way is a response
//! to an unknown id (dropped by the engine, seen as a line), and no observer hears of it as
//! a message. Ordinary traffic goes through [`Peer::request`] and [`Peer::notify`].

use super::Peer;
use crate::error::Error;
use crate::write::queued::Outgoing;

impl Peer {
    /// Writes `line` to the peer as it is, followed by the line end, after whatever the
    /// connection queued before it. Waits while the outgoing queue is full (backpressure);
    /// fails once the connection is closed, for a `line` holding a line break (one frame is
    /// one line: the break would split it into two), and on a transport of frames
    /// ([`crate::transport::frame_adapter`], a memory pair) for a `line` that is not UTF-8
    /// (every frame is text: a WebSocket text message must be, and carriers rely on it). The engine neither checks
    /// nor tracks such a line: nothing is registered for it, and an observer is told of it
    /// as a raw line ([`Observer::line`](crate::Observer::line)) but never as a message.
    pub async fn send_raw(&self, line: impl Into<Vec<u8>>) -> Result<(), Error> {
        let line = line.into();
        if line.iter().any(|b| *b == b'\n' || *b == b'\r') {
            return Err(Error::invalid_request(
                "a raw line must not hold a line break (one frame is one line)",
            ));
        }
        if self.shared.frames && std::str::from_utf8(&line).is_err() {
            return Err(Error::invalid_request(
                "a raw message on a transport of frames must be UTF-8 text",
            ));
        }
        self.shared.send(Outgoing::Frame(line)).await
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use crate::{Config, Connection, Direction, Error, Handler, Params, RequestContext, TapEvent};

    /// A handler that serves nothing (every request is `-32601`).
    pub(in crate::write::outgoing) struct Nothing;

    #[async_trait::async_trait]
    impl Handler for Nothing {
        async fn handle_request(
            &self,
            _cx: RequestContext,
            method: &str,
            _params: Params,
        ) -> Result<Box<serde_json::value::RawValue>, Error> {
            Err(Error::method_not_found(method))
        }
    }

    #[tokio::test]
    async fn a_raw_line_leaves_as_given_in_order_and_is_told_to_the_observer() {
        let (ours, theirs) = tokio::io::duplex(4096);
        let (read, write) = tokio::io::split(ours);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let tap_seen = seen.clone();
        let config =
            Config::default().with_observer(crate::tap::on_line(move |e: TapEvent<'_>| {
                if let TapEvent::Line(Direction::Outgoing, line) = e {
                    tap_seen.lock().unwrap().push(line.to_vec());
                }
            }));
        let conn = Connection::new(read, write, Nothing, config);
        conn.peer().notify("first", &1).await.unwrap();
        conn.peer()
            .send_raw(&b"{\"jsonrpc\": \"2.0\", oops"[..])
            .await
            .unwrap();
        conn.peer().notify("last", &2).await.unwrap();
        let refused = conn.peer().send_raw(&b"two\nlines"[..]).await;
        assert!(refused.is_err(), "{refused:?}");

        let (their_read, mut their_write) = tokio::io::split(theirs);
        let mut lines = BufReader::new(their_read).lines();
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(lines.next_line().await.unwrap().unwrap());
        }
        assert!(got[0].contains("\"first\""), "{got:?}");
        assert_eq!(got[1], "{\"jsonrpc\": \"2.0\", oops");
        assert!(got[2].contains("\"last\""), "{got:?}");
        assert_eq!(seen.lock().unwrap()[1], b"{\"jsonrpc\": \"2.0\", oops");
        their_write.shutdown().await.unwrap();
        conn.close();
    }

    #[tokio::test]
    async fn a_raw_message_on_a_transport_of_frames_must_be_text() {
        // Lines carry any bytes: a conformance kit sends a line that is not UTF-8 so.
        let (ours, theirs) = tokio::io::duplex(4096);
        let (read, write) = tokio::io::split(ours);
        let lines = Connection::new(read, write, Nothing, Config::default());
        lines.peer().send_raw(&b"\xff{}"[..]).await.unwrap();
        let mut got = Vec::new();
        let (their_read, _their_write) = tokio::io::split(theirs);
        BufReader::new(their_read)
            .read_until(b'\n', &mut got)
            .await
            .unwrap();
        assert_eq!(got, b"\xff{}\n");

        // A frame is text (a WebSocket text message must be UTF-8): refused, and the
        // connection goes on with the next message.
        let (ours, theirs) = crate::transport::memory_pair(4);
        let frames = Connection::over(ours, Nothing, Config::default());
        let refused = frames.peer().send_raw(&b"\xff{}"[..]).await.unwrap_err();
        assert!(refused.message.contains("UTF-8"), "{refused:?}");
        frames.peer().send_raw(&b"{\"text\":1}"[..]).await.unwrap();
        let mut port = theirs.into_port();
        assert_eq!(&port.receiver.recv().await.unwrap()[..], b"{\"text\":1}");
    }
}
