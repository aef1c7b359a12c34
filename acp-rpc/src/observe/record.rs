//! The wire record: one line of a trace file, the one format every recorder of the
//! workspace writes and `acp trace view` reads.
//!
//! ```text
//! {"ts":1732440000.123456,"dir":"start","command":["my-agent","--flag"]}
//! {"ts":1732440000.125001,"dir":"client_to_agent","seq":0,"line":"{\"jsonrpc\":\"2.0\",...}"}
//! {"ts":1732440000.130042,"dir":"agent_to_client","seq":1,"line":"{...}"}
//! {"ts":1732440003.000000,"dir":"exit","code":0}
//! ```
//!
//! `ts` is seconds since the Unix epoch (microsecond precision), `seq` numbers the protocol
//! lines across both directions in the order the recorder saw them, and `line` is the line
//! exactly as it crossed (without its newline; `"lossy": true` when it was not UTF-8 and
//! had to be repaired to be stored, `"partial": true` when the stream ended inside it).
//!
//! Who writes it: `acp trace` (a stdio proxy), `acp check --trace` (the kit's connections),
//! the interop suite's recording relay, and any connection with a recording observer
//! ([`crate::tap::recorder`]). [`Record::parse`] also reads the interop suite's former
//! transcript lines (`{"seq","us","from","line"}`), so old recordings still open.

use serde::{Deserialize, Serialize};

/// Which way a line travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Read from the peer.
    Incoming,
    /// Written to the peer.
    Outgoing,
}

/// Client to agent (the agent's stdin).
pub const CLIENT_TO_AGENT: &str = "client_to_agent";
/// Agent to client (the agent's stdout).
pub const AGENT_TO_CLIENT: &str = "agent_to_client";
/// The recorder started the agent.
pub const START: &str = "start";
/// The agent exited.
pub const EXIT: &str = "exit";

/// One record.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// Seconds since the Unix epoch.
    pub ts: f64,
    /// [`CLIENT_TO_AGENT`], [`AGENT_TO_CLIENT`], [`START`] or [`EXIT`].
    pub dir: String,
    /// Order of protocol lines (both directions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The protocol line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// The line was not valid UTF-8 (invalid bytes were replaced).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lossy: bool,
    /// The stream ended inside this line (no line end followed it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// `start`: the agent's command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// `exit`: the exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// `exit`: the signal that ended the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// Which side of the conversation a recording connection is: what its directions mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The client's (editor's) side: what it writes goes to the agent.
    Client,
    /// The agent's side: what it writes goes to the client.
    Agent,
}

impl Role {
    /// The record `dir` of a line going `direction` on a connection of this role.
    pub fn dir(self, direction: Direction) -> &'static str {
        match (self, direction) {
            (Role::Client, Direction::Outgoing) | (Role::Agent, Direction::Incoming) => {
                CLIENT_TO_AGENT
            }
            (Role::Client, Direction::Incoming) | (Role::Agent, Direction::Outgoing) => {
                AGENT_TO_CLIENT
            }
        }
    }
}

impl Record {
    /// A record of `dir` at `ts` with nothing else.
    pub fn new(ts: f64, dir: &str) -> Record {
        Record {
            ts,
            dir: dir.to_owned(),
            seq: None,
            line: None,
            lossy: false,
            partial: false,
            command: None,
            code: None,
            signal: None,
        }
    }

    /// A protocol line (without its line end) going `dir`, the `seq`th of the recording:
    /// stored as text, repaired and marked `lossy` when it is not UTF-8.
    pub fn line(ts: f64, dir: &str, seq: u64, line: &[u8]) -> Record {
        let mut record = Record::new(ts, dir);
        record.seq = Some(seq);
        match std::str::from_utf8(line) {
            Ok(text) => record.line = Some(text.to_owned()),
            Err(_) => {
                record.line = Some(String::from_utf8_lossy(line).into_owned());
                record.lossy = true;
            }
        }
        record
    }

    /// Whether it is a protocol line (either direction), not `start` or `exit`.
    pub fn is_line(&self) -> bool {
        self.dir == CLIENT_TO_AGENT || self.dir == AGENT_TO_CLIENT
    }

    /// The record as one line of a trace file (JSON, without the line end).
    pub fn to_json(&self) -> String {
        // A record holds only strings, numbers and booleans: it always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one line of a trace file: a record, or a line of the interop suite's former
    /// transcript format (`{"seq":1,"us":250,"from":"client","line":"..."}`, microseconds
    /// since the relay started; read with `ts` = those microseconds as seconds, so times
    /// between its lines stay right).
    pub fn parse(line: &[u8]) -> Result<Record, serde_json::Error> {
        let error = match serde_json::from_slice::<Record>(line) {
            Ok(record) => return Ok(record),
            Err(e) => e,
        };
        match serde_json::from_slice::<FormerTranscript>(line) {
            Ok(old) => {
                let mut record = Record::new(old.us as f64 / 1e6, "");
                record.dir = match old.from.as_str() {
                    "client" => CLIENT_TO_AGENT.to_owned(),
                    "agent" => AGENT_TO_CLIENT.to_owned(),
                    _ => return Err(error),
                };
                record.seq = Some(old.seq);
                record.line = Some(old.line);
                record.partial = old.partial;
                Ok(record)
            }
            Err(_) => Err(error),
        }
    }
}

/// A line of the interop suite's transcript before it wrote [`Record`]s.
#[derive(Deserialize)]
struct FormerTranscript {
    seq: u64,
    us: u64,
    from: String,
    line: String,
    #[serde(default)]
    partial: bool,
}

/// Now, in seconds since the Unix epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written() {
        let record = Record::line(1.5, CLIENT_TO_AGENT, 3, b"{\"id\":1}");
        assert_eq!(Record::parse(record.to_json().as_bytes()).unwrap(), record);
        let lossy = Record::line(2.0, AGENT_TO_CLIENT, 4, b"a\xffb");
        assert!(lossy.lossy);
        assert_eq!(lossy.line.as_deref(), Some("a\u{fffd}b"));
        assert_eq!(Record::parse(lossy.to_json().as_bytes()).unwrap(), lossy);
    }

    #[test]
    fn a_former_interop_transcript_line_reads_as_a_record() {
        let old = br#"{"seq":7,"us":2500000,"from":"agent","line":"{}","partial":true}"#;
        let record = Record::parse(old).unwrap();
        assert_eq!(record.dir, AGENT_TO_CLIENT);
        assert_eq!(record.seq, Some(7));
        assert_eq!(record.ts, 2.5);
        assert!(record.partial);
        assert!(Record::parse(br#"{"seq":1,"us":0,"from":"nobody","line":""}"#).is_err());
        assert!(Record::parse(b"not json").is_err());
    }

    #[test]
    fn roles_name_the_directions() {
        assert_eq!(Role::Client.dir(Direction::Outgoing), CLIENT_TO_AGENT);
        assert_eq!(Role::Agent.dir(Direction::Outgoing), AGENT_TO_CLIENT);
        assert_eq!(Role::Agent.dir(Direction::Incoming), CLIENT_TO_AGENT);
    }
}
