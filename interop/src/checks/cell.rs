//! What every assertion reads: the cell's run ([`CellRun`]), a [`Check`]'s verdict, the
//! SDKs' known differences ([`Sdk`]), and the helpers the assertions share.

use std::path::Path;

use serde_json::Value;

use crate::script::script;
use crate::tap::Side;
use crate::transcript::{Message, Wire};

/// Who wrote a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sdk {
    /// acp-rs (acp-agent / acp-client): the side under test.
    Ours,
    /// `@agentclientprotocol/sdk` 2.4.0 (npm).
    TypeScript,
    /// `agent-client-protocol` 0.12.1 (PyPI).
    Python,
    /// `agent-client-protocol` 5.2.0 (crates.io).
    Rust,
}

/// The v1 `session/update` kinds the Python SDK 0.12.1 knows (it is generated from schema
/// 1.19.0, which has no `notice` and no compaction updates). Its client drops the others.
const PYTHON_UPDATE_KINDS: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
];

impl Sdk {
    /// Every SDK.
    pub const ALL: [Sdk; 4] = [Sdk::Ours, Sdk::TypeScript, Sdk::Python, Sdk::Rust];

    /// Short name used in cell names.
    pub fn name(self) -> &'static str {
        match self {
            Sdk::Ours => "ours",
            Sdk::TypeScript => "ts",
            Sdk::Python => "py",
            Sdk::Rust => "rust",
        }
    }

    /// Whether its peers need only Rust (no npm or PyPI install).
    pub fn is_rust(self) -> bool {
        matches!(self, Sdk::Ours | Sdk::Rust)
    }

    /// Whether its schema knows this `session/update` kind.
    pub fn knows_update(self, kind: &str) -> bool {
        match self {
            Sdk::Python => PYTHON_UPDATE_KINDS.contains(&kind),
            Sdk::Ours | Sdk::TypeScript | Sdk::Rust => script().update_kinds().contains(&kind),
        }
    }

    /// Whether its client can advertise `session.notices` and `session.compaction` (the
    /// Python SDK's `ClientSessionCapabilities` has neither field).
    pub fn client_advertises_session_extras(self) -> bool {
        self != Sdk::Python
    }

    /// Whether its client can withdraw a request with `$/cancel_request` (Python cannot).
    pub fn client_sends_cancel_request(self) -> bool {
        self != Sdk::Python
    }

    /// Whether its agent acts on `$/cancel_request` (Python logs "method not found" and
    /// finishes the request normally).
    pub fn agent_honours_cancel_request(self) -> bool {
        self != Sdk::Python
    }
}

/// The result of one assertion.
#[derive(Clone, Debug)]
pub struct Check {
    /// Short name (stable, used in summaries).
    pub name: &'static str,
    /// Whether it held.
    pub ok: bool,
    /// What was seen (always filled, so a passing cell still says what it checked).
    pub detail: String,
}

impl Check {
    pub(crate) fn new(name: &'static str, problems: Vec<String>, seen: String) -> Check {
        Check {
            name,
            ok: problems.is_empty(),
            detail: if problems.is_empty() {
                seen
            } else {
                problems.join("; ")
            },
        }
    }
}

/// Everything a cell produced.
#[derive(Debug)]
pub struct CellRun<'a> {
    /// The client's SDK.
    pub client: Sdk,
    /// The agent's SDK.
    pub agent: Sdk,
    /// The wire transcript.
    pub wire: &'a Wire,
    /// The client's events (its stdout).
    pub client_events: &'a [Value],
    /// The agent's report.
    pub agent_events: &'a [Value],
    /// The client's exit code (`None`: killed or timed out).
    pub client_exit: Option<i32>,
    /// The agent's exit code as the tap saw it (`None`: unknown, e.g. the tap was killed).
    pub agent_exit: Option<i32>,
    /// Whether a server between the two ends the agent process with SIGKILL when the
    /// connection ends (the official `agent-client-protocol-http` server: its `AcpAgent` is
    /// dropped, which kills the process group), so no exit code can be seen.
    pub agent_killed_by_server: bool,
    /// The cell's workspace directory.
    pub workspace: &'a Path,
}

/// The wire messages of our deliberate bad calls (exempt from schema validation: they
/// are invalid on purpose), plain or, on the hops of a proxy chain, wrapped in
/// `proxy/successor`.
pub fn bad_call_messages(wire: &Wire) -> Vec<&Message> {
    let sc = script();
    let is_bad_call = |method: Option<&str>, params: &Value| match method {
        Some(method) if method == sc.unknown_method => true,
        Some("session/prompt") => params["prompt"].is_string(),
        Some("fs/read_text_file") => params.get("path").is_none(),
        _ => false,
    };
    wire.messages
        .iter()
        .filter(|m| match m.method() {
            Some("proxy/successor") => {
                let wrapped = m.params();
                is_bad_call(wrapped["method"].as_str(), &wrapped["params"])
            }
            method => is_bad_call(method, m.params()),
        })
        .collect()
}

pub(super) fn prompt_of<'a>(wire: &'a Wire, text: &str) -> Option<&'a Message> {
    wire.requests(Side::Client, "session/prompt").find(|m| {
        m.params()["prompt"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["text"] == text))
    })
}

pub(super) fn kinds_of<'a>(updates: impl Iterator<Item = &'a Value>) -> Vec<String> {
    updates
        .filter_map(|u| u["sessionUpdate"].as_str().map(str::to_owned))
        .collect()
}
