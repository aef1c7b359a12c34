//! One stdio MCP server's life: spawn in its own process group, handshake and tool listing
//! within a bound, a bounded stderr tail, restarts after a crash, and the kill on shutdown.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::Tool;
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{McpConfig, McpError};
use crate::types::McpServerStdio;

/// The agent's environment variables a stdio server does not inherit: `acp serve`'s bearer
/// token and session store (a server is another party's program). The client's entry may
/// still set them.
pub(super) const WITHHELD_ENV: [&str; 2] = ["ACP_TOKEN", "ACP_STORE"];

/// A server's current state, watched by callers waiting for it.
#[derive(Clone)]
pub(super) enum State {
    /// Starting (or restarting after a crash).
    Starting,
    /// Initialized, with its tools.
    Ready(Arc<Live>),
    /// Given up on.
    Failed(McpError),
}

/// A running server: the rmcp peer to call and the tools it listed (kept current by its
/// [`Watcher`]).
pub(super) struct Live {
    pub(super) peer: Peer<RoleClient>,
    pub(super) tools: ToolList,
}

impl Live {
    /// The server's tools as last listed.
    pub(super) fn tools(&self) -> Vec<Tool> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A server's tools, replaced whole when the server says they changed.
pub(super) type ToolList = Arc<RwLock<Vec<Tool>>>;

/// The rmcp client handler of every server: on `notifications/tools/list_changed` it lists
/// the tools again (within the start bound) and replaces the server's [`ToolList`]; a listing
/// that fails keeps the old list.
pub(super) struct Watcher {
    pub(super) server: String,
    pub(super) tools: ToolList,
    pub(super) bound: Duration,
}

impl Watcher {
    pub(super) fn new(server: &str, config: &McpConfig) -> Self {
        Self {
            server: server.to_owned(),
            tools: ToolList::default(),
            bound: config.start_timeout,
        }
    }

    /// Lists the tools and keeps them.
    pub(super) async fn list(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let tools = tokio::time::timeout(self.bound, peer.list_all_tools())
            .await
            .map_err(|_| format!("tools/list: no answer within {:?}", self.bound))?
            .map_err(|e| format!("tools/list: {e}"))?;
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
        Ok(())
    }
}

impl ClientHandler for Watcher {
    // rmcp runs each notification handler in a task of its own, so listing here does not
    // hold up the service loop that delivers the answer.
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Err(e) = self.list(&context.peer).await {
            tracing::warn!(server = %self.server, "MCP tool list not refreshed: {e}");
        }
    }
}

/// The last bytes a server wrote to stderr.
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8], limit: usize) {
        let mut tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(limit);
        tail.drain(..excess);
    }

    pub(super) fn text(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = tail.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).into_owned()
    }
}

/// The process group of the server's current process (0: none), killed on shutdown.
#[derive(Clone, Default)]
pub(super) struct Group(Arc<AtomicI32>);

impl Group {
    /// Kills the whole process group, if there is one.
    pub(super) fn kill(&self) {
        let pgid = self.0.swap(0, Ordering::SeqCst);
        kill_group(pgid);
    }
}

#[cfg(unix)]
fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: i32) {}

/// What a supervisor needs, shared with the connector.
pub(super) struct Supervisor {
    pub(super) name: String,
    pub(super) spec: McpServerStdio,
    pub(super) config: McpConfig,
    pub(super) state: watch::Sender<State>,
    pub(super) stderr: StderrTail,
    pub(super) group: Group,
    pub(super) shutdown: CancellationToken,
}

impl Supervisor {
    /// Runs the server until shutdown or until it is given up on.
    pub(super) async fn run(self) {
        let mut restarts = 0u32;
        loop {
            let mut child = match self.spawn() {
                Ok(child) => child,
                Err(e) => {
                    self.state.send_replace(State::Failed(e));
                    break;
                }
            };
            let started = tokio::select! {
                started = self.start(&mut child) => started,
                _ = self.shutdown.cancelled() => {
                    self.reap(&mut child).await;
                    break;
                }
            };
            let service = match started {
                Ok(service) => service,
                Err(e) => {
                    self.reap(&mut child).await;
                    self.state.send_replace(State::Failed(e));
                    break;
                }
            };
            let exited = tokio::select! {
                _ = child.wait() => true,
                _ = self.shutdown.cancelled() => false,
            };
            drop(service);
            self.reap(&mut child).await;
            if !exited {
                break;
            }
            tracing::warn!(server = %self.name, "MCP server exited; {restarts} restarts so far");
            if restarts >= self.config.max_restarts {
                self.state.send_replace(State::Failed(McpError::Exited {
                    server: self.name.clone(),
                    stderr: self.stderr.text(),
                }));
                break;
            }
            self.state.send_replace(State::Starting);
            let backoff = self.config.restart_backoff * 2u32.saturating_pow(restarts);
            restarts += 1;
            tokio::select! {
                _ = tokio::time::sleep(backoff.min(Duration::from_secs(5))) => {}
                _ = self.shutdown.cancelled() => break,
            }
        }
        self.group.kill();
        if matches!(*self.state.borrow(), State::Ready(_) | State::Starting) {
            self.state.send_replace(State::Failed(McpError::Closed));
        }
    }

    /// Spawns the process, does the handshake and lists the tools, all within the start bound.
    async fn start(
        &self,
        child: &mut Child,
    ) -> Result<RunningService<RoleClient, Watcher>, McpError> {
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(self.initialize_error("no stdin/stdout pipes"));
        };
        if let Some(mut stderr) = child.stderr.take() {
            let tail = self.stderr.clone();
            let limit = self.config.stderr_tail_bytes;
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                    tail.push(&buf[..n], limit);
                }
            });
        }
        let transport = AsyncRwTransport::new_client(stdout, stdin)
            .with_max_line_length(self.config.max_message_bytes);
        let handshake = async {
            let service = Watcher::new(&self.name, &self.config)
                .serve(transport)
                .await
                .map_err(|e| self.initialize_error(e.to_string()))?;
            let watcher = service.service();
            watcher
                .list(service.peer())
                .await
                .map_err(|e| self.initialize_error(e))?;
            let tools = watcher.tools.clone();
            Ok::<_, McpError>((service, tools))
        };
        let bound = self.config.start_timeout;
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(bound, handshake) => outcome,
            // A server that dies during the handshake is reported with its exit, not a timeout.
            _ = child.wait() => {
                // Give the stderr reader a moment to catch the last words.
                tokio::time::sleep(Duration::from_millis(20)).await;
                return Err(McpError::Exited { server: self.name.clone(), stderr: self.stderr.text() });
            }
        };
        match outcome {
            Ok(Ok((service, tools))) => {
                let live = Live {
                    peer: service.peer().clone(),
                    tools,
                };
                self.state.send_replace(State::Ready(Arc::new(live)));
                Ok(service)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(McpError::StartTimeout {
                server: self.name.clone(),
                after: bound,
                stderr: self.stderr.text(),
            }),
        }
    }

    /// Kills the process group and waits (bounded) for the process, so no zombie is left.
    async fn reap(&self, child: &mut Child) {
        self.group.kill();
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    }

    fn spawn(&self) -> Result<Child, McpError> {
        let mut cmd = Command::new(&self.spec.command);
        for secret in WITHHELD_ENV {
            cmd.env_remove(secret);
        }
        cmd.args(&self.spec.args)
            .envs(self.spec.env.iter().map(|v| (&v.name, &v.value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let child = cmd.spawn().map_err(|e| McpError::Spawn {
            server: self.name.clone(),
            command: self.spec.command.clone(),
            reason: e.to_string(),
        })?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        self.group.0.store(pid, Ordering::SeqCst);
        Ok(child)
    }

    fn initialize_error(&self, reason: impl Into<String>) -> McpError {
        McpError::Initialize {
            server: self.name.clone(),
            reason: reason.into(),
            stderr: self.stderr.text(),
        }
    }
}
