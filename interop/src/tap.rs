//! The recording relay: `acp-interop tap --wire <file> --stderr <file> [--status <file>] --
//! <agent command...>`.
//!
//! A client under test spawns the tap instead of the agent; the tap spawns the agent and copies
//! every line both ways unchanged, appending each one to the wire transcript in the
//! workspace's one wire record format ([`acp_rpc::record`], what `acp trace view` reads:
//! time, direction, sequence number, the raw text). The
//! agent's stderr goes to its own file. The transcript is written and flushed line by line, so
//! a cell that hangs or crashes still leaves a readable record. Being a separate process, the
//! tap records what really crossed the pipes, independent of either side's implementation.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use acp_rpc::codec::{RawLines, WireLine};
use acp_rpc::record::{self, Record as WireRecord};
use acp_rpc::transport::{FrameReceiver, FrameSender, MemoryEnd, memory_pair};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Which side wrote a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The client (the tap's stdin).
    Client,
    /// The agent (the child's stdout).
    Agent,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Agent,
            Side::Agent => Side::Client,
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Client => "client",
            Side::Agent => "agent",
        })
    }
}

/// One line of the wire transcript as the checks read it: who wrote it, and what. The file
/// holds [`acp_rpc::record::Record`]s ([`Record::parse`], [`Record::to_wire`]); this is
/// their view with the side named.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// Position in the transcript (both directions share one sequence).
    pub seq: u64,
    /// When, in microseconds (since the Unix epoch; since the relay started in transcripts
    /// written before the one record format).
    pub us: u64,
    /// Who wrote the line.
    pub from: Side,
    /// The line as written, without its `\n` (lossy UTF-8).
    pub line: String,
    /// The stream ended without a final `\n` after this text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

impl Record {
    /// Reads one line of a transcript: a wire record (or a line of the former transcript
    /// format, which [`acp_rpc::record::Record::parse`] still reads). `start` and `exit`
    /// records are no lines: `Ok(None)`.
    pub fn parse(line: &str) -> Result<Option<Record>, String> {
        let wire = WireRecord::parse(line.as_bytes()).map_err(|e| e.to_string())?;
        let from = match wire.dir.as_str() {
            record::CLIENT_TO_AGENT => Side::Client,
            record::AGENT_TO_CLIENT => Side::Agent,
            _ => return Ok(None),
        };
        Ok(Some(Record {
            seq: wire.seq.unwrap_or(0),
            us: (wire.ts * 1e6) as u64,
            from,
            line: wire.line.unwrap_or_default(),
            partial: wire.partial,
        }))
    }

    /// The line as a wire record, to write to a transcript.
    pub fn to_wire(&self) -> WireRecord {
        let dir = match self.from {
            Side::Client => record::CLIENT_TO_AGENT,
            Side::Agent => record::AGENT_TO_CLIENT,
        };
        let mut wire = WireRecord::line(self.us as f64 / 1e6, dir, self.seq, self.line.as_bytes());
        wire.partial = self.partial;
        wire
    }
}

const USAGE: &str =
    "usage: acp-interop tap --wire <file> --stderr <file> [--status <file>] -- <agent command...>";

/// The tap's arguments.
#[derive(Debug)]
pub struct TapArgs {
    /// The wire transcript (JSON lines of [`Record`]).
    pub wire: PathBuf,
    /// Where the agent's stderr goes.
    pub stderr: PathBuf,
    /// Where the agent's exit code is written when it exits (`signal <n>` if a signal ended it).
    pub status: Option<PathBuf>,
    /// The agent command.
    pub command: Vec<OsString>,
}

impl TapArgs {
    /// Reads `--wire <file> --stderr <file> [--status <file>] -- <command...>`.
    pub fn parse(args: &[OsString]) -> Result<TapArgs, String> {
        let mut wire = None;
        let mut stderr = None;
        let mut status = None;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.to_str() {
                Some("--wire") => wire = it.next().map(PathBuf::from),
                Some("--stderr") => stderr = it.next().map(PathBuf::from),
                Some("--status") => status = it.next().map(PathBuf::from),
                Some("--") => {
                    let command: Vec<OsString> = it.cloned().collect();
                    if command.is_empty() {
                        return Err("tap: no agent command after --".into());
                    }
                    return Ok(TapArgs {
                        wire: wire.ok_or("tap: missing --wire <file>")?,
                        stderr: stderr.ok_or("tap: missing --stderr <file>")?,
                        status,
                        command,
                    });
                }
                _ => return Err(format!("tap: unexpected argument {arg:?}")),
            }
        }
        Err(USAGE.into())
    }
}

struct Recorder {
    file: File,
    seq: u64,
}

impl Recorder {
    fn record(&mut self, from: Side, line: &[u8], partial: bool) {
        self.seq += 1;
        let dir = match from {
            Side::Client => record::CLIENT_TO_AGENT,
            Side::Agent => record::AGENT_TO_CLIENT,
        };
        let mut record = WireRecord::line(record::now(), dir, self.seq, line);
        record.partial = partial;
        let mut text = record.to_json();
        text.push('\n');
        // Recording must never stop the relay: a failed write only loses the record.
        let _ = self
            .file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush());
    }
}

/// Copies `reader` to `writer` as it comes, recording each line (framed by acp-rpc's line
/// framer in raw mode: blank lines and bytes that are not UTF-8 recorded as they crossed);
/// returns at EOF (or a broken pipe).
async fn relay(
    from: Side,
    mut reader: impl AsyncRead + Unpin,
    mut writer: impl AsyncWrite + Unpin,
    recorder: Arc<Mutex<Recorder>>,
) {
    let record = |line: WireLine, partial: bool| {
        let mut recorder = recorder.lock().unwrap_or_else(|p| p.into_inner());
        match line {
            WireLine::Line(text) => recorder.record(from, &text, partial),
            WireLine::Oversized { len } => {
                let note = format!("<a line of {len} bytes, over {MAX_LINE}: not recorded>");
                recorder.record(from, note.as_bytes(), partial)
            }
        }
    };
    let mut lines = RawLines::new(MAX_LINE);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for line in lines.push(&buf[..n]) {
            record(line, false);
        }
        if writer.write_all(&buf[..n]).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
    if let Some(line) = lines.finish() {
        record(line, true);
    }
}

/// The longest line the relay records (longer ones pass through, noted by their length).
const MAX_LINE: usize = 64 * 1024 * 1024;

/// A wire transcript written in this process, for an agent served in process (behind
/// acp-remote's server): [`WireLog::splice`] puts the same recording relay as the tap's between
/// a connection's pipe and the agent.
#[derive(Clone)]
pub struct WireLog(Arc<Mutex<Recorder>>);

impl WireLog {
    /// Creates (truncates) the transcript at `path`.
    pub fn create(path: &std::path::Path) -> std::io::Result<WireLog> {
        Ok(WireLog(Arc::new(Mutex::new(Recorder {
            file: File::create(path)?,
            seq: 0,
        }))))
    }

    /// Relays between the connection's end (`connection`, what acp-remote's server hands an
    /// agent served in process) and the returned agent's end, recording every message as it
    /// passes, whole (one frame, one record); the future ends once both directions ended.
    pub fn splice(
        &self,
        connection: MemoryEnd,
    ) -> (
        MemoryEnd,
        impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let (agent_end, relay_end) = memory_pair(256);
        let outer = connection.into_port();
        let inner = relay_end.into_port();
        let to_agent = tokio::spawn(relay_frames(
            Side::Client,
            outer.receiver,
            inner.sender,
            self.0.clone(),
        ));
        let from_agent = tokio::spawn(relay_frames(
            Side::Agent,
            inner.receiver,
            outer.sender,
            self.0.clone(),
        ));
        let done = async move {
            let _ = to_agent.await;
            let _ = from_agent.await;
        };
        (agent_end, done)
    }
}

/// Passes each message from `from` to `to`, recording it; returns when either side ends
/// (dropping `to` ends the other side's input).
async fn relay_frames(
    side: Side,
    mut from: FrameReceiver,
    to: FrameSender,
    recorder: Arc<Mutex<Recorder>>,
) {
    while let Some(frame) = from.recv().await {
        recorder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(side, &frame, false);
        if to.send(frame).await.is_err() {
            return;
        }
    }
}

/// Runs the tap; returns the agent's exit code (1 if it could not be started or was killed).
pub async fn run(args: TapArgs) -> i32 {
    let recorder = match File::create(&args.wire) {
        Ok(file) => Arc::new(Mutex::new(Recorder { file, seq: 0 })),
        Err(e) => {
            eprintln!("tap: cannot create {}: {e}", args.wire.display());
            return 1;
        }
    };
    let stderr = match File::create(&args.stderr) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("tap: cannot create {}: {e}", args.stderr.display());
            return 1;
        }
    };
    let mut child = match tokio::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("tap: cannot start {:?}: {e}", args.command);
            return 1;
        }
    };
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        eprintln!("tap: the agent's stdio was not piped");
        return 1;
    };
    // Client -> agent: when the client closes our stdin, the agent's stdin closes too.
    let to_agent = tokio::spawn(relay(
        Side::Client,
        tokio::io::stdin(),
        child_in,
        recorder.clone(),
    ));
    relay(Side::Agent, child_out, tokio::io::stdout(), recorder).await;
    let status = child.wait().await;
    to_agent.abort();
    let (code, text) = match status {
        Ok(status) => match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(code), _) => (code, code.to_string()),
            (None, Some(signal)) => (1, format!("signal {signal}")),
            (None, None) => (1, "unknown".to_owned()),
        },
        Err(e) => {
            eprintln!("tap: waiting for the agent failed: {e}");
            (1, format!("wait failed: {e}"))
        }
    };
    if let Some(path) = &args.status {
        let _ = std::fs::write(path, text);
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transcript is the one wire record format: every line reads back with the reader
    /// `acp trace view` uses, in order, with its direction, and as the checks' view.
    #[tokio::test]
    async fn the_transcript_is_wire_records_that_acp_trace_view_reads() {
        let path = std::env::temp_dir().join(format!("interop-tap-{}.jsonl", std::process::id()));
        let log = WireLog::create(&path).unwrap();
        // The server's side of the connection, driven by hand, and the agent's.
        let (server_end, connection_end) = memory_pair(4);
        let (agent_end, done) = log.splice(connection_end);
        let mut server = server_end.into_port();
        let mut agent = agent_end.into_port();
        server.sender.send(&b"{\"id\":1}"[..]).await.unwrap();
        assert_eq!(&agent.receiver.recv().await.unwrap()[..], b"{\"id\":1}");
        agent
            .sender
            .send(&b"{\"id\":1,\"result\":{}}"[..])
            .await
            .unwrap();
        server.receiver.recv().await.unwrap();
        drop((server, agent));
        done.await;

        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let wire: Vec<WireRecord> = text
            .lines()
            .map(|l| WireRecord::parse(l.as_bytes()).unwrap())
            .collect();
        let dirs: Vec<_> = wire.iter().map(|r| (r.dir.as_str(), r.seq)).collect();
        assert_eq!(
            dirs,
            [
                (record::CLIENT_TO_AGENT, Some(1)),
                (record::AGENT_TO_CLIENT, Some(2))
            ]
        );
        let view = Record::parse(text.lines().nth(1).unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(view.from, Side::Agent);
        assert_eq!(view.line, "{\"id\":1,\"result\":{}}");
        let back = Record::parse(&view.to_wire().to_json()).unwrap().unwrap();
        assert_eq!(
            (back.seq, back.from, back.line),
            (2, Side::Agent, view.line)
        );
    }
}
