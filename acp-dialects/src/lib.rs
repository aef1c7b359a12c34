//! The legacy dialects of ACP, one module each: everything acp-rs knows about a dialect is
//! written once, in the module named after it.
//!
//! A dialect module ([`v0_0_9`], [`threads`], [`probe`], [`crow`]) holds:
//!
//! * **its own two sides**, for peers that speak exactly that dialect: the `Agent` trait an
//!   agent implements with the `ClientHandle` it calls the editor through (`serve`), and the
//!   `Client` trait an editor implements with the `AgentHandle` it calls the agent through
//!   (`connect`);
//! * **its translation to and from v1, for either role**, with the mapping tables in the
//!   module's docs: `serve_v1_agent` puts a v1 agent in front of an editor of the dialect,
//!   `drive_for_v1_client` puts an agent of the dialect behind a v1 client. A translation
//!   runs the user's v1 side on an in-memory pipe ([`acp_rpc::memory`]) and translates every
//!   message both ways; what cannot be translated is refused with a clear error or dropped
//!   with a logged reason, as the tables say.
//!
//! [`negotiation`] holds what both sides' version negotiation shares: which dialect a first
//! message or a handshake answer shows. acp-agent and acp-client only wire the dialects in:
//! `acp_agent::legacy::serve_v1` starts the user's v1 agent and hands its pipe end to
//! [`serve_v1_agent`]; `acp_client::legacy::connect_v1` does the same with a v1 client and
//! [`drive_for_v1_client`]. Adding a dialect is the recipe in `CONTRIBUTING.md`.

#![warn(missing_docs)]
// Built without any legacy dialect, the crate only says so: nothing translates.
#![cfg_attr(
    not(any(
        feature = "legacy-0-0-9",
        feature = "legacy-threads",
        feature = "probe"
    )),
    allow(unreachable_code, unused_variables, unused_imports, dead_code)
)]

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use acp_rpc::memory::PipeEnd;
use acp_rpc::{CloseReason, Config, Error, ErrorCode, Peer};
pub use acp_types::Dialect;
use acp_types::v1;
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

/// A stream a connection reads from (the peer's output): any [`AsyncRead`] that can move
/// to a task.
pub trait Input: AsyncRead + Unpin + Send + 'static {}
impl<T: AsyncRead + Unpin + Send + 'static> Input for T {}

/// A stream a connection writes to (the peer's input): any [`AsyncWrite`] that can move
/// to a task.
pub trait Output: AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncWrite + Unpin + Send + 'static> Output for T {}

mod client_files;
mod connection;
#[cfg(feature = "crow")]
pub mod crow;
pub mod negotiation;
#[cfg(feature = "probe")]
pub mod probe;
#[cfg(feature = "legacy-threads")]
pub mod threads;
#[cfg(feature = "legacy-0-0-9")]
pub mod v0_0_9;

pub use connection::{Connection, Context, ToAgent, ToClient};

/// How a translation presents one side to the other where the dialect and v1 do not line
/// up. One set of options serves every dialect and both roles; each field says which use it.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct AdapterOptions {
    /// The configuration of the legacy wire's connection (its framing is always the
    /// dialect's).
    pub config: Config,
    /// The working directory of the v1 sessions behind the legacy conversations when a v1
    /// agent serves a legacy editor (`session/new` needs one, the legacy dialects have none;
    /// default: the process's current directory), against which relative 0.0.9 `path`
    /// mentions are resolved. When a v1 client drives a threads agent: the `cwd` reported
    /// for every session in `session/list` (default: the first root of
    /// [`AdapterOptions::fs`], else empty).
    pub cwd: Option<PathBuf>,
    /// When a v1 client drives a legacy agent: serves the agent's file calls that the v1
    /// client does not (threads' `readBinaryFile`, `stat` and `globSearch`, which have no v1
    /// equivalent, and reads or writes the client did not advertise). Without it those
    /// calls get `-32601`.
    pub fs: Option<Arc<dyn LocalFiles>>,
    /// When a v1 client drives a legacy agent: the agent's answer to the dialect's
    /// handshake, when version negotiation already sent it (the v1 `initialize` is then
    /// answered from it).
    pub handshake: Option<serde_json::Value>,
}

impl AdapterOptions {
    /// Sets [`AdapterOptions::config`].
    #[must_use]
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Sets [`AdapterOptions::cwd`].
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets [`AdapterOptions::fs`].
    #[must_use]
    pub fn with_fs(mut self, fs: impl LocalFiles) -> Self {
        self.fs = Some(Arc::new(fs));
        self
    }

    /// Sets [`AdapterOptions::handshake`].
    #[must_use]
    pub fn with_handshake(mut self, answer: serde_json::Value) -> Self {
        self.handshake = Some(answer);
        self
    }

    /// The cwd of the sessions a v1 agent serves to a legacy editor.
    pub(crate) fn session_cwd(&self) -> PathBuf {
        self.cwd
            .clone()
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")))
    }
}

/// Whether a path exists and is a directory (threads' `stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathStat {
    /// The path exists.
    pub exists: bool,
    /// It is a directory.
    pub is_directory: bool,
}

/// Local file access a translation falls back on when a v1 client does not serve a legacy
/// agent's file call (acp-client's `SandboxedFs` is one).
#[async_trait]
pub trait LocalFiles: fmt::Debug + Send + Sync + 'static {
    /// `fs/read_text_file`.
    async fn read_text_file(
        &self,
        request: v1::ReadTextFileRequest,
    ) -> Result<v1::ReadTextFileResponse, Error>;
    /// `fs/write_text_file`.
    async fn write_text_file(
        &self,
        request: v1::WriteTextFileRequest,
    ) -> Result<v1::WriteTextFileResponse, Error>;
    /// Up to `limit` bytes of a file from `offset`.
    async fn read_bytes(
        &self,
        path: &str,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<Vec<u8>, Error>;
    /// Whether `path` exists and is a directory.
    async fn stat(&self, path: &str) -> Result<PathStat, Error>;
    /// The files matching a glob pattern, as absolute paths.
    async fn glob(&self, pattern: &str) -> Result<Vec<String>, Error>;
    /// The directory sessions are reported in when nothing else says (the first root).
    fn default_cwd(&self) -> Option<PathBuf>;
}

/// A running translation between a legacy peer and the user's v1 side: the legacy
/// connection, which ends with the v1 side (and the reverse).
#[derive(Clone, Debug)]
pub struct Translation {
    dialect: Dialect,
    legacy: Peer,
}

impl Translation {
    /// The legacy dialect spoken on the wire.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The legacy connection's JSON-RPC peer.
    pub fn peer(&self) -> &Peer {
        &self.legacy
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        self.legacy.closed().await
    }

    /// Ends the connection (and the v1 side behind it).
    pub fn close(&self) {
        self.legacy.close();
    }
}

/// Serves a v1 agent to an editor speaking the legacy `dialect` over `reader`/`writer`:
/// `v1_agent` starts the user's v1 agent connection on the pipe end it is given and returns
/// its [`Peer`]. `None` for a dialect this build has no translation for (v1 itself, or one
/// compiled out).
pub fn serve_v1_agent(
    dialect: Dialect,
    v1_agent: impl FnOnce(PipeEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Option<Translation> {
    let legacy = match dialect {
        #[cfg(feature = "legacy-0-0-9")]
        Dialect::Legacy009 => v0_0_9::serve_v1_agent(v1_agent, reader, writer, options),
        #[cfg(feature = "legacy-threads")]
        Dialect::Threads => threads::serve_v1_agent(v1_agent, reader, writer, options),
        #[cfg(feature = "probe")]
        Dialect::Probe => probe::serve_v1_agent(v1_agent, reader, writer, options),
        #[cfg(feature = "crow")]
        Dialect::Crow => crow::serve_v1_agent(v1_agent, reader, writer, options),
        _ => return None,
    };
    Some(Translation { dialect, legacy })
}

/// Drives an agent speaking the legacy `dialect` (its stdout is `reader`, its stdin
/// `writer`) for a v1 client: `v1_client` starts the user's v1 client connection on the
/// pipe end it is given and returns its [`Peer`]. `None` for a dialect this build has no
/// translation for.
pub fn drive_for_v1_client(
    dialect: Dialect,
    v1_client: impl FnOnce(PipeEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Option<Translation> {
    let legacy = match dialect {
        #[cfg(feature = "legacy-0-0-9")]
        Dialect::Legacy009 => v0_0_9::drive_for_v1_client(v1_client, reader, writer, options),
        #[cfg(feature = "legacy-threads")]
        Dialect::Threads => threads::drive_for_v1_client(v1_client, reader, writer, options),
        #[cfg(feature = "probe")]
        Dialect::Probe => probe::drive_for_v1_client(v1_client, reader, writer, options),
        #[cfg(feature = "crow")]
        Dialect::Crow => crow::drive_for_v1_client(v1_client, reader, writer, options),
        _ => return None,
    };
    Some(Translation { dialect, legacy })
}

/// `-32601` for a call the other side has no way to serve, `<method>: <why>`; `data` names
/// the method and the dialect.
pub(crate) fn refused(dialect: Dialect, method: &str, why: &str) -> Error {
    Error::new(ErrorCode::METHOD_NOT_FOUND, format!("{method}: {why}"))
        .with_data(serde_json::json!({ "method": method, "dialect": dialect.name() }))
}

/// Formats seconds since the Unix epoch as an RFC 3339 UTC timestamp.
#[cfg_attr(
    not(any(feature = "legacy-threads", feature = "probe")),
    allow(dead_code)
)]
pub(crate) fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `-32601` for a call of the user's v1 agent that a legacy editor cannot serve,
/// `<method> cannot be forwarded: <why>`.
pub(crate) fn not_forwarded(dialect: Dialect, method: &str, why: &str) -> Error {
    refused(dialect, method, &format!("cannot be forwarded: {why}"))
}

/// Locks a mutex, recovering the data of a poisoned one (a panicking holder leaves it
/// consistent: every critical section is a single update).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
