//! The deliberate bad calls, answered with the right codes by either side.

use serde_json::Value;

use crate::script::script;
use crate::tap::Side;
use crate::transcript::events;

use super::cell::{CellRun, Check, bad_call_messages};

/// A bad call on the wire answered with `code`, and the caller reporting that code.
fn bad_call_check(
    cell: &CellRun<'_>,
    name: &'static str,
    caller: Side,
    reported: &[Value],
    bad_calls: [(&str, &str, i64); 2],
) -> Check {
    let wire_bad_calls = bad_call_messages(cell.wire);
    let mut problems = Vec::new();
    for (bad_call, method, code) in bad_calls {
        let answered = wire_bad_calls
            .iter()
            .filter(|m| m.from == caller && m.method() == Some(method))
            .filter_map(|m| cell.wire.response_to(m))
            .any(|r| r.error_code() == Some(code));
        if !answered {
            problems.push(format!("{method} was not answered with {code} on the wire"));
        }
        let seen =
            events(reported, "error").any(|e| e["bad_call"] == bad_call && e["code"] == code);
        if !seen {
            problems.push(format!("the {caller} did not see {code} for {bad_call}"));
        }
    }
    Check::new(
        name,
        problems,
        format!(
            "-32601 and -32602 answered by the {} and seen by the {caller}",
            caller.other()
        ),
    )
}

pub(super) fn errors_from_agent(cell: &CellRun<'_>) -> Check {
    bad_call_check(
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
    bad_call_check(
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
