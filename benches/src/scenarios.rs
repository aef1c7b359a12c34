//! The scenarios: what each measurement runs, on which implementations, and the rows of the
//! table it fills.

use super::*;

/// The rows one outcome contributes, after checking it received what it should.
type Extract = fn(&Options, &Outcome) -> Result<Vec<(&'static str, f64)>, String>;

pub(crate) struct Scenario {
    pub(crate) letter: char,
    pub(crate) transport: Transport,
    pub(crate) plan: Plan,
    pub(crate) impls: &'static [Impl],
    pub(crate) repeat: usize,
    pub(crate) extract: Extract,
}

/// The Rust columns and the floor.
const ALL: &[Impl] = &[Impl::Ours, Impl::Official, Impl::Raw];
/// Every column: the Rust ones, the floor, and the TypeScript and Python SDK pairs.
const EVERY: &[Impl] = &[Impl::Ours, Impl::Official, Impl::Ts, Impl::Py, Impl::Raw];
/// The two Rust SDKs.
const SDKS: &[Impl] = &[Impl::Ours, Impl::Official];
/// Every SDK: Rust, TypeScript, Python.
const ALL_SDKS: &[Impl] = &[Impl::Ours, Impl::Official, Impl::Ts, Impl::Py];

fn check_calls(o: &Outcome, n: u64, bytes_each: u64) -> Result<(), String> {
    let r = &o.report;
    if r.count != n || r.errors != 0 || r.bytes != n * bytes_each {
        return Err(format!(
            "expected {n} good answers of {bytes_each} bytes, got {} calls, {} errors, {} bytes",
            r.count, r.errors, r.bytes
        ));
    }
    Ok(())
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

fn stream_rows(o: &Options, out: &Outcome) -> Result<(u64, f64), String> {
    let n = o.chunks;
    if out.chunks != (n, 0) || out.report.count != n {
        return Err(format!(
            "expected {n} chunks in order, got {} in order and {} wrong (agent sent {})",
            out.chunks.0, out.chunks.1, out.report.count
        ));
    }
    Ok((n, per_second(n, out.elapsed)))
}

pub(crate) fn scenarios(o: &Options) -> Vec<Scenario> {
    let stream = Plan::Job(Job::Stream { n: o.chunks });
    let mut all = vec![
        Scenario {
            letter: 'a',
            transport: Transport::Duplex,
            plan: stream,
            impls: ALL,
            repeat: 1,
            extract: |o, out| Ok(vec![("a_duplex", stream_rows(o, out)?.1)]),
        },
        Scenario {
            letter: 'a',
            transport: Transport::Stdio,
            plan: stream,
            impls: EVERY,
            repeat: 1,
            extract: |o, out| {
                let rate = stream_rows(o, out)?.1;
                Ok(vec![
                    ("a_stdio", rate),
                    ("a_rss", out.after.hwm_kib as f64 / 1024.0),
                ])
            },
        },
        Scenario {
            letter: 'b',
            transport: Transport::Stdio,
            plan: Plan::Job(Job::Sequential { n: o.requests }),
            impls: EVERY,
            repeat: 1,
            extract: |o, out| {
                check_calls(out, o.requests, msg::SMALL_CONTENT.len() as u64)?;
                let r = &out.report;
                Ok(vec![
                    ("b_p50", r.p50_ns as f64 / 1000.0),
                    ("b_p99", r.p99_ns as f64 / 1000.0),
                    ("b_rate", per_second(r.count, r.elapsed())),
                ])
            },
        },
        Scenario {
            letter: 'c',
            transport: Transport::Stdio,
            plan: Plan::Job(Job::Concurrent {
                n: o.requests,
                k: o.outstanding,
            }),
            impls: ALL,
            repeat: 1,
            extract: |o, out| {
                check_calls(out, o.requests, msg::SMALL_CONTENT.len() as u64)?;
                Ok(vec![(
                    "c_rate",
                    per_second(out.report.count, out.report.elapsed()),
                )])
            },
        },
        Scenario {
            letter: 'd',
            transport: Transport::Stdio,
            plan: Plan::Job(Job::Big {
                n: o.big_count,
                size: o.big_size,
            }),
            impls: EVERY,
            repeat: 1,
            extract: |o, out| {
                check_calls(out, o.big_count, o.big_size)?;
                let mb = out.report.bytes as f64 / 1e6;
                Ok(vec![(
                    "d_rate",
                    mb / out.report.elapsed().as_secs_f64().max(1e-9),
                )])
            },
        },
        Scenario {
            letter: 'e',
            transport: Transport::Stdio,
            plan: Plan::Sessions(o.sessions),
            impls: SDKS,
            repeat: 1,
            extract: |o, out| {
                let grown = out.after.rss_kib.saturating_sub(out.before.rss_kib);
                Ok(vec![
                    ("e_bytes", grown as f64 * 1024.0 / o.sessions.max(1) as f64),
                    ("e_rate", per_second(o.sessions, out.elapsed)),
                ])
            },
        },
        Scenario {
            letter: 'f',
            transport: Transport::Stdio,
            plan: Plan::Handshake,
            impls: EVERY,
            repeat: o.handshakes,
            extract: |_, out| Ok(vec![("f_ms", out.elapsed.as_secs_f64() * 1000.0)]),
        },
        Scenario {
            letter: 'h',
            transport: Transport::Stdio,
            plan: Plan::Exchange,
            impls: ALL_SDKS,
            repeat: o.exchanges,
            extract: |_, out| {
                // 5 updates + the permission + the read, every one answered as expected.
                let expected = msg::EXCHANGE_UPDATES + 2;
                if out.report.count != expected || out.report.errors != 0 {
                    return Err(format!(
                        "expected {expected} good steps, got {} and {} errors",
                        out.report.count, out.report.errors
                    ));
                }
                Ok(vec![("h_ms", out.elapsed.as_secs_f64() * 1000.0)])
            },
        },
    ];
    // g goes before h, in the order of its sizes.
    let exchange = all.pop();
    for &sessions in &o.many {
        all.push(Scenario {
            letter: 'g',
            transport: Transport::Stdio,
            plan: Plan::Many {
                sessions,
                chunks: o.many_chunks,
            },
            // The TypeScript and Python pairs stream slowly: they join where it is cheap.
            impls: if sessions <= 100 { ALL_SDKS } else { SDKS },
            repeat: 1,
            extract: many_rows(sessions),
        });
    }
    all.extend(exchange);
    all
}

/// The extractor of g for `sessions` (its rows are named after the size).
fn many_rows(sessions: u64) -> Extract {
    fn rows(
        o: &Options,
        out: &Outcome,
        keys: [&'static str; 5],
    ) -> Result<Vec<(&'static str, f64)>, String> {
        let figures = out.many.as_ref().ok_or("no per-session figures")?;
        let expected = figures.sessions * o.many_chunks;
        if figures.in_order != expected || figures.errors != 0 || out.report.errors != 0 {
            return Err(format!(
                "expected {expected} chunks in order, got {} and {} wrong (agent: {} sent, {} failed)",
                figures.in_order, figures.errors, out.report.count, out.report.errors
            ));
        }
        let median = figures.median_session_p99_ns.max(1) as f64;
        Ok(vec![
            (keys[0], per_second(expected, out.elapsed)),
            (keys[1], median / 1000.0),
            (keys[2], figures.worst_session_p99_ns as f64 / median),
            (keys[3], figures.worst_first_chunk_ns as f64 / 1e6),
            (keys[4], out.after.hwm_kib as f64 / 1024.0),
        ])
    }
    match sessions {
        100 => |o, out| {
            rows(
                o,
                out,
                [
                    "g100_rate",
                    "g100_p99",
                    "g100_fair",
                    "g100_first",
                    "g100_rss",
                ],
            )
        },
        1000 => |o, out| {
            rows(
                o,
                out,
                [
                    "g1000_rate",
                    "g1000_p99",
                    "g1000_fair",
                    "g1000_first",
                    "g1000_rss",
                ],
            )
        },
        _ => |o, out| {
            rows(
                o,
                out,
                ["gn_rate", "gn_p99", "gn_fair", "gn_first", "gn_rss"],
            )
        },
    }
}
