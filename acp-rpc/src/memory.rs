//! In-process plumbing for running connections back to back: an in-memory [`pipe`] and
//! [`tie`], which ends each of two connections when the other ends. The legacy adapters of
//! acp-agent and acp-client run a v1 connection on one end of a pipe and a translating
//! connection on the other.

use tokio::io::{DuplexStream, ReadHalf, WriteHalf};

use crate::Peer;

/// Buffer size of a [`pipe`], per direction.
pub const PIPE_BUFFER: usize = 64 * 1024;

/// One end of an in-memory pipe, split into the reader and writer a connection takes.
pub type PipeEnd = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// An in-memory pipe: what one end writes, the other reads.
pub fn pipe() -> (PipeEnd, PipeEnd) {
    let (a, b) = tokio::io::duplex(PIPE_BUFFER);
    (tokio::io::split(a), tokio::io::split(b))
}

/// Closes each of the two connections as soon as the other one ends, so neither outlives
/// the other. Must be called within a Tokio runtime.
pub fn tie(a: &Peer, b: &Peer) {
    let (a, b) = (a.clone(), b.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = a.closed() => b.close(),
            _ = b.closed() => a.close(),
        }
    });
}
