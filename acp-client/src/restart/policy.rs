//! What a [`super::SupervisedAgent`] retries and how often ([`RestartPolicy`]), how each
//! session came back ([`SessionRestore`]) and where the supervisor stands
//! ([`SupervisorStatus`]).

use std::time::Duration;

use acp_rpc::{Error, ErrorCode};

#[cfg(doc)]
use super::SupervisedAgent;

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
