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
        for name in self.only.iter().chain(&self.skip) {
            if !CHECKS.iter().any(|c| crate::options::matches(name, c.name)) {
                return Err(format!(
                    "no check or group is named `{name}` (`acp check --list` shows them)"
                ));
            }
        }
        Ok(())
    }
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
        meaning: "every message the agent sends reads as ACP v1 (acp-types, generated from acp-schema's v1 schema)",
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
