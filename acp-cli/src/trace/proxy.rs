//! `acp trace --out FILE -- AGENT...`: a transparent stdio proxy.
//!
//! Put it in front of an agent in an editor's configuration: the editor talks to `acp trace`
//! exactly as to the agent. Bytes go through unchanged in both directions (each chunk is
//! written on before it is looked at), the agent's stderr is inherited, SIGINT, SIGTERM,
//! SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to it, and its exit status becomes
//! ours (a death by signal is reproduced by dying of the same signal). Every complete line is
//! recorded as a [`Record`] with its timestamp, direction and place in the order of both
//! directions (`seq`, taken before the line is passed on); the file is flushed whenever the
//! proxy goes idle, so a trace of a crashed session is still there.
//!
//! With `--serve ADDR` the same records also feed a live page ([`super::live`]) on ADDR for
//! as long as the agent runs; `--out` is then optional.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Command;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use acp_rpc::codec::{RawLines, WireLine};

use super::record::{self, Record};

/// A line longer than this is not recorded (the record says how long it was); it is never
/// assembled in memory, and the bytes passed through are unaffected.
pub const MAX_RECORDED_LINE: usize = 16 * 1024 * 1024;

/// Records waiting for the writer; a slow disk slows the proxy rather than growing memory.
const QUEUE: usize = 4096;

/// The proxy's exit status when it could not run the agent at all.
pub const EXIT_NOT_STARTED: i32 = 127;

/// Where `acp trace --serve` serves its live page, and who may look.
#[derive(Debug)]
pub struct Serve {
    /// The address (loopback unless `auth` is given).
    pub addr: std::net::SocketAddr,
    /// The token every viewer must give (`?token=`), if any.
    pub auth: Option<acp_remote::BearerToken>,
}

/// Creates (or truncates) the trace file readable by its owner only (`0600`, an existing
/// file's mode included): a trace holds every prompt and every file the agent read.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Runs the proxy; returns the exit status to use (or does not return: a death by signal is
/// passed on by dying of it).
pub async fn run(out: Option<&Path>, serve: Option<Serve>, command: &[OsString]) -> i32 {
    let Some((program, args)) = command.split_first() else {
        eprintln!("acp trace: no agent command after --");
        return 2;
    };
    let file = match out.map(private_file) {
        None => None,
        Some(Ok(file)) => Some(file),
        Some(Err(e)) => {
            eprintln!(
                "acp trace: cannot write {}: {e}",
                out.unwrap_or(Path::new("")).display()
            );
            return EXIT_NOT_STARTED;
        }
    };
    let shown: Vec<_> = command.iter().map(|a| a.to_string_lossy()).collect();
    let live = match serve {
        None => None,
        Some(serve) => {
            let live = super::live::Live::new(shown.join(" "));
            let token = serve.auth.is_some();
            let auth = serve
                .auth
                .map(|a| Arc::new(a) as Arc<dyn acp_remote::Authenticator>);
            match acp_remote::serve_live(serve.addr, live.clone(), auth).await {
                Ok(server) => {
                    let hint = if token { "?token=TOKEN" } else { "" };
                    eprintln!("acp trace: live page at {}{hint}", server.url());
                    Some(live)
                }
                Err(e) => {
                    eprintln!("acp trace: --serve {}: {e}", serve.addr);
                    return EXIT_NOT_STARTED;
                }
            }
        }
    };
    // Our handlers are in place before the agent starts: a signal that arrives once the agent
    // runs (even before its first line reaches the client) is forwarded, never our death.
    let signals = signal_streams();
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own group: a Ctrl-C in our terminal reaches it once, through us.
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "acp trace: cannot start `{}`: {e}",
                program.to_string_lossy()
            );
            return EXIT_NOT_STARTED;
        }
    };
    let pid = child.id();
    let (tx, rx) = mpsc::channel::<Record>(QUEUE);
    let writer = tokio::task::spawn_blocking(move || write_records(file, live, rx));
    let mut start = Record::new(record::now(), record::START);
    start.command = Some(
        command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    );
    let _ = tx.send(start).await;

    let numbering = Numbering::new(tx.clone());
    let child_stdin = child.stdin.take().expect("stdin is piped");
    let child_stdout = child.stdout.take().expect("stdout is piped");
    let to_agent = tokio::spawn(pump(
        tokio::io::stdin(),
        child_stdin,
        record::CLIENT_TO_AGENT,
        numbering.clone(),
    ));
    let to_client = tokio::spawn(pump(
        child_stdout,
        tokio::io::stdout(),
        record::AGENT_TO_CLIENT,
        numbering,
    ));
    let forwarder = pid.map(|pid| tokio::spawn(forward_signals(pid, signals)));

    let status = child.wait().await;
    // Everything the agent wrote before it exited reaches the client and the file.
    let _ = to_client.await;
    to_agent.abort();
    if let Some(forwarder) = forwarder {
        forwarder.abort();
    }
    let mut exit = Record::new(record::now(), record::EXIT);
    match &status {
        Ok(status) => {
            exit.code = status.code();
            exit.signal = status.signal();
        }
        Err(e) => eprintln!("acp trace: waiting for the agent failed: {e}"),
    }
    let _ = tx.send(exit).await;
    drop(tx);
    if let (Ok(Err(e)), Some(out)) = (writer.await, out) {
        eprintln!("acp trace: writing {} failed: {e}", out.display());
    }
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => code,
            (None, Some(sig)) => die_of(sig),
            (None, None) => 1,
        },
        Err(_) => 1,
    }
}

/// Numbers lines and queues their records in one step, for both directions: the queue
/// (and so the file) holds the records in `seq` order. Numbered apart and queued apart, two
/// directions could queue out of order (an answer's record before its request's, when the
/// request's pump was descheduled between the two steps).
#[derive(Clone)]
struct Numbering(Arc<tokio::sync::Mutex<Numbered>>);

struct Numbered {
    /// The next line's `seq`.
    next: u64,
    /// The writer's queue; `None` once the writer is gone (the bytes still go through).
    tx: Option<mpsc::Sender<Record>>,
}

impl Numbering {
    fn new(tx: mpsc::Sender<Record>) -> Numbering {
        Numbering(Arc::new(tokio::sync::Mutex::new(Numbered {
            next: 0,
            tx: Some(tx),
        })))
    }

    /// Numbers `lines` (read at `ts`, going `dir`; `partial`: the stream ended inside them)
    /// and queues their records.
    async fn record(&self, ts: f64, dir: &str, lines: Vec<WireLine>, partial: bool) {
        if lines.is_empty() {
            return;
        }
        let mut numbered = self.0.lock().await;
        for line in lines {
            let mut record = line_record(ts, dir, &mut numbered.next, line);
            record.partial = partial;
            let Some(tx) = &numbered.tx else { return };
            if tx.send(record).await.is_err() {
                numbered.tx = None;
            }
        }
    }
}

/// Copies `from` to `to` chunk by chunk, recording each complete line (framed by acp-rpc's
/// line framer in raw mode: a trace keeps blank lines and bytes that are not UTF-8 as they
/// crossed). A chunk's lines are numbered and queued before the chunk is passed on: a line
/// gets its place in the order (`seq`) before the peer can answer it, so an answer is never
/// numbered, or written to the file, before its request.
async fn pump<R, W>(mut from: R, mut to: W, dir: &'static str, numbering: Numbering)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 64 * 1024];
    let mut recorded = RawLines::new(MAX_RECORDED_LINE);
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let ts = record::now();
        let lines = recorded.push(chunk);
        numbering.record(ts, dir, lines, false).await;
        if to.write_all(chunk).await.is_err() || to.flush().await.is_err() {
            break;
        }
    }
    let last = recorded.finish().into_iter().collect();
    numbering.record(record::now(), dir, last, true).await;
    // EOF on one side closes the other (the agent sees its stdin end).
    let _ = to.shutdown().await;
}

fn line_record(ts: f64, dir: &str, seq: &mut u64, line: WireLine) -> Record {
    let mut record = Record::new(ts, dir);
    record.seq = Some(*seq);
    *seq += 1;
    let mut line = match line {
        WireLine::Line(line) => line.to_vec(),
        WireLine::Oversized { len } => {
            tracing::debug!(
                direction = dir,
                seq = record.seq,
                bytes = len,
                "line not recorded"
            );
            record.line = Some(format!(
                "<a line of {len} bytes, over the trace's limit of {MAX_RECORDED_LINE}: not recorded>"
            ));
            record.lossy = true;
            return record;
        }
    };
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    tracing::debug!(
        direction = dir,
        seq = record.seq,
        bytes = line.len(),
        "line"
    );
    match String::from_utf8(line) {
        Ok(text) => {
            crate::telemetry::passing_hop(&text);
            record.line = Some(text);
        }
        Err(e) => {
            record.line = Some(String::from_utf8_lossy(e.as_bytes()).into_owned());
            record.lossy = true;
        }
    }
    record
}

/// Writes records as they come to the file (flushed whenever the queue is empty) and the
/// live window. A file that fails to write is given up (its error returned at the end)
/// while a live window goes on; without one, the error ends the recording.
pub(crate) fn write_records(
    file: Option<std::fs::File>,
    live: Option<Arc<super::live::Live>>,
    mut rx: mpsc::Receiver<Record>,
) -> std::io::Result<()> {
    fn write(out: &mut std::io::BufWriter<std::fs::File>, record: &Record) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, record)?;
        out.write_all(b"\n")
    }
    let mut out = file.map(std::io::BufWriter::new);
    let mut failed = Ok(());
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        while let Some(record) = next {
            if let Some(live) = &live {
                live.push(&record);
            }
            if let Some(Err(e)) = out.as_mut().map(|o| write(o, &record)) {
                failed = Err(e);
                out = None;
            }
            next = rx.try_recv().ok();
        }
        if let Some(Err(e)) = out.as_mut().map(std::io::Write::flush) {
            failed = Err(e);
            out = None;
        }
        if failed.is_err() && live.is_none() {
            return failed;
        }
    }
    failed
}

/// Installs our handlers of the usual termination and user signals (from then on they no
/// longer end us by default) and returns each with its number.
fn signal_streams() -> Vec<(i32, tokio::signal::unix::Signal)> {
    [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
        SignalKind::quit(),
        SignalKind::user_defined1(),
        SignalKind::user_defined2(),
    ]
    .into_iter()
    .filter_map(|kind| Some((kind.as_raw_value(), signal(kind).ok()?)))
    .collect()
}

/// Forwards the signals of [`signal_streams`] to the agent.
async fn forward_signals(pid: u32, signals: Vec<(i32, tokio::signal::unix::Signal)>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<i32>();
    for (number, mut stream) in signals {
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(number).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    while let Some(sig) = rx.recv().await {
        // SAFETY: kill(2) with our child's pid and a valid signal number.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Dies of `sig` (default action), as the agent did; 128+sig if that does not end us.
fn die_of(sig: i32) -> i32 {
    let _ = std::io::stdout().flush();
    // SAFETY: restoring the default action and raising the signal on ourselves.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    128 + sig
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A writer whose flush takes 200 ms: the pump writing into it is held between passing
    /// a line on and going on, as a loaded machine may hold it.
    struct SlowFlush<W> {
        inner: W,
        delay: Option<Pin<Box<tokio::time::Sleep>>>,
    }

    impl<W: AsyncWrite + Unpin> AsyncWrite for SlowFlush<W> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut self.inner).poll_write(cx, buf)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            let delay = self.delay.get_or_insert_with(|| {
                Box::pin(tokio::time::sleep(std::time::Duration::from_millis(200)))
            });
            if delay.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.delay = None;
            Pin::new(&mut self.inner).poll_flush(cx)
        }

        fn poll_shutdown(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    /// Issue 52: a trace file could hold an answer (seq 1) before the request it answers
    /// (seq 0): the request's pump numbered its line, passed it on and was held before
    /// queueing the record, while the answer's pump numbered and queued its own. Here the
    /// "agent" answers at once (the request's bytes are the answer's) and the request's pump
    /// is held 200 ms after passing the line on.
    #[tokio::test]
    async fn records_are_queued_in_seq_order_when_a_pump_is_held_after_passing_a_line_on() {
        let (tx, mut rx) = mpsc::channel(16);
        let numbering = Numbering::new(tx);
        let (to_agent, from_agent) = tokio::io::duplex(1024);
        let request: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        let held = SlowFlush {
            inner: to_agent,
            delay: None,
        };
        let requests = tokio::spawn(pump(
            request,
            held,
            record::CLIENT_TO_AGENT,
            numbering.clone(),
        ));
        let answers = tokio::spawn(pump(
            from_agent,
            tokio::io::sink(),
            record::AGENT_TO_CLIENT,
            numbering,
        ));
        requests.await.unwrap();
        answers.await.unwrap();
        let mut order = Vec::new();
        while let Ok(record) = rx.try_recv() {
            order.push((record.seq, record.dir));
        }
        assert_eq!(
            order,
            [
                (Some(0), record::CLIENT_TO_AGENT.to_owned()),
                (Some(1), record::AGENT_TO_CLIENT.to_owned())
            ]
        );
    }

    #[test]
    fn lines_are_numbered_and_repaired_when_not_utf8() {
        let mut seq = 5;
        let r = line_record(
            1.0,
            record::CLIENT_TO_AGENT,
            &mut seq,
            WireLine::Line(b"{\"a\":1}\r"[..].into()),
        );
        assert_eq!(
            (r.seq, r.line.as_deref(), r.lossy),
            (Some(5), Some("{\"a\":1}"), false)
        );
        let r = line_record(
            1.0,
            record::AGENT_TO_CLIENT,
            &mut seq,
            WireLine::Line(vec![b'x', 0xff].into()),
        );
        assert_eq!(
            (r.seq, r.line.as_deref(), r.lossy),
            (Some(6), Some("x\u{fffd}"), true)
        );
    }
}
