//! The assertions of a cell, made on what crossed the wire (the tap's transcript) and on what
//! each side says it received (the client's events, the agent's report), never on exit codes
//! alone. Where the official SDKs differ from each other (a missing `$/cancel_request`, update
//! kinds an older schema lacks), the expectation is per SDK ([`Sdk`]) and documented there.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::script::script;
use crate::tap::Side;
use crate::transcript::{Kind, Message, Wire, events};

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
    fn new(name: &'static str, problems: Vec<String>, seen: String) -> Check {
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

/// The wire messages of our deliberate error probes (exempt from schema validation: they
/// are invalid on purpose), plain or, on the hops of a proxy chain, wrapped in
/// `proxy/successor`.
pub fn probe_messages(wire: &Wire) -> Vec<&Message> {
    let sc = script();
    let is_probe = |method: Option<&str>, params: &Value| match method {
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
                is_probe(wrapped["method"].as_str(), &wrapped["params"])
            }
            method => is_probe(method, m.params()),
        })
        .collect()
}

fn prompt_of<'a>(wire: &'a Wire, text: &str) -> Option<&'a Message> {
    wire.requests(Side::Client, "session/prompt").find(|m| {
        m.params()["prompt"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["text"] == text))
    })
}

fn kinds_of<'a>(updates: impl Iterator<Item = &'a Value>) -> Vec<String> {
    updates
        .filter_map(|u| u["sessionUpdate"].as_str().map(str::to_owned))
        .collect()
}

/// Runs every assertion of a cell.
pub fn run(cell: &CellRun<'_>) -> Vec<Check> {
    vec![
        exits(cell),
        framing(cell),
        one_response_each(cell),
        handshake(cell),
        prompt_blocks(cell),
        updates_sent(cell),
        updates_delivered(cell),
        permissions(cell),
        files(cell),
        terminal(cell),
        errors_from_agent(cell),
        errors_from_client(cell),
        session_cancel(cell),
        cancel_request(cell),
        session_load(cell),
    ]
}

fn exits(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    if cell.client_exit != Some(0) {
        problems.push(format!("client exit {:?}", cell.client_exit));
    }
    if events(cell.client_events, "done").next().is_none() {
        problems.push("the client never reached the end of its script".into());
    }
    let killed = cell.agent_killed_by_server && cell.agent_exit.is_none();
    if cell.agent_exit != Some(0) && !killed {
        problems.push(format!("agent exit {:?}", cell.agent_exit));
    }
    let seen = if killed {
        "client finished its script and exited 0; the server killed the agent at the connection's end"
    } else {
        "client finished its script; both exited 0"
    };
    Check::new("exits", problems, seen.into())
}

fn framing(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    for m in &cell.wire.messages {
        if m.kind == Kind::Invalid || m.json.get("jsonrpc") != Some(&Value::from("2.0")) {
            problems.push(format!(
                "#{} from {}: not a JSON-RPC 2.0 message: {}",
                m.seq, m.from, m.raw
            ));
        }
    }
    if cell.wire.partial > 0 {
        problems.push(format!(
            "{} line(s) without a final newline",
            cell.wire.partial
        ));
    }
    let seen = format!(
        "{} lines, each one JSON-RPC 2.0 object ending in \\n",
        cell.wire.messages.len()
    );
    Check::new("framing", problems, seen)
}

fn one_response_each(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let mut requests = 0;
    let mut unanswered_withdrawn = 0;
    for side in [Side::Client, Side::Agent] {
        let mut ids = BTreeSet::new();
        for m in cell.wire.from(side) {
            match &m.kind {
                Kind::Request { id, method } => {
                    requests += 1;
                    if !ids.insert(id.to_string()) {
                        problems.push(format!("{side} reused request id {id}"));
                    }
                    let n = cell.wire.responses_to(m).len();
                    if n == 0 && withdrawn(cell.wire, m) {
                        // Cancellation is cooperative: a peer that ignores `$/cancel_request`
                        // answers late, and the sender may have hung up by then.
                        unanswered_withdrawn += 1;
                    } else if n != 1 {
                        problems.push(format!("{side}'s {method} (id {id}) got {n} responses"));
                    }
                }
                Kind::Result { .. } | Kind::Error { .. } => {
                    let null_id = m.id() == Some(&Value::Null);
                    if !null_id && cell.wire.request_of(m).is_none() {
                        problems.push(format!("{side} answered an id nobody used: {}", m.raw));
                    }
                }
                _ => {}
            }
        }
    }
    let first_ids: Vec<String> = [Side::Client, Side::Agent]
        .iter()
        .filter_map(|side| {
            cell.wire.from(*side).find_map(|m| {
                matches!(m.kind, Kind::Request { .. }).then(|| {
                    format!(
                        "{side} ids start at {}",
                        m.id().cloned().unwrap_or_default()
                    )
                })
            })
        })
        .collect();
    let late = if unanswered_withdrawn > 0 {
        format!(
            " ({unanswered_withdrawn} withdrawn with $/cancel_request went unanswered before the connection closed)"
        )
    } else {
        String::new()
    };
    let seen = format!(
        "{requests} requests, each answered once{late}, ids unique per direction ({})",
        first_ids.join(", ")
    );
    Check::new("one-response-per-request", problems, seen)
}

/// Whether the sender of `request` withdrew it with `$/cancel_request`.
fn withdrawn(wire: &Wire, request: &Message) -> bool {
    let id = request.id();
    wire.notifications(request.from, "$/cancel_request")
        .any(|c| c.seq > request.seq && Some(&c.params()["requestId"]) == id)
}

fn handshake(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let first = cell.wire.messages.first();
    if first.and_then(Message::method) != Some("initialize")
        || first.map(|m| m.from) != Some(Side::Client)
    {
        problems.push("the first message is not the client's initialize".into());
    }
    let version = first
        .and_then(|init| cell.wire.response_to(init))
        .map(|r| r.result()["protocolVersion"].clone());
    if first.map(|m| &m.params()["protocolVersion"]) != Some(&Value::from(1)) {
        problems.push("initialize did not ask for protocolVersion 1".into());
    }
    if version != Some(Value::from(1)) {
        problems.push(format!("initialize answered protocolVersion {version:?}"));
    }
    let initialized = events(cell.client_events, "initialized").next();
    if initialized.map(|e| &e["protocolVersion"]) != Some(&Value::from(1)) {
        problems.push("the client did not report protocol version 1".into());
    }
    Check::new(
        "handshake",
        problems,
        "initialize: version 1 asked and answered".into(),
    )
}

fn prompt_blocks(cell: &CellRun<'_>) -> Check {
    let sc = script();
    let mut problems = Vec::new();
    let expected = ["text", "image", "resource"];
    match prompt_of(cell.wire, &sc.prompts.work) {
        Some(p) => {
            let blocks: Vec<&str> = p.params()["prompt"]
                .as_array()
                .map(|b| b.iter().filter_map(|b| b["type"].as_str()).collect())
                .unwrap_or_default();
            if blocks != expected {
                problems.push(format!("the first prompt sent blocks {blocks:?}"));
            }
        }
        None => problems.push("no first prompt on the wire".into()),
    }
    let seen = events(cell.agent_events, "prompt")
        .find(|e| e["text"] == sc.prompts.work.as_str())
        .map(|e| e["blocks"].clone());
    if seen != Some(serde_json::json!(expected)) {
        problems.push(format!("the agent saw blocks {seen:?}"));
    }
    Check::new(
        "prompt-blocks",
        problems,
        "text, image and resource blocks sent and seen by the agent".into(),
    )
}

/// The update kinds the agent should send in turn 1, given both SDKs.
fn expected_kinds(cell: &CellRun<'_>) -> Vec<&'static str> {
    let extras = cell.client.client_advertises_session_extras();
    script()
        .update_kinds()
        .into_iter()
        .filter(|k| cell.agent.knows_update(k))
        .filter(|k| extras || !(*k == "notice" || k.starts_with("compaction_")))
        .collect()
}

fn wire_updates(wire: &Wire) -> Vec<&Value> {
    wire.notifications(Side::Agent, "session/update")
        .map(|m| &m.params()["update"])
        .collect()
}

fn updates_sent(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let sent: BTreeSet<String> = kinds_of(wire_updates(cell.wire).into_iter())
        .into_iter()
        .collect();
    let expected = expected_kinds(cell);
    let missing: Vec<&&str> = expected.iter().filter(|k| !sent.contains(**k)).collect();
    if !missing.is_empty() {
        problems.push(format!("never sent: {missing:?}"));
    }
    let unknown: Vec<&String> = sent
        .iter()
        .filter(|k| !cell.client.knows_update(k))
        .collect();
    if !unknown.is_empty() {
        problems.push(format!(
            "sent kinds the {} client cannot know: {unknown:?}",
            cell.client.name()
        ));
    }
    if !cell.client.client_advertises_session_extras()
        && sent
            .iter()
            .any(|k| k == "notice" || k.starts_with("compaction_"))
    {
        problems
            .push("sent notice/compaction updates to a client that did not advertise them".into());
    }
    let seen = format!(
        "{} kinds sent: {}",
        sent.len(),
        sent.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    Check::new("updates-sent", problems, seen)
}

fn updates_delivered(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let on_wire = kinds_of(wire_updates(cell.wire).into_iter());
    let received = kinds_of(events(cell.client_events, "update").map(|e| &e["update"]));
    if on_wire != received {
        let dropped: Vec<&String> = on_wire.iter().filter(|k| !received.contains(k)).collect();
        problems.push(format!(
            "the client received {} of {} updates in a different order or dropped some (missing kinds: {dropped:?})",
            received.len(),
            on_wire.len()
        ));
    }
    let seen = format!(
        "all {} updates on the wire reached the client, in order",
        on_wire.len()
    );
    Check::new("updates-delivered", problems, seen)
}

fn permissions(cell: &CellRun<'_>) -> Check {
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

fn files(cell: &CellRun<'_>) -> Check {
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

fn terminal(cell: &CellRun<'_>) -> Check {
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

fn errors_from_agent(cell: &CellRun<'_>) -> Check {
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

fn errors_from_client(cell: &CellRun<'_>) -> Check {
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

fn session_cancel(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    match prompt_of(cell.wire, &script().prompts.cancel) {
        None => problems.push("no second prompt on the wire".into()),
        Some(prompt) => {
            let answer = cell.wire.response_to(prompt);
            let cancel = cell
                .wire
                .notifications(Side::Client, "session/cancel")
                .find(|c| c.seq > prompt.seq);
            match (cancel, answer) {
                (None, _) => problems.push("no session/cancel after the second prompt".into()),
                (Some(c), Some(a)) if c.seq > a.seq => {
                    problems.push("session/cancel came after the prompt's answer".into())
                }
                _ => {}
            }
            if answer.map(|a| &a.result()["stopReason"]) != Some(&Value::from("cancelled")) {
                problems.push(format!(
                    "the second prompt was answered {:?}",
                    answer.map(|a| &a.raw)
                ));
            }
        }
    }
    let stop = events(cell.client_events, "stop").find(|e| e["turn"] == "2");
    if stop.map(|e| &e["stopReason"]) != Some(&Value::from("cancelled")) {
        problems.push("the client did not see stopReason cancelled".into());
    }
    Check::new(
        "session-cancel",
        problems,
        "session/cancel during the second prompt; it stopped with `cancelled`".into(),
    )
}

fn cancel_request(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    let hold = prompt_of(cell.wire, &script().prompts.hold);
    let cancels: Vec<&Message> = cell
        .wire
        .notifications(Side::Client, "$/cancel_request")
        .collect();
    if !cell.client.client_sends_cancel_request() {
        if hold.is_some() || !cancels.is_empty() {
            problems.push("a client that cannot send $/cancel_request ran the third turn".into());
        }
        let seen = format!(
            "skipped: the {} client cannot send $/cancel_request",
            cell.client.name()
        );
        return Check::new("cancel-request", problems, seen);
    }
    let answer = hold.and_then(|p| cell.wire.response_to(p));
    match hold {
        None => problems.push("no third prompt on the wire".into()),
        Some(prompt) => {
            let id = prompt.id().cloned().unwrap_or_default();
            if !cancels
                .iter()
                .any(|c| c.params()["requestId"] == id && c.seq > prompt.seq)
            {
                problems.push(format!(
                    "no $/cancel_request for the third prompt (id {id})"
                ));
            }
            if cell.agent.agent_honours_cancel_request() {
                // A server that kills its agent at the connection's end (SIGKILL) may do so
                // before the agent writes the -32800 it is about to: the client does not wait
                // for the answer to a request it withdrew. Then the agent's own report that it
                // cancelled the turn (checked below) is the evidence; any other answer fails.
                let cut_short = answer.is_none() && cell.agent_killed_by_server;
                if !cut_short && answer.and_then(Message::error_code) != Some(-32800) {
                    problems.push(format!(
                        "the withdrawn prompt was answered {:?}",
                        answer.map(|a| &a.raw)
                    ));
                }
                if events(cell.agent_events, "request_cancelled")
                    .next()
                    .is_none()
                {
                    problems.push("the agent did not see the cancellation".into());
                }
            } else if let Some(answer) = answer
                && answer.result()["stopReason"] != "end_turn"
            {
                problems.push(format!(
                    "the {} agent ignores $/cancel_request and should end the turn normally (or not at all before the client hangs up); it answered {}",
                    cell.agent.name(),
                    answer.raw
                ));
            }
        }
    }
    if events(cell.client_events, "request_cancelled")
        .next()
        .is_none()
    {
        problems.push("the client did not withdraw the third prompt".into());
    }
    let seen = if cell.agent.agent_honours_cancel_request() {
        if answer.is_none() {
            "$/cancel_request for the third prompt; the agent cancelled it, and the server killed it before its -32800 was written".into()
        } else {
            "$/cancel_request for the third prompt; answered -32800".into()
        }
    } else {
        format!(
            "$/cancel_request sent; the {} agent ignores it ({})",
            cell.agent.name(),
            if answer.is_some() {
                "it answered end_turn"
            } else {
                "no answer before the client hung up"
            }
        )
    };
    Check::new("cancel-request", problems, seen)
}

fn session_load(cell: &CellRun<'_>) -> Check {
    let mut problems = Vec::new();
    match cell.wire.requests(Side::Client, "session/load").next() {
        None => problems.push("no session/load".into()),
        Some(load) => match cell.wire.response_to(load) {
            Some(answer) if matches!(answer.kind, Kind::Result { .. }) => {
                let replayed = kinds_of(
                    cell.wire
                        .notifications(Side::Agent, "session/update")
                        .filter(|u| u.seq > load.seq && u.seq < answer.seq)
                        .map(|u| &u.params()["update"]),
                );
                let history = kinds_of(script().history.iter());
                if replayed != history {
                    problems.push(format!(
                        "replayed {replayed:?} before the answer, expected {history:?}"
                    ));
                }
            }
            other => problems.push(format!("session/load answered {:?}", other.map(|a| &a.raw))),
        },
    }
    let received = kinds_of(
        events(cell.client_events, "update")
            .filter(|e| e["turn"] == "load")
            .map(|e| &e["update"]),
    );
    if received != kinds_of(script().history.iter()) {
        problems.push(format!("the client received {received:?} during the load"));
    }
    Check::new(
        "session-load",
        problems,
        "history replayed before the load answer and received".into(),
    )
}
