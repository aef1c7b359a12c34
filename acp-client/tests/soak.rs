//! The soak: lines mutated from a corpus of real ACP traffic (bit flips, truncations,
//! duplicated and reordered keys, huge numbers, deep nesting, wrong types) fed to an agent
//! (acp-agent) and to a client (acp-client), each in-process and over real pipes to a child
//! process. Asserts: no panic, no hang, exactly one reply per well-formed request (by
//! acp-rpc's own envelope parser), and flat memory.
//!
//! `cargo test -p acp-client --test soak` runs the short form (`ACP_SOAK_LINES`, default
//! 20,000 lines in all); `cargo xtask soak` runs 10^6 and prints lines/s and peak RSS.

use std::collections::HashMap;
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use acp_agent::{Agent, AgentContext, PromptContext};
use acp_client::Client;
use acp_rpc::{Framing, Message, RequestId};
use acp_types::v1::{
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, StopReason,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

const ROLE_ENV: &str = "ACP_SOAK_ROLE";

/// Real traffic of both directions, one message a line (what the corpus mutations start
/// from): the handshake, sessions, a prompt turn with its updates, the client-side
/// requests, responses, cancellation and extensions.
const CORPUS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"zed","version":"0.1"}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/u/project","mcpServers":[]}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"fix the bug"},{"type":"resource_link","uri":"file:///a.rs","name":"a.rs"}]}}"#,
    r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess-1"}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"sess-1","cwd":"/","mcpServers":[]}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"session/set_mode","params":{"sessionId":"sess-1","modeId":"code"}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"authenticate","params":{"methodId":"oauth"}}"#,
    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"}}}}"#,
    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read a.rs","kind":"read","status":"pending","locations":[{"path":"/a.rs","line":3}]}}}"#,
    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"fn main() {}"}}]}}}"#,
    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"plan","entries":[{"content":"read","priority":"high","status":"in_progress"}]}}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"session/request_permission","params":{"sessionId":"sess-1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"sess-1","path":"/etc/hostname","line":1,"limit":10}}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"fs/write_text_file","params":{"sessionId":"sess-1","path":"/tmp/x","content":"y"}}"#,
    r#"{"jsonrpc":"2.0","id":9,"method":"terminal/create","params":{"sessionId":"sess-1","command":"echo","args":["hi"]}}"#,
    r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-1"}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
    r#"{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}"#,
    r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"Resource not found","data":{"path":"/x"}}}"#,
    r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}"#,
    r#"{"jsonrpc":"2.0","id":"ext-1","method":"_zed/custom","params":{"any":[1,2,3]}}"#,
    r#"{"jsonrpc":"2.0","method":"_zed/notice","params":null}"#,
];

/// xorshift64*: a small, seeded, reproducible generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Replaces one JSON value (chosen at random) in `v` with `f(old)`.
fn replace_somewhere(v: &mut Value, rng: &mut Rng, f: &dyn Fn(&Value, &mut Rng) -> Value) {
    let mut node = v;
    loop {
        let children = match node {
            Value::Object(m) if !m.is_empty() => m.len(),
            Value::Array(a) if !a.is_empty() => a.len(),
            _ => 0,
        };
        if children == 0 || rng.below(3) == 0 {
            *node = f(node, rng);
            return;
        }
        let i = rng.below(children);
        node = match node {
            Value::Object(m) => m.values_mut().nth(i).unwrap(),
            Value::Array(a) => &mut a[i],
            _ => unreachable!(),
        };
    }
}

/// Mutated line number `n` from the corpus (never containing a line break).
fn mutate(rng: &mut Rng, n: usize) -> Vec<u8> {
    let seed = with_unique_id(CORPUS[rng.below(CORPUS.len())], n);
    let seed = seed.as_str();
    let mut value: Value = serde_json::from_str(seed).unwrap();
    let kind = rng.below(9);
    let mut line = match kind {
        // Untouched: well-formed traffic keeps flowing among the garbage.
        0 => seed.as_bytes().to_vec(),
        1 => {
            let mut bytes = seed.as_bytes().to_vec();
            for _ in 0..=rng.below(3) {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
            bytes
        }
        2 => {
            let cut = rng.below(seed.len());
            seed.as_bytes()[..cut].to_vec()
        }
        3 => {
            // A duplicated key: the first member repeated at the end.
            let first_member_end = seed.find(",\"").unwrap_or(seed.len() - 1);
            let member = &seed[1..first_member_end];
            format!("{},{member}}}", &seed[..seed.len() - 1]).into_bytes()
        }
        4 => {
            // Reordered keys: members written back to front.
            let Value::Object(map) = &value else {
                unreachable!()
            };
            let members: Vec<String> = map
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                .collect();
            format!("{{{}}}", members.join(",")).into_bytes()
        }
        5 => {
            replace_somewhere(&mut value, rng, &|_, rng| {
                let huge = [
                    "1180591620717411303424",
                    "-9223372036854775809",
                    "1e400",
                    "-0",
                    "0.0000000000000000000001",
                    "123456789012345678901234567890",
                ][rng.below(6)];
                serde_json::from_str(huge).unwrap_or(Value::Null)
            });
            let text = value.to_string();
            // serde_json cannot hold 1e400; write it by hand sometimes.
            if rng.below(2) == 0 {
                text.replacen("\"2.0\"", "1e400", 1).into_bytes()
            } else {
                text.into_bytes()
            }
        }
        6 => {
            let depth = 1 + rng.below(20_000);
            let mut nested = "[".repeat(depth);
            nested.push_str(&"]".repeat(depth));
            let text = value.to_string();
            match text.find("\"params\":") {
                Some(at) => {
                    let mut out = text[..at + 9].to_owned();
                    out.push_str(&nested);
                    out.push(',');
                    out.push_str("\"x\":");
                    out.push_str(&text[at + 9..]);
                    out.into_bytes()
                }
                None => format!("{{\"deep\":{nested},{}", &text[1..]).into_bytes(),
            }
        }
        7 => {
            replace_somewhere(&mut value, rng, &|_, rng| {
                [
                    Value::Null,
                    Value::Bool(true),
                    Value::String("x".into()),
                    serde_json::json!([]),
                    serde_json::json!({}),
                    serde_json::json!(42),
                ][rng.below(6)]
                .clone()
            });
            value.to_string().into_bytes()
        }
        _ => {
            // Two mutations stacked.
            let mut bytes = mutate(rng, n);
            if !bytes.is_empty() {
                let i = rng.below(bytes.len());
                bytes[i] ^= 0x20;
            }
            bytes
        }
    };
    for b in &mut line {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    line
}

/// Which ids the peer must answer exactly once: every line acp-rpc's own parser takes for a
/// well-formed request (or a request of another version, refused by id). Ids are made
/// unique per line, so a reply names its line.
fn expected_reply(line: &[u8]) -> Option<RequestId> {
    // The framing refuses a line that is not UTF-8 as a whole (`id: null`), before any
    // parse; serde_json alone would skip invalid bytes inside unknown members.
    std::str::from_utf8(line).ok()?;
    match Message::parse(line, &Framing::default()) {
        Ok(Message::Request(r)) => Some(r.id),
        // A request of another JSON-RPC version is refused with its id echoed.
        Err(failure) => failure.request_id,
        Ok(_) => None,
    }
}

/// Gives every request-shaped seed line its own string id (`"s<n>"`) before mutation, so
/// two lines never share an id by accident.
fn with_unique_id(text: &str, n: usize) -> String {
    if !text.contains("\"method\"") {
        return text.to_owned();
    }
    match text.find("\"id\":") {
        Some(at) => {
            let rest = &text[at + 5..];
            let end = rest.find([',', '}']).unwrap_or(rest.len());
            format!("{}\"id\":\"s{n}\"{}", &text[..at], &rest[end..])
        }
        None => text.to_owned(),
    }
}

struct SoakAgent;

#[acp_client::async_trait]
impl Agent for SoakAgent {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, acp_rpc::Error> {
        Ok(InitializeResponse::new(1))
    }
    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, acp_rpc::Error> {
        Ok(NewSessionResponse::new("sess-1"))
    }
    async fn prompt(
        &self,
        _p: PromptRequest,
        _cx: &PromptContext,
    ) -> Result<PromptResponse, acp_rpc::Error> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

struct SoakClient;
impl Client for SoakClient {}

fn rss_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// What one run measured.
struct Run {
    lines: usize,
    requests: usize,
    elapsed: Duration,
    /// VmRSS (KiB) of the process under test after 10% of the lines and at the end.
    rss_early: u64,
    rss_end: u64,
    peak: u64,
}

/// Feeds `n` mutated lines into a peer through `to_peer`, reads every line back from
/// `from_peer`, answers any request the peer makes with `-32601`, and checks that every
/// well-formed request got exactly one reply. `pid` names the process under test.
async fn drive<W, R>(mut to_peer: W, from_peer: R, n: usize, seed: u64, pid: String) -> Run
where
    W: AsyncWrite + Unpin + Send + 'static,
    R: AsyncRead + Unpin + Send + 'static,
{
    let (answer_tx, mut answer_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let (reply_tx, mut reply_rx) = tokio::sync::mpsc::unbounded_channel::<RequestId>();
    // Reader: collects replies, answers the peer's own requests.
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(from_peer).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let v: Value = match serde_json::from_str(&line) {
                Ok(v) => v,
                Err(e) => panic!("the peer wrote a line that is not JSON ({e}): {line}"),
            };
            if v.get("method").is_some() {
                if let Some(id) = v.get("id") {
                    let answer = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"no"}}}}"#
                    );
                    let _ = answer_tx.send(answer.into_bytes());
                }
                continue;
            }
            if let Ok(Some(id)) = serde_json::from_value::<Option<RequestId>>(v["id"].clone()) {
                let _ = reply_tx.send(id);
            }
        }
    });
    let mut rng = Rng(seed | 1);
    let mut expected: HashMap<RequestId, usize> = HashMap::new();
    // The start of each request line, to name the ones left unanswered.
    let mut sent: HashMap<RequestId, String> = HashMap::new();
    let mut requests = 0;
    let start = Instant::now();
    let mut rss_early = 0;
    let mut peak = 0;
    for i in 0..n {
        let line = mutate(&mut rng, i);
        if let Some(id) = expected_reply(&line) {
            let head = String::from_utf8_lossy(&line[..line.len().min(160)]).into_owned();
            sent.insert(id.clone(), head);
            *expected.entry(id).or_default() += 1;
            requests += 1;
        }
        to_peer.write_all(&line).await.unwrap();
        to_peer.write_all(b"\n").await.unwrap();
        while let Ok(answer) = answer_rx.try_recv() {
            to_peer.write_all(&answer).await.unwrap();
            to_peer.write_all(b"\n").await.unwrap();
        }
        if i == n / 10 {
            to_peer.flush().await.unwrap();
            rss_early = rss_kib(&pid, "VmRSS:");
        }
        if i % 10_000 == 0 {
            peak = peak.max(rss_kib(&pid, "VmRSS:"));
        }
    }
    // A final ping, then every expected reply must arrive.
    to_peer
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"final\",\"method\":\"_soak/ping\"}\n")
        .await
        .unwrap();
    to_peer.flush().await.unwrap();
    *expected.entry(RequestId::Str("final".into())).or_default() += 1;
    let mut got: HashMap<RequestId, usize> = HashMap::new();
    let mut outstanding: usize = expected.values().sum();
    let deadline = Instant::now() + Duration::from_secs(120);
    while outstanding > 0 {
        while let Ok(answer) = answer_rx.try_recv() {
            to_peer.write_all(&answer).await.unwrap();
            to_peer.write_all(b"\n").await.unwrap();
            to_peer.flush().await.unwrap();
        }
        let id = tokio::time::timeout_at(deadline.into(), reply_rx.recv())
            .await
            .unwrap_or_else(|_| {
                let missing: Vec<&String> = expected
                    .iter()
                    .filter(|(id, n)| got.get(*id).copied().unwrap_or(0) < **n)
                    .filter_map(|(id, _)| sent.get(id))
                    .take(5)
                    .collect();
                panic!("hung: {outstanding} requests unanswered, such as {missing:#?}")
            })
            .expect("the peer closed before answering every request");
        let count = got.entry(id.clone()).or_default();
        *count += 1;
        let want = expected.get(&id).copied().unwrap_or(0);
        assert!(
            *count <= want,
            "request {id} answered {count} times ({want} sent)"
        );
        outstanding -= 1;
    }
    let elapsed = start.elapsed();
    let rss_end = rss_kib(&pid, "VmRSS:");
    peak = peak.max(rss_end).max(rss_kib(&pid, "VmHWM:"));
    drop(to_peer);
    reader.abort();
    Run {
        lines: n + 1,
        requests,
        elapsed,
        rss_early,
        rss_end,
        peak,
    }
}

fn report(name: &str, run: &Run) {
    let rate = run.lines as f64 / run.elapsed.as_secs_f64();
    println!(
        "soak {name}: {} lines ({} well-formed requests) in {:.1?}, {rate:.0} lines/s, \
         RSS {} -> {} MiB, peak {} MiB",
        run.lines,
        run.requests,
        run.elapsed,
        run.rss_early / 1024,
        run.rss_end / 1024,
        run.peak / 1024
    );
    // Memory flat: what the first tenth settled at is where it stays (within 48 MiB).
    assert!(
        run.rss_end <= run.rss_early + 48 * 1024,
        "{name}: RSS grew from {} to {} KiB",
        run.rss_early,
        run.rss_end
    );
}

async fn in_process(role: &str, n: usize, seed: u64) -> Run {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (their_read, their_write) = tokio::io::split(theirs);
    let _keep: Box<dyn std::any::Any> = match role {
        "agent" => Box::new(acp_agent::Builder::new(SoakAgent).io(their_read, their_write)),
        _ => Box::new(acp_client::Builder::new(SoakClient).io(their_read, their_write)),
    };
    let (our_read, our_write) = tokio::io::split(ours);
    drive(our_write, our_read, n, seed, "self".into()).await
}

async fn over_pipes(role: &str, n: usize, seed: u64) -> Run {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env(ROLE_ENV, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap().to_string();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let run = drive(stdin, stdout, n, seed, pid).await;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the child did not exit at EOF")
        .unwrap();
    assert!(status.success(), "the {role} child exited with {status}");
    run
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if let Ok(role) = std::env::var(ROLE_ENV) {
        rt.block_on(async {
            match role.as_str() {
                "agent" => {
                    let conn = acp_agent::Builder::new(SoakAgent).stdio();
                    conn.closed().await;
                }
                _ => {
                    let conn = acp_client::Builder::new(SoakClient)
                        .io(acp_rpc::stdio::stdin(), acp_rpc::stdio::stdout());
                    conn.closed().await;
                }
            }
        });
        let _ = std::io::stdout().flush();
        return;
    }
    let total: usize = std::env::var("ACP_SOAK_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let each = total / 4;
    let start = Instant::now();
    let mut peak = 0;
    let mut lines = 0;
    for (i, (name, role, pipes)) in [
        ("agent in-process", "agent", false),
        ("client in-process", "client", false),
        ("agent over pipes", "agent", true),
        ("client over pipes", "client", true),
    ]
    .into_iter()
    .enumerate()
    {
        // `ACP_SOAK_ONLY=<text>` runs only the runs whose name contains it.
        if std::env::var("ACP_SOAK_ONLY").is_ok_and(|only| !name.contains(only.as_str())) {
            continue;
        }
        let seed = 0x5eed_0000 + i as u64;
        let run = rt.block_on(async {
            if pipes {
                over_pipes(role, each, seed).await
            } else {
                in_process(role, each, seed).await
            }
        });
        report(name, &run);
        peak = peak.max(run.peak);
        lines += run.lines;
    }
    let elapsed = start.elapsed();
    println!(
        "soak total: {lines} lines in {elapsed:.1?} ({:.0} lines/s), peak RSS {} MiB (test process {} MiB)",
        lines as f64 / elapsed.as_secs_f64(),
        peak / 1024,
        rss_kib("self", "VmHWM:") / 1024
    );
}
