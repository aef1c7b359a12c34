//! An in-memory byte pipe for running connections back to back over the line transport
//! (public as [`acp_rpc::memory`](crate::memory), beside [`tie`](crate::memory::tie)). The
//! message-level in-memory transport, which writes no text, is
//! [`memory_pair`](crate::transport::memory_pair).

use tokio::io::{DuplexStream, ReadHalf, WriteHalf};

/// Buffer size of a [`pipe`], per direction.
pub const PIPE_BUFFER: usize = 64 * 1024;

/// One end of an in-memory pipe, split into the reader and writer a connection takes.
pub type PipeEnd = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// An in-memory pipe: what one end writes, the other reads.
pub fn pipe() -> (PipeEnd, PipeEnd) {
    let (a, b) = tokio::io::duplex(PIPE_BUFFER);
    (tokio::io::split(a), tokio::io::split(b))
}
