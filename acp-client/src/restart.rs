//! Surviving an agent that dies: [`SupervisedAgent`] respawns the agent process, negotiates
//! again and restores the sessions it had, so the application keeps its session ids.
//!
//! A bare [`AgentProcess`] never restarts anything: a dead agent is a closed connection. A
//! [`SupervisedAgent`] is the opt-in: it watches the connection, and when the agent goes away
//! it recovers by itself ([`RestartPolicy::default`]) or when asked
//! ([`RestartPolicy::manual`] and [`SupervisedAgent::reconnect`]). Recovery is
//!
//! 1. spawn the same command again and negotiate (the same [`NegotiateOptions`]);
//! 2. for every session opened through the supervisor: `session/resume` when the new agent
//!    advertises `sessionCapabilities.resume`, `session/load` when it advertises
//!    `loadSession` (the replayed history is *not* passed to the [`Client`] again: the
//!    application already showed it), otherwise the session is reported lost.
//!
//! A prompt in flight when the agent died is never retried (the agent may have done half of
//! it): it fails with [`ErrorCode::CONNECTION_CLOSED`] and a message that names the restart
//! and its outcome, with `data.restart` saying the same as JSON.
//!
//! # What is retried, how often
//!
//! The default follows the message-flow seed's recovery table (what opencode's Zed
//! integration does), each failure of a recovery attempt classified by [`FailureKind::of`]:
//!
//! | failure | examples | default |
//! | --- | --- | --- |
//! | [`FailureKind::Timeout`] | the agent exits again, no answer, connection closed, spawn or negotiation failed | 3 retries, exponential backoff from 200 ms |
//! | [`FailureKind::Server`] | `-32603` and other server errors answering `session/resume`/`load` | 2 immediate retries |
//! | [`FailureKind::Authentication`] | `-32000` auth required | no retry: the user must log in, then [`SupervisedAgent::reconnect`] |
//! | [`FailureKind::Protocol`] | parse error, invalid request or params, method not found | no retry (logged, that session is lost) |
//!
//! When the retries are used up the supervisor is [`SupervisorStatus::Failed`]; the
//! application tells the user and may call [`SupervisedAgent::reconnect`] (the seed's
//! "manual reconnect").

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::{Error, ErrorCode};
use acp_types::v1::{
    CancelNotification, CloseSessionRequest, CloseSessionResponse, CompleteElicitationNotification,
    CreateElicitationRequest, CreateElicitationResponse, CreateTerminalRequest,
    CreateTerminalResponse, InitializeResponse, KillTerminalRequest, KillTerminalResponse,
    LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, ReadTextFileRequest, ReadTextFileResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, RequestPermissionRequest,
    RequestPermissionResponse, ResumeSessionRequest, SessionId, SessionNotification,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::negotiate::NegotiateOptions;
use crate::process::{AgentCommand, AgentProcess, ProcessError};
use crate::{AgentHandle, Client, ClientConnection, Dialect};

/// How a failure is retried; see the module docs for the defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryRule {
    /// Retries after the first failure (0: none).
    pub retries: u32,
    /// The wait before each retry.
    pub backoff: Backoff,
}

impl RetryRule {
    /// No retry.
    pub const NEVER: RetryRule = RetryRule {
        retries: 0,
        backoff: Backoff::Immediate,
    };
}

/// The wait before a retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backoff {
    /// Retry at once.
    Immediate,
    /// Wait `first`, then twice as long before each further retry.
    Exponential {
        /// The wait before the first retry.
        first: Duration,
    },
}

impl Backoff {
    /// The wait before retry number `retry` (1 for the first).
    pub fn delay(self, retry: u32) -> Duration {
        match self {
            Backoff::Immediate => Duration::ZERO,
            Backoff::Exponential { first } => {
                first.saturating_mul(1 << retry.saturating_sub(1).min(16))
            }
        }
    }
}

/// The kinds of failure the retry table distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The agent is unreachable: it exited again, did not answer in time, or could not be
    /// spawned or negotiated with.
    Timeout,
    /// The agent answered with a server error (`-32603` or an implementation-defined code).
    Server,
    /// The agent wants the user to authenticate (`-32000`).
    Authentication,
    /// The exchange itself is wrong: parse error, invalid request or params, unknown method,
    /// unknown session (`-32700`, `-32600`, `-32601`, `-32602`, `-32002`).
    Protocol,
}

impl FailureKind {
    /// Classifies a JSON-RPC error.
    pub fn of(error: &Error) -> FailureKind {
        match error.code {
            ErrorCode::CONNECTION_CLOSED | ErrorCode::REQUEST_TIMED_OUT => FailureKind::Timeout,
            ErrorCode::AUTH_REQUIRED => FailureKind::Authentication,
            ErrorCode::PARSE_ERROR
            | ErrorCode::INVALID_REQUEST
            | ErrorCode::METHOD_NOT_FOUND
            | ErrorCode::INVALID_PARAMS
            | ErrorCode::RESOURCE_NOT_FOUND => FailureKind::Protocol,
            _ => FailureKind::Server,
        }
    }
}

/// When and how a [`SupervisedAgent`] restarts its agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Restart as soon as the agent goes away (otherwise only on
    /// [`SupervisedAgent::reconnect`]).
    pub automatic: bool,
    /// Unreachable agent: default 3 retries, exponential backoff from 200 ms.
    pub timeout: RetryRule,
    /// Server errors: default 2 immediate retries.
    pub server: RetryRule,
    /// Authentication required: default none (the user must act).
    pub authentication: RetryRule,
    /// Protocol errors: default none.
    pub protocol: RetryRule,
}

impl Default for RestartPolicy {
    /// Automatic restarts with the seed's retry table (module docs).
    fn default() -> Self {
        RestartPolicy {
            automatic: true,
            timeout: RetryRule {
                retries: 3,
                backoff: Backoff::Exponential {
                    first: Duration::from_millis(200),
                },
            },
            server: RetryRule {
                retries: 2,
                backoff: Backoff::Immediate,
            },
            authentication: RetryRule::NEVER,
            protocol: RetryRule::NEVER,
        }
    }
}

impl RestartPolicy {
    /// The default table, but no automatic restart: the application calls
    /// [`SupervisedAgent::reconnect`] (after asking the user, say).
    pub fn manual() -> Self {
        RestartPolicy {
            automatic: false,
            ..Self::default()
        }
    }

    /// The rule for a kind of failure.
    pub fn rule(&self, kind: FailureKind) -> RetryRule {
        match kind {
            FailureKind::Timeout => self.timeout,
            FailureKind::Server => self.server,
            FailureKind::Authentication => self.authentication,
            FailureKind::Protocol => self.protocol,
        }
    }
}

/// How a session came back after a restart.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionRestore {
    /// `session/resume` succeeded.
    Resumed,
    /// `session/load` succeeded (its replay was not passed to the client again).
    Loaded,
    /// The new agent could not take the session back: why.
    Lost(Error),
}

/// Where a [`SupervisedAgent`] stands.
#[derive(Clone, Debug, PartialEq)]
pub enum SupervisorStatus {
    /// Connected: `restarts` restarts so far.
    Running {
        /// Completed restarts.
        restarts: u32,
    },
    /// The agent went away and a restart is under way (or, with a manual policy, awaited).
    Restarting {
        /// Why the agent went away.
        reason: String,
    },
    /// The retries are used up (or the failure is not retried): the application should tell
    /// the user and may call [`SupervisedAgent::reconnect`].
    Failed {
        /// The last failure.
        error: Error,
    },
    /// [`SupervisedAgent::shutdown`] was called.
    Stopped,
}

/// A session the supervisor restores after a restart.
#[derive(Clone, Debug)]
struct OpenSession {
    id: SessionId,
    cwd: String,
    mcp_servers: Vec<McpServer>,
}

struct Live {
    process: Option<AgentProcess>,
    connection: ClientConnection,
    initialize: InitializeResponse,
    dialect: Dialect,
}

struct Inner<C: Client> {
    command: AgentCommand,
    options: NegotiateOptions,
    policy: RestartPolicy,
    client: Arc<Relay<C>>,
    live: tokio::sync::Mutex<Option<Live>>,
    /// The current handle (replaced by each restart).
    handle: Mutex<(AgentHandle, InitializeResponse, Dialect)>,
    sessions: Mutex<Vec<OpenSession>>,
    status: watch::Sender<SupervisorStatus>,
    /// What the last restart did with each session.
    last_restore: Mutex<Vec<(SessionId, SessionRestore)>>,
    restarts: Mutex<u32>,
}

/// An agent process that is restarted when it dies; see the module docs.
///
/// Cheap to clone; every clone drives the same agent.
pub struct SupervisedAgent<C: Client> {
    inner: Arc<Inner<C>>,
}

impl<C: Client> Clone for SupervisedAgent<C> {
    fn clone(&self) -> Self {
        SupervisedAgent {
            inner: self.inner.clone(),
        }
    }
}

impl<C: Client> std::fmt::Debug for SupervisedAgent<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SupervisedAgent")
            .field("command", &self.inner.command)
            .field("status", &*self.inner.status.borrow())
            .finish()
    }
}

use acp_rpc::sync::lock;

impl<C: Client> SupervisedAgent<C> {
    /// Spawns `command`, negotiates with `options`, and starts watching it. The first start
    /// is not retried: a command that cannot start is the caller's error to show.
    pub async fn start(
        command: AgentCommand,
        client: C,
        options: NegotiateOptions,
        policy: RestartPolicy,
    ) -> Result<SupervisedAgent<C>, ProcessError> {
        let client = Arc::new(Relay {
            client: Arc::new(client),
            muted: Mutex::default(),
        });
        let live = spawn_live(&command, &client, &options).await?;
        let handle = (
            live.connection.agent().clone(),
            live.initialize.clone(),
            live.dialect,
        );
        let (status, _) = watch::channel(SupervisorStatus::Running { restarts: 0 });
        let inner = Arc::new(Inner {
            command,
            options,
            policy,
            client,
            live: tokio::sync::Mutex::new(None),
            handle: Mutex::new(handle),
            sessions: Mutex::default(),
            status,
            last_restore: Mutex::default(),
            restarts: Mutex::new(0),
        });
        let connection = live.connection.clone();
        *inner.live.lock().await = Some(live);
        watch_connection(Arc::downgrade(&inner), connection);
        Ok(SupervisedAgent { inner })
    }

    /// The handle to the agent running now (a restart replaces it; requests sent on an old
    /// handle fail with "connection closed").
    pub fn agent(&self) -> AgentHandle {
        lock(&self.inner.handle).0.clone()
    }

    /// The running agent's `initialize` answer.
    pub fn initialize_response(&self) -> InitializeResponse {
        lock(&self.inner.handle).1.clone()
    }

    /// The dialect the running agent speaks.
    pub fn dialect(&self) -> Dialect {
        lock(&self.inner.handle).2
    }

    /// The current status.
    pub fn status(&self) -> SupervisorStatus {
        self.inner.status.borrow().clone()
    }

    /// Follows the status (for a UI that shows "reconnecting...").
    pub fn watch_status(&self) -> watch::Receiver<SupervisorStatus> {
        self.inner.status.subscribe()
    }

    /// What the last restart did with each session.
    pub fn last_restore(&self) -> Vec<(SessionId, SessionRestore)> {
        lock(&self.inner.last_restore).clone()
    }

    /// `session/new`; the session is restored after a restart.
    pub async fn new_session(
        &self,
        params: NewSessionRequest,
    ) -> Result<NewSessionResponse, Error> {
        let (cwd, mcp_servers) = (params.cwd.clone(), params.mcp_servers.clone());
        let response = self.agent().new_session(params).await?;
        self.remember(response.session_id.clone(), cwd, mcp_servers);
        Ok(response)
    }

    /// `session/load`; the session is restored after a restart.
    pub async fn load_session(
        &self,
        params: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, Error> {
        let open = (
            params.session_id.clone(),
            params.cwd.clone(),
            params.mcp_servers.clone(),
        );
        let response = self.agent().load_session(params).await?;
        self.remember(open.0, open.1, open.2);
        Ok(response)
    }

    /// `session/close`; the session is no longer restored.
    pub async fn close_session(
        &self,
        params: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        let id = params.session_id.clone();
        let response = self.agent().close_session(params).await;
        lock(&self.inner.sessions).retain(|s| s.id != id);
        response
    }

    /// `session/cancel`.
    pub async fn cancel(&self, params: CancelNotification) -> Result<(), Error> {
        self.agent().cancel(params).await
    }

    fn remember(&self, id: SessionId, cwd: String, mcp_servers: Vec<McpServer>) {
        let mut sessions = lock(&self.inner.sessions);
        sessions.retain(|s| s.id != id);
        sessions.push(OpenSession {
            id,
            cwd,
            mcp_servers,
        });
    }

    /// `session/prompt`. If the agent dies during the turn the prompt is not retried: it
    /// fails with an error naming the restart and what became of the session (the call
    /// returns once the restart has ended, or at once with a manual policy).
    pub async fn prompt(&self, params: PromptRequest) -> Result<PromptResponse, Error> {
        let session = params.session_id.clone();
        let mut status = self.inner.status.subscribe();
        let before = *lock(&self.inner.restarts);
        let result = self.agent().prompt(params).await;
        let error = match result {
            Err(e) if e.is_connection_closed() => e,
            other => return other,
        };
        tracing::warn!(session = %session, error = %error, "the agent went away during a prompt");
        if !self.inner.policy.automatic {
            return Err(restart_error(
                &session,
                "it was not restarted (manual restart policy: call reconnect)",
                json!({"restarted": false}),
            ));
        }
        // Wait for the restart this death started to finish.
        let outcome = loop {
            let current = status.borrow_and_update().clone();
            match current {
                SupervisorStatus::Restarting { .. } => {}
                // The watcher has not noticed the death yet.
                SupervisorStatus::Running { restarts } if restarts <= before => {}
                other => break other,
            }
            if status.changed().await.is_err() {
                break SupervisorStatus::Stopped;
            }
        };
        Err(match outcome {
            SupervisorStatus::Running { restarts } => {
                let restore = lock(&self.inner.last_restore)
                    .iter()
                    .find(|(id, _)| *id == session)
                    .map(|(_, r)| r.clone());
                let (how, what) = match &restore {
                    Some(SessionRestore::Resumed) => ("resumed".to_owned(), "resumed"),
                    Some(SessionRestore::Loaded) => ("loaded".to_owned(), "loaded"),
                    Some(SessionRestore::Lost(e)) => (format!("lost ({})", e.message), "lost"),
                    None => ("not known to the supervisor".to_owned(), "unknown"),
                };
                restart_error(
                    &session,
                    &format!(
                        "it was restarted (restart {restarts}) and the session was {how}; the prompt was not retried"
                    ),
                    json!({"restarted": true, "restarts": restarts, "session": what}),
                )
            }
            SupervisorStatus::Failed { error } => restart_error(
                &session,
                &format!("restarting it failed: {}", error.message),
                json!({"restarted": false, "error": error.message}),
            ),
            _ => restart_error(
                &session,
                "the supervisor was stopped",
                json!({"restarted": false}),
            ),
        })
    }

    /// Restarts the agent now (after a [`SupervisorStatus::Failed`], or with a manual
    /// policy), with the same retry table. Kills the running agent first if there is one.
    pub async fn reconnect(&self) -> Result<(), Error> {
        recover(&self.inner, "reconnect requested".to_owned()).await
    }

    /// Stops supervising and shuts the agent down (see [`AgentProcess::shutdown`]).
    pub async fn shutdown(self, grace: Duration) {
        self.inner.status.send_replace(SupervisorStatus::Stopped);
        let live = self.inner.live.lock().await.take();
        if let Some(live) = live {
            live.connection.close();
            if let Some(process) = live.process {
                let _ = process.shutdown(grace).await;
            }
        }
    }
}

fn restart_error(session: &SessionId, what: &str, mut data: Value) -> Error {
    data["sessionId"] = json!(session.0);
    Error::new(
        ErrorCode::CONNECTION_CLOSED,
        format!("the agent exited during the prompt of session {session}; {what}"),
    )
    .with_data(json!({ "restart": data }))
}

async fn spawn_live<C: Client>(
    command: &AgentCommand,
    client: &Arc<Relay<C>>,
    options: &NegotiateOptions,
) -> Result<Live, ProcessError> {
    let mut process = AgentProcess::spawn(command)?;
    let negotiated = process
        .negotiate(Shared(client.clone()), options.clone())
        .await?;
    Ok(Live {
        process: Some(process),
        connection: negotiated.connection,
        initialize: negotiated.initialize,
        dialect: negotiated.dialect,
    })
}

/// Waits for `connection` to close, then restarts (automatic policy) or marks the agent as
/// waiting for [`SupervisedAgent::reconnect`].
fn watch_connection<C: Client>(inner: std::sync::Weak<Inner<C>>, connection: ClientConnection) {
    tokio::spawn(async move {
        let reason = connection.closed().await;
        let Some(inner) = inner.upgrade() else { return };
        if matches!(*inner.status.borrow(), SupervisorStatus::Stopped) {
            return;
        }
        let reason = format!("the connection closed: {reason}");
        tracing::warn!(command = %inner.command.program.to_string_lossy(), %reason, "agent went away");
        if inner.policy.automatic {
            let _ = recover(&inner, reason).await;
        } else {
            inner
                .status
                .send_replace(SupervisorStatus::Restarting { reason });
        }
    });
}

/// One restart with the retry table: spawn, negotiate, restore the sessions.
async fn recover<C: Client>(inner: &Arc<Inner<C>>, reason: String) -> Result<(), Error> {
    let mut live_slot = inner.live.lock().await;
    if matches!(*inner.status.borrow(), SupervisorStatus::Stopped) {
        return Err(Error::new(
            ErrorCode::CONNECTION_CLOSED,
            "the supervisor was stopped",
        ));
    }
    inner
        .status
        .send_replace(SupervisorStatus::Restarting { reason });
    if let Some(old) = live_slot.take() {
        old.connection.close();
        if let Some(mut process) = old.process {
            // Its exit status, for the log; it is dead or dying.
            process.kill();
            let exit = tokio::time::timeout(Duration::from_secs(2), process.wait_exit()).await;
            if let Ok(exit) = exit {
                tracing::warn!("{exit}");
            }
        }
    }
    let mut used = std::collections::HashMap::<FailureKind, u32>::new();
    loop {
        match attempt(inner).await {
            Ok((live, restored)) => {
                let mut restarts = lock(&inner.restarts);
                *restarts += 1;
                let n = *restarts;
                drop(restarts);
                *lock(&inner.handle) = (
                    live.connection.agent().clone(),
                    live.initialize.clone(),
                    live.dialect,
                );
                *lock(&inner.last_restore) = restored;
                watch_connection(Arc::downgrade(inner), live.connection.clone());
                *live_slot = Some(live);
                tracing::warn!(restarts = n, "agent restarted");
                inner
                    .status
                    .send_replace(SupervisorStatus::Running { restarts: n });
                return Ok(());
            }
            Err(error) => {
                let kind = FailureKind::of(&error);
                let rule = inner.policy.rule(kind);
                let count = used.entry(kind).or_default();
                if *count >= rule.retries {
                    tracing::error!(error = %error, ?kind, "restarting the agent failed; not retried further");
                    inner.status.send_replace(SupervisorStatus::Failed {
                        error: error.clone(),
                    });
                    return Err(error);
                }
                *count += 1;
                let delay = rule.backoff.delay(*count);
                tracing::warn!(error = %error, ?kind, retry = *count, ?delay, "restarting the agent failed; retrying");
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Spawn, negotiate and restore every open session once.
async fn attempt<C: Client>(
    inner: &Arc<Inner<C>>,
) -> Result<(Live, Vec<(SessionId, SessionRestore)>), Error> {
    let live = spawn_live(&inner.command, &inner.client, &inner.options)
        .await
        .map_err(|e| Error::new(ErrorCode::CONNECTION_CLOSED, e.to_string()))?;
    let caps = &live.initialize.agent_capabilities;
    let resume = caps.session_capabilities.resume.is_some();
    let load = caps.load_session;
    let agent = live.connection.agent().clone();
    let sessions = lock(&inner.sessions).clone();
    let mut restored = Vec::new();
    for session in sessions {
        let outcome = if resume {
            let request = ResumeSessionRequest::new(session.id.clone(), session.cwd.clone())
                .mcp_servers(session.mcp_servers.clone());
            agent
                .resume_session(request)
                .await
                .map(|_| SessionRestore::Resumed)
        } else if load {
            let request = LoadSessionRequest::new(
                session.mcp_servers.clone(),
                session.cwd.clone(),
                session.id.clone(),
            );
            // The replay is what the application has already shown: not passed on again.
            lock(&inner.client.muted).insert(session.id.clone());
            let loaded = agent.load_session(request).await;
            lock(&inner.client.muted).remove(&session.id);
            loaded.map(|_| SessionRestore::Loaded)
        } else {
            Ok(SessionRestore::Lost(Error::new(
                ErrorCode::METHOD_NOT_FOUND,
                "the restarted agent can neither resume nor load sessions",
            )))
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            // The new agent died too, or a server error: the whole attempt is retried.
            Err(e)
                if matches!(
                    FailureKind::of(&e),
                    FailureKind::Timeout | FailureKind::Server
                ) =>
            {
                live.connection.close();
                return Err(e);
            }
            Err(e) => {
                tracing::error!(session = %session.id, error = %e, "session lost in the restart");
                SessionRestore::Lost(e)
            }
        };
        restored.push((session.id, outcome));
    }
    Ok((live, restored))
}

/// The application's client, shared by every connection the supervisor makes, with the
/// updates of sessions being reloaded held back.
struct Relay<C: Client> {
    client: Arc<C>,
    muted: Mutex<HashSet<SessionId>>,
}

/// A connection's view of the [`Relay`].
struct Shared<C: Client>(Arc<Relay<C>>);

#[async_trait]
impl<C: Client> Client for Shared<C> {
    async fn request_permission(
        &self,
        params: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        self.0.client.request_permission(params).await
    }
    async fn read_text_file(
        &self,
        params: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        self.0.client.read_text_file(params).await
    }
    async fn write_text_file(
        &self,
        params: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.0.client.write_text_file(params).await
    }
    async fn approve_terminal(
        &self,
        request: &crate::terminal::TerminalRequest,
    ) -> crate::terminal::TerminalDecision {
        self.0.client.approve_terminal(request).await
    }
    async fn create_terminal(
        &self,
        params: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        self.0.client.create_terminal(params).await
    }
    async fn terminal_output(
        &self,
        params: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        self.0.client.terminal_output(params).await
    }
    async fn release_terminal(
        &self,
        params: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        self.0.client.release_terminal(params).await
    }
    async fn wait_for_terminal_exit(
        &self,
        params: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        self.0.client.wait_for_terminal_exit(params).await
    }
    async fn kill_terminal(
        &self,
        params: KillTerminalRequest,
    ) -> Result<KillTerminalResponse, Error> {
        self.0.client.kill_terminal(params).await
    }
    async fn create_elicitation(
        &self,
        params: CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse, Error> {
        self.0.client.create_elicitation(params).await
    }
    async fn session_update(&self, params: SessionNotification) -> Result<(), Error> {
        if lock(&self.0.muted).contains(&params.session_id) {
            return Ok(());
        }
        self.0.client.session_update(params).await
    }
    async fn complete_elicitation(
        &self,
        params: CompleteElicitationNotification,
    ) -> Result<(), Error> {
        self.0.client.complete_elicitation(params).await
    }
    async fn ext_method(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.0.client.ext_method(method, params).await
    }
    async fn ext_notification(&self, method: &str, params: Value) -> Result<(), Error> {
        self.0.client.ext_notification(method, params).await
    }
}
