//! The command line: usage and options.

use super::*;

pub(crate) const USAGE: &str = "\
usage: acp-bench [options]
       acp-bench store [options]   (the session store figures; acp-bench store --help)
       acp-bench trace [options]   (the acp trace proxy's overhead; acp-bench trace --help)
       acp-bench serve [options]   (acp serve with metrics and dashboard on vs off)
       acp-bench floor [options]   (a line's round trip, blocking vs tokio: b's floor)
       acp-bench v2 [options]      (a and b over draft v2 beside v1, ours; in process)
       acp-bench otel [options]    (--features otel: a and b with the OTLP exporter off vs on)
       acp-bench remote [options]  (a and b over WebSocket and Streamable HTTP, ours and the
                                   official http crate's, and 1,000 idle connections)
  --runs N          runs per scenario and implementation; medians are reported (default 5)
  --quick           smaller sizes (a quick look, not for publishing)
  --smoke           tiny sizes, one run (what the test suite runs)
  --only LIST       scenarios to run, comma separated: a,b,c,d,e,f,g,h (default all)
  --impls LIST      columns to measure, comma separated: ours,official,ts,py,raw (default
                    all; ts and py when the interop cache holds their SDKs)
  --transport T     a: duplex or stdio only (default both; for profiling one of them)
  --rt FLAVOR       tokio runtime of both processes: current or multi (default current)
  --chunks N        a: notifications per prompt (default 200000)
  --requests N      b, c: requests (default 20000)
  --sessions N      e: sessions (default 10000)
  --many LIST       g: sessions prompted at once, comma separated (default 100,1000)
  --many-chunks N   g: chunks each of those prompts streams (default 2000)
  --exchanges N     h: full exchanges per run (default 5)
  --contend N       N busy threads in the harness for the whole run, the same for every
                    column: tails under load measured on purpose (default 0)
environment:
  ACP_BENCH_SHOW_SESSIONS=1   g: print the spread of the sessions' p99 chunk latencies and
                              the five worst sessions (when each got its first chunk)
  ACP_BENCH_DUMP_CHUNKS=FILE  g: write every chunk received to FILE, one line each:
                              session, arrival and latency (µs), the session's p99
  ACP_BENCH_SHOW_PHASES=1     h: print where each exchange's time went (spawn, initialize,
                              session/new, prompt, the agent's exit, the client's return)
                              and the medians per column at the end";

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) runs: usize,
    pub(crate) only: Vec<char>,
    pub(crate) impls: Vec<Impl>,
    pub(crate) transports: Vec<Transport>,
    pub(crate) chunks: u64,
    pub(crate) requests: u64,
    pub(crate) outstanding: u64,
    pub(crate) big_count: u64,
    pub(crate) big_size: u64,
    pub(crate) sessions: u64,
    pub(crate) handshakes: usize,
    pub(crate) many: Vec<u64>,
    pub(crate) many_chunks: u64,
    pub(crate) exchanges: usize,
    pub(crate) contend: usize,
    pub(crate) flavor: String,
}

impl Options {
    pub(crate) fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            runs: 5,
            only: "abcdefgh".chars().collect(),
            impls: table::COLUMNS.to_vec(),
            transports: vec![Transport::Duplex, Transport::Stdio],
            chunks: 200_000,
            requests: 20_000,
            outstanding: 64,
            big_count: 100,
            big_size: 1 << 20,
            sessions: 10_000,
            handshakes: 5,
            many: vec![100, 1000],
            many_chunks: 2000,
            exchanges: 5,
            contend: 0,
            flavor: "current".to_owned(),
        };
        let mut args = args.iter();
        let num = |v: Option<&String>| -> Result<u64, String> {
            v.ok_or("missing value")?
                .replace('_', "")
                .parse()
                .map_err(|e| format!("bad number: {e}"))
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--runs" => o.runs = num(args.next())?.max(1) as usize,
                "--chunks" => o.chunks = num(args.next())?,
                "--requests" => o.requests = num(args.next())?,
                "--sessions" => o.sessions = num(args.next())?,
                "--many" => {
                    let list = args.next().ok_or("missing value")?;
                    o.many = Vec::new();
                    for n in list.split(',') {
                        o.many
                            .push(num(Some(&n.trim().to_owned()))?.clamp(1, MAX_MANY));
                    }
                }
                "--many-chunks" => o.many_chunks = num(args.next())?,
                "--exchanges" => o.exchanges = num(args.next())?.max(1) as usize,
                "--contend" => o.contend = num(args.next())? as usize,
                "--only" => {
                    let list = args.next().ok_or("missing value")?;
                    o.only = Vec::new();
                    for name in list.split(',').map(str::trim) {
                        match name.chars().collect::<Vec<_>>()[..] {
                            [letter @ 'a'..='h'] => o.only.push(letter),
                            _ => return Err(format!("unknown scenario {name:?} (a to h)")),
                        }
                    }
                }
                "--impls" => {
                    let list = args.next().ok_or("missing value")?;
                    o.impls = Vec::new();
                    for name in list.split(',') {
                        o.impls.push(match name.trim() {
                            "ours" => Impl::Ours,
                            "official" => Impl::Official,
                            "ts" => Impl::Ts,
                            "py" => Impl::Py,
                            "raw" => Impl::Raw,
                            other => return Err(format!("unknown column {other}")),
                        });
                    }
                }
                "--transport" => {
                    o.transports = match args.next().map(String::as_str) {
                        Some("duplex") => vec![Transport::Duplex],
                        Some("stdio") => vec![Transport::Stdio],
                        other => return Err(format!("unknown transport {other:?}")),
                    };
                }
                "--rt" => {
                    let flavor = args.next().ok_or("missing value")?;
                    if flavor != "current" && flavor != "multi" {
                        return Err(format!("unknown runtime flavor {flavor}"));
                    }
                    o.flavor = flavor.clone();
                }
                "--quick" => {
                    o.runs = 3;
                    o.chunks = 20_000;
                    o.requests = 2_000;
                    o.big_count = 20;
                    o.sessions = 2_000;
                    o.handshakes = 3;
                    o.many = vec![100];
                    o.many_chunks = 200;
                    o.exchanges = 3;
                }
                "--smoke" => {
                    o.runs = 1;
                    o.chunks = 1_000;
                    o.requests = 200;
                    o.outstanding = 8;
                    o.big_count = 3;
                    o.big_size = 64 * 1024;
                    o.sessions = 100;
                    o.handshakes = 1;
                    o.many = vec![10];
                    o.many_chunks = 20;
                    o.exchanges = 1;
                }
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(o)
    }
}
