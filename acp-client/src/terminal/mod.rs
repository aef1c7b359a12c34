//! The terminal methods (`terminal/create`, `terminal/output`, `terminal/wait_for_exit`,
//! `terminal/kill`, `terminal/release`) served by running commands locally: [`Terminals`].
//!
//! # Policy: nothing runs unasked
//!
//! A `terminal/create` runs an arbitrary program chosen by the agent, so [`Terminals::create`]
//! first works out exactly what would run ([`TerminalRequest`]: command, arguments, working
//! directory, environment, output limit) and then:
//!
//! 1. a command without `cwd` runs in its **session's** working directory (registered with
//!    [`Terminals::add_session`], or the [`Terminals::with_workspace`] default), never in the
//!    client process's own; a session the client knows no directory for is refused;
//! 2. a `cwd` outside the session's roots (checked after `canonicalize`, so a symlink inside
//!    the workspace does not count as inside) is refused unless
//!    [`TerminalConfig::allow_cwd_outside_roots`];
//! 3. environment variables are refused unless [`TerminalConfig::allow_env`];
//! 4. at most [`TerminalConfig::max_live_per_session`] unreleased terminals per session;
//! 5. the application decides: [`crate::Client::approve_terminal`] sees the request and
//!    returns [`TerminalDecision::Allow`] or [`TerminalDecision::Deny`] with a reason. Its
//!    default denies, so a client that does nothing runs nothing.
//!
//! Every refusal is a `-32602` error whose message says why (and `data.reason`).
//! These rules are about what the user is asked, not a sandbox: an allowed command can do
//! anything the user can (including `cd /`).
//!
//! # Output and memory
//!
//! Output (stdout and stderr interleaved as read) is captured up to the request's
//! `outputByteLimit` clamped to [`TerminalConfig::max_output_byte_limit`] (default
//! [`DEFAULT_MAX_OUTPUT_BYTE_LIMIT`], 16 MiB; [`DEFAULT_OUTPUT_BYTE_LIMIT`] when the request
//! sets none), keeping the **end** of the output in a ring buffer: older bytes are dropped
//! from the front, the cut is moved forward to a UTF-8 character boundary, and `truncated`
//! becomes `true`. Memory per terminal stays at about that limit whatever the command prints.
//!
//! # Threat model
//!
//! The agent is assumed hostile. Defended: a command the application did not allow never
//! starts; a command never runs in the client process's own directory by accident, nor
//! (unless configured) in a directory outside the session's roots or with variables the agent
//! injected (`LD_PRELOAD`, `PATH`, ...); a burst of `terminal/create` cannot start more than
//! the per-session cap; a command printing without end cannot grow the client's memory past
//! about the output maximum per terminal; processes that leave the command's group are still
//! killed with it where the OS allows (below). Not defended: what an allowed command does
//! (it runs with the user's rights: the application's policy is the boundary, so show the
//! user the whole [`TerminalRequest`]); hard links and other file system tricks are the file
//! system module's concern ([`crate::fs`]).
//!
//! # Processes
//!
//! Each command runs in its own process group; `kill`, `release`, [`Terminals::close`] and
//! dropping the last [`Terminals`] clone kill the whole group (SIGKILL). On Linux the client
//! also becomes a child subreaper (`PR_SET_CHILD_SUBREAPER`), so processes that left the group
//! (a `setsid` grandchild) are still found and stopped then, SIGTERM first and SIGKILL after
//! [`ORPHAN_GRACE`] (they are not what the agent asked to kill, and may hold temporary
//! files): [`TerminalConfig::reap_orphans`] says what is and is not caught. Call [`Terminals::close`] before the client exits: a drop
//! starts the same cleanup in the background, which an exiting process may not finish.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::Error;
use acp_types::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, SessionId, TerminalId, TerminalOutputRequest,
    TerminalOutputResponse, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
};
use serde_json::json;
use tokio::process::Command;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::reaper;

mod policy;
mod process;

pub use policy::{TerminalConfig, TerminalDecision, TerminalRequest};
use policy::{clean_absolute, refused};
use process::{Output, Terminal, exit_status, kill_group, pump};

/// Output limit when the request sets none: 1 MiB.
pub const DEFAULT_OUTPUT_BYTE_LIMIT: u64 = 1024 * 1024;

/// Default client maximum for a request's `outputByteLimit`: 16 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTE_LIMIT: u64 = 16 * 1024 * 1024;

/// Default number of unreleased terminals one session may hold.
pub const DEFAULT_MAX_LIVE_PER_SESSION: usize = 16;

/// How long the processes that left a killed command's group get between SIGTERM and
/// SIGKILL (see [`TerminalConfig::reap_orphans`]).
pub const ORPHAN_GRACE: Duration = Duration::from_millis(500);
/// Where a session's commands run: its directory and the roots a `cwd` must lie in.
#[derive(Clone, Debug)]
struct Workspace {
    cwd: PathBuf,
    roots: Vec<PathBuf>,
}

/// Who decides whether a `terminal/create` runs. Every [`crate::Client`] is one (its
/// [`approve_terminal`](crate::Client::approve_terminal)), so [`Terminals::create`] takes the
/// client itself; the trait is separate so that terminals need nothing else of the client.
#[async_trait::async_trait]
pub trait ApproveTerminal: Send + Sync {
    /// Whether `request` may run.
    async fn approve(&self, request: &TerminalRequest) -> TerminalDecision;
}

/// Runs the commands of `terminal/*` requests under a policy (see the module docs) and keeps
/// their output. Cheap to clone; every terminal is killed when released or when the last
/// clone drops.
#[derive(Clone, Debug, Default)]
pub struct Terminals {
    inner: Arc<Mutex<HashMap<TerminalId, Arc<Terminal>>>>,
    sessions: Arc<Mutex<HashMap<SessionId, Workspace>>>,
    default_workspace: Option<Arc<Workspace>>,
    config: TerminalConfig,
    next: Arc<AtomicU64>,
}

impl Terminals {
    /// A manager with the default [`TerminalConfig`] and no workspace yet: register each
    /// session's directory with [`Terminals::add_session`] (or set a default with
    /// [`Terminals::with_workspace`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the limits and standing permissions.
    #[must_use]
    pub fn with_config(mut self, config: TerminalConfig) -> Self {
        self.config = config;
        self
    }

    /// The workspace for sessions not registered with [`Terminals::add_session`]: commands
    /// without `cwd` run in `dir`, and a `cwd` must lie inside it.
    #[must_use]
    pub fn with_workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        self.default_workspace = Some(Arc::new(Workspace {
            cwd: dir.clone(),
            roots: vec![dir],
        }));
        self
    }

    /// Registers a session's working directory (the `cwd` of its `session/new` or
    /// `session/load`) and its additional root directories.
    pub fn add_session(
        &self,
        session_id: SessionId,
        cwd: impl Into<PathBuf>,
        additional_roots: impl IntoIterator<Item = PathBuf>,
    ) {
        let cwd = cwd.into();
        let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
        let mut roots = vec![cwd.clone()];
        roots.extend(
            additional_roots
                .into_iter()
                .map(|r| std::fs::canonicalize(&r).unwrap_or(r)),
        );
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session_id, Workspace { cwd, roots });
    }

    /// The configuration in force.
    pub fn config(&self) -> &TerminalConfig {
        &self.config
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TerminalId, Arc<Terminal>>> {
        acp_rpc::sync::lock(&self.inner)
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

    fn workspace(&self, session: &SessionId) -> Option<Workspace> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions
            .get(session)
            .cloned()
            .or_else(|| self.default_workspace.as_deref().cloned())
    }

    /// Works out what `params` would run and checks it against the configuration (module
    /// docs, rules 1 to 4); the application's decision is the caller's.
    pub fn prepare(&self, params: &CreateTerminalRequest) -> Result<TerminalRequest, Error> {
        let workspace = self.workspace(&params.session_id).ok_or_else(|| {
            refused(
                params,
                &format!(
                    "the client knows no working directory for session {}",
                    params.session_id.0
                ),
            )
        })?;
        let (cwd, cwd_from_agent) = match &params.cwd {
            None => (workspace.cwd.clone(), false),
            Some(cwd) => {
                let clean = clean_absolute(Path::new(cwd))
                    .ok_or_else(|| refused(params, "cwd must be absolute, without `..`"))?;
                let canonical = std::fs::canonicalize(&clean)
                    .map_err(|e| refused(params, &format!("cwd {cwd} cannot be used: {e}")))?;
                (canonical, true)
            }
        };
        let cwd_inside_roots = workspace.roots.iter().any(|r| cwd.starts_with(r));
        if !cwd_inside_roots && !self.config.allow_cwd_outside_roots {
            return Err(refused(
                params,
                &format!("cwd {} is outside the session's directories", cwd.display()),
            ));
        }
        if !params.env.is_empty() && !self.config.allow_env {
            let names: Vec<&str> = params.env.iter().map(|v| v.name.as_str()).collect();
            return Err(refused(
                params,
                &format!(
                    "setting environment variables ({}) is not allowed",
                    names.join(", ")
                ),
            ));
        }
        if params.env.iter().any(|v| v.name == reaper::MARKER_ENV) {
            return Err(refused(params, "that environment variable is reserved"));
        }
        let live = self
            .lock()
            .values()
            .filter(|t| t.session_id == params.session_id)
            .count();
        if live >= self.config.max_live_per_session {
            return Err(refused(
                params,
                &format!(
                    "session {} already holds {live} terminals, the most this client allows; \
                     release one first",
                    params.session_id.0
                ),
            ));
        }
        let output_byte_limit = params
            .output_byte_limit
            .unwrap_or(DEFAULT_OUTPUT_BYTE_LIMIT)
            .min(self.config.max_output_byte_limit);
        Ok(TerminalRequest {
            session_id: params.session_id.clone(),
            command: params.command.clone(),
            args: params.args.clone(),
            cwd,
            cwd_from_agent,
            cwd_inside_roots,
            env: params
                .env
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect(),
            output_byte_limit,
        })
    }

    /// Serves `terminal/create`: checks the request against the configuration, asks
    /// `client` ([`crate::Client::approve_terminal`]: pass the client itself), then starts
    /// the command and returns its id at once.
    pub async fn create<A: ApproveTerminal + ?Sized>(
        &self,
        params: CreateTerminalRequest,
        client: &A,
    ) -> Result<CreateTerminalResponse, Error> {
        let request = self.prepare(&params)?;
        if let TerminalDecision::Deny { reason } = client.approve(&request).await {
            // The application's reason leads: it is what a user interface shows.
            return Err(
                Error::invalid_params(format!("declined by the client: {reason}")).with_data(
                    json!({ "command": params.command, "reason": "declined by the client" }),
                ),
            );
        }
        self.start(request)
    }

    /// Starts an approved request (rule 4 is checked again: the approval may have taken a
    /// while).
    fn start(&self, request: TerminalRequest) -> Result<CreateTerminalResponse, Error> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let marker = reaper::new_marker();
        if self.config.reap_orphans {
            reaper::become_subreaper();
        }
        let mut cmd = Command::new(&request.command);
        cmd.args(&request.args)
            .envs(request.env.iter().map(|(k, v)| (k, v)))
            .env(reaper::MARKER_ENV, &marker)
            .current_dir(&request.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut map = self.lock();
        let live = map
            .values()
            .filter(|t| t.session_id == request.session_id)
            .count();
        if live >= self.config.max_live_per_session {
            return Err(Error::invalid_params(format!(
                "terminal/create `{}` refused: session {} already holds {live} terminals",
                request.command, request.session_id.0
            ))
            .with_data(json!({ "command": request.command, "reason": "too many terminals" })));
        }
        let mut child = cmd.spawn().map_err(|e| {
            Error::internal_error(format!("failed to start `{}`: {e}", request.command))
                .with_data(json!({ "command": request.command }))
        })?;
        let limit = usize::try_from(request.output_byte_limit).unwrap_or(usize::MAX);
        let output = Arc::new(Mutex::new(Output {
            buf: VecDeque::new(),
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
        let id = TerminalId(format!("term-{n}"));
        map.insert(
            id.clone(),
            Arc::new(Terminal {
                session_id: request.session_id,
                output,
                exit: exit_rx,
                kill,
                pgid,
                marker,
                reap_orphans: self.config.reap_orphans,
                task,
            }),
        );
        Ok(CreateTerminalResponse::new(id))
    }

    /// Serves `terminal/output`: the captured output, whether it was truncated, and the exit
    /// status once the command has exited.
    pub async fn output(
        &self,
        params: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        let t = self.get(&params.session_id, &params.terminal_id)?;
        let exit_status = t.exit.borrow().clone();
        let mut out = t.output.lock().unwrap_or_else(|p| p.into_inner());
        let response = TerminalOutputResponse::new(out.text(exit_status.is_some()), out.truncated);
        Ok(match exit_status {
            Some(status) => response.exit_status(status),
            None => response,
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
        let mut response = WaitForTerminalExitResponse::new();
        if let Some(code) = status.exit_code {
            response = response.exit_code(code);
        }
        if let Some(signal) = status.signal {
            response = response.signal(signal);
        }
        Ok(response)
    }

    /// Serves `terminal/kill`: kills the command (and its process group, and the orphans
    /// that left it); the terminal and its output stay until released.
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
        drop(t);
        Ok(ReleaseTerminalResponse::default())
    }

    /// Releases every terminal and waits (up to about two seconds, plus [`ORPHAN_GRACE`] for
    /// each generation of orphans that outlives SIGTERM) until their processes, including
    /// the orphans that left their groups, are gone. Call it before the client
    /// exits: a drop only starts the same cleanup in the background, and orphans still
    /// alive when the client process ends are inherited by init.
    pub async fn close(&self) {
        let all: Vec<Arc<Terminal>> = self.lock().drain().map(|(_, t)| t).collect();
        let markers: Vec<String> = all.iter().map(|t| t.marker.clone()).collect();
        for t in &all {
            if let Some(pgid) = t.pgid {
                kill_group(pgid);
            }
        }
        if self.config.reap_orphans && !markers.is_empty() {
            let _ = tokio::task::spawn_blocking(move || {
                reaper::sweep(&markers, &[], ORPHAN_GRACE, false)
            })
            .await;
        }
        drop(all);
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
