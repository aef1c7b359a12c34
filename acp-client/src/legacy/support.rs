//! Pieces the legacy modules of this crate share: the in-memory pipe an adapter runs the v1
//! side on, and tying two connections' lifetimes together.

use acp_rpc::Peer;
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};

/// Buffer size of an adapter's in-memory pipe (per direction).
const PIPE_BUFFER: usize = 64 * 1024;

/// One end of an in-memory pipe, split into the reader and writer a connection takes.
pub(crate) type PipeEnd = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// An in-memory pipe: an adapter runs the v1 connection on one end and its translating
/// connection on the other.
pub(crate) fn pipe() -> (PipeEnd, PipeEnd) {
    let (a, b) = tokio::io::duplex(PIPE_BUFFER);
    (tokio::io::split(a), tokio::io::split(b))
}

/// Closes each of the two connections as soon as the other one ends, so an adapter never
/// outlives its wire (or its v1 side).
pub(crate) fn tie(a: &Peer, b: &Peer) {
    let (a, b) = (a.clone(), b.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = a.closed() => b.close(),
            _ = b.closed() => a.close(),
        }
    });
}
