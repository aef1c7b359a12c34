//! The terminals a v1 agent asks its client for, run by the translation when the client
//! speaks v2 (v2 clients run no terminals: a v2 agent runs its own and reports them). Each
//! `terminal/create` starts the command here (no shell; `cwd` defaults to
//! [`crate::AdapterOptions::cwd`]), answers the v1 agent's `terminal/*` calls from it, and
//! shows it to the v2 client as a v2 terminal: `terminal_update` with the command, `cwd`
//! and `cancel` capability at the start, `terminal_output_chunk` for every read, and
//! `terminal_update` with `exitStatus` at the end. `terminal/cancel` from the v2 client
//! kills it. Only with [`crate::AdapterOptions::with_local_terminals`]: starting processes
//! is the client's decision.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use acp_rpc::Error;
use acp_types::{v1, v2};
use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, watch};

use super::map::recast;
use super::native::ClientHandle;
use crate::{AdapterOptions, lock};

/// The terminals of one translation, by id.
#[derive(Default)]
pub(crate) struct Terminals {
    next: AtomicU64,
    running: Mutex<HashMap<String, Arc<Term>>>,
}

/// One running (or finished) command.
struct Term {
    /// The output so far (the end kept when over the byte limit) and whether it was cut.
    output: Mutex<(String, bool)>,
    limit: Option<u64>,
    /// The exit status, once known.
    exit: watch::Sender<Option<v1::TerminalExitStatus>>,
    kill: Notify,
}

/// `-32602` for an unknown terminal id.
fn unknown(id: &str) -> Error {
    Error::invalid_params(format!("unknown terminal: {id}")).with_data(json!({ "terminalId": id }))
}

impl Terminals {
    fn get(&self, id: &str) -> Result<Arc<Term>, Error> {
        lock(&self.running)
            .get(id)
            .cloned()
            .ok_or_else(|| unknown(id))
    }

    /// Starts the command and tells the v2 client about the terminal.
    pub(crate) async fn create(
        &self,
        p: v1::CreateTerminalRequest,
        client: ClientHandle,
        options: &AdapterOptions,
    ) -> Result<v1::CreateTerminalResponse, Error> {
        let id = format!("term-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let cwd = p.cwd.clone().unwrap_or_else(|| options.session_cwd());
        let mut command = tokio::process::Command::new(&p.command);
        command
            .args(&p.args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in &p.env {
            command.env(&var.name, &var.value);
        }
        let mut child = command.spawn().map_err(|e| {
            Error::internal_error(format!(
                "terminal/create: {} could not start: {e}",
                p.command
            ))
        })?;
        let term = Arc::new(Term {
            output: Mutex::default(),
            limit: p.output_byte_limit,
            exit: watch::channel(None).0,
            kill: Notify::new(),
        });
        lock(&self.running).insert(id.clone(), term.clone());
        let session = p.session_id.0.clone();
        let line = std::iter::once(p.command.clone())
            .chain(p.args.clone())
            .collect::<Vec<_>>();
        let start = json!({
            "sessionUpdate": "terminal_update", "terminalId": id, "command": line.join(" "),
            "cwd": cwd, "capabilities": { "cancel": {} },
        });
        show(&client, &session, start).await;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let (chunks, mut read) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
        for stream in [stdout.map(boxed), stderr.map(boxed)].into_iter().flatten() {
            let chunks = chunks.clone();
            tokio::spawn(pump(stream, chunks));
        }
        drop(chunks);
        let terminal = id.clone();
        tokio::spawn(async move {
            let mut reading = true;
            let status = loop {
                tokio::select! {
                    chunk = read.recv(), if reading => match chunk {
                        Some(bytes) => {
                            term.append(&bytes);
                            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
                            let chunk = json!({"sessionUpdate": "terminal_output_chunk", "terminalId": terminal, "data": data});
                            show(&client, &session, chunk).await;
                        }
                        None => reading = false,
                    },
                    status = child.wait(), if !reading => break status.ok(),
                    () = term.kill.notified() => {
                        let _ = child.kill().await;
                    }
                }
            };
            let exit = exit_status(status);
            let end = json!({"sessionUpdate": "terminal_update", "terminalId": terminal,
                "exitStatus": exit_json(&exit), "capabilities": null});
            term.exit.send_replace(Some(exit));
            show(&client, &session, end).await;
        });
        Ok(v1::CreateTerminalResponse::new(id))
    }

    /// `terminal/output`: the output so far and the exit status once known.
    pub(crate) fn output(&self, id: &str) -> Result<v1::TerminalOutputResponse, Error> {
        let term = self.get(id)?;
        let (output, truncated) = lock(&term.output).clone();
        let mut answer = v1::TerminalOutputResponse::new(output, truncated);
        answer.exit_status = term.exit.borrow().clone();
        Ok(answer)
    }

    /// `terminal/wait_for_exit`.
    pub(crate) async fn wait(&self, id: &str) -> Result<v1::WaitForTerminalExitResponse, Error> {
        let mut exit = self.get(id)?.exit.subscribe();
        let status = exit
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Error::internal_error("the terminal's watcher ended"))?
            .clone()
            .unwrap_or_default();
        let mut answer = v1::WaitForTerminalExitResponse::new();
        (answer.exit_code, answer.signal) = (status.exit_code, status.signal);
        Ok(answer)
    }

    /// `terminal/kill` and v2's `terminal/cancel`: stops the command (the id stays valid).
    pub(crate) fn kill(&self, id: &str) -> Result<(), Error> {
        self.get(id)?.kill.notify_one();
        Ok(())
    }

    /// `terminal/release`: stops the command and forgets the id.
    pub(crate) fn release(&self, id: &str) -> Result<(), Error> {
        let term = lock(&self.running).remove(id).ok_or_else(|| unknown(id))?;
        term.kill.notify_one();
        Ok(())
    }
}

impl Term {
    /// Appends output, keeping the last `limit` bytes (cut at a character boundary).
    fn append(&self, bytes: &[u8]) {
        let mut output = lock(&self.output);
        output.0.push_str(&String::from_utf8_lossy(bytes));
        if let Some(limit) = self.limit.and_then(|l| usize::try_from(l).ok())
            && output.0.len() > limit
        {
            let mut cut = output.0.len() - limit;
            while !output.0.is_char_boundary(cut) {
                cut += 1;
            }
            output.0.drain(..cut);
            output.1 = true;
        }
    }
}

type Stream = Box<dyn tokio::io::AsyncRead + Unpin + Send>;

fn boxed(stream: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Stream {
    Box::new(stream)
}

/// Reads a stream to its end in chunks.
async fn pump(mut stream: Stream, chunks: tokio::sync::mpsc::Sender<Vec<u8>>) {
    let mut buffer = vec![0; 8192];
    while let Ok(n) = stream.read(&mut buffer).await {
        if n == 0 || chunks.send(buffer[..n].to_vec()).await.is_err() {
            break;
        }
    }
}

fn exit_status(status: Option<std::process::ExitStatus>) -> v1::TerminalExitStatus {
    let mut exit = v1::TerminalExitStatus::new();
    if let Some(status) = status {
        exit.exit_code = status.code().and_then(|c| u32::try_from(c).ok());
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            exit.signal = status.signal().map(|s| match s {
                9 => "SIGKILL".to_string(),
                15 => "SIGTERM".to_string(),
                2 => "SIGINT".to_string(),
                n => format!("signal {n}"),
            });
        }
    }
    exit
}

fn exit_json(exit: &v1::TerminalExitStatus) -> Value {
    json!({ "exitCode": exit.exit_code, "signal": exit.signal })
}

/// Sends a v2 terminal update to the client (a failure is logged: the v1 agent's call is
/// answered regardless).
async fn show(client: &ClientHandle, session: &str, update: Value) {
    let sent = match recast::<v2::SessionUpdate>(update, "the terminal update") {
        Ok(update) => {
            let n = v2::UpdateSessionNotification::new(session, update);
            client.session_update(n).await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        tracing::debug!(session, error = %e, "a terminal update did not reach the v2 client");
    }
}
