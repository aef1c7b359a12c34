//! What may run: the client's limits and standing permissions ([`TerminalConfig`]), a
//! `terminal/create` as it would run ([`TerminalRequest`]), the application's answer
//! ([`TerminalDecision`]) and the words of a refusal.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use acp_rpc::Error;
use acp_types::v1::{CreateTerminalRequest, SessionId};
use serde_json::json;

use super::{DEFAULT_MAX_LIVE_PER_SESSION, DEFAULT_MAX_OUTPUT_BYTE_LIMIT};

/// The client's limits and standing permissions for terminals.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TerminalConfig {
    /// A request's `outputByteLimit` is clamped to this (bytes).
    pub max_output_byte_limit: u64,
    /// At most this many unreleased terminals per session; more are refused.
    pub max_live_per_session: usize,
    /// Whether a `cwd` outside the session's roots may be put to the application at all.
    pub allow_cwd_outside_roots: bool,
    /// Whether requests that set environment variables may be put to the application.
    pub allow_env: bool,
    /// Whether the client becomes a child subreaper (Linux) so that processes that left a
    /// terminal's process group are stopped with it (SIGTERM, then SIGKILL after
    /// [`ORPHAN_GRACE`](super::ORPHAN_GRACE) for those still running). It is process-wide: orphans of every
    /// child of the client come to it. Processes caught: descendants that called `setsid`
    /// or `setpgid` and were orphaned, as long as they kept the environment the command got
    /// (it carries a marker, `ACP_RS_CLEANUP_TAG`). Not caught: a descendant that replaced its
    /// environment, one whose parent outside the group is still alive at the sweep, one
    /// that double-forks faster than the sweep's rounds (about 60 ms of quiet), any on
    /// systems other than Linux. Orphans that exit on their own are reaped by a background
    /// thread (every 2 s), except a `setsid` one (it leads its own group, like children the
    /// application may spawn and reap itself): it stays a zombie until the client exits.
    pub reap_orphans: bool,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        TerminalConfig {
            max_output_byte_limit: DEFAULT_MAX_OUTPUT_BYTE_LIMIT,
            max_live_per_session: DEFAULT_MAX_LIVE_PER_SESSION,
            allow_cwd_outside_roots: false,
            allow_env: false,
            reap_orphans: true,
        }
    }
}

impl TerminalConfig {
    /// Sets [`TerminalConfig::max_output_byte_limit`].
    #[must_use]
    pub fn with_max_output_byte_limit(mut self, bytes: u64) -> Self {
        self.max_output_byte_limit = bytes;
        self
    }
    /// Sets [`TerminalConfig::max_live_per_session`].
    #[must_use]
    pub fn with_max_live_per_session(mut self, n: usize) -> Self {
        self.max_live_per_session = n;
        self
    }
    /// Sets [`TerminalConfig::allow_cwd_outside_roots`].
    #[must_use]
    pub fn with_cwd_outside_roots_allowed(mut self, allow: bool) -> Self {
        self.allow_cwd_outside_roots = allow;
        self
    }
    /// Sets [`TerminalConfig::allow_env`].
    #[must_use]
    pub fn with_env_allowed(mut self, allow: bool) -> Self {
        self.allow_env = allow;
        self
    }
    /// Sets [`TerminalConfig::reap_orphans`].
    #[must_use]
    pub fn with_orphan_reaping(mut self, reap: bool) -> Self {
        self.reap_orphans = reap;
        self
    }
}

/// A `terminal/create` as it would run, shown to [`crate::Client::approve_terminal`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TerminalRequest {
    /// The session asking.
    pub session_id: SessionId,
    /// The program (looked up in `PATH` if it has no slash).
    pub command: String,
    /// Its arguments, exactly as they will be passed (no shell involved unless the command
    /// is one).
    pub args: Vec<String>,
    /// The directory it would run in (canonical).
    pub cwd: PathBuf,
    /// Whether the agent chose `cwd` (otherwise it is the session's directory).
    pub cwd_from_agent: bool,
    /// Whether `cwd` lies inside the session's roots.
    pub cwd_inside_roots: bool,
    /// Environment variables it would get on top of the client's own environment.
    pub env: Vec<(String, String)>,
    /// The output limit that will apply (after the clamp).
    pub output_byte_limit: u64,
}

impl fmt::Display for TerminalRequest {
    /// One line for a prompt: `run `sh -c 'ls -l'` in /ws (env A=1)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}", shell_quote(&self.command))?;
        for a in &self.args {
            write!(f, " {}", shell_quote(a))?;
        }
        write!(f, "` in {}", self.cwd.display())?;
        if !self.cwd_inside_roots {
            f.write_str(" (outside the session's roots)")?;
        }
        if !self.env.is_empty() {
            f.write_str(" with env")?;
            for (k, v) in &self.env {
                write!(f, " {}={}", shell_quote(k), shell_quote(v))?;
            }
        }
        Ok(())
    }
}

/// Quotes `s` for display the way a POSIX shell would read it back.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What the application answered for a [`TerminalRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TerminalDecision {
    /// Run it.
    Allow,
    /// Do not run it; the reason goes back to the agent in the error message.
    Deny {
        /// Why, in words for the agent (and its user).
        reason: String,
    },
}

impl TerminalDecision {
    /// A refusal with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        TerminalDecision::Deny {
            reason: reason.into(),
        }
    }
}

pub(crate) fn refused(params: &CreateTerminalRequest, why: &str) -> Error {
    Error::invalid_params(format!(
        "terminal/create `{}` refused: {why}",
        params.command
    ))
    .with_data(json!({ "command": params.command, "reason": why }))
}

/// `p` with `.` removed, if it is absolute and has no `..`.
pub(crate) fn clean_absolute(p: &Path) -> Option<PathBuf> {
    if !p.is_absolute() || p.components().any(|c| c == Component::ParentDir) {
        return None;
    }
    Some(p.components().filter(|c| *c != Component::CurDir).collect())
}
