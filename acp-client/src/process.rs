//! Running an agent as a child process over stdio: [`AgentProcess`].
//!
//! The child gets piped stdin/stdout (the ACP transport) and stderr, which is forwarded line
//! by line to `tracing` (target `acp_client::agent_stderr`) while a bounded tail (the last
//! [`STDERR_TAIL_LINES`] lines, at most [`STDERR_TAIL_BYTES`] bytes) is kept for error
//! messages. The child is the leader of its own process group, and the whole group is
//! killed (SIGKILL, with kill(2)) when the handle drops, so wrapper launchers (`npx`, `uvx`,
//! shell scripts) do not leak grandchildren. On Linux, [`AgentProcess::shutdown`] also stops
//! the agent's descendants that left its group (a `setsid` grandchild), with the same
//! SIGTERM, grace, SIGKILL as the group: the client is a child subreaper and the agent's
//! processes carry a cleanup tag in their environment (what is and is not caught:
//! [`crate::terminal::TerminalConfig::reap_orphans`]).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::Config;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

use crate::client::Client;
use crate::connection::ClientConnection;
use crate::reaper;

/// Lines of stderr kept for error messages.
pub const STDERR_TAIL_LINES: usize = 64;
/// Bytes of stderr kept for error messages.
pub const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct AgentCommand {
    /// The program (looked up in `PATH` if it has no slash).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment variables (added to the inherited environment, or with
    /// `env_clear` the whole of it).
    pub env: Vec<(OsString, OsString)>,
    /// Start from an empty environment instead of this process's: the child sees only
    /// `env` (and the cleanup tag [`AgentProcess::spawn`] adds), so secrets in this
    /// process's environment stay here (`acp serve`'s gateway children).
    pub env_clear: bool,
    /// Start the child in a session of its own (`setsid`), not only a process group of its
    /// own: it has no controlling terminal, so nothing it runs can read from or push input
    /// into (`TIOCSTI`) the terminal this process runs in. It leads its process group either
    /// way, so shutdown and the group kill are the same.
    pub new_session: bool,
    /// Working directory (inherited when `None`).
    pub cwd: Option<PathBuf>,
}

impl AgentCommand {
    /// A command running `program` with no arguments.
    pub fn new(program: impl Into<OsString>) -> Self {
        AgentCommand {
            program: program.into(),
            ..Default::default()
        }
    }
    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }
    /// Adds arguments.
    #[must_use]
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
    /// Adds an environment variable.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
    /// Starts the child from an empty environment: only the variables given with
    /// [`AgentCommand::env`] reach it.
    #[must_use]
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }
    /// Starts the child in a session of its own, without a controlling terminal (see the
    /// field `new_session`).
    #[must_use]
    pub fn new_session(mut self) -> Self {
        self.new_session = true;
        self
    }
    /// Sets the working directory.
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }
    fn describe(&self) -> String {
        let mut s = self.program.to_string_lossy().into_owned();
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    }
}

/// Why an agent process failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The program could not be started.
    #[error("failed to start agent `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The agent exited (possibly before it was expected to).
    #[error("agent `{command}` exited ({status}){}", tail_suffix(.stderr_tail))]
    Exited {
        /// The command line.
        command: String,
        /// How it exited.
        status: ExitStatus,
        /// The last lines it wrote to stderr.
        stderr_tail: String,
    },
    /// The stdio pipes were already taken (by an earlier `connect` or `take_stdio`).
    #[error("the agent's stdio was already taken")]
    StdioTaken,
    /// No dialect could be agreed with the agent.
    #[error("negotiating with agent `{command}` failed: {error}{}", tail_suffix(.stderr))]
    Negotiation {
        /// The command line.
        command: String,
        /// What went wrong.
        #[source]
        error: Box<crate::negotiate::NegotiationError>,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// Waiting for the process failed.
    #[error("waiting for agent `{command}` failed: {source}")]
    Wait {
        /// The command line.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

fn tail_suffix(tail: &str) -> String {
    if tail.is_empty() {
        "; it wrote nothing to stderr".to_owned()
    } else {
        format!("; last stderr output:\n{tail}")
    }
}

#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl Tail {
    fn push(&mut self, line: String) {
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.lines.len() > STDERR_TAIL_LINES || self.bytes > STDERR_TAIL_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }
}

/// A running agent child process. Dropping it kills the child's whole process group.
#[derive(Debug)]
pub struct AgentProcess {
    command: String,
    child: Child,
    pgid: Option<u32>,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    tail: Arc<Mutex<Tail>>,
    stderr_task: Option<JoinHandle<()>>,
    connection: Option<ClientConnection>,
    /// Marks the agent's processes so orphans that left its group are found (`reaper`).
    cleanup_tag: String,
}

impl std::fmt::Debug for Tail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tail")
            .field("lines", &self.lines.len())
            .finish()
    }
}

impl AgentProcess {
    /// Spawns the command with piped stdio in its own process group.
    pub fn spawn(cmd: &AgentCommand) -> Result<AgentProcess, ProcessError> {
        let command = cmd.describe();
        let mut c = Command::new(&cmd.program);
        if cmd.env_clear {
            c.env_clear();
        }
        c.args(&cmd.args)
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if cmd.new_session {
            // SAFETY: setsid(2) is async-signal-safe and touches no memory of this process.
            unsafe {
                c.pre_exec(|| {
                    if libc::setsid() == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        } else {
            c.process_group(0);
        }
        if let Some(dir) = &cmd.cwd {
            c.current_dir(dir);
        }
        let cleanup_tag = reaper::new_marker();
        reaper::become_subreaper();
        c.env(reaper::MARKER_ENV, &cleanup_tag);
        let mut child = c.spawn().map_err(|source| ProcessError::Spawn {
            command: command.clone(),
            source,
        })?;
        let pgid = child.id();
        let tail = Arc::new(Mutex::new(Tail::default()));
        let stderr_task = child.stderr.take().map(|stderr| {
            let tail = tail.clone();
            let program = cmd.program.to_string_lossy().into_owned();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    // A line longer than the tail limit is split, so memory stays bounded.
                    let mut limited = (&mut reader).take(STDERR_TAIL_BYTES as u64);
                    match limited.read_until(b'\n', &mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let mut line = String::from_utf8_lossy(&buf).into_owned();
                    while line.ends_with(['\n', '\r']) {
                        line.pop();
                    }
                    if line.len() > STDERR_TAIL_BYTES {
                        let mut cut = STDERR_TAIL_BYTES;
                        while !line.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        line.truncate(cut);
                    }
                    tracing::info!(target: "acp_client::agent_stderr", agent = %program, "{line}");
                    tail.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                }
            })
        });
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        // Large messages cross in one step instead of 64 KiB ones (see `grow_pipe`).
        for fd in [
            stdin.as_ref().map(AsFd::as_fd),
            stdout.as_ref().map(AsFd::as_fd),
        ]
        .into_iter()
        .flatten()
        {
            acp_rpc::stdio::grow_pipe(fd);
        }
        Ok(AgentProcess {
            command,
            stdin,
            stdout,
            child,
            pgid,
            tail,
            stderr_task,
            connection: None,
            cleanup_tag,
        })
    }

    /// The child's process id (also its process group id), if it has not been reaped.
    pub fn id(&self) -> Option<u32> {
        self.pgid
    }

    /// The command line, for messages.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Takes the stdio pipes (agent's stdout to read, stdin to write) to run a connection
    /// yourself. [`AgentProcess::shutdown`] then cannot close stdin: close your connection.
    pub fn take_stdio(&mut self) -> Option<(ChildStdout, ChildStdin)> {
        Some((self.stdout.take()?, self.stdin.take()?))
    }

    /// Runs `client` over the child's stdio (what [`crate::Builder::spawn`] does). The
    /// connection is closed by [`AgentProcess::shutdown`].
    pub(crate) fn connect<C: Client>(
        &mut self,
        client: std::sync::Arc<C>,
        config: Config,
    ) -> Result<ClientConnection, ProcessError> {
        let (stdout, stdin) = self.take_stdio().ok_or(ProcessError::StdioTaken)?;
        let conn = ClientConnection::start(client, (stdout, stdin), config);
        self.connection = Some(conn.clone());
        Ok(conn)
    }

    /// Finds the dialect the agent speaks and runs `client` over the child's stdio in it
    /// (see [`crate::negotiate`]; what a negotiating [`crate::Builder::spawn`] does); the v1
    /// `initialize` is done. The connection is closed by [`AgentProcess::shutdown`]. A
    /// failed negotiation names the agent's stderr tail.
    pub(crate) async fn negotiate<C: Client>(
        &mut self,
        client: std::sync::Arc<C>,
        options: crate::negotiate::NegotiateOptions,
    ) -> Result<crate::negotiate::Negotiated, ProcessError> {
        let (stdout, stdin) = self.take_stdio().ok_or(ProcessError::StdioTaken)?;
        match crate::negotiate::connect(client, stdout, stdin, options).await {
            Ok(negotiated) => {
                self.connection = Some(negotiated.connection.clone());
                Ok(negotiated)
            }
            Err(error) => Err(ProcessError::Negotiation {
                command: self.command.clone(),
                error: Box::new(error),
                stderr: self.stderr_tail(),
            }),
        }
    }

    /// The last lines the agent wrote to stderr (joined with newlines).
    pub fn stderr_tail(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// If the child has already exited, the [`ProcessError::Exited`] describing it.
    pub async fn check_exited(&mut self) -> Option<ProcessError> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(self.exited(status).await),
            _ => None,
        }
    }

    /// Waits for the child to exit and describes how (with the stderr tail). Use it when the
    /// connection closes unexpectedly to tell the user why.
    pub async fn wait_exit(&mut self) -> ProcessError {
        match self.child.wait().await {
            Ok(status) => self.exited(status).await,
            Err(source) => ProcessError::Wait {
                command: self.command.clone(),
                source,
            },
        }
    }

    async fn exited(&mut self, status: ExitStatus) -> ProcessError {
        // Let the stderr forwarder drain what the child wrote before it died (a grandchild
        // holding stderr open must not stall us).
        if let Some(task) = self.stderr_task.as_mut() {
            let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
        }
        ProcessError::Exited {
            command: self.command.clone(),
            status,
            stderr_tail: self.stderr_tail(),
        }
    }

    /// Graceful shutdown, in three steps, each given up to `grace`:
    ///
    /// 1. closes the agent's stdin (and the connection a `Builder` attached to it)
    ///    and waits for the agent to exit by itself;
    /// 2. if it has not, or helpers it started are still running in its process group,
    ///    sends SIGTERM to the group and waits for the agent and the group to be gone;
    /// 3. only then sends SIGKILL to whatever is left.
    ///
    /// Then, on Linux, the agent's descendants that left its group and were orphaned (a
    /// `setsid` helper) get the same: SIGTERM, up to `grace` to exit, SIGKILL.
    ///
    /// An agent that exits cleanly on EOF and leaves nothing behind gets no signal at all
    /// and costs nothing beyond its own exit (no timer, no walk of every process in
    /// `/proc`: a look at the client's own children); helpers get SIGTERM (a chance to
    /// clean up their temporary files) before any SIGKILL. Returns the agent's exit status. Dropping an `AgentProcess` instead kills
    /// the group at once.
    pub async fn shutdown(mut self, grace: Duration) -> Result<ExitStatus, ProcessError> {
        self.stdin.take();
        if let Some(conn) = self.connection.take() {
            conn.close();
        }
        let mut status = tokio::time::timeout(grace, self.child.wait()).await.ok();
        if status.is_none() || self.group_alive() {
            if let Some(pgid) = self.pgid {
                reaper::signal_group(pgid, libc::SIGTERM);
            }
            let deadline = tokio::time::Instant::now() + grace;
            if status.is_none() {
                status = tokio::time::timeout_at(deadline, self.child.wait())
                    .await
                    .ok();
            }
            while self.group_alive() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
        if status.is_none() || self.group_alive() {
            tracing::debug!(command = %self.command, "agent outlived SIGTERM: SIGKILL");
            self.kill_group();
            let _ = self.child.start_kill();
            if status.is_none() {
                status = Some(self.child.wait().await);
            }
        }
        let status = status.expect("waited above");
        // The processes that left the group (a `setsid` grandchild): see `crate::reaper`.
        // When the group is gone, its orphans are ours already: if none is running, there
        // is nothing to sweep.
        let tags = vec![self.cleanup_tag.clone()];
        let settled = !self.group_alive();
        if !settled || reaper::has_marked_orphans(&tags) {
            let _ = tokio::task::spawn_blocking(move || reaper::sweep(&tags, &[], grace, settled))
                .await;
        }
        status.map_err(|source| ProcessError::Wait {
            command: self.command.clone(),
            source,
        })
    }

    /// Whether any process of the agent's group is still running (zombies waiting to be
    /// reaped do not count).
    fn group_alive(&self) -> bool {
        self.pgid.is_some_and(reaper::group_alive)
    }

    /// Kills the whole process group now (SIGKILL), without waiting.
    pub fn kill(&mut self) {
        self.kill_group();
        let _ = self.child.start_kill();
    }

    fn kill_group(&self) {
        if let Some(pgid) = self.pgid {
            reaper::signal_group(pgid, libc::SIGKILL);
        }
    }
}

/// The processes of a chain started together (a proxy chain's components: `acp conduct`
/// and the interop matrix's conductor): spawned in order, each an [`AgentProcess`], and
/// stopped together with [`AgentProcess::shutdown`]'s steps.
#[derive(Debug, Default)]
pub struct ProcessChain {
    children: Vec<AgentProcess>,
}

/// One started member of a [`ProcessChain`]: its command line and its stdio.
#[derive(Debug)]
pub struct ChainMember {
    /// The command line, for errors and logs.
    pub command: String,
    /// What it writes.
    pub stdout: ChildStdout,
    /// What it reads.
    pub stdin: ChildStdin,
}

impl ProcessChain {
    /// Starts every command, in order; if one cannot start, those already started are killed
    /// (their handles drop) and the error says which.
    pub fn spawn(
        commands: &[AgentCommand],
    ) -> Result<(ProcessChain, Vec<ChainMember>), ProcessError> {
        let mut chain = ProcessChain::default();
        let mut members = Vec::new();
        for command in commands {
            let mut child = AgentProcess::spawn(command)?;
            let (stdout, stdin) = child.take_stdio().ok_or(ProcessError::StdioTaken)?;
            members.push(ChainMember {
                command: child.command().to_owned(),
                stdout,
                stdin,
            });
            chain.children.push(child);
        }
        Ok((chain, members))
    }

    /// Stops every member (each given `grace` per step). With `ended`, the position of the
    /// member whose end ended the chain, also returns how it exited (its exit is awaited, up
    /// to `grace`: its output can close a moment before its exit status exists) and how any
    /// other member that had already exited did, each with its stderr tail. Without it (the
    /// client left), members ending on their closed input are the normal end and nothing is
    /// returned.
    pub async fn shutdown(self, ended: Option<usize>, grace: Duration) -> Vec<ProcessError> {
        let mut exits = Vec::new();
        for (i, mut child) in self.children.into_iter().enumerate() {
            let exited = if ended == Some(i) {
                tokio::time::timeout(grace, child.wait_exit()).await.ok()
            } else if ended.is_some() {
                child.check_exited().await
            } else {
                None
            };
            exits.extend(exited);
            let _ = child.shutdown(grace).await;
        }
        exits
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if let Some(conn) = self.connection.take() {
            conn.close();
        }
        self.kill_group();
        let _ = self.child.start_kill();
        if let Some(task) = self.stderr_task.take() {
            task.abort();
        }
    }
}
