//! [`memory_pair`]: two engines in one process, passing whole messages through bounded
//! channels, as values: the envelope is neither written as text nor parsed again.

use tokio::sync::mpsc;

use super::{
    FramePort, FrameReceiver, FrameSender, FramesIn, FramesOut, Halves, Inner, Item, Transport,
};

/// One end of an in-memory message pair (see [`memory_pair`]): what one end's engine
/// writes, the other's reads, one message at a time.
#[derive(Debug)]
pub struct MemoryEnd {
    incoming: mpsc::Receiver<Item>,
    outgoing: mpsc::Sender<Item>,
}

/// Two connected ends for two connections in one process. Each direction holds at most
/// `capacity` messages (at least 1) not yet read: a writer that gets ahead of its reader
/// waits, as on a full pipe.
///
/// The engines hand each other their messages as values: requests, notifications and
/// answers cross with their envelope already parsed (params and results stay raw JSON, the
/// engine's currency), so neither writes the envelope as text nor parses it again; the
/// params of [`Peer::notify_value`](crate::Peer::notify_value) cross as the sender's value
/// (see [`ParamsValue`](crate::ParamsValue)). Text is
/// written only for an observer that asks for it, and for an end driven by hand
/// ([`MemoryEnd::into_port`]).
pub fn memory_pair(capacity: usize) -> (MemoryEnd, MemoryEnd) {
    let capacity = capacity.max(1);
    let (a_tx, a_rx) = mpsc::channel(capacity);
    let (b_tx, b_rx) = mpsc::channel(capacity);
    (
        MemoryEnd {
            incoming: a_rx,
            outgoing: b_tx,
        },
        MemoryEnd {
            incoming: b_rx,
            outgoing: a_tx,
        },
    )
}

impl MemoryEnd {
    /// This end driven by hand rather than by an engine: the frames the other end's engine
    /// writes come out of the port's receiver (as their text), what goes into its sender
    /// reaches that engine as written (a test's raw peer, a relay).
    pub fn into_port(self) -> FramePort {
        FramePort {
            sender: FrameSender(self.outgoing),
            receiver: FrameReceiver(self.incoming),
        }
    }
}

impl Transport for MemoryEnd {
    fn into_halves(self) -> Halves {
        Halves(Inner::Frames {
            incoming: FramesIn::Channel(self.incoming),
            outgoing: FramesOut::channel(self.outgoing),
            values: true,
            first: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Connection};

    #[tokio::test]
    async fn an_engine_hands_its_messages_to_the_other_end_as_values() {
        let (ours, mut theirs) = memory_pair(4);
        let conn = Connection::over(ours, (), Config::default());
        conn.peer().notify("n", &[1, 2]).await.unwrap();
        match theirs.incoming.recv().await.expect("a message") {
            Item::Message { message, jsonrpc } => {
                assert!(jsonrpc);
                let crate::Message::Notification(n) = *message else {
                    panic!("not a notification: {message:?}")
                };
                assert_eq!(n.method, "n");
                assert_eq!(n.params.unwrap().get(), "[1,2]");
            }
            other => panic!("not a message value: {other:?}"),
        }
        // `notify_value`: the params cross as the sender's own value.
        conn.peer().notify_value("v", vec![3u8]).await.unwrap();
        match theirs.incoming.recv().await.expect("a value") {
            Item::Value { method, params, .. } => {
                assert_eq!(method, "v");
                assert_eq!(params.downcast::<Vec<u8>>().unwrap(), [3]);
            }
            other => panic!("not a value: {other:?}"),
        }
        // A hand-driven end reads the text the engine would have written.
        conn.peer().notify("m", &()).await.unwrap();
        let text = theirs.into_port().receiver.recv().await.unwrap();
        assert_eq!(
            &text[..],
            br#"{"jsonrpc":"2.0","method":"m","params":null}"#
        );
    }
}
