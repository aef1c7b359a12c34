//! One line of a trace file.
//!
//! ```text
//! {"ts":1732440000.123456,"dir":"start","command":["my-agent","--flag"]}
//! {"ts":1732440000.125001,"dir":"client_to_agent","seq":0,"line":"{\"jsonrpc\":\"2.0\",...}"}
//! {"ts":1732440000.130042,"dir":"agent_to_client","seq":1,"line":"{...}"}
//! {"ts":1732440003.000000,"dir":"exit","code":0}
//! ```
//!
//! `ts` is seconds since the Unix epoch (microsecond precision), `seq` numbers the protocol
//! lines across both directions in the order the proxy saw them, and `line` is the line
//! exactly as it crossed (without its newline; `"lossy": true` when it was not UTF-8 and
//! had to be repaired to be stored).

use serde::{Deserialize, Serialize};

/// Client to agent (the agent's stdin).
pub const CLIENT_TO_AGENT: &str = "client_to_agent";
/// Agent to client (the agent's stdout).
pub const AGENT_TO_CLIENT: &str = "agent_to_client";
/// The proxy started the agent.
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

impl Record {
    /// A record of `dir` at `ts` with nothing else.
    pub fn new(ts: f64, dir: &str) -> Record {
        Record {
            ts,
            dir: dir.to_owned(),
            seq: None,
            line: None,
            lossy: false,
            command: None,
            code: None,
            signal: None,
        }
    }
}

/// Now, in seconds since the Unix epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
