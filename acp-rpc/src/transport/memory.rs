//! [`memory_pair`]: two engines in one process, passing whole messages through bounded
//! channels.

use bytes::Bytes;
use tokio::sync::mpsc;

use super::{FramePort, FrameReceiver, FrameSender, Halves, Inner, Transport};

/// One end of an in-memory message pair (see [`memory_pair`]): what one end's engine
/// writes, the other's reads, one message per frame.
#[derive(Debug)]
pub struct MemoryEnd {
    incoming: mpsc::Receiver<Bytes>,
    outgoing: mpsc::Sender<Bytes>,
}

/// Two connected ends for two connections in one process. Each direction holds at most
/// `capacity` messages (at least 1) not yet read: a writer that gets ahead of its reader
/// waits, as on a full pipe.
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
    /// writes come out of the port's receiver, what goes into its sender reaches that engine
    /// as written (a test's raw peer, a relay).
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
            incoming: self.incoming,
            outgoing: self.outgoing,
        })
    }
}
