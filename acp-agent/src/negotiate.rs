//! Version negotiation on the agent side: serve one v1 [`Agent`] to a client of any dialect
//! this build speaks, detected from the client's first message.
//!
//! ```no_run
//! use acp_agent::negotiate::{NegotiateOptions, serve_stdio};
//! use acp_agent::types::{InitializeRequest, InitializeResponse, ProtocolVersion};
//! use acp_agent::{Agent, AgentContext, Dialect, Error};
//!
//! struct MyAgent;
//!
//! #[acp_agent::async_trait]
//! impl Agent for MyAgent {
//!     async fn initialize(&self, _p: InitializeRequest, _cx: &AgentContext)
//!         -> Result<InitializeResponse, Error> {
//!         Ok(InitializeResponse::new(ProtocolVersion::V1))
//!     }
//! }
//!
//! # async fn run() -> Result<(), acp_agent::negotiate::NegotiationError> {
//! // Accept v1 and the 0.0.9 dialect, not threads.
//! let options = NegotiateOptions::default().with_dialects([Dialect::V1, Dialect::Legacy009]);
//! let conn = serve_stdio(MyAgent, options).await?;
//! eprintln!("the client speaks {}", conn.dialect());
//! conn.closed().await;
//! # Ok(()) }
//! ```
//!
//! # Detection
//!
//! [`detect`] reads the first message: `initialize` with an integer `protocolVersion` is v1,
//! with a `"0.0.x"` string the 0.0.9 dialect; a thread method (`getThreads`,
//! `createThread`, `openThread`, `getThreadEntries`, `sendMessage`) is the threads dialect,
//! which has no handshake. Anything else (another method, a line that is not JSON) says
//! nothing, and the first accepted dialect serves it, answering as that dialect answers.
//! [`detect`] is the one place a future dialect is recognised.
//!
//! # A dialect the agent does not accept
//!
//! The client is answered as the specifications say, never left waiting: a 0.0.9
//! `initialize` sent to an agent that accepts v1 but not 0.0.9 is answered by the v1
//! connection with the latest version it speaks (`1`), and a v1 `initialize` sent to an
//! agent that accepts 0.0.9 but not v1 is answered `"0.0.9"`; in both cases the client
//! decides whether it can go on. A dialect with no common ground (a thread method sent to
//! an agent that does not accept threads) gets that dialect's error for an unknown or
//! premature method.

use std::fmt;
use std::sync::Arc;

use acp_rpc::probe::{LineProbe, ProbeError};
use acp_rpc::{CloseReason, Config};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::store::{SessionStore, StoreSlot};
use crate::{Agent, AgentConnection, Dialect};

/// What [`serve`] accepts, and how it serves each dialect.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NegotiateOptions {
    /// The dialects to accept, in preference order. Default: every dialect this build
    /// speaks (the `legacy-0-0-9` and `legacy-threads` features), newest first.
    pub dialects: Vec<Dialect>,
    /// The connection's configuration (its dialect framing is set by the dialect served).
    pub config: Config,
    /// How a legacy (0.0.9 or threads) client is served.
    #[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
    pub legacy: crate::legacy::AdapterOptions,
    /// Where a v1 client's sessions are kept (see [`crate::store`]); `None`: in memory only,
    /// as the agent keeps them.
    pub store: Option<StoreSlot>,
}

impl Default for NegotiateOptions {
    fn default() -> Self {
        NegotiateOptions {
            dialects: compiled_dialects(),
            config: Config::default(),
            #[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
            legacy: Default::default(),
            store: None,
        }
    }
}

impl NegotiateOptions {
    /// Sets [`NegotiateOptions::dialects`] (preference order).
    #[must_use]
    pub fn with_dialects(mut self, dialects: impl IntoIterator<Item = Dialect>) -> Self {
        self.dialects = dialects.into_iter().collect();
        self
    }

    /// Keeps the sessions in `store` ([`crate::serve_with_store`]), for v1 clients and for
    /// the sessions behind legacy conversations alike.
    #[must_use]
    pub fn with_store(mut self, store: impl SessionStore) -> Self {
        let slot = StoreSlot(Arc::new(store));
        #[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
        {
            self.legacy.store = Some(slot.clone());
        }
        self.store = Some(slot);
        self
    }

    /// Sets [`NegotiateOptions::config`].
    #[must_use]
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Sets the working directory of the sessions behind legacy conversations (the legacy
    /// dialects have none; `session/new` needs one).
    #[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
    #[must_use]
    pub fn with_legacy_cwd(mut self, cwd: impl Into<std::path::PathBuf>) -> Self {
        self.legacy = self.legacy.with_cwd(cwd);
        self
    }
}

/// The dialects this crate was built to speak (its `legacy-0-0-9` and `legacy-threads`
/// features), newest first. Decided by this crate's own features: acp-types may have more
/// dialects compiled in for another crate of the build.
pub fn compiled_dialects() -> Vec<Dialect> {
    Dialect::ALL
        .into_iter()
        .filter(|d| match d {
            Dialect::V1 => true,
            Dialect::Legacy009 => cfg!(feature = "legacy-0-0-9"),
            Dialect::Threads => cfg!(feature = "legacy-threads"),
        })
        .collect()
}

/// Why [`serve`] could not start a connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The client closed the stream before sending anything.
    #[error("the client closed the connection before sending anything")]
    ClosedBeforeFirstMessage,
    /// Reading the first message failed.
    #[error("reading the client's first message failed: {0}")]
    Io(#[from] std::io::Error),
    /// No dialect to serve: the list is empty or names only dialects this build lacks.
    #[error("no dialect to serve: {0:?} names none this build speaks (it speaks {1:?})")]
    NoDialect(Vec<Dialect>, Vec<Dialect>),
}

/// The dialect a client's first message shows, if it shows one (see the module docs).
///
/// ```
/// use acp_agent::Dialect;
/// use acp_agent::negotiate::detect;
///
/// let v1 = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
/// assert_eq!(detect(v1), Some(Dialect::V1));
/// let zero_nine = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#;
/// assert_eq!(detect(zero_nine), Some(Dialect::Legacy009));
/// assert_eq!(detect(br#"{"id":0,"method":"getThreads","params":null}"#), Some(Dialect::Threads));
/// assert_eq!(detect(b"not json"), None);
/// ```
pub fn detect(first_message: &[u8]) -> Option<Dialect> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        params: Option<serde_json::Value>,
    }
    let probe: Probe = serde_json::from_slice(first_message).ok()?;
    match probe.method.as_deref()? {
        "initialize" => {
            let version = probe.params.as_ref()?.get("protocolVersion")?;
            match version {
                serde_json::Value::Number(_) => Some(Dialect::V1),
                serde_json::Value::String(s) if s.starts_with("0.0.") => Some(Dialect::Legacy009),
                // Another string ("1", "2.0"): a v1 agent answers its latest version.
                serde_json::Value::String(_) => Some(Dialect::V1),
                _ => None,
            }
        }
        "getThreads" | "createThread" | "openThread" | "getThreadEntries" | "sendMessage" => {
            Some(Dialect::Threads)
        }
        _ => None,
    }
}

/// Which accepted dialect serves a client that showed `detected`: the detected one when it
/// is accepted; otherwise the one whose answer tells the client what this agent speaks
/// (v1 for a 0.0.9 handshake and the reverse), else the first accepted.
fn choose(detected: Option<Dialect>, accepted: &[Dialect]) -> Dialect {
    let first = accepted[0];
    let Some(detected) = detected else {
        return first;
    };
    if accepted.contains(&detected) {
        return detected;
    }
    let answers_the_handshake = match detected {
        Dialect::Legacy009 => Some(Dialect::V1),
        Dialect::V1 => Some(Dialect::Legacy009),
        Dialect::Threads => None,
    };
    let chosen = answers_the_handshake
        .filter(|d| accepted.contains(d))
        .unwrap_or(first);
    tracing::warn!(
        client = %detected,
        serving = %chosen,
        "the client speaks a dialect this agent does not accept; answering in another"
    );
    chosen
}

/// A connection whose dialect was negotiated: the v1 connection, or a legacy one running the
/// v1 agent through its adapter.
#[derive(Clone, Debug)]
pub struct NegotiatedConnection {
    dialect: Dialect,
    inner: Inner,
}

#[derive(Clone, Debug)]
enum Inner {
    V1(AgentConnection),
    #[cfg(feature = "legacy-0-0-9")]
    Legacy009(crate::legacy::v0_0_9::Connection),
    #[cfg(feature = "legacy-threads")]
    Threads(crate::legacy::threads::Connection),
}

impl NegotiatedConnection {
    /// The dialect being spoken.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The v1 connection, when the client speaks v1 (a legacy client is served through an
    /// adapter, and its handles speak that dialect).
    pub fn v1(&self) -> Option<&AgentConnection> {
        match &self.inner {
            Inner::V1(conn) => Some(conn),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        match &self.inner {
            Inner::V1(c) => c.closed().await,
            #[cfg(feature = "legacy-0-0-9")]
            Inner::Legacy009(c) => c.closed().await,
            #[cfg(feature = "legacy-threads")]
            Inner::Threads(c) => c.closed().await,
        }
    }

    /// Ends the connection.
    pub fn close(&self) {
        match &self.inner {
            Inner::V1(c) => c.close(),
            #[cfg(feature = "legacy-0-0-9")]
            Inner::Legacy009(c) => c.close(),
            #[cfg(feature = "legacy-threads")]
            Inner::Threads(c) => c.close(),
        }
    }
}

/// Serves `agent` over stdin/stdout in whatever accepted dialect the client speaks.
pub async fn serve_stdio<A: Agent>(
    agent: A,
    options: NegotiateOptions,
) -> Result<NegotiatedConnection, NegotiationError> {
    serve(agent, tokio::io::stdin(), tokio::io::stdout(), options).await
}

/// Waits for the client's first message, detects its dialect ([`detect`]), and serves
/// `agent` in the accepted dialect that fits (see the module docs). Must be called within a
/// Tokio runtime.
pub async fn serve<A, R, W>(
    agent: A,
    reader: R,
    writer: W,
    options: NegotiateOptions,
) -> Result<NegotiatedConnection, NegotiationError>
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let compiled = compiled_dialects();
    let accepted: Vec<Dialect> = options
        .dialects
        .iter()
        .copied()
        .filter(|d| compiled.contains(d))
        .collect();
    if accepted.is_empty() {
        return Err(NegotiationError::NoDialect(options.dialects, compiled));
    }
    let mut probe = LineProbe::new(reader, options.config.max_message_size);
    let detected = match probe.next_line().await {
        Ok(Some(line)) => {
            let detected = detect(&line);
            probe.unread(&line);
            detected
        }
        Ok(None) => return Err(NegotiationError::ClosedBeforeFirstMessage),
        // The connection answers the oversized line in the dialect it speaks.
        Err(ProbeError::TooLong(_)) => None,
        Err(ProbeError::Io(e)) => return Err(e.into()),
    };
    let dialect = choose(detected, &accepted);
    tracing::debug!(?detected, %dialect, "negotiated");
    let reader = probe.into_reader();
    let config = options.config;
    let inner = match dialect {
        Dialect::V1 => Inner::V1(crate::connection::serve_inner(
            agent,
            reader,
            writer,
            config,
            options.store.map(|s| s.0),
        )),
        #[cfg(feature = "legacy-0-0-9")]
        Dialect::Legacy009 => Inner::Legacy009(crate::legacy::v0_0_9::serve_v1_with(
            agent,
            reader,
            writer,
            config,
            options.legacy,
        )),
        #[cfg(feature = "legacy-threads")]
        Dialect::Threads => Inner::Threads(crate::legacy::threads::serve_v1_with(
            agent,
            reader,
            writer,
            config,
            options.legacy,
        )),
        #[allow(unreachable_patterns)]
        other => unreachable!("{other} is filtered out unless compiled in"),
    };
    Ok(NegotiatedConnection { dialect, inner })
}

impl fmt::Display for NegotiatedConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent connection speaking {}", self.dialect)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undetected_or_unaccepted_dialect_is_answered_by_the_one_that_can_say_so() {
        use Dialect::*;
        assert_eq!(choose(Some(Legacy009), &[V1, Legacy009]), Legacy009);
        assert_eq!(choose(Some(Legacy009), &[Threads, V1]), V1);
        assert_eq!(choose(Some(V1), &[Threads, Legacy009]), Legacy009);
        assert_eq!(choose(Some(Threads), &[Legacy009, V1]), Legacy009);
        assert_eq!(choose(None, &[Threads, V1]), Threads);
    }

    #[test]
    fn detection_reads_the_handshake_or_the_method() {
        use Dialect::*;
        let init = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":{v}}}}}"#
            )
        };
        assert_eq!(detect(init("1").as_bytes()), Some(V1));
        assert_eq!(detect(init("99").as_bytes()), Some(V1));
        assert_eq!(detect(init(r#""1""#).as_bytes()), Some(V1));
        assert_eq!(detect(init(r#""0.0.9""#).as_bytes()), Some(Legacy009));
        assert_eq!(detect(init(r#""0.0.11""#).as_bytes()), Some(Legacy009));
        assert_eq!(detect(init("null").as_bytes()), None);
        assert_eq!(detect(br#"{"id":0,"method":"initialize"}"#), None);
        for m in [
            "getThreads",
            "createThread",
            "openThread",
            "getThreadEntries",
            "sendMessage",
        ] {
            let line = format!(r#"{{"id":0,"method":"{m}","params":null}}"#);
            assert_eq!(detect(line.as_bytes()), Some(Threads), "{m}");
        }
        assert_eq!(
            detect(br#"{"jsonrpc":"2.0","id":0,"method":"session/new"}"#),
            None
        );
        assert_eq!(detect(br#"[1,2]"#), None);
        assert_eq!(detect(b"\xff\xfe"), None);
    }
}
