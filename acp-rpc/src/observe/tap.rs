//! The wire tap: observers of every raw line in both directions, what
//! [`Observer::line`] is told.
//!
//! [`channel`] forwards the lines as they are; [`recorder`] turns them into the
//! workspace's one wire record ([`crate::record`]), what `acp trace view` reads;
//! [`on_line`] makes an observer of any function of a line. Each is an
//! [`Observer`]: install it with
//! [`Config::with_observer`](crate::Config::with_observer), beside any other.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::observe::{Observer, SharedObserver};
// Defined with the wire record, which names its sides by it.
pub use crate::observe::record::Direction;
use crate::observe::record::{Record, Role};

/// What a tap sees ([`Observer::line`]).
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

/// An observer of the raw lines only, made of a function ([`on_line`]).
struct OnLine<F>(F);

impl<F: Fn(TapEvent<'_>) + Send + Sync + 'static> Observer for OnLine<F> {
    fn line(&self, event: TapEvent<'_>) {
        (self.0)(event)
    }
}

/// An observer that calls `f` with every raw line (and every skipped oversized one), and
/// is told nothing else. It runs on the reader and writer tasks, so it must be quick.
pub fn on_line(f: impl Fn(TapEvent<'_>) + Send + Sync + 'static) -> SharedObserver {
    Arc::new(OnLine(f))
}

/// An observer that forwards every line (with its direction) to an unbounded channel.
/// Oversized lines are not forwarded (there is no line to give).
pub fn channel() -> (SharedObserver, mpsc::UnboundedReceiver<(Direction, Bytes)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let tap = on_line(move |event: TapEvent<'_>| {
        if let TapEvent::Line(dir, line) = event {
            let _ = tx.send((dir, Bytes::copy_from_slice(line)));
        }
    });
    (tap, rx)
}

/// An observer that records every line as a [`Record`] of the one wire format (`seq`
/// numbering both directions in the order it saw them, `dir` named from `role`, the side
/// this connection is), forwarded to an unbounded channel: the receiver must keep up
/// (write the records out as they come, as `acp trace` does). Oversized lines are not
/// recorded (there is no line to give).
pub fn recorder(role: Role) -> (SharedObserver, mpsc::UnboundedReceiver<Record>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let seq = Mutex::new(0u64);
    let tap = on_line(move |event: TapEvent<'_>| {
        if let TapEvent::Line(direction, line) = event {
            // Numbered and sent under one lock: the receiver gets records in `seq` order.
            let mut next = crate::sync::lock(&seq);
            let record = Record::line(
                crate::observe::record::now(),
                role.dir(direction),
                *next,
                line,
            );
            *next += 1;
            let _ = tx.send(record);
        }
    });
    (tap, rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::record::{AGENT_TO_CLIENT, CLIENT_TO_AGENT};

    #[test]
    fn the_recorder_numbers_both_directions_and_names_them_by_role() {
        let (tap, mut rx) = recorder(Role::Client);
        tap.line(TapEvent::Line(Direction::Outgoing, b"{\"id\":1}"));
        tap.line(TapEvent::OversizedLine { len: 99 });
        tap.line(TapEvent::Line(
            Direction::Incoming,
            b"{\"id\":1,\"result\":null}",
        ));
        let first = rx.try_recv().unwrap();
        let second = rx.try_recv().unwrap();
        assert!(rx.try_recv().is_err());
        assert_eq!((first.seq, first.dir.as_str()), (Some(0), CLIENT_TO_AGENT));
        assert_eq!(
            (second.seq, second.dir.as_str()),
            (Some(1), AGENT_TO_CLIENT)
        );
        assert_eq!(second.line.as_deref(), Some("{\"id\":1,\"result\":null}"));
    }
}
