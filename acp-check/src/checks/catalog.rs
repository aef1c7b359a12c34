//! The catalogue: every check's name and what passing it means, in the order a run reports
//! them (what `acp check --list` prints and `--only`/`--skip` take).

use crate::options::Options;

/// A check's name and what passing it means.
#[derive(Clone, Copy, Debug)]
pub struct CheckInfo {
    /// `group.name`, as `--only` and `--skip` take it.
    pub name: &'static str,
    /// What the agent must do to pass.
    pub meaning: &'static str,
}

/// Written here rather than beside the other options, so that the options do not depend
/// on the checks that read them.
impl Options {
    /// Checks that every name in `only` and `skip` names a check or a group.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(version) = self.protocol
            && !matches!(version, 1 | 2)
        {
            return Err(format!(
                "protocol version {version}: acp check grades versions 1 and 2"
            ));
        }
        for name in self.only.iter().chain(&self.skip) {
            if !CHECKS.iter().any(|c| crate::options::matches(name, c.name)) {
                return Err(format!(
                    "no check or group is named `{name}` (`acp check --list` shows them)"
                ));
            }
        }
        match self.protocol {
            Some(protocol) => self.selects_some(protocol),
            None => Ok(()),
        }
    }

    /// Checks that `--only` leaves at least one check of a `protocol` run, so that a run
    /// grading nothing cannot pass: `--only handshake` names v1's handshake checks, and a
    /// v2 run (whose are `v2.handshake.*`) would otherwise report 0 passed, 0 failed.
    pub(crate) fn selects_some(&self, protocol: u16) -> Result<(), String> {
        if self.only.is_empty()
            || CHECKS
                .iter()
                .any(|c| c.graded_on(protocol) && self.selected(c.name))
        {
            return Ok(());
        }
        let (named, other) = if protocol == 2 {
            ("`v2.<group>` (`--only v2.handshake`)", 1)
        } else {
            ("without the `v2.` prefix (`--only handshake`)", 2)
        };
        Err(format!(
            "`--only {}` selects no check of a protocol {protocol} run: its checks are named \
             {named}, see `acp check --list`; or pin the other version with `--protocol {other}`",
            self.only.join(",")
        ))
    }
}

impl CheckInfo {
    /// Whether a run on protocol version `protocol` grades this check: the `v2.*` checks on
    /// v2, the JSON-RPC, schema and timing ones on both, the rest on v1.
    pub fn graded_on(&self, protocol: u16) -> bool {
        applies(self.name, protocol)
    }
}

/// The checks a run of either version grades: JSON-RPC rules any peer keeps, the schema of
/// the version graded, and the handshake's and a round trip's timing.
const SHARED: &[&str] = &[
    "robustness.unknown_method",
    "robustness.invalid_params",
    "robustness.malformed_line",
    "robustness.stdout_protocol_only",
    "schema.agent_messages",
    "timing.handshake",
    "timing.session_new",
    "timing.round_trip",
];

/// Whether the check named `name` is graded on protocol version `protocol`: `v2.*` on v2,
/// the shared ones on both, the rest on v1.
pub(crate) fn applies(name: &str, protocol: u16) -> bool {
    if SHARED.contains(&name) {
        return true;
    }
    name.starts_with("v2.") == (protocol == 2)
}

/// Every check, in the order a run reports them.
pub const CHECKS: &[CheckInfo] = &[
    CheckInfo {
        name: "handshake.initialize",
        meaning: "`initialize` is answered with protocol version 1 (the version the kit speaks)",
    },
    CheckInfo {
        name: "handshake.unsupported_version",
        meaning: "an `initialize` offering a version the agent cannot speak is answered with the agent's latest version, not an error or silence",
    },
    CheckInfo {
        name: "handshake.auth_methods",
        meaning: "every advertised `authMethods` entry has a non-empty id (unique) and a name",
    },
    CheckInfo {
        name: "handshake.auth_required",
        meaning: "an agent advertising authentication refuses what needs it before `authenticate` with -32000 (or allows it)",
    },
    CheckInfo {
        name: "sessions.new",
        meaning: "`session/new` is answered with a non-empty session id",
    },
    CheckInfo {
        name: "prompt.session_ids",
        meaning: "every `session/update` of turn content during a turn belongs to the prompt's session; session metadata for another session of the connection may come at any time",
    },
    CheckInfo {
        name: "prompt.no_late_updates",
        meaning: "no turn content (message, thought and user chunks, tool calls and their updates, plans) arrives after the turn's answer; session metadata (commands, title, mode, config options, usage) may arrive at any time",
    },
    CheckInfo {
        name: "prompt.stop_reason",
        meaning: "the turn ends with a stop reason from the protocol's set",
    },
    CheckInfo {
        name: "prompt.tool_call_ids",
        meaning: "tool call ids are unique per session and every `tool_call_update` names one a `tool_call` started or a `session/request_permission` asked about",
    },
    CheckInfo {
        name: "sessions.separate",
        meaning: "two sessions in one connection get different ids and a turn in one sends no update to the other",
    },
    CheckInfo {
        name: "sessions.unknown_id",
        meaning: "a prompt for a session id the agent never gave is refused with an error (-32002 preferred)",
    },
    CheckInfo {
        name: "capabilities.prompt_content",
        meaning: "every advertised prompt content kind (image, audio, embedded resource) is accepted in a prompt",
    },
    CheckInfo {
        name: "capabilities.modes",
        meaning: "every mode `session/new` offers can be set with `session/set_mode`",
    },
    CheckInfo {
        name: "capabilities.config_options",
        meaning: "every select option `session/new` offers accepts its current value with `session/set_config_option`",
    },
    CheckInfo {
        name: "capabilities.session_methods",
        meaning: "advertised `session/list`, `session/resume` and `session/close` answer with a result",
    },
    CheckInfo {
        name: "capabilities.mcp",
        meaning: "a `session/new` with an MCP server of an advertised transport (http, sse) is not refused as invalid",
    },
    CheckInfo {
        name: "sessions.load",
        meaning: "with `loadSession`: `session/load` replays the history before its answer and no turn content after it (session metadata may arrive at any time)",
    },
    CheckInfo {
        name: "cancel.session_cancel",
        meaning: "`session/cancel` during a turn (its permission requests answered `cancelled`) ends it with `cancelled` within the bound",
    },
    CheckInfo {
        name: "cancel.cancel_request",
        meaning: "`$/cancel_request` for a running prompt gets the request answered within the bound, with -32800 or its normal result (skipped when the agent does not implement it: the prompt ends only at the `session/cancel` that follows; a hang fails)",
    },
    CheckInfo {
        name: "v2.handshake.initialize",
        meaning: "v2: `initialize` offering 2 is answered with protocolVersion 2 and the agent's `info` (a name and a version)",
    },
    CheckInfo {
        name: "v2.handshake.unsupported_version",
        meaning: "v2: an `initialize` offering a later version (65535, in v2's shape) is answered with the agent's latest version, not an error or silence",
    },
    CheckInfo {
        name: "v2.sessions.new",
        meaning: "v2: `session/new` is answered with a non-empty session id",
    },
    CheckInfo {
        name: "v2.prompt.inserted",
        meaning: "v2: `session/prompt` is answered with the `messageId` of the inserted user message, and the agent echoes that message (`user_message` or its chunks, with that id) in the live session",
    },
    CheckInfo {
        name: "v2.prompt.session_ids",
        meaning: "v2: every `session/update` during a prompt's work names the prompt's session or another session of the connection",
    },
    CheckInfo {
        name: "v2.state.lifecycle",
        meaning: "v2: a prompt's work is reported with `state_update`s: `running` (or `requires_action`) before the `idle` that ends it, within the turn bound",
    },
    CheckInfo {
        name: "v2.state.stop_reason",
        meaning: "v2: the `idle` that ends a prompt's work carries a stop reason from the protocol's set (or a `_`-prefixed custom one)",
    },
    CheckInfo {
        name: "v2.upserts.ids",
        meaning: "v2: a message id belongs to one role, and tool-call content chunks and permission subjects name a tool call a `tool_call_update` announced (a `tool_call_update` for an unseen id is an upsert that creates it, which the schema allows)",
    },
    CheckInfo {
        name: "v2.upserts.patches",
        meaning: "v2: folded by the client's reducer (the schema's upsert, patch and append rules), the user message the prompt's answer names holds the prompt's text",
    },
    CheckInfo {
        name: "v2.extension.custom_values",
        meaning: "v2: a prompt holding a content block of a `_`-prefixed custom type (the schema keeps custom values) is not refused as invalid, and the agent's echo of the user message keeps the block as sent",
    },
    CheckInfo {
        name: "v2.prompt.idempotency",
        meaning: "v2: a `session/prompt` sent again with the same `idempotencyKey` gets the first attempt's `messageId` and starts no second turn (required of agents that advertise `capabilities.session`; skipped for others)",
    },
    CheckInfo {
        name: "v2.sessions.list",
        meaning: "v2: `session/list` (its `nextCursor` followed) names the session the kit made, with the `cwd` it was made in (required of agents that advertise `capabilities.session`; skipped for others)",
    },
    CheckInfo {
        name: "v2.sessions.resume",
        meaning: "v2: `session/resume` of a live session, in its `cwd`, is answered with a result (required of agents that advertise `capabilities.session`; skipped for others)",
    },
    CheckInfo {
        name: "v2.sessions.close",
        meaning: "v2: `session/close` is answered, and a `session/prompt` to the closed session is then refused with an error (required of agents that advertise `capabilities.session`; skipped for others)",
    },
    CheckInfo {
        name: "v2.sessions.mcp",
        meaning: "v2: a `session/new` with an MCP server of each advertised transport (`http`: one at an unused loopback port; `stdio`: the run's `--mcp-config` servers) is not refused as invalid (skipped when there is none to try)",
    },
    CheckInfo {
        name: "v2.cancel.session_cancel",
        meaning: "v2: `session/cancel` during a prompt's work (its permission requests answered `cancelled`) ends it with an `idle` of stop reason `cancelled` within the bound (skipped when the work ended before the cancel)",
    },
    CheckInfo {
        name: "v2.cancel.tool_call",
        meaning: "v2: `tool_call/cancel` of a tool call the session never had is refused with -32602 (the schema's answer for an unknown tool call; -32601 passes from an agent none of whose tool calls advertised `capabilities.cancel`), not accepted",
    },
    CheckInfo {
        name: "robustness.unknown_method",
        meaning: "an unknown method is answered with -32601",
    },
    CheckInfo {
        name: "robustness.invalid_params",
        meaning: "a known method with wrong params is answered with -32602",
    },
    CheckInfo {
        name: "robustness.malformed_line",
        meaning: "a line that is not JSON is answered with -32700 and id null, and the agent keeps serving",
    },
    CheckInfo {
        name: "robustness.stdout_protocol_only",
        meaning: "every line the agent writes to stdout is a JSON-RPC message (logs belong on stderr)",
    },
    CheckInfo {
        name: "capabilities.offered_only",
        meaning: "the agent calls no fs or terminal method the client did not offer, also in a turn of its own that asks it to write a file (the prompt script's `write`) on an agent offered no fs write",
    },
    CheckInfo {
        name: "prompt.no_early_updates",
        meaning: "no turn content for a session arrives before the answer that created it (session metadata may arrive at any time)",
    },
    CheckInfo {
        name: "schema.agent_messages",
        meaning: "every message the agent sends reads as the version graded (acp-types, generated from acp-schema's v1 or v2 schema)",
    },
    CheckInfo {
        name: "timing.handshake",
        meaning: "`initialize` is answered within the bound (default 2 s)",
    },
    CheckInfo {
        name: "timing.session_new",
        meaning: "`session/new` is answered within the bound (default 2 s)",
    },
    CheckInfo {
        name: "timing.round_trip",
        meaning: "a request the agent can answer at once takes less than the bound (default 500 ms, median of 3)",
    },
    CheckInfo {
        name: "timing.fs_read_1mb",
        meaning: "a 1 MB `fs/read_text_file` is taken in within the bound (default 1 s): from the agent's request to its next message after the answer",
    },
    CheckInfo {
        name: "timing.fs_write_1mb",
        meaning: "a 1 MB `fs/write_text_file` completes within the bound (default 2 s): from the agent's request to its next message after the answer",
    },
];
