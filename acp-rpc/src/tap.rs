//! The wire tap: an optional callback that sees every raw line in both directions.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

/// Which way a line travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Read from the peer.
    Incoming,
    /// Written to the peer.
    Outgoing,
}

/// What the tap sees.
#[derive(Clone, Copy, Debug)]
pub enum TapEvent<'a> {
    /// A complete line (without its line end; after BOM and `\r` stripping for input).
    Line(Direction, &'a [u8]),
    /// An incoming line longer than the limit, skipped; `len` is its length in bytes.
    OversizedLine {
        /// The skipped line's length.
        len: usize,
    },
}

/// A tap callback. It runs on the reader and writer tasks, so it must be quick.
pub type WireTap = Arc<dyn Fn(TapEvent<'_>) + Send + Sync>;

/// A tap that forwards every line (with its direction) to an unbounded channel.
/// Oversized lines are not forwarded (there is no line to give).
pub fn channel() -> (WireTap, mpsc::UnboundedReceiver<(Direction, Bytes)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let tap: WireTap = Arc::new(move |event: TapEvent<'_>| {
        if let TapEvent::Line(dir, line) = event {
            let _ = tx.send((dir, Bytes::copy_from_slice(line)));
        }
    });
    (tap, rx)
}
