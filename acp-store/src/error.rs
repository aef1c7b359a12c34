//! [`StoreError`]: why a store operation failed, and how a peer is told.

use acp_types::v1::SessionId;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store has no session with this id.
    #[error("session not found: {}", .0.0)]
    NotFound(SessionId),
    /// `create` with an id the store already has.
    #[error("session already exists: {}", .0.0)]
    AlreadyExists(SessionId),
    /// Another process holds the store (only one process may write it at a time).
    #[error(
        "the session store {0} is in use by another process; a store directory serves one agent process at a time"
    )]
    Locked(String),
    /// Another live process is writing this session ([`crate::SqliteStore`]'s lease: a session is
    /// written by one process at a time, from a turn's prompt to its end).
    #[error(
        "session {} is being written by another process (pid {pid}); a session is written by one process at a time: retry when its turn has ended",
        .id.0
    )]
    Leased {
        /// The session.
        id: SessionId,
        /// The process that holds it.
        pid: u32,
    },
    /// The store could not be read or written.
    #[error("session store {context}: {source}")]
    Io {
        /// What the store was doing, with the path.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A list cursor this store did not hand out.
    #[error("invalid cursor {0:?}: pass a nextCursor from a previous session/list")]
    BadCursor(String),
    /// Anything else (a networked store's failures).
    #[error("session store: {0}")]
    Other(String),
    /// A backend's failure (a database unreachable, a query refused), told twice: `public`
    /// for the peer whose call failed, without the backend's host, port, database or user;
    /// `detail` for the server's log and the library's caller (what `Display` shows).
    #[error("session store: {detail}")]
    Backend {
        /// What failed and its kind, for a remote client.
        public: String,
        /// The whole story, for the operator.
        detail: String,
    },
}

impl StoreError {
    /// What the peer whose call failed may read of this error: a [`StoreError::Backend`]'s
    /// `public` part (its `detail`, naming where the backend is, goes to the log here, at
    /// warn), every other error whole.
    pub fn for_peer(&self) -> String {
        match self {
            StoreError::Backend { public, detail } => {
                tracing::warn!(error = %detail, "session store failed");
                format!("session store: {public}")
            }
            other => other.to_string(),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        StoreError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<StoreError> for acp_rpc::Error {
    fn from(e: StoreError) -> Self {
        // Error `data` is free-form JSON (no schema type): the session or cursor at fault.
        match &e {
            StoreError::NotFound(id) => acp_rpc::Error::resource_not_found(e.to_string())
                .with_data(serde_json::json!({ "sessionId": id })),
            StoreError::BadCursor(cursor) => acp_rpc::Error::invalid_params(e.to_string())
                .with_data(serde_json::json!({ "cursor": cursor })),
            StoreError::Leased { id, pid } => acp_rpc::Error::internal_error(e.to_string())
                .with_data(serde_json::json!({ "sessionId": id, "pid": pid })),
            _ => acp_rpc::Error::internal_error(e.for_peer()),
        }
    }
}
