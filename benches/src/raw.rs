//! The raw baseline: the same messages, byte for byte, with no RPC layer. Plain
//! `#[derive(Serialize, Deserialize)]` structs, serde_json, a `BufWriter` and a `BufReader`
//! on blocking pipes, one thread per side. This is the floor any JSON-RPC stack sits on.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::msg::{
    ChunkCheck, Job, Report, SMALL_CONTENT, SMALL_PATH, big_path, chunk_text, content_for,
    session_id,
};
use crate::plan::{Outcome, Plan};

const BUF: usize = 64 * 1024;

/// An outgoing request or notification (borrowed, as a program builds it).
#[derive(Serialize)]
pub struct OutMessage<'a, P> {
    pub(crate) jsonrpc: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<u64>,
    pub(crate) method: &'a str,
    pub(crate) params: P,
}

/// An incoming request or notification (owned, as it comes off the wire).
#[derive(Deserialize)]
pub struct InMessage<P> {
    #[allow(dead_code)]
    jsonrpc: String,
    #[serde(default)]
    pub(crate) id: Option<u64>,
    #[allow(dead_code)]
    method: String,
    pub(crate) params: P,
}

/// A response, either way.
#[derive(Serialize, Deserialize)]
pub struct Answer<R> {
    pub(crate) jsonrpc: String,
    pub(crate) id: u64,
    pub(crate) result: R,
}

/// `session/update` params with an `agent_message_chunk`, for writing.
#[derive(Serialize)]
pub struct OutUpdate<'a> {
    #[serde(rename = "sessionId")]
    session_id: &'a str,
    update: OutChunk<'a>,
}

/// The update of [`OutUpdate`].
#[derive(Serialize)]
pub struct OutChunk<'a> {
    #[serde(rename = "sessionUpdate")]
    session_update: &'a str,
    content: OutText<'a>,
}

/// The content block of [`OutChunk`].
#[derive(Serialize)]
pub struct OutText<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    text: &'a str,
}

/// `session/update` params, for reading.
#[derive(Deserialize)]
pub struct InUpdate {
    #[serde(rename = "sessionId")]
    #[allow(dead_code)]
    session_id: String,
    update: InChunk,
}

/// The update of [`InUpdate`].
#[derive(Deserialize)]
pub struct InChunk {
    #[serde(rename = "sessionUpdate")]
    session_update: String,
    content: InText,
}

/// The content block of [`InChunk`].
#[derive(Deserialize)]
pub struct InText {
    #[serde(rename = "type")]
    kind: String,
    text: String,
}

/// `fs/read_text_file` params.
#[derive(Serialize, Deserialize)]
pub struct ReadParams {
    #[serde(rename = "sessionId")]
    session_id: String,
    path: String,
}

/// `fs/read_text_file` result.
#[derive(Serialize, Deserialize)]
pub struct ReadResult {
    content: String,
}

/// A command from the client: `initialize`, or `bench` with a job text.
#[derive(Deserialize)]
struct CommandParams {
    #[serde(default)]
    job: Option<String>,
}

fn bad(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

fn write_line<W: Write, T: Serialize>(out: &mut W, msg: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, msg).map_err(bad)?;
    out.write_all(b"\n")
}

/// Reads one line into `line` (cleared first); `false` at EOF.
fn read_line<R: BufRead>(reader: &mut R, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    Ok(reader.read_until(b'\n', line)? > 0)
}

/// Whether the reader holds a complete line (so reading it will not block).
fn line_ready<R: Read>(reader: &BufReader<R>) -> bool {
    reader.buffer().contains(&b'\n')
}

/// The `session/update` params of chunk `text`, as our agent writes them.
pub fn update_params<'a>(session: &'a str, text: &'a str) -> OutUpdate<'a> {
    OutUpdate {
        session_id: session,
        update: OutChunk {
            session_update: "agent_message_chunk",
            content: OutText { kind: "text", text },
        },
    }
}

/// The agent side: answers commands from `input` on `output` until EOF.
pub fn peer(input: impl Read, output: impl Write) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(BUF, input);
    let mut out = BufWriter::with_capacity(BUF, output);
    let mut line = Vec::new();
    while read_line(&mut reader, &mut line)? {
        let command: InMessage<CommandParams> = serde_json::from_slice(&line).map_err(bad)?;
        let id = command.id.unwrap_or(0);
        let result = match command.params.job.as_deref().and_then(Job::parse) {
            None => serde_json::json!({"protocolVersion": 1}),
            Some(job) => {
                let report = run_job(job, &mut reader, &mut out)?;
                serde_json::to_value(report).map_err(bad)?
            }
        };
        write_line(
            &mut out,
            &Answer {
                jsonrpc: "2.0".to_owned(),
                id,
                result,
            },
        )?;
        out.flush()?;
    }
    Ok(())
}

fn run_job<R: Read, W: Write>(
    job: Job,
    reader: &mut BufReader<R>,
    out: &mut W,
) -> io::Result<Report> {
    let session = session_id(0);
    let mut report = Report::default();
    let start = Instant::now();
    let mut next_id = 0u64;
    let mut line = Vec::new();
    let mut send_read = |out: &mut W, path: &str| {
        next_id += 1;
        let params = ReadParams {
            session_id: session.clone(),
            path: path.to_owned(),
        };
        write_line(
            out,
            &OutMessage {
                jsonrpc: "2.0",
                id: Some(next_id),
                method: "fs/read_text_file",
                params,
            },
        )
    };
    let mut receive = |reader: &mut BufReader<R>, report: &mut Report, expected: usize| {
        if !read_line(reader, &mut line)? {
            return Err(bad("client went away"));
        }
        let answer: Answer<ReadResult> = serde_json::from_slice(&line).map_err(bad)?;
        report.count += 1;
        if answer.result.content.len() == expected {
            report.bytes += expected as u64;
        } else {
            report.errors += 1;
        }
        io::Result::Ok(())
    };
    match job {
        Job::Stream { n } => {
            for i in 0..n {
                let text = chunk_text(i);
                let msg = OutMessage {
                    jsonrpc: "2.0",
                    id: None,
                    method: "session/update",
                    params: update_params(&session, &text),
                };
                write_line(out, &msg)?;
                report.count += 1;
            }
        }
        Job::Sequential { n } | Job::Big { n, .. } => {
            let (path, size) = match job {
                Job::Big { size, .. } => (big_path(size as usize), size as usize),
                _ => (SMALL_PATH.to_owned(), SMALL_CONTENT.len()),
            };
            let mut samples = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let t = Instant::now();
                send_read(out, &path)?;
                out.flush()?;
                receive(reader, &mut report, size)?;
                samples.push(t.elapsed().as_nanos() as u64);
            }
            report.set_latencies(&mut samples);
        }
        Job::Concurrent { n, k } => {
            let mut sent = 0;
            while sent < n.min(k) {
                send_read(out, SMALL_PATH)?;
                sent += 1;
            }
            while report.count < n {
                if !line_ready(reader) {
                    out.flush()?;
                }
                receive(reader, &mut report, SMALL_CONTENT.len())?;
                if sent < n {
                    send_read(out, SMALL_PATH)?;
                    sent += 1;
                }
            }
        }
        // g and h measure the SDKs only (they need sessions and permission requests).
        Job::TimedStream { .. } | Job::Exchange | Job::Permissions { .. } => report.errors += 1,
        Job::Memory => {}
    }
    report.elapsed_ns = start.elapsed().as_nanos() as u64;
    report.set_memory();
    Ok(report)
}

/// The client side: runs `plan` against a raw peer reading `output` and writing `input`.
fn client(
    from_agent: impl Read,
    to_agent: impl Write,
    plan: Plan,
    start: Instant,
) -> Result<Outcome, String> {
    let mut reader = BufReader::with_capacity(BUF, from_agent);
    let mut out = BufWriter::with_capacity(BUF, to_agent);
    let mut line = Vec::new();
    let mut outcome = Outcome::default();
    let check = ChunkCheck::default();
    let command = |out: &mut BufWriter<_>, id: u64, method: &str, job: Option<Job>| {
        let params = serde_json::json!({ "job": job.map(Job::to_text) });
        write_line(
            out,
            &OutMessage {
                jsonrpc: "2.0",
                id: Some(id),
                method,
                params,
            },
        )
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())
    };
    command(&mut out, 0, "initialize", None)?;
    if !read_line(&mut reader, &mut line).map_err(|e| e.to_string())? {
        return Err("the raw peer closed before answering".into());
    }
    if plan == Plan::Handshake {
        outcome.elapsed = start.elapsed();
        return Ok(outcome);
    }
    let Plan::Job(job) = plan else {
        return Err("the raw baseline has no sessions".into());
    };
    let t = Instant::now();
    command(&mut out, 1, "bench", Some(job))?;
    outcome.report = serve_until_answer(&mut reader, &mut out, &mut line, &check)?;
    outcome.elapsed = t.elapsed();
    outcome.chunks = check.counts();
    command(&mut out, 2, "bench", Some(Job::Memory))?;
    outcome.after = serve_until_answer(&mut reader, &mut out, &mut line, &check)?;
    Ok(outcome)
}

/// Handles the agent's traffic (chunks, reads) until the answer to the command arrives.
fn serve_until_answer<R: Read, W: Write>(
    reader: &mut BufReader<R>,
    out: &mut W,
    line: &mut Vec<u8>,
    check: &ChunkCheck,
) -> Result<Report, String> {
    loop {
        if !read_line(reader, line).map_err(|e| e.to_string())? {
            return Err("the raw peer went away".into());
        }
        if let Ok(n) = serde_json::from_slice::<InMessage<InUpdate>>(line) {
            let u = n.params.update;
            let text = (u.session_update == "agent_message_chunk" && u.content.kind == "text")
                .then_some(u.content.text.as_str());
            check.on_chunk(text);
            continue;
        }
        if let Ok(request) = serde_json::from_slice::<InMessage<ReadParams>>(line) {
            let content = content_for(&request.params.path).unwrap_or_default();
            let answer = Answer {
                jsonrpc: "2.0".to_owned(),
                id: request.id.unwrap_or(0),
                result: ReadResult { content },
            };
            write_line(out, &answer).map_err(|e| e.to_string())?;
            if !line_ready(reader) {
                out.flush().map_err(|e| e.to_string())?;
            }
            continue;
        }
        let answer: Answer<Report> = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        return Ok(answer.result);
    }
}

/// Runs `plan` against a raw peer thread in this process, over two OS pipes.
pub fn in_process(plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let (from_client, to_agent) = io::pipe().map_err(|e| e.to_string())?;
    let (from_agent, to_client) = io::pipe().map_err(|e| e.to_string())?;
    let agent = std::thread::spawn(move || peer(from_client, to_client));
    let outcome = client(from_agent, to_agent, plan, start);
    let _ = agent.join();
    outcome
}

/// Runs `plan` against a raw peer in a child process (`program args...`) over its stdio.
pub fn over_stdio(program: &std::path::Path, args: &[&str], plan: Plan) -> Result<Outcome, String> {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    let to_agent = child.stdin.take().expect("piped");
    let from_agent = child.stdout.take().expect("piped");
    let outcome = client(from_agent, to_agent, plan, start);
    let _ = child.wait();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The baseline must move the very bytes the SDKs move, or its figures mean nothing.
    #[test]
    fn raw_messages_are_byte_identical_to_both_sdks() {
        use acp_types::v1 as ours;
        use agent_client_protocol::v1::schema as official;
        let raw = serde_json::to_string(&update_params("s1", "tok7 ")).unwrap();
        let our =
            ours::SessionNotification::new("s1", ours::SessionUpdate::agent_message_text("tok7 "));
        assert_eq!(serde_json::to_string(&our).unwrap(), raw);
        let theirs = official::SessionNotification::new(
            "s1",
            official::SessionUpdate::AgentMessageChunk(official::ContentChunk::new(
                official::ContentBlock::Text(official::TextContent::new("tok7 ")),
            )),
        );
        assert_eq!(serde_json::to_string(&theirs).unwrap(), raw);

        let params = ReadParams {
            session_id: "s1".into(),
            path: SMALL_PATH.into(),
        };
        let raw = serde_json::to_string(&params).unwrap();
        let our = ours::ReadTextFileRequest::new("s1", SMALL_PATH);
        assert_eq!(serde_json::to_string(&our).unwrap(), raw);
        let theirs = official::ReadTextFileRequest::new("s1", SMALL_PATH);
        assert_eq!(serde_json::to_string(&theirs).unwrap(), raw);

        let raw = serde_json::to_string(&ReadResult {
            content: SMALL_CONTENT.into(),
        })
        .unwrap();
        let our = ours::ReadTextFileResponse::new(SMALL_CONTENT);
        assert_eq!(serde_json::to_string(&our).unwrap(), raw);
        let theirs = official::ReadTextFileResponse::new(SMALL_CONTENT);
        assert_eq!(serde_json::to_string(&theirs).unwrap(), raw);
    }
}
