//! Surviving an agent that dies: [`SupervisedAgent`] respawns the agent process (or, for an
//! agent reached through a [`Connector`], such as a remote one, connects again), negotiates
//! again and restores the sessions it had, so the application keeps its session ids.
//!
//! A bare [`AgentProcess`](crate::process::AgentProcess) never restarts anything: a dead
//! agent is a closed connection. A [`SupervisedAgent`] is the opt-in: it watches the
//! connection, and when the agent goes away it recovers by itself
//! ([`RestartPolicy::default`]) or when asked ([`RestartPolicy::manual`] and
//! [`SupervisedAgent::reconnect`]). Recovery is
//!
//! 1. spawn the same command again (or connect again) and negotiate (the same
//!    [`NegotiateOptions`]);
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

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_rpc::{Error, ErrorCode};
use acp_types::v1::{
    CancelNotification, CloseSessionRequest, CloseSessionResponse, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, ResumeSessionRequest, SessionId,
};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::negotiate::NegotiateOptions;
use crate::process::{AgentCommand, ProcessError};
use crate::{AgentHandle, Client, ClientConnection, Dialect};

mod policy;
pub(crate) mod relay;
mod source;

pub use policy::{
    Backoff, FailureKind, RestartPolicy, RetryRule, SessionRestore, SupervisorStatus,
};
use relay::Relay;
pub use source::{Connector, Transport};
use source::{Live, Source};

/// A session the supervisor restores after a restart.
#[derive(Clone, Debug)]
struct OpenSession {
    id: SessionId,
    cwd: String,
    mcp_servers: Vec<McpServer>,
}

struct Inner<C: Client> {
    source: Source,
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
            .field("source", &self.inner.source)
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
        let live = source::start_command(&command, &client, &options).await?;
        let source = Source::Command(command);
        Ok(Self::supervise(source, client, live, options, policy).await)
    }

    /// Like [`SupervisedAgent::start`] for an agent reached through `connector` (a remote
    /// agent: `acp_remote::RemoteConnector`): connects, negotiates with `options`, and
    /// connects again when the connection is lost, then resumes or loads the sessions as
    /// after a restart (the remote-transport RFD's reconnection: a new `initialize`, then
    /// `session/resume` or `session/load`). The first connection is not retried.
    pub async fn connect(
        connector: impl Connector,
        client: C,
        options: NegotiateOptions,
        policy: RestartPolicy,
    ) -> Result<SupervisedAgent<C>, Error> {
        let source = Source::Connector(Arc::new(connector));
        let client = Arc::new(Relay {
            client: Arc::new(client),
            muted: Mutex::default(),
        });
        let live = source::start(&source, &client, &options).await?;
        Ok(Self::supervise(source, client, live, options, policy).await)
    }

    /// Starts watching the first live agent.
    async fn supervise(
        source: Source,
        client: Arc<Relay<C>>,
        live: Live,
        options: NegotiateOptions,
        policy: RestartPolicy,
    ) -> SupervisedAgent<C> {
        let handle = (
            live.connection.agent().clone(),
            live.initialize.clone(),
            live.dialect,
        );
        let (status, _) = watch::channel(SupervisorStatus::Running { restarts: 0 });
        let inner = Arc::new(Inner {
            source,
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
        SupervisedAgent { inner }
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

    /// Stops supervising and shuts the agent down (see
    /// [`AgentProcess::shutdown`](crate::process::AgentProcess::shutdown)); a connector's
    /// transport gets up to `grace` to say goodbye (see [`Transport::finished`]).
    pub async fn shutdown(self, grace: Duration) {
        self.inner.status.send_replace(SupervisorStatus::Stopped);
        let live = self.inner.live.lock().await.take();
        if let Some(live) = live {
            live.connection.close();
            if let Some(process) = live.process {
                let _ = process.shutdown(grace).await;
            }
            if let Some(finished) = live.finished {
                let _ = tokio::time::timeout(grace, finished).await;
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
        tracing::warn!(agent = %inner.source.describe(), %reason, "agent went away");
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
    let live = source::start(&inner.source, &inner.client, &inner.options).await?;
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
