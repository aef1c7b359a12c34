//! What the agent asks of the client: permission, files and a terminal.

use serde_json::Value;

use crate::script::script;
use crate::tap::Side;
use crate::transcript::{Kind, events};

use super::cell::{CellRun, Check};

pub(super) fn permissions(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let outcomes: Vec<Value> = cell
        .wire
        .requests(Side::Agent, "session/request_permission")
        .filter_map(|r| cell.wire.response_to(r))
        .map(|r| r.result()["outcome"].clone())
        .collect();
    let has = |outcomes: &[Value], outcome: &str, option: Option<&str>| {
        outcomes
            .iter()
            .any(|o| o["outcome"] == outcome && option.is_none_or(|id| o["optionId"] == id))
    };
    let reported: Vec<Value> = events(cell.agent_events, "permission")
        .map(|e| e["outcome"].clone())
        .collect();
    for (outcome, option) in [
        ("selected", Some("allow-once")),
        ("selected", Some("reject-once")),
        ("cancelled", None),
    ] {
        let what = option.map_or(outcome.to_owned(), |o| format!("{outcome} {o}"));
        if !has(&outcomes, outcome, option) {
            problems.push(format!("no `{what}` answer on the wire"));
        }
        if !has(&reported, outcome, option) {
            problems.push(format!("the agent never saw `{what}`"));
        }
    }
    Check::new(
        "permissions",
        problems,
        "selected allow-once, selected reject-once and cancelled: answered and seen".into(),
    )
}

pub(super) fn files(cell: &CellRun<'_>) -> Check {
    let sc = script();
    let mut problems = Vec::new();
    let read = cell
        .wire
        .requests(Side::Agent, "fs/read_text_file")
        .filter_map(|r| cell.wire.response_to(r))
        .find(|r| r.result().get("content").is_some());
    if read.map(|r| &r.result()["content"])
        != Some(&Value::from(sc.workspace.read_content.as_str()))
    {
        problems.push("fs/read_text_file did not return hello.txt".into());
    }
    let written = cell
        .wire
        .requests(Side::Agent, "fs/write_text_file")
        .filter_map(|r| cell.wire.response_to(r))
        .any(|r| matches!(r.kind, Kind::Result { .. }));
    if !written {
        problems.push("fs/write_text_file did not succeed".into());
    }
    let expected = format!("{}{}", sc.workspace.write_prefix, sc.workspace.read_content);
    match std::fs::read_to_string(cell.workspace.join(&sc.workspace.write_file)) {
        Ok(on_disk) if on_disk == expected => {}
        Ok(on_disk) => problems.push(format!("the written file holds {on_disk:?}")),
        Err(e) => problems.push(format!("the written file is missing: {e}")),
    }
    Check::new(
        "fs",
        problems,
        "read hello.txt, wrote the file, its content is on disk".into(),
    )
}

pub(super) fn terminal(cell: &CellRun<'_>) -> Check {
    let sc = script();
    let mut problems = Vec::new();
    for method in [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ] {
        let ok = cell
            .wire
            .requests(Side::Agent, method)
            .filter_map(|r| cell.wire.response_to(r))
            .any(|r| matches!(r.kind, Kind::Result { .. }));
        if !ok {
            problems.push(format!("no successful {method}"));
        }
    }
    let output = cell
        .wire
        .requests(Side::Agent, "terminal/output")
        .filter_map(|r| cell.wire.response_to(r))
        .any(|r| {
            r.result()["output"]
                .as_str()
                .is_some_and(|o| o.contains(&sc.terminal.expect))
        });
    if !output {
        problems.push("terminal/output did not contain the command's output".into());
    }
    let reported = events(cell.agent_events, "terminal").any(|e| {
        e["output"]
            .as_str()
            .is_some_and(|o| o.contains(&sc.terminal.expect))
            && e["exitCode"] == 0
    });
    if !reported {
        problems.push("the agent did not see the output and exit code 0".into());
    }
    Check::new(
        "terminal",
        problems,
        "create, wait_for_exit, output, release; output and exit 0 seen".into(),
    )
}
