//! The deliberate error probes, answered with the right codes by either side.

use serde_json::Value;

use crate::script::script;
use crate::tap::Side;
use crate::transcript::events;

use super::cell::{CellRun, Check, probe_messages};

/// A probe on the wire answered with `code`, and the prober reporting that code.
fn probe_check(
    cell: &CellRun<'_>,
    name: &'static str,
    prober: Side,
    reported: &[Value],
    probes: [(&str, &str, i64); 2],
) -> Check {
    let wire_probes = probe_messages(cell.wire);
    let mut problems = Vec::new();
    for (probe, method, code) in probes {
        let answered = wire_probes
            .iter()
            .filter(|m| m.from == prober && m.method() == Some(method))
            .filter_map(|m| cell.wire.response_to(m))
            .any(|r| r.error_code() == Some(code));
        if !answered {
            problems.push(format!("{method} was not answered with {code} on the wire"));
        }
        let seen = events(reported, "error").any(|e| e["probe"] == probe && e["code"] == code);
        if !seen {
            problems.push(format!("the {prober} did not see {code} for {probe}"));
        }
    }
    Check::new(
        name,
        problems,
        format!(
            "-32601 and -32602 answered by the {} and seen by the {prober}",
            prober.other()
        ),
    )
}

pub(super) fn errors_from_agent(cell: &CellRun<'_>) -> Check {
    probe_check(
        cell,
        "errors-from-agent",
        Side::Client,
        cell.client_events,
        [
            ("unknown_method", &script().unknown_method, -32601),
            ("invalid_params", "session/prompt", -32602),
        ],
    )
}

pub(super) fn errors_from_client(cell: &CellRun<'_>) -> Check {
    probe_check(
        cell,
        "errors-from-client",
        Side::Agent,
        cell.agent_events,
        [
            ("unknown_method", &script().unknown_method, -32601),
            ("invalid_params", "fs/read_text_file", -32602),
        ],
    )
}
