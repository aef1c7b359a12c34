//! [`Framing`]: how JSON-RPC is written and read on one wire (the dialects' knobs), what the
//! message layer reads and writes by; part of [`Config`](crate::Config).

/// How JSON-RPC is written and read on one wire: the knobs in which the protocol's dialects
/// differ (the legacy ones leave out `"jsonrpc"`, have no notifications, count ids from 0).
/// The defaults are strict JSON-RPC 2.0. Each dialect's preset lives with the dialect, in
/// acp-dialects (`acp_types::Dialect` names the dialects themselves).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Framing {
    /// Accept incoming messages without `"jsonrpc": "2.0"` (a present but different value
    /// is still rejected). Default `false`.
    pub accept_missing_jsonrpc: bool,
    /// Write `"jsonrpc": "2.0"` on every outgoing message. Default `true`.
    pub emit_jsonrpc: bool,
    /// Omit `"params"` from outgoing requests and notifications when it would be `null`.
    /// Default `false`.
    pub omit_null_params: bool,
    /// Whether the peer understands notifications. When `false` (legacy dialects),
    /// [`crate::Peer::notify`] sends a request with a fresh id and ignores its response, and
    /// no `$/cancel_request` is sent. Incoming id-less messages are still handled as
    /// notifications. Default `true`.
    pub notifications: bool,
    /// The id of the first outgoing request; later ones count up from it. Default `1`; the
    /// legacy dialects' peers count from `0`.
    pub first_request_id: i64,
    /// Whether JSON-RPC batches (a line holding an array of messages) are answered, and
    /// how many messages one may hold. `None` (the default, v1's and the legacy dialects'):
    /// a batch is refused with one `-32600`, as the official SDKs refuse it. `Some(max)`
    /// (draft v2's): a batch is answered as JSON-RPC 2.0 says, one array of the answers to
    /// its requests; one of more than `max` messages is refused whole with one `-32600`
    /// (see the `concepts` docs, "Batches"). Batches are only ever received: this crate
    /// never sends one.
    pub batches: Option<usize>,
}

/// The bound on a batch's messages that [`Framing::answer_batches`] callers use by default
/// (draft v2's framing does).
pub const DEFAULT_MAX_BATCH: usize = 128;

impl Default for Framing {
    fn default() -> Self {
        Framing {
            accept_missing_jsonrpc: false,
            emit_jsonrpc: true,
            omit_null_params: false,
            notifications: true,
            first_request_id: 1,
            batches: None,
        }
    }
}

impl Framing {
    /// Sets [`Framing::accept_missing_jsonrpc`].
    #[must_use]
    pub fn accept_missing_jsonrpc(mut self, yes: bool) -> Self {
        self.accept_missing_jsonrpc = yes;
        self
    }
    /// Sets [`Framing::emit_jsonrpc`].
    #[must_use]
    pub fn emit_jsonrpc(mut self, yes: bool) -> Self {
        self.emit_jsonrpc = yes;
        self
    }
    /// Sets [`Framing::omit_null_params`].
    #[must_use]
    pub fn omit_null_params(mut self, yes: bool) -> Self {
        self.omit_null_params = yes;
        self
    }
    /// Sets [`Framing::notifications`].
    #[must_use]
    pub fn notifications(mut self, yes: bool) -> Self {
        self.notifications = yes;
        self
    }
    /// Sets [`Framing::first_request_id`].
    #[must_use]
    pub fn first_request_id(mut self, id: i64) -> Self {
        self.first_request_id = id;
        self
    }
    /// Sets [`Framing::batches`]: answer batches of at most `max` messages (at least 1).
    #[must_use]
    pub fn answer_batches(mut self, max: usize) -> Self {
        self.batches = Some(max.max(1));
        self
    }
}
