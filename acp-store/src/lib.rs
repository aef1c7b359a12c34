//! Session stores for Agent Client Protocol agents: where the sessions an agent serves are
//! kept, so that they survive the agent process and can be listed, loaded and resumed.
//!
//! acp-agent records into a store by itself (serve an agent with one: `serve_with_store`, or
//! `NegotiateOptions::with_store`) and answers `session/load`, `session/resume`,
//! `session/list`, `session/close` and `session/delete` from it; acp-agent re-exports this
//! crate as `acp_agent::store`. This crate holds what a store is and the stores themselves,
//! without the agent runtime, so a store of your own (`acp-store-postgres` is one) depends
//! on this crate only.
//!
//! - [`SessionStore`]: the trait (create, append, history by pages, metadata, list by owner
//!   and `cwd`, close, delete; when a turn is written, [`Durability`]; [`SessionStore::begin_turn`]
//!   for stores that several processes write).
//! - [`SqliteStore`]: **the embedded default**, one directory that every process on a machine
//!   may open at once.
//! - [`JsonlStore`]: append-only JSON Lines files, one process at a time.
//! - [`MemoryStore`]: in memory, for tests.
//! - [`MeteredStore`]: wraps any store and reports each operation to a [`StoreMeter`]
//!   (acp-remote's `Metrics` is one).
//! - `conformance` (feature `test-support`): the suite every store passes, and the
//!   `session_store_conformance!` macro that runs it against yours.
//!
//! # Choosing a store
//!
//! | | processes writing at once | where | a streamed update costs |
//! | --- | --- | --- | --- |
//! | [`SqliteStore`] | any number on one machine (one per session at a time) | a local directory | part of one `write` per transport write |
//! | [`JsonlStore`] | one (a second is refused) | a directory | part of one `write` per transport write |
//! | `acp_store_postgres::PostgresStore` | any number on any hosts | a PostgreSQL database | part of one round trip per transport write |
//! | [`MemoryStore`] | this one; lost at exit | memory | nothing |
//!
//! Use [`SqliteStore`] unless sessions must be shared across machines (PostgreSQL) or the
//! data must be plain files a person reads with any tool (JSON Lines; the histories of
//! [`SqliteStore`] are the same JSON Lines files, only the index is in SQLite).
//!
//! # Several processes on one store ([`SqliteStore`])
//!
//! Editors start one agent process per window and headless clients one per queue, and a
//! client may start another process of the same agent just to list sessions: a store on a
//! machine is shared by processes. What [`SqliteStore`] guarantees them:
//!
//! - **Every process lists every session.** Sessions, their metadata and their listing order
//!   are rows of one SQLite database in WAL mode (readers never wait for a writer, writers
//!   queue for a few microseconds); a session created by one process is listed by all.
//! - **A session is written by one process at a time, by lease.** A prompt takes the
//!   session's lease ([`SessionStore::begin_turn`]) and the turn's [`StoredEvent::TurnEnd`]
//!   gives it back; a write outside a turn takes it for that write. While one process's turn
//!   runs, another's prompt on that session is refused with [`StoreError::Leased`] (the
//!   holder's pid in the message; the client sees it as the prompt's error). Different
//!   sessions never conflict, and the same session is free again when its turn ends. A
//!   lease, not a queue: a prompt never waits for someone else's turn of unknown length.
//! - **A killed process loses nothing it streamed.** Every update is appended to the
//!   session's history file before the client can read it ([`Durability::Event`]: the
//!   updates the connection sends in one transport write are appended with one `write` just
//!   before it); a torn last line is ignored by readers and cut by the next writer.
//! - **A dead process's lease is taken over at once.** Each open store holds an exclusive
//!   `flock` on a file of its own (`holders/TOKEN.lock`); the kernel drops it when the
//!   process dies, however it dies, so a lease whose holder's file can be locked is stale
//!   and the next writer takes it. No pid is trusted (pids are reused) and no timeout is
//!   waited out.
//!
//! Why the histories are files beside the database, not rows in it: a row per streamed
//! update is a SQLite commit per update (tens of microseconds and pages of WAL for a
//! 30-byte chunk), which measured at 5% of a stream's speed without a store; a `write` to an
//! open file keeps it above 80% (`acp-bench store`, BENCHMARKS.md). The database holds what
//! the processes must agree on (which sessions exist, their metadata, who writes each); the
//! history needs only an order, which the lease gives. SQLite comes from rusqlite with the
//! C library compiled in (`bundled`), so a fresh machine needs no system library.
//!
//! # When a turn is written, and what survives a crash
//!
//! A store's [`Durability`] says when the connection writes a turn's events (by default
//! every update before the client can read it, the updates of each transport write in one
//! append, so a `kill -9` keeps what the client saw); acp-agent's recorder does the writing,
//! and BENCHMARKS.md has what each setting costs.

use std::sync::Arc;

use acp_types::v1::{
    ContentBlock, SessionConfigOption, SessionId, SessionModeId, SessionModeState, SessionUpdate,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

#[cfg(feature = "test-support")]
pub mod conformance;
mod error;
mod jsonl;
mod memory;
mod metered;
mod sqlite;

pub use acp_types::time::now_rfc3339;
pub use error::StoreError;
pub use jsonl::JsonlStore;
pub use memory::MemoryStore;
pub use metered::{MeteredStore, StoreMeter};
pub use sqlite::SqliteStore;

use acp_rpc::sync::lock;

/// A shared [`SessionStore`], as the serve options hold it.
#[derive(Clone)]
pub struct StoreSlot(pub Arc<dyn SessionStore>);

impl<S: SessionStore> From<S> for StoreSlot {
    fn from(store: S) -> Self {
        StoreSlot(Arc::new(store))
    }
}

impl std::fmt::Debug for StoreSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionStore")
    }
}

/// One recorded step of a session's history, in the order it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StoredEvent {
    /// A prompt the client sent (replayed as one `user_message_chunk` per content block).
    Prompt(Vec<ContentBlock>),
    /// A `session/update` the agent sent (text chunks of one message may be coalesced into
    /// one, and a tool call stored in its final state).
    Update(SessionUpdate),
    /// The end of a turn: its prompt returned. A prompt with no end before the next prompt
    /// (or the end of the history) is a turn that was interrupted, its agent process killed
    /// mid-turn; `session/load` marks it so (see [`INTERRUPTED_META`]). Replays as nothing.
    TurnEnd(TurnEnd),
}

/// How a turn ended ([`StoredEvent::TurnEnd`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnd {
    /// The prompt's stop reason (`end_turn`, `cancelled`, ...); `None` when the prompt
    /// failed with an error instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// The `_meta` key of the `agent_message_chunk` that `session/load` replays after the
/// events of an interrupted turn (value `true`): the client can tell the turn never
/// finished (the chunk's text says so for a client that does not look).
pub const INTERRUPTED_META: &str = "acp-rs/turnInterrupted";

impl StoredEvent {
    /// The `session/update`s that replay this event.
    pub fn into_updates(self) -> Vec<SessionUpdate> {
        match self {
            StoredEvent::Prompt(blocks) => blocks
                .into_iter()
                .map(|b| SessionUpdate::UserMessageChunk(acp_types::v1::ContentChunk::new(b)))
                .collect(),
            StoredEvent::Update(update) => vec![update],
            StoredEvent::TurnEnd(_) => Vec::new(),
        }
    }
}

/// What a store keeps about a session besides its history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// The session id.
    pub session_id: SessionId,
    /// The working directory the session was created in (`session/list` filters on it).
    pub cwd: String,
    /// Further directories of the session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    /// The title (from `session_info_update`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When the session was created (RFC 3339, UTC).
    pub created_at: String,
    /// When the session last changed (RFC 3339, UTC).
    pub updated_at: String,
    /// The modes and the current one (answered again on load and resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<SessionModeState>,
    /// The config options with their current values (answered again on load and resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Vec<SessionConfigOption>>,
    /// Whether the history ends each turn with a [`StoredEvent::TurnEnd`]: set for the
    /// sessions a connection creates (it writes the markers); `false` from
    /// [`SessionMeta::new`] and for sessions recorded before the markers existed, whose
    /// turns are then never taken for interrupted.
    #[serde(default)]
    pub turn_markers: bool,
    /// The identity that created the session (the `NAME` of a served connection's
    /// credential, `AgentContext::identity` in acp-agent); `None` for the unnamed identity (a
    /// local agent, the one unnamed token, sessions recorded before owners existed). A
    /// connection sees and reaches only its own identity's sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl SessionMeta {
    /// A new session's metadata, created and updated now.
    pub fn new(session_id: SessionId, cwd: impl Into<String>) -> Self {
        let now = now_rfc3339();
        SessionMeta {
            session_id,
            cwd: cwd.into(),
            additional_directories: Vec::new(),
            title: None,
            created_at: now.clone(),
            updated_at: now,
            modes: None,
            config_options: None,
            turn_markers: false,
            owner: None,
        }
    }

    /// The same metadata, owned by `owner` (`None`: the unnamed identity).
    pub fn owned_by(mut self, owner: Option<String>) -> Self {
        self.owner = owner;
        self
    }

    /// The part `session/list` shows.
    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
            additional_directories: self.additional_directories.clone(),
            title: self.title.clone(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            owner: self.owner.clone(),
        }
    }

    /// Applies a change (every store applies changes this one way).
    pub fn apply(&mut self, change: &MetaChange) {
        if let Some(title) = &change.title {
            self.title.clone_from(title);
        }
        if let Some(mode) = &change.current_mode
            && let Some(modes) = &mut self.modes
        {
            modes.current_mode_id = mode.clone();
        }
        if let Some(options) = &change.config_options {
            self.config_options = Some(options.clone());
        }
        self.updated_at.clone_from(&change.updated_at);
    }
}

/// One row of a listing: the fields of `session/list`'s `SessionInfo`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session id.
    pub session_id: SessionId,
    /// The working directory.
    pub cwd: String,
    /// Further directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    /// The title, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When the session was created (RFC 3339).
    pub created_at: String,
    /// When the session last changed (RFC 3339).
    pub updated_at: String,
    /// The owning identity ([`SessionMeta::owner`]); never shown to a client, it is what
    /// a listing filters on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl SessionSummary {
    /// Whether this row changes with `change` (the index holds only these fields).
    pub fn apply(&mut self, change: &MetaChange) {
        if let Some(title) = &change.title {
            self.title.clone_from(title);
        }
        self.updated_at.clone_from(&change.updated_at);
    }
}

/// A change of a session's metadata. `None` fields stay as they are; `updated_at` is always
/// set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetaChange {
    /// A new title (`Some(None)` clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Option<String>>,
    /// A new current mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_mode: Option<SessionModeId>,
    /// New config options (the whole list, as `config_option_update` sends it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Vec<SessionConfigOption>>,
    /// When the change happened (RFC 3339).
    pub updated_at: String,
}

impl MetaChange {
    /// A change that only touches `updatedAt` (now).
    pub fn touch() -> Self {
        MetaChange {
            updated_at: now_rfc3339(),
            ..MetaChange::default()
        }
    }

    /// Whether it changes more than what the index of a listing holds.
    pub fn changes_details(&self) -> bool {
        self.current_mode.is_some() || self.config_options.is_some()
    }
}

/// When the connection's recorder hands a turn's events to its store (see
/// [`SessionStore::durability`]). What each costs is measured in BENCHMARKS.md
/// (`store_durability` in acp-agent's tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Every update of a turn is in the store before the client can read it, so an agent
    /// process killed mid-turn keeps every event the client saw (the turn then has no
    /// end marker and replays as interrupted), each update stored as it was sent. The
    /// connection appends the updates it is about to send in one transport write with one
    /// append, just before that write (acp-agent's recorder is the connection's write
    /// barrier): a burst of streamed updates costs one append, one `write` for
    /// [`SqliteStore`] and [`JsonlStore`] (it reaches the operating system but not the
    /// disk: a power loss may take the tail) and one round trip for a database. While the
    /// append runs the client is sent nothing. The default.
    #[default]
    Event,
    /// [`Durability::Event`], and at the end of each turn the store makes the session's
    /// history durable against a power loss ([`SessionStore::sync`]: `fsync` for
    /// [`JsonlStore`]; a database commit is durable already).
    EventSyncTurn,
    /// A turn's events are collected (text chunks of one message coalesced, a tool call in
    /// its final state) and appended when it ends (or in parts of about a thousand events
    /// or a megabyte): the fewest writes, but a process killed mid-turn loses the turn so
    /// far.
    Turn,
    /// Collected as with [`Durability::Turn`], and also written once the oldest unwritten
    /// event is this old (when the next update arrives, or from a timer when the turn
    /// pauses): a networked store pays one round trip per interval, not per streamed event,
    /// and a killed process loses at most the last interval's worth of what the client saw.
    Interval(std::time::Duration),
}

impl std::str::FromStr for Durability {
    type Err = String;

    /// `event`, `event-sync-turn`, `turn`, or an interval in milliseconds (`50ms`), as
    /// command lines take it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "event" => Ok(Durability::Event),
            "event-sync-turn" => Ok(Durability::EventSyncTurn),
            "turn" => Ok(Durability::Turn),
            other => other
                .strip_suffix("ms")
                .and_then(|n| n.parse::<u64>().ok())
                .map(|n| Durability::Interval(std::time::Duration::from_millis(n)))
                .ok_or_else(|| {
                    format!(
                        "unknown durability {other:?}: expected event, event-sync-turn, turn or <N>ms"
                    )
                }),
        }
    }
}

/// Where a history read starts; [`HistoryCursor::START`] for the beginning. Opaque to
/// callers: a byte offset for [`JsonlStore`], an event number for [`MemoryStore`], a row
/// number for a database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryCursor(pub u64);

impl HistoryCursor {
    /// The beginning of a history.
    pub const START: HistoryCursor = HistoryCursor(0);
}

/// A page of history.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryPage {
    /// The events, in order.
    pub events: Vec<StoredEvent>,
    /// Where the next page starts; `None` at the end.
    pub next: Option<HistoryCursor>,
}

/// A `session/list` query.
#[derive(Clone, Debug, PartialEq)]
pub struct ListQuery {
    /// Only the sessions of this owner ([`SessionMeta::owner`]; `None`: the unnamed
    /// identity's, those with no owner). A listing never mixes owners.
    pub owner: Option<String>,
    /// Only sessions created in this directory.
    pub cwd: Option<String>,
    /// Where to continue (a `nextCursor` this store returned).
    pub cursor: Option<String>,
    /// At most this many rows.
    pub limit: usize,
}

/// A page of a listing, newest session first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListPage {
    /// The rows.
    pub sessions: Vec<SessionSummary>,
    /// The cursor of the next page; `None` on the last one.
    pub next_cursor: Option<String>,
}

/// Where sessions are kept. Async so that a networked store (a database shared by several
/// agent hosts) fits as well as a local one; nothing here assumes a file system.
///
/// Ordering contract: the events of one `append` are stored in order and after those of
/// every earlier completed `append` of that session; `history` returns them in that order.
///
/// Ownership contract: a store keeps the [`SessionMeta::owner`] a session was created
/// with, answers it in `meta`, and lists only the sessions of [`ListQuery::owner`]. The
/// connection serving the store checks the owner before it loads, resumes, prompts, closes
/// or deletes a session, and answers a session of another identity as it answers one that
/// does not exist (`-32002`).
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Creates a session (`AlreadyExists` if the id is taken).
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError>;

    /// Appends events to a session's history (`NotFound` if there is no such session).
    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError>;

    /// Changes a session's metadata.
    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError>;

    /// A session's metadata (`None` if there is no such session).
    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError>;

    /// Up to `max` events of a session's history from `from` (page through it to replay a
    /// long history with bounded memory).
    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError>;

    /// A page of the sessions of one owner ([`ListQuery::owner`]), newest first,
    /// optionally only those of one `cwd`.
    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError>;

    /// The session is no longer open on this host: let go of what is held for it (open
    /// files, caches). Its data stays.
    async fn close(&self, id: &SessionId) -> Result<(), StoreError>;

    /// Removes a session and its history (`NotFound` if there is no such session).
    async fn delete(&self, id: &SessionId) -> Result<(), StoreError>;

    /// When a connection recording into this store writes a turn's events (see
    /// [`Durability`]). Stores choose it at open; the default is [`Durability::Event`].
    fn durability(&self) -> Durability {
        Durability::Event
    }

    /// Makes what was appended to the session so far durable against a power loss (called
    /// at the end of each turn with [`Durability::EventSyncTurn`]). The default does
    /// nothing: right for a store whose appends are durable when they return.
    async fn sync(&self, id: &SessionId) -> Result<(), StoreError> {
        let _ = id;
        Ok(())
    }

    /// A prompt is about to run on session `id` here: a store that several processes share
    /// claims the session for this process until the turn's [`StoredEvent::TurnEnd`] is
    /// appended ([`SqliteStore`]'s lease), and answers [`StoreError::Leased`] when another
    /// live process is writing it (the connection refuses the prompt with that error). The
    /// default does nothing: right for a store of one process, or one whose appends never
    /// conflict.
    async fn begin_turn(&self, id: &SessionId) -> Result<(), StoreError> {
        let _ = id;
        Ok(())
    }
}

#[async_trait]
impl<S: SessionStore + ?Sized> SessionStore for Arc<S> {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        (**self).create(meta).await
    }
    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        (**self).append(id, events).await
    }
    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        (**self).update_meta(id, change).await
    }
    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        (**self).meta(id).await
    }
    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        (**self).history(id, from, max).await
    }
    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError> {
        (**self).list(query).await
    }
    async fn close(&self, id: &SessionId) -> Result<(), StoreError> {
        (**self).close(id).await
    }
    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        (**self).delete(id).await
    }
    fn durability(&self) -> Durability {
        (**self).durability()
    }
    async fn sync(&self, id: &SessionId) -> Result<(), StoreError> {
        (**self).sync(id).await
    }
    async fn begin_turn(&self, id: &SessionId) -> Result<(), StoreError> {
        (**self).begin_turn(id).await
    }
}

/// The list cursor both built-in stores hand out: the creation number of the last row
/// returned (rows go newest first, so the next page has smaller numbers).
pub(crate) fn encode_cursor(seq: u64) -> String {
    format!("c{seq}")
}

pub(crate) fn decode_cursor(cursor: &str) -> Result<u64, StoreError> {
    cursor
        .strip_prefix('c')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| StoreError::BadCursor(cursor.to_owned()))
}
