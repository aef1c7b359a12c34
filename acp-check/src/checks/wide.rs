//! Checks graded over everything the agent sent in the run (all its connections): schema,
//! stdout, what it asked of the client, early updates, and 1 MB file operations.

use std::time::{Duration, Instant};

use super::run::Run;
use crate::report::{Outcome, millis};
use crate::wire::{Dir, Entry, Kind};

/// A file operation this size or larger counts for the 1 MB timing checks.
const MEGABYTE: usize = 1 << 20;

pub(crate) fn run(run: &mut Run<'_>) {
    let started = Instant::now();
    let mut validated = 0;
    let (mut invalid, mut not_json, mut early) = (Vec::new(), Vec::new(), Vec::new());
    let (mut invalid_n, mut not_json_n) = (0, 0);
    let mut asked = Vec::new();
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let offer = run.options.offer;
    for conn in run.logs() {
        let conn_offer = conn.offer;
        early.extend(conn.wire.early_updates());
        conn.wire.with_log(|log| {
            validated += log.validated;
            invalid.extend(log.invalid.first.iter().cloned());
            invalid_n += log.invalid.count;
            not_json.extend(log.not_json.first.iter().cloned());
            not_json_n += log.not_json.count;
            for (i, e) in log.entries.iter().enumerate() {
                let Kind::Request { method, id, .. } = &e.kind else {
                    continue;
                };
                if e.dir != Dir::FromAgent {
                    continue;
                }
                let offered = match method.as_str() {
                    "fs/read_text_file" => conn_offer.read,
                    "fs/write_text_file" => conn_offer.write,
                    m if m.starts_with("terminal/") => conn_offer.terminal,
                    _ => true,
                };
                if !offered {
                    asked.push(format!("`{method}`, not offered: {}", e.evidence()));
                }
                let read = method == "fs/read_text_file";
                if (read || method == "fs/write_text_file")
                    && let Some(ms) = file_time(&log.entries, i, id, read)
                {
                    if read {
                        reads.push(ms)
                    } else {
                        writes.push(ms)
                    }
                }
            }
        });
    }
    let findings = |list: &[String], n: usize| match n {
        1 => list[0].clone(),
        n => format!("{} (and {} more)", list[0], n - 1),
    };
    let version = run.protocol;
    let outcome = if invalid_n > 0 {
        Outcome::fail(findings(&invalid, invalid_n))
    } else if validated == 0 {
        Outcome::skip("the agent sent no message")
    } else {
        Outcome::pass(format!("{validated} messages read as v{version}"))
    };
    run.record("schema.agent_messages", started, outcome);
    // Nothing said proves nothing: the checks below need the agent to have spoken.
    let silent = validated == 0 && not_json_n == 0;
    let outcome = if not_json_n > 0 {
        Outcome::fail(format!(
            "a line on stdout that is not JSON-RPC: {}",
            findings(&not_json, not_json_n)
        ))
    } else if silent {
        Outcome::skip("the agent wrote nothing on stdout")
    } else {
        Outcome::pass(format!("all {validated} lines were JSON-RPC messages"))
    };
    run.record("robustness.stdout_protocol_only", started, outcome);
    if version == 2 {
        // The rest are v1's: early turn content by v1's update kinds, the client's fs and
        // terminal methods (v2 has none) and their timings.
        return;
    }
    let outcome = if !early.is_empty() {
        Outcome::fail(findings(&early, early.len()))
    } else if silent {
        Outcome::skip("the agent sent no message")
    } else {
        Outcome::pass("none")
    };
    run.record("prompt.no_early_updates", started, outcome);
    let write_turn = match &run.write_turn {
        Some(Ok(())) => "; a turn asking to write, with no fs write offered, asked for none".into(),
        Some(Err(why)) => {
            format!("; the turn asking to write with no fs write offered failed: {why}")
        }
        None => String::new(),
    };
    let outcome = match asked.len() {
        0 if silent => Outcome::skip("the agent sent no message"),
        0 => Outcome::pass(format!(
            "offered {}; nothing else was asked{write_turn}",
            offered_words(offer)
        )),
        n => Outcome::fail(findings(&asked, n)),
    };
    run.record("capabilities.offered_only", started, outcome);
    let bounds = run.options.bounds;
    for (name, times, bound, what) in [
        ("timing.fs_read_1mb", reads, bounds.file_read, "read"),
        ("timing.fs_write_1mb", writes, bounds.file_write, "write"),
    ] {
        let Some(worst) = times.iter().max().copied() else {
            run.record(
                name,
                started,
                Outcome::skip(format!(
                    "the agent made no 1 MB {what} (a prompt script can ask it to use `{}`)",
                    run.options.script.file
                )),
            );
            continue;
        };
        let outcome = super::run::within(
            Duration::from_millis(worst),
            bound,
            &format!("the slowest of {}", times.len()),
        );
        run.record_ms(name, worst, outcome);
    }
}

fn offered_words(offer: crate::Offer) -> String {
    let mut words = Vec::new();
    if offer.read {
        words.push("fs read");
    }
    if offer.write {
        words.push("fs write");
    }
    if offer.terminal {
        words.push("terminal");
    }
    if words.is_empty() {
        return "nothing".into();
    }
    words.join(", ")
}

/// For the agent's file request at `i`: when it moved 1 MB (the request for a write, the
/// answer for a read), the milliseconds from the request to the agent's next message after
/// the kit's answer.
fn file_time(entries: &[Entry], i: usize, id: &serde_json::Value, read: bool) -> Option<u64> {
    let request = &entries[i];
    let (j, answer) = entries.iter().enumerate().skip(i + 1).find(|(_, e)| {
        e.dir == Dir::ToAgent
            && matches!(&e.kind, Kind::Response { id: answered, error: None, .. } if answered == id)
    })?;
    let moved = if read { answer.len } else { request.len };
    if moved < MEGABYTE {
        return None;
    }
    let next = entries[j + 1..].iter().find(|e| e.dir == Dir::FromAgent)?;
    Some(millis(next.at.saturating_duration_since(request.at)))
}
