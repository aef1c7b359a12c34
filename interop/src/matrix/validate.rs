//! Validating the cells' transcripts against the official JSON Schema read from the installed
//! npm package (`peers/ts/validate.mjs`): a self-test transcript per mode first, so a
//! validator that accepts anything cannot pass the cells; then every cell's wire (and each
//! proxy hop of a chain cell, against `schema.unstable.json`; of a cell that settles on
//! protocol v2, against `schema/v2/schema.json`, as is a both-versions client's v2 offer in a
//! cell that settles on v1), adding a `schema` check for our side's messages and notes for the
//! official SDKs'.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::run::{CellOutcome, write_checks};
use crate::cache::{self, Installed};
use crate::checks::{self, Check, Sdk};
use crate::tap::{Record, Side};
use crate::transcript::Wire;

/// A transcript the validator must judge exactly so (`true`: valid), run before the cells so
/// a validator that accepts anything cannot pass them.
const SELF_TEST: &[(Side, &str, bool)] = &[
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1"}}"#,
        false,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"video"}}}"#,
        false,
    ),
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}"#,
        false,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"bad","message":"x"}}"#,
        false,
    ),
    (
        Side::Client,
        r#"{"method":"session/cancel","params":{"sessionId":"s"}}"#,
        false,
    ),
];

const SELF_TEST_CELL: &str = "validator-self-test";

/// The same for the hop of a proxy chain (`schema.unstable.json`, any envelope, wrapped
/// messages checked): the conductor is the client side, the proxy the agent side.
const HOP_SELF_TEST: &[(Side, &str, bool)] = &[
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":0,"method":"proxy/initialize","params":{"protocolVersion":1}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":5,"method":"proxy/successor","params":{"method":"initialize","params":{"protocolVersion":1}}}"#,
        true,
    ),
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":5,"result":{"protocolVersion":1}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":6,"method":"proxy/successor","params":{"method":"session/prompt","params":{"sessionId":"s"}}}"#,
        false,
    ),
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"video"}}}}"#,
        false,
    ),
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":6,"result":{"stopReason":"sideways"}}"#,
        false,
    ),
];

const HOP_SELF_TEST_CELL: &str = "validator-self-test-hop";

/// The same against the v2 schema: v2's shapes pass, v1's fail.
const V2_SELF_TEST: &[(Side, &str, bool)] = &[
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#,
        false,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"no messageId"}}}}"#,
        false,
    ),
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#,
        true,
    ),
    (
        Side::Agent,
        r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#,
        false,
    ),
    (
        Side::Client,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s","cwd":"/","mcpServers":[]}}"#,
        false,
    ),
];

const V2_SELF_TEST_CELL: &str = "validator-self-test-v2";

fn write_self_test(path: &Path, lines: &[(Side, &str, bool)]) -> Result<(), String> {
    let mut text = String::new();
    for (n, (from, line, _)) in lines.iter().enumerate() {
        let record = Record {
            seq: n as u64 + 1,
            us: 0,
            from: *from,
            line: (*line).to_owned(),
            partial: false,
        };
        text.push_str(&record.to_wire().to_json());
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Whether the validator judged the self-test transcript exactly right.
fn check_self_test(result: &Value, lines: &[(Side, &str, bool)]) -> Result<(), String> {
    let failed: BTreeSet<u64> = ["client", "agent"]
        .iter()
        .flat_map(|side| {
            result[side]["failures"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|f| f["seq"].as_u64())
        .collect();
    let expected: BTreeSet<u64> = lines
        .iter()
        .enumerate()
        .filter(|(_, (_, _, valid))| !valid)
        .map(|(n, _)| n as u64 + 1)
        .collect();
    if failed == expected {
        Ok(())
    } else {
        Err(format!(
            "the schema validator failed its self-test: it rejected lines {failed:?}, the invalid ones are {expected:?}"
        ))
    }
}

/// Validates every cell's wire against the official schema from the installed npm package,
/// adding a `schema` check (our side's messages) and notes (the official side's).
pub fn validate_schema(
    outcomes: &mut [CellOutcome],
    installed: &Installed,
    out: &Path,
) -> Result<(), String> {
    let self_test = out.join("validator-self-test.jsonl");
    write_self_test(&self_test, SELF_TEST)?;
    let hop_self_test = out.join("validator-self-test-hop.jsonl");
    write_self_test(&hop_self_test, HOP_SELF_TEST)?;
    let v2_self_test = out.join("validator-self-test-v2.jsonl");
    write_self_test(&v2_self_test, V2_SELF_TEST)?;
    let mut cells = vec![
        json!({"name": SELF_TEST_CELL, "wire": self_test, "exempt": []}),
        json!({"name": HOP_SELF_TEST_CELL, "wire": hop_self_test, "exempt": [],
            "schema": "unstable", "hop": true}),
        json!({"name": V2_SELF_TEST_CELL, "wire": v2_self_test, "exempt": [], "schema": "v2"}),
    ];
    for o in outcomes.iter() {
        let Ok(wire) = Wire::read(&o.dir.join("wire.jsonl")) else {
            continue;
        };
        let exempt: Vec<u64> = checks::bad_call_messages(&wire)
            .iter()
            .map(|m| m.seq)
            .collect();
        let mut entry =
            json!({"name": o.cell.name(), "wire": o.dir.join("wire.jsonl"), "exempt": exempt});
        if o.cell.speaks.settles() == 2 {
            entry["schema"] = "v2".into();
        } else {
            // A both-versions client's v2 offer, before its fallback to v1.
            let offers: Vec<u64> = wire
                .requests(Side::Client, "initialize")
                .filter(|m| m.params()["protocolVersion"] == 2)
                .map(|m| m.seq)
                .collect();
            entry["v2Seqs"] = offers.into();
        }
        cells.push(entry);
        if let Some(conductor) = o.cell.transport.conductor() {
            let hops = crate::chain::hops(conductor, o.cell.agent, &o.dir);
            cells.extend(crate::chain::validator_entries(&o.cell.name(), &hops));
        }
    }
    let list = out.join("validate-cells.json");
    std::fs::write(&list, Value::from(cells).to_string())
        .map_err(|e| format!("writing {}: {e}", list.display()))?;
    let output = Command::new("node")
        .arg(cache::peers_dir().join("ts/validate.mjs"))
        .arg("--modules")
        .arg(&installed.npm)
        .arg("--")
        .arg(&list)
        .output()
        .map_err(|e| format!("cannot run node: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "schema validation failed to run ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let report: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("unreadable validator output: {e}"))?;
    check_self_test(&report["cells"][SELF_TEST_CELL], SELF_TEST)?;
    check_self_test(&report["cells"][HOP_SELF_TEST_CELL], HOP_SELF_TEST)?;
    check_self_test(&report["cells"][V2_SELF_TEST_CELL], V2_SELF_TEST)?;
    for o in outcomes.iter_mut() {
        let result = &report["cells"][o.cell.name()];
        if result.is_null() {
            o.checks.push(Check {
                name: "schema",
                ok: false,
                detail: "no wire transcript to validate".into(),
            });
            continue;
        }
        let mut problems = Vec::new();
        let mut checked = 0;
        // On a chain cell's first hop the agent side is the conductor.
        let agent_side = o.cell.transport.conductor().unwrap_or(o.cell.agent);
        let mut hops = vec![(String::new(), result, o.cell.client, agent_side)];
        if let Some(conductor) = o.cell.transport.conductor() {
            let name = o.cell.name();
            for (i, hop) in crate::chain::hops(conductor, o.cell.agent, &o.dir)
                .iter()
                .enumerate()
            {
                let label = hop.label(i);
                let result = &report["cells"][format!("{name}/{label}")];
                if result.is_null() {
                    problems.push(format!("{label}: no transcript to validate"));
                    continue;
                }
                hops.push((format!("{label}: "), result, hop.conductor, hop.component));
            }
        }
        for (hop, result, client, agent) in hops {
            for (side, sdk) in [("client", client), ("agent", agent)] {
                let failures = result[side]["failures"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let lines = failures.iter().map(|f| {
                    format!(
                        "{hop}{side} #{}: {}: {}",
                        f["seq"],
                        f["what"].as_str().unwrap_or("?"),
                        f["errors"]
                    )
                });
                if sdk == Sdk::Ours {
                    checked += result[side]["checked"].as_u64().unwrap_or(0);
                    problems.extend(lines);
                } else {
                    o.notes.extend(
                        lines.map(|l| format!("the {} {l} (official SDK, not ours)", sdk.name())),
                    );
                }
            }
        }
        let (version, offer) = match o.cell.speaks.settles() {
            2 => ("v2", ""),
            _ if o.cell.speaks.0 == crate::peers::ours_v2::Versions::Both => (
                "v1",
                " (the client's v2 offer against schema/v2/schema.json)",
            ),
            _ => ("v1", ""),
        };
        let schema = &report["schemas"][version];
        let detail = if problems.is_empty() {
            let hops = if o.cell.transport.conductor().is_some() {
                " (the proxy hops against schema.unstable.json)"
            } else {
                ""
            };
            format!(
                "all {checked} messages of ours valid against {} ({} definitions){hops}{offer}",
                schema["path"].as_str().unwrap_or("?"),
                schema["definitions"]
            )
        } else {
            problems.join("; ")
        };
        o.checks.push(Check {
            name: "schema",
            ok: problems.is_empty(),
            detail,
        });
        write_checks(o);
    }
    Ok(())
}
