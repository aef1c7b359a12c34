//! Everything version negotiation knows about the dialects, for both sides: which dialect a
//! client's first message shows ([`detect`]) and which accepted one answers it ([`choose`]);
//! how a client offers a dialect ([`offer_line`]) and which dialect an answer names
//! ([`answer_dialect`], [`dialect_of_version`], [`translation_handshake`]); and which
//! dialects this build speaks ([`compiled_dialects`], [`accepted`]). [`NegotiateOptions`] is
//! both sides' options, each side's own part a type parameter. `acp_agent::negotiate` and
//! `acp_client::negotiate` only read and write the lines.

use std::time::Duration;

use acp_rpc::Config;
use acp_types::v1;
use serde_json::{Value, json};

use crate::{AdapterOptions, Dialect, LocalFiles};

/// The methods a threads agent serves: a first message calling one of them is the threads
/// dialect, which has no handshake.
pub const THREADS_FIRST_METHODS: [&str; 5] = [
    "getThreads",
    "createThread",
    "openThread",
    "getThreadEntries",
    "sendMessage",
];

/// The session methods a probe agent serves: a first message calling one of them (with no
/// `initialize` before it) is the probe dialect.
pub const PROBE_FIRST_METHODS: [&str; 4] =
    ["newSession", "loadSession", "setSessionMode", "prompt"];

/// The dialects this build speaks (this crate's `legacy-0-0-9`, `legacy-threads`, `probe`
/// and `crow` features), newest first.
pub fn compiled_dialects() -> Vec<Dialect> {
    Dialect::ALL
        .into_iter()
        .filter(|d| crate::compiled(*d))
        .collect()
}

/// The dialects of `pinned` this build speaks, in the pinned order; `Err` with every
/// dialect this build speaks when that leaves none.
pub fn accepted(pinned: &[Dialect]) -> Result<Vec<Dialect>, Vec<Dialect>> {
    let compiled = compiled_dialects();
    let accepted: Vec<Dialect> = pinned
        .iter()
        .copied()
        .filter(|d| compiled.contains(d))
        .collect();
    if accepted.is_empty() {
        Err(compiled)
    } else {
        Ok(accepted)
    }
}

/// The dialect a `protocolVersion` value names exactly: the integer `1` is v1, `"0.0.9"`
/// is 0.0.9 and the string `"1"` is probe; anything else (`2`, `"0.0.10"`, `"2"`) names
/// none. A client accepts
/// an `initialize` answer only for a version named here.
///
/// ```
/// use acp_dialects::Dialect;
/// use acp_dialects::negotiation::dialect_of_version;
/// use serde_json::json;
///
/// assert_eq!(dialect_of_version(&json!(1)), Some(Dialect::V1));
/// assert_eq!(dialect_of_version(&json!(2)), None);
/// assert_eq!(dialect_of_version(&json!("0.0.9")), Some(Dialect::Legacy009));
/// assert_eq!(dialect_of_version(&json!("1")), Some(Dialect::Probe));
/// ```
pub fn dialect_of_version(version: &Value) -> Option<Dialect> {
    match version {
        Value::Number(n) if n.as_u64() == Some(1) => Some(Dialect::V1),
        Value::String(s) if s == "0.0.9" => Some(Dialect::Legacy009),
        Value::String(s) if s == "1" => Some(Dialect::Probe),
        _ => None,
    }
}

/// The dialect a client's first message shows, if it shows one: `initialize` with an
/// integer `protocolVersion` is v1 (a v1 agent answers any integer with its latest), with a
/// `"0.0.x"` string the 0.0.9 dialect, with the string `"1"` probe, with another string v1
/// again; a thread method ([`THREADS_FIRST_METHODS`]) is the threads dialect and a probe
/// session method ([`PROBE_FIRST_METHODS`]) the probe dialect; `initialize` with a
/// snake_case `protocol_version` (and no `protocolVersion`) is crow. Anything else (another
/// method, a line that is not JSON) says nothing.
///
/// ```
/// use acp_dialects::Dialect;
/// use acp_dialects::negotiation::detect;
///
/// let v1 = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
/// assert_eq!(detect(v1), Some(Dialect::V1));
/// let zero_nine = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#;
/// assert_eq!(detect(zero_nine), Some(Dialect::Legacy009));
/// assert_eq!(detect(br#"{"id":0,"method":"getThreads","params":null}"#), Some(Dialect::Threads));
/// let probe = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}"#;
/// assert_eq!(detect(probe), Some(Dialect::Probe));
/// let crow = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1}}"#;
/// assert_eq!(detect(crow), Some(Dialect::Crow));
/// assert_eq!(detect(b"not json"), None);
/// ```
pub fn detect(first_message: &[u8]) -> Option<Dialect> {
    #[derive(serde::Deserialize)]
    struct First<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        params: Option<Value>,
    }
    let first: First = serde_json::from_slice(first_message).ok()?;
    match first.method.as_deref()? {
        "initialize" => {
            let params = first.params.as_ref()?;
            if params.get("protocolVersion").is_none() && params.get("protocol_version").is_some() {
                return Some(Dialect::Crow);
            }
            let version = params.get("protocolVersion")?;
            dialect_of_version(version).or(match version {
                Value::Number(_) => Some(Dialect::V1),
                Value::String(s) if s.starts_with("0.0.") => Some(Dialect::Legacy009),
                // Another string ("1", "2.0"): a v1 agent answers its latest version.
                Value::String(_) => Some(Dialect::V1),
                _ => None,
            })
        }
        method if THREADS_FIRST_METHODS.contains(&method) => Some(Dialect::Threads),
        method if PROBE_FIRST_METHODS.contains(&method) => Some(Dialect::Probe),
        _ => None,
    }
}

/// The dialect an answer to a client's handshake offer shows: its `protocolVersion` names
/// it ([`dialect_of_version`]), or, answering the threads offer (`getThreads`), a thread
/// list, or, answering the crow offer, a snake_case `protocol_version` of 1. `Err` with the
/// version it names instead (`protocol version 2`), or empty when it
/// names nothing.
pub fn answer_dialect(result: &Value, offered: Dialect) -> Result<Dialect, String> {
    if let (None, Some(version)) = (
        result.get("protocolVersion"),
        result.get("protocol_version"),
    ) {
        return match version {
            Value::Number(n) if n.as_u64() == Some(1) => Ok(Dialect::Crow),
            other => Err(format!("crow protocol version {other}")),
        };
    }
    match result.get("protocolVersion") {
        Some(version @ (Value::Number(_) | Value::String(_))) => {
            dialect_of_version(version).ok_or_else(|| format!("protocol version {version}"))
        }
        _ if offered == Dialect::Threads && result.get("threads").is_some() => Ok(Dialect::Threads),
        _ => Err(String::new()),
    }
}

/// Which accepted dialect serves a client that showed `detected` (the agent side): the
/// detected one when it is accepted; otherwise the one whose answer tells the client what
/// this agent speaks (v1 for a 0.0.9 handshake and the reverse), else the first accepted.
/// `accepted` is never empty ([`accepted`]).
pub fn choose(detected: Option<Dialect>, accepted: &[Dialect]) -> Dialect {
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
        // A v1 connection answers probe's string `"1"` with the integer 1, which a probe-dialect
        // client can read as "not my version".
        Dialect::Probe => Some(Dialect::V1),
        // No other dialect reads crow's snake_case handshake: the first accepted answers
        // with its own clear error.
        Dialect::Crow => None,
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

/// The line a client offers `dialect` with (the client side), as request `id`, ending in
/// `\n`: v1's `initialize` with `init`, 0.0.9's `initialize` with `"0.0.9"`, threads'
/// `getThreads` (no `jsonrpc`, `params: null`), probe's `initialize` with the string `"1"`
/// and crow's snake_case `initialize` (with `client_info` from `init`), byte for byte as
/// those dialects' clients sent them.
pub fn offer_line(dialect: Dialect, id: i64, init: &v1::InitializeRequest) -> Vec<u8> {
    let message = match dialect {
        Dialect::V1 => json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": init}),
        Dialect::Legacy009 => json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": "0.0.9"}
        }),
        Dialect::Threads => json!({"id": id, "method": "getThreads", "params": null}),
        Dialect::Probe => json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": "1"}
        }),
        Dialect::Crow => {
            let mut params = json!({"protocol_version": 1, "client_capabilities": {}});
            if let Some(info) = &init.client_info {
                params["client_info"] = json!({"name": info.name, "version": info.version});
            }
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params})
        }
    };
    let mut line = serde_json::to_vec(&message).expect("offers serialize");
    line.push(b'\n');
    line
}

/// The handshake answer a client's translation of `dialect` is handed
/// ([`crate::AdapterOptions::handshake`]), given the agent's answer `result` to the offer of
/// `answered`: 0.0.9's `initialize` answer (whichever offer it answered), probe's when it
/// answered the probe offer, else none (threads has no handshake; crow's translation does
/// its own). `-32602` saying why when the answer does not read as that dialect's.
#[cfg_attr(not(feature = "probe"), allow(unused_variables))]
pub fn translation_handshake(
    dialect: Dialect,
    answered: Dialect,
    result: Value,
) -> Result<Option<Value>, acp_rpc::Error> {
    let read = match dialect {
        #[cfg(feature = "legacy-0-0-9")]
        Dialect::Legacy009 => Some(
            <acp_types::legacy::v0_0_9::InitializeResponse as serde::Deserialize>::deserialize(
                &result,
            )
            .map(drop),
        ),
        #[cfg(feature = "probe")]
        Dialect::Probe if answered == dialect => Some(
            <acp_types::legacy::probe::InitializeResponse as serde::Deserialize>::deserialize(
                &result,
            )
            .map(drop),
        ),
        // Threads has no handshake; crow's translation does its own.
        _ => None::<Result<(), serde_json::Error>>,
    };
    let Some(read) = read else {
        return Ok(None);
    };
    read.map_err(|e| {
        acp_rpc::Error::invalid_params(format!(
            "the agent's initialize answer does not read as {dialect}: {e}"
        ))
    })?;
    Ok(Some(result))
}

/// Default time each client offer waits for its answer before the next dialect is offered.
pub const DEFAULT_OFFER_TIMEOUT: Duration = Duration::from_secs(5);

/// Default time a client's whole negotiation may take, however many dialects are offered.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// Default cap on the lines an agent writes before it answers an offer (kept for the
/// connection).
pub const DEFAULT_MAX_KEPT_LINES: usize = 200_000;

/// Default cap on the bytes of those lines.
pub const DEFAULT_MAX_KEPT_BYTES: usize = 32 * 1024 * 1024;

/// What a negotiation accepts or offers and how it serves each dialect, for either side:
/// what both sides set is here once, and `S` is what only one side has
/// ([`AgentSide`] for `acp_agent::negotiate`, [`ClientSide`] for `acp_client::negotiate`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NegotiateOptions<S> {
    /// The dialects to accept (an agent) or offer (a client), in preference order. Default:
    /// every dialect this build speaks ([`compiled_dialects`]), newest first.
    pub dialects: Vec<Dialect>,
    /// The connection's configuration (its framing is set by the dialect spoken).
    pub config: Config,
    /// How a legacy peer is translated.
    pub legacy: AdapterOptions,
    /// What only this side sets.
    pub side: S,
}

impl<S> NegotiateOptions<S> {
    /// Options for every compiled dialect, with `side` for this side's own settings.
    pub fn with_side(side: S) -> Self {
        NegotiateOptions {
            dialects: compiled_dialects(),
            config: Config::default(),
            legacy: AdapterOptions::default(),
            side,
        }
    }

    /// Sets [`NegotiateOptions::dialects`] (preference order).
    #[must_use]
    pub fn with_dialects(mut self, dialects: impl IntoIterator<Item = Dialect>) -> Self {
        self.dialects = dialects.into_iter().collect();
        self
    }

    /// Sets [`NegotiateOptions::config`].
    #[must_use]
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Sets the working directory of the sessions behind legacy conversations
    /// ([`AdapterOptions::cwd`]).
    #[must_use]
    pub fn with_legacy_cwd(mut self, cwd: impl Into<std::path::PathBuf>) -> Self {
        self.legacy = self.legacy.with_cwd(cwd);
        self
    }

    /// Serves the file calls of legacy agents that the v1 client does not (threads'
    /// `readBinaryFile`/`stat`/`globSearch`, and reads or writes the client did not
    /// advertise) from `fs` ([`AdapterOptions::fs`]).
    #[must_use]
    pub fn with_legacy_fs(mut self, fs: impl LocalFiles) -> Self {
        self.legacy = self.legacy.with_fs(fs);
        self
    }
}

impl<S: Default> Default for NegotiateOptions<S> {
    fn default() -> Self {
        Self::with_side(S::default())
    }
}

/// What only an agent's negotiation sets: where the sessions are kept (`St` is the agent
/// crate's store handle).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgentSide<St> {
    /// Where the sessions are kept, for a v1 client and for the sessions behind a legacy
    /// conversation alike; `None`: in memory only, as the agent keeps them.
    pub store: Option<St>,
    /// Whether a client whose `initialize` offers protocol v2 is served v2, the v1 agent
    /// behind the v1<->v2 translation (`crate::v2`'s mapping, with [`NegotiateOptions::legacy`]
    /// as its options: its working directory, local files and terminals). Default `false`:
    /// such a client is answered in v1 and decides whether to go on.
    #[cfg(feature = "v2")]
    pub v2: bool,
}

impl<St> Default for AgentSide<St> {
    fn default() -> Self {
        AgentSide {
            store: None,
            #[cfg(feature = "v2")]
            v2: false,
        }
    }
}

impl<St> NegotiateOptions<AgentSide<St>> {
    /// Keeps the sessions in `store`, for v1 clients and for the sessions behind legacy
    /// conversations alike.
    #[must_use]
    pub fn with_store(mut self, store: impl Into<St>) -> Self {
        self.side.store = Some(store.into());
        self
    }

    /// Sets [`AgentSide::v2`]: serve a client offering v2 through the v1<->v2 translation.
    #[cfg(feature = "v2")]
    #[must_use]
    pub fn with_v2(mut self, on: bool) -> Self {
        self.side.v2 = on;
        self
    }
}

/// What only a client's negotiation sets: the v1 handshake it offers, and how long and how
/// much it waits for an answer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientSide {
    /// The v1 `initialize` request: sent as the v1 offer, and passed to the translation of a
    /// legacy dialect (its capabilities decide which file calls reach the client).
    pub initialize: v1::InitializeRequest,
    /// How long each offer waits for an answer before the next dialect is offered (never
    /// past `deadline`). Default [`DEFAULT_OFFER_TIMEOUT`].
    pub timeout: Duration,
    /// How long the whole negotiation may take: every offer, and the v1 handshake through
    /// a legacy translation. Default [`DEFAULT_DEADLINE`].
    pub deadline: Duration,
    /// The most lines the agent may write before it answers an offer. Default
    /// [`DEFAULT_MAX_KEPT_LINES`].
    pub max_kept_lines: usize,
    /// The most bytes those lines may take. Default [`DEFAULT_MAX_KEPT_BYTES`].
    pub max_kept_bytes: usize,
    /// Whether protocol v2 is offered, before the dialects or instead of them. Default
    /// [`OfferV2::No`]; a client built without v2 offers it never.
    pub v2: OfferV2,
}

/// Whether a negotiating client offers protocol v2 ([`ClientSide::v2`]): a v2 `initialize`
/// made from the v1 one (`acp_dialects::v2::v2_initialize`, feature `v2`), sent first. An
/// agent answering `2` is driven through the v1<->v2 translation; one answering `1` has its
/// v1 handshake done properly (it has not seen the client's v1 capabilities).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OfferV2 {
    /// The dialects only.
    #[default]
    No,
    /// v2 first; then the dialects when the agent refuses it or does not answer.
    First,
    /// v2 only: any other answer ends the negotiation (the dialects are not offered).
    Only,
}

impl NegotiateOptions<ClientSide> {
    /// Options offering every compiled dialect, with `initialize` as the v1 handshake.
    pub fn new(initialize: v1::InitializeRequest) -> Self {
        Self::with_side(ClientSide {
            initialize,
            timeout: DEFAULT_OFFER_TIMEOUT,
            deadline: DEFAULT_DEADLINE,
            max_kept_lines: DEFAULT_MAX_KEPT_LINES,
            max_kept_bytes: DEFAULT_MAX_KEPT_BYTES,
            v2: OfferV2::No,
        })
    }

    /// Sets [`ClientSide::v2`].
    #[must_use]
    pub fn with_v2(mut self, v2: OfferV2) -> Self {
        self.side.v2 = v2;
        self
    }

    /// Sets [`ClientSide::timeout`].
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.side.timeout = timeout;
        self
    }

    /// Sets [`ClientSide::deadline`].
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.side.deadline = deadline;
        self
    }

    /// Sets [`ClientSide::max_kept_lines`] and [`ClientSide::max_kept_bytes`].
    #[must_use]
    pub fn with_kept_limits(mut self, lines: usize, bytes: usize) -> Self {
        self.side.max_kept_lines = lines;
        self.side.max_kept_bytes = bytes;
        self
    }
}
