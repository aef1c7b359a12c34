//! What `--trace` is told ([`TraceEvent`]: an agent started, a line crossed, the agent
//! ended), and the event as the workspace's one wire record.

use std::sync::Arc;

use acp_rpc::record::{self, Record};

/// Receives every line the kit and the agent exchange, for `--trace`.
pub type TraceSink = Arc<dyn Fn(TraceEvent<'_>) + Send + Sync>;

/// What a [`TraceSink`] is told, in the order it happened.
#[derive(Clone, Copy, Debug)]
pub enum TraceEvent<'a> {
    /// An agent was started (each fresh connection starts one).
    Start {
        /// Its command line (`["in-process"]` for an agent run in process).
        command: &'a [String],
    },
    /// One line crossed.
    Line {
        /// Place in the order of both directions over the whole run.
        seq: u64,
        /// Seconds since the Unix epoch.
        ts: f64,
        /// `true` for kit -> agent (the agent's stdin).
        to_agent: bool,
        /// The line without its newline (repaired if it was not UTF-8).
        line: &'a str,
        /// The line was not valid UTF-8.
        lossy: bool,
    },
    /// The agent's connection ended.
    Exit {
        /// Its exit code, when it was a process that exited.
        code: Option<i32>,
        /// The signal that ended it.
        signal: Option<i32>,
    },
}

impl TraceEvent<'_> {
    /// The event as the workspace's one wire record ([`acp_rpc::record`]), what `acp check
    /// --trace` writes and `acp trace view` reads: a `start`, a line of either direction
    /// (`client_to_agent` is the kit's), or an `exit`.
    pub fn record(&self) -> Record {
        match *self {
            TraceEvent::Start { command } => {
                let mut r = Record::new(record::now(), record::START);
                r.command = Some(command.to_vec());
                r
            }
            TraceEvent::Line {
                seq,
                ts,
                to_agent,
                line,
                lossy,
            } => {
                let dir = if to_agent {
                    record::CLIENT_TO_AGENT
                } else {
                    record::AGENT_TO_CLIENT
                };
                let mut r = Record::line(ts, dir, seq, line.as_bytes());
                r.lossy = lossy;
                r
            }
            TraceEvent::Exit { code, signal } => {
                let mut r = Record::new(record::now(), record::EXIT);
                r.code = code;
                r.signal = signal;
                r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_events_are_wire_records() {
        let command = ["agent".to_owned(), "--acp".to_owned()];
        let start = TraceEvent::Start { command: &command }.record();
        assert_eq!(start.dir, record::START);
        assert_eq!(start.command.as_deref(), Some(&command[..]));
        let line = TraceEvent::Line {
            seq: 4,
            ts: 1.25,
            to_agent: false,
            line: "{}",
            lossy: true,
        }
        .record();
        assert_eq!(
            (line.dir.as_str(), line.seq, line.ts, line.lossy),
            (record::AGENT_TO_CLIENT, Some(4), 1.25, true)
        );
        let exit = TraceEvent::Exit {
            code: Some(2),
            signal: None,
        }
        .record();
        assert_eq!((exit.dir.as_str(), exit.code), (record::EXIT, Some(2)));
    }
}
