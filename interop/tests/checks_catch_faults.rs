//! The matrix's checks must fail when the wire is wrong, not only pass when it is right.
//!
//! One real cell (our client against our agent, through the tap) is recorded once; each case
//! then breaks its transcript or its events in one way a faulty peer could (an update lost, a
//! wrong error code, a missing cancellation, a reused id, ...) and the check that owns that
//! fault must fail on it. The unbroken recording must pass every check, so a failure below is
//! the fault's doing.

use std::path::{Path, PathBuf};

use acp_interop::checks::{self, CellRun, Check, Sdk};
use acp_interop::matrix::{Cell, Peers, Speaks, run_cell};
use acp_interop::tap::{Record, Side};
use acp_interop::transcript::{Wire, read_events};
use serde_json::Value;

/// A recorded cell, decoded into what its checks read.
struct Recording {
    /// Whether the cell settled on v2 (its checks are `checks::v2`'s).
    v2: bool,
    records: Vec<Record>,
    client_events: Vec<Value>,
    agent_events: Vec<Value>,
    workspace: PathBuf,
    dir: PathBuf,
}

impl Recording {
    fn take() -> Recording {
        Recording::take_cell(Cell::stdio(Sdk::Ours, Sdk::Ours))
    }

    fn take_cell(cell: Cell) -> Recording {
        let peers = Peers {
            exe: PathBuf::from(env!("CARGO_BIN_EXE_acp-interop")),
            installed: None,
        };
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("interop-faults")
            .join(cell.name());
        let outcome = run_cell(cell, &peers, &dir);
        assert!(
            outcome.passed(),
            "the recording itself failed; see {}",
            dir.display()
        );
        let text = std::fs::read_to_string(dir.join("wire.jsonl")).expect("the tap wrote a wire");
        let records = text
            .lines()
            .filter_map(|l| Record::parse(l).expect("a tap record"))
            .collect();
        Recording {
            v2: cell.speaks.settles() == 2,
            records,
            client_events: read_events(&dir.join("client.stdout.jsonl")),
            agent_events: read_events(&dir.join("agent.report.jsonl")),
            workspace: std::fs::canonicalize(dir.join("workspace")).expect("the workspace"),
            dir,
        }
    }

    /// The checks of this recording after `fault` changed its records and events.
    fn checks_with(&self, fault: impl FnOnce(&mut Vec<Record>, &mut Vec<Value>)) -> Vec<Check> {
        self.checks_of(false, fault)
    }

    /// The same, as if a server in front of the agent had killed it at the connection's end
    /// (`agent_killed_by_server`).
    fn checks_of(
        &self,
        agent_killed_by_server: bool,
        fault: impl FnOnce(&mut Vec<Record>, &mut Vec<Value>),
    ) -> Vec<Check> {
        let mut records = self.records.clone();
        let mut client_events = self.client_events.clone();
        fault(&mut records, &mut client_events);
        let wire = wire_of(&self.dir, &records);
        let run = if self.v2 {
            checks::v2::run
        } else {
            checks::run
        };
        run(&CellRun {
            client: Sdk::Ours,
            agent: Sdk::Ours,
            wire: &wire,
            client_events: &client_events,
            agent_events: &self.agent_events,
            client_exit: Some(0),
            agent_exit: Some(0),
            agent_killed_by_server,
            workspace: &self.workspace,
        })
    }
}

fn wire_of(dir: &Path, records: &[Record]) -> Wire {
    let path = dir.join("faulty-wire.jsonl");
    let text: String = records
        .iter()
        .map(|r| r.to_wire().to_json() + "\n")
        .collect();
    std::fs::write(&path, text).expect("the faulty wire is written");
    Wire::read(&path).expect("the faulty wire reads back")
}

fn json(record: &Record) -> Value {
    serde_json::from_str(&record.line).unwrap_or(Value::Null)
}

/// The index of the first record whose JSON satisfies `pred`.
fn find(records: &[Record], pred: impl Fn(&Value) -> bool) -> usize {
    records
        .iter()
        .position(|r| pred(&json(r)))
        .expect("the recording has such a line")
}

fn edit(record: &mut Record, change: impl FnOnce(&mut Value)) {
    let mut value = json(record);
    change(&mut value);
    record.line = value.to_string();
}

fn failed(checks: &[Check]) -> Vec<&'static str> {
    checks.iter().filter(|c| !c.ok).map(|c| c.name).collect()
}

fn assert_caught(checks: &[Check], name: &str, fault: &str) {
    let failed = failed(checks);
    assert!(
        failed.contains(&name),
        "{fault}: the `{name}` check should fail, failed: {failed:?}"
    );
}

#[test]
fn every_check_catches_its_fault() {
    let rec = Recording::take();
    let clean = rec.checks_with(|_, _| {});
    assert!(
        failed(&clean).is_empty(),
        "the unbroken recording failed {:?}",
        failed(&clean)
    );

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["jsonrpc"] == "2.0");
        edit(&mut records[i], |j| {
            j.as_object_mut().unwrap().remove("jsonrpc");
        });
    });
    assert_caught(&checks, "framing", "a line without \"jsonrpc\"");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["result"]["stopReason"] == "end_turn");
        let copy = records[i].clone();
        records.insert(i + 1, copy);
    });
    assert_caught(
        &checks,
        "one-response-per-request",
        "a request answered twice",
    );

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["result"]["protocolVersion"] == 1);
        edit(&mut records[i], |j| {
            j["result"]["protocolVersion"] = 2.into()
        });
    });
    assert_caught(&checks, "handshake", "initialize answered with version 2");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| {
            j["method"] == "session/prompt" && j["params"]["prompt"].as_array().is_some()
        });
        edit(&mut records[i], |j| {
            j["params"]["prompt"].as_array_mut().unwrap().pop();
        });
    });
    assert_caught(&checks, "prompt-blocks", "the resource block left out");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| {
            j["params"]["update"]["sessionUpdate"] == "plan"
        });
        records.remove(i);
    });
    assert_caught(&checks, "updates-sent", "the plan never sent");
    assert_caught(&checks, "updates-delivered", "a plan received but not sent");

    let checks = rec.checks_with(|_, events| {
        let i = events
            .iter()
            .position(|e| e["event"] == "update" && e["update"]["sessionUpdate"] == "tool_call")
            .expect("the client received a tool call");
        events.remove(i);
    });
    assert_caught(
        &checks,
        "updates-delivered",
        "a tool call dropped by the client",
    );

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| {
            j["result"]["outcome"]["outcome"] == "cancelled"
        });
        edit(&mut records[i], |j| {
            j["result"]["outcome"] =
                serde_json::json!({"outcome": "selected", "optionId": "allow-once"});
        });
    });
    assert_caught(&checks, "permissions", "no cancelled permission outcome");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["result"]["content"].is_string());
        edit(&mut records[i], |j| j["result"]["content"] = "other".into());
    });
    assert_caught(&checks, "fs", "fs/read_text_file returned other content");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["method"] == "terminal/release");
        records.remove(i);
    });
    assert_caught(&checks, "terminal", "no terminal/release");

    let checks = rec.checks_with(|records, _| {
        // The agent's answer to the client's unknown-method bad call.
        let i = records
            .iter()
            .position(|r| r.from == Side::Agent && json(r)["error"]["code"] == -32601)
            .expect("the agent answered the unknown method");
        edit(&mut records[i], |j| j["error"]["code"] = (-32603).into());
    });
    assert_caught(
        &checks,
        "errors-from-agent",
        "unknown method answered -32603",
    );

    let checks = rec.checks_with(|records, _| {
        let i = records
            .iter()
            .position(|r| r.from == Side::Client && json(r)["error"]["code"] == -32602)
            .expect("the client answered the invalid params");
        edit(&mut records[i], |j| j["error"]["code"] = (-32600).into());
    });
    assert_caught(
        &checks,
        "errors-from-client",
        "invalid params answered -32600",
    );

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["method"] == "session/cancel");
        records.remove(i);
    });
    assert_caught(&checks, "session-cancel", "no session/cancel");

    // Every one of them: under load a recording may hold more than the third prompt's (a
    // client also withdraws a request it stopped waiting for), and removing only the first
    // would leave the one the check looks for.
    let checks = rec.checks_with(|records, _| {
        find(records, |j| j["method"] == "$/cancel_request");
        records.retain(|r| json(r)["method"] != "$/cancel_request");
    });
    assert_caught(&checks, "cancel-request", "no $/cancel_request");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["error"]["code"] == -32800);
        edit(&mut records[i], |j| {
            j.as_object_mut().unwrap().remove("error");
            j["result"] = serde_json::json!({"stopReason": "end_turn"});
        });
    });
    assert_caught(
        &checks,
        "cancel-request",
        "a withdrawn prompt answered end_turn",
    );

    // The -32800 never written: a fault of the agent, unless a server killed the agent at
    // the connection's end before it could write it (its report says it cancelled the turn).
    let unanswered = |records: &mut Vec<Record>, _: &mut Vec<Value>| {
        let i = find(records, |j| j["error"]["code"] == -32800);
        records.remove(i);
    };
    assert_caught(
        &rec.checks_with(unanswered),
        "cancel-request",
        "a withdrawn prompt never answered",
    );
    let killed = rec.checks_of(true, unanswered);
    assert!(
        !failed(&killed).contains(&"cancel-request"),
        "an agent killed by its server before answering the withdrawn prompt: {killed:?}"
    );

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["method"] == "session/load");
        let replayed = records[i + 1..]
            .iter()
            .position(|r| json(r)["method"] == "session/update")
            .expect("the history is replayed");
        records.remove(i + 1 + replayed);
    });
    assert_caught(&checks, "session-load", "one history update not replayed");

    let _ = std::fs::remove_dir_all(&rec.dir);
}

#[test]
fn every_v2_check_catches_its_fault() {
    let rec = Recording::take_cell(Cell::speaking(Sdk::Ours, Sdk::Ours, Speaks::V2));
    let clean = rec.checks_with(|_, _| {});
    assert!(
        failed(&clean).is_empty(),
        "the unbroken v2 recording failed {:?}",
        failed(&clean)
    );

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["result"]["protocolVersion"] == 2);
        edit(&mut records[i], |j| {
            j["result"]["protocolVersion"] = 1.into()
        });
    });
    assert_caught(&checks, "handshake", "initialize answered 1");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| {
            j["params"]["update"]["sessionUpdate"] == "plan_update"
        });
        records.remove(i);
    });
    assert_caught(&checks, "turn", "an update lost on the wire");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["result"]["messageId"].is_string());
        edit(&mut records[i], |j| {
            j["result"]["messageId"] = "another".into()
        });
    });
    assert_caught(
        &checks,
        "turn",
        "the prompt answered with another message id",
    );

    let checks = rec.checks_with(|_, events| {
        events.retain(|e| e["event"] != "stop");
    });
    assert_caught(&checks, "turn", "the client never saw the idle state");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["result"]["outcome"]["outcome"] == "selected");
        edit(&mut records[i], |j| {
            j["result"]["outcome"] = serde_json::json!({"outcome": "cancelled"});
        });
    });
    assert_caught(&checks, "permission", "the permission answered cancelled");

    let checks = rec.checks_with(|records, _| {
        let i = find(records, |j| j["method"] == "session/request_permission");
        edit(&mut records[i], |j| {
            j["params"]["title"] = "something else".into()
        });
    });
    assert_caught(
        &checks,
        "permission",
        "the permission request's title changed",
    );
}
