//! The terminal methods (`terminal/create`, `terminal/output`, `terminal/wait_for_exit`,
//! `terminal/kill`, `terminal/release`) served by running commands locally: [`Terminals`].
//!
//! Output (stdout and stderr interleaved as read) is captured up to the request's
//! `outputByteLimit` (or [`DEFAULT_OUTPUT_BYTE_LIMIT`]), keeping the **end** of the output:
//! older bytes are dropped from the front, the cut is moved forward to a UTF-8 character
//! boundary, and `truncated` becomes `true`. Each command runs in its own process group;
//! `kill` and `release` kill the whole group (via the system `kill` program).

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::Error;
use acp_types::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, SessionId, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::process::kill_process_group;

/// Output limit when the request sets none: 1 MiB.
pub const DEFAULT_OUTPUT_BYTE_LIMIT: u64 = 1024 * 1024;

/// Captured output, keeping the last `limit` bytes.
#[derive(Debug)]
struct Output {
    buf: Vec<u8>,
    limit: usize,
    truncated: bool,
}

impl Output {
    fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
        if self.buf.len() > self.limit {
            let mut cut = self.buf.len() - self.limit;
            // Never start inside a UTF-8 sequence: skip continuation bytes.
            while cut < self.buf.len() && (self.buf[cut] & 0b1100_0000) == 0b1000_0000 {
                cut += 1;
            }
            self.buf.drain(..cut);
            self.truncated = true;
        }
    }

    /// The text so far; an incomplete trailing sequence is left out while running.
    fn text(&self, finished: bool) -> String {
        let bytes = match std::str::from_utf8(&self.buf) {
            Ok(s) => return s.to_owned(),
            Err(e) if e.error_len().is_none() && !finished => &self.buf[..e.valid_up_to()],
            Err(_) => &self.buf[..],
        };
        let mut s = String::from_utf8_lossy(bytes).into_owned();
        if s.len() > self.limit {
            // Replacement characters can grow the text: cut at a boundary again.
            let mut cut = s.len() - self.limit;
            while !s.is_char_boundary(cut) {
                cut += 1;
            }
            s.drain(..cut);
        }
        s
    }
}

#[derive(Debug)]
struct Terminal {
    session_id: SessionId,
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<TerminalExitStatus>>,
    kill: Arc<Notify>,
    pgid: Option<u32>,
    task: JoinHandle<()>,
}

impl Terminal {
    /// Kills the command's whole process group (grandchildren may outlive the command
    /// itself, so this is done even after it exited) and wakes the waiter to kill the child.
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            kill_process_group(pgid);
        }
        if self.exit.borrow().is_none() {
            self.kill.notify_one();
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.kill();
        self.task.abort();
    }
}

/// Runs the commands of `terminal/*` requests and keeps their output. Cheap to clone; every
/// terminal is killed when released or when the last clone drops.
#[derive(Clone, Debug, Default)]
pub struct Terminals {
    inner: Arc<Mutex<HashMap<TerminalId, Arc<Terminal>>>>,
    next: Arc<AtomicU64>,
}

fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return format!("SIG{sig}"),
    };
    name.to_owned()
}

fn exit_status(status: std::io::Result<std::process::ExitStatus>) -> TerminalExitStatus {
    let (exit_code, signal) = match status {
        Ok(s) => (
            s.code().and_then(|c| u32::try_from(c).ok()),
            s.signal().map(signal_name),
        ),
        Err(_) => (None, None),
    };
    TerminalExitStatus {
        exit_code,
        signal,
        meta: None,
    }
}

async fn pump(mut r: impl AsyncRead + Unpin, out: Arc<Mutex<Output>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => out
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buf[..n]),
        }
    }
}

impl Terminals {
    /// An empty manager.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TerminalId, Arc<Terminal>>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, session: &SessionId, id: &TerminalId) -> Result<Arc<Terminal>, Error> {
        self.lock()
            .get(id)
            .filter(|t| &t.session_id == session)
            .cloned()
            .ok_or_else(|| {
                Error::resource_not_found(format!("terminal {} not found", id.0))
                    .with_data(json!({ "terminalId": id.0 }))
            })
    }

    /// Serves `terminal/create`: starts `command` with `args`, `env` and `cwd` (absolute)
    /// and returns its id at once.
    pub async fn create(
        &self,
        params: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        let mut cmd = Command::new(&params.command);
        cmd.args(&params.args)
            .envs(params.env.iter().map(|v| (&v.name, &v.value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = &params.cwd {
            if !Path::new(cwd).is_absolute() {
                return Err(Error::invalid_params(format!("cwd {cwd} is not absolute"))
                    .with_data(json!({ "field": "cwd" })));
            }
            cmd.current_dir(cwd);
        }
        let mut child = cmd.spawn().map_err(|e| {
            Error::internal_error(format!("failed to start `{}`: {e}", params.command))
                .with_data(json!({ "command": params.command }))
        })?;
        let limit = params
            .output_byte_limit
            .unwrap_or(DEFAULT_OUTPUT_BYTE_LIMIT)
            .min(usize::MAX as u64) as usize;
        let output = Arc::new(Mutex::new(Output {
            buf: Vec::new(),
            limit,
            truncated: false,
        }));
        let readers: Vec<JoinHandle<()>> = [
            child
                .stdout
                .take()
                .map(|r| tokio::spawn(pump(r, output.clone()))),
            child
                .stderr
                .take()
                .map(|r| tokio::spawn(pump(r, output.clone()))),
        ]
        .into_iter()
        .flatten()
        .collect();
        let pgid = child.id();
        let (exit_tx, exit_rx) = watch::channel(None);
        let kill = Arc::new(Notify::new());
        let kill2 = kill.clone();
        let task = tokio::spawn(async move {
            let status = tokio::select! {
                s = child.wait() => s,
                _ = kill2.notified() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            // Let the readers catch the last output (a grandchild holding the pipes open
            // must not delay the exit status much).
            for r in readers {
                let _ = tokio::time::timeout(Duration::from_millis(200), r).await;
            }
            let _ = exit_tx.send(Some(exit_status(status)));
        });
        let id = TerminalId(format!(
            "term-{}",
            self.next.fetch_add(1, Ordering::Relaxed) + 1
        ));
        self.lock().insert(
            id.clone(),
            Arc::new(Terminal {
                session_id: params.session_id,
                output,
                exit: exit_rx,
                kill,
                pgid,
                task,
            }),
        );
        Ok(CreateTerminalResponse {
            terminal_id: id,
            meta: None,
        })
    }

    /// Serves `terminal/output`: the captured output, whether it was truncated, and the exit
    /// status once the command has exited.
    pub async fn output(
        &self,
        params: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        let t = self.get(&params.session_id, &params.terminal_id)?;
        let exit_status = t.exit.borrow().clone();
        let out = t.output.lock().unwrap_or_else(|p| p.into_inner());
        Ok(TerminalOutputResponse {
            output: out.text(exit_status.is_some()),
            truncated: out.truncated,
            exit_status,
            meta: None,
        })
    }

    /// Serves `terminal/wait_for_exit`.
    pub async fn wait_for_exit(
        &self,
        params: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        let t = self.get(&params.session_id, &params.terminal_id)?;
        let mut rx = t.exit.clone();
        drop(t);
        let status = rx
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|s| s.clone());
        let status = status.ok_or_else(|| {
            Error::resource_not_found(format!("terminal {} was released", params.terminal_id.0))
        })?;
        Ok(WaitForTerminalExitResponse {
            exit_code: status.exit_code,
            signal: status.signal,
            meta: None,
        })
    }

    /// Serves `terminal/kill`: kills the command (and its process group); the terminal and
    /// its output stay until released.
    pub async fn kill(&self, params: KillTerminalRequest) -> Result<KillTerminalResponse, Error> {
        self.get(&params.session_id, &params.terminal_id)?.kill();
        Ok(KillTerminalResponse::default())
    }

    /// Serves `terminal/release`: kills the command if still running and frees the terminal.
    pub async fn release(
        &self,
        params: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        self.get(&params.session_id, &params.terminal_id)?;
        let t = self.lock().remove(&params.terminal_id);
        if let Some(t) = t {
            t.kill();
        }
        Ok(ReleaseTerminalResponse::default())
    }

    /// Number of terminals not yet released.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no terminal is held.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}
