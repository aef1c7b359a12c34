//! [`SqliteStore`]: the embedded default, one directory that every process on the machine
//! can open at once.
//!
//! ```text
//! DIR/store.sqlite3            the sessions (listing rows and metadata) and the leases, in
//!                              SQLite's WAL mode (readers never wait for the writer)
//! DIR/sessions/NAME.jsonl      a session's history: one StoredEvent per line, appended by
//!                              the one process that holds the session's lease
//! DIR/holders/TOKEN.lock       one per open store, flock'ed while it is open
//! ```
//!
//! What several processes may expect (the guarantees the multi-process tests check):
//!
//! * **Everyone lists everything.** A session is a row of the database, committed when
//!   `create` returns; every process's `list` and `meta` read the database, so a session
//!   created by one process is listed by all the others at once.
//! * **One writer per session, by lease.** Appending to a session's history needs its lease
//!   (see the `lease` module): a `session/prompt` takes it ([`SessionStore::begin_turn`])
//!   and the turn's end marker gives it back, and a write outside a turn takes it just for
//!   that write. A second process writing the same session while the lease is held gets
//!   [`StoreError::Leased`], which names the holder's pid; the connection answers the
//!   prompt with it. Another session, or the same one after its turn, is no conflict.
//! * **Nothing streamed is lost when a process is killed.** Each append is one `write` of
//!   whole lines to the history file before it returns (with [`Durability::Event`] the
//!   connection appends the updates of each transport write just before that write), so a
//!   `kill -9` keeps every event the client saw; a torn last line is ignored by readers and
//!   cut by the next writer.
//! * **A dead process's lease is taken over.** A lease is stale when its holder's lock file
//!   can be locked (the system releases a `flock` when its process dies, however it dies);
//!   the next writer takes it over, no timeout to wait out.
//!
//! Why histories are files and not rows: a streamed update written as a SQLite transaction
//! costs a WAL commit (tens of microseconds, and pages of WAL per 30-byte chunk), where an
//! append to an open file costs one `write` (about a microsecond); with an append per
//! streamed update (as the connection once made them) that was the difference between 5% and
//! over 80% of a stream's speed without a store (BENCHMARKS.md). The database holds what several processes must agree on: which sessions
//! exist, their metadata, and who writes each.
//!
//! Power loss: SQLite runs with `synchronous = NORMAL` (a commit survives the process, a
//! power loss may take the last ones), history appends reach the operating system; with
//! [`Durability::EventSyncTurn`] each turn's end `fsync`s the history.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use acp_types::v1::SessionId;
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::jsonl::files::{cut_torn_tail, file_stem, read_lines};
use crate::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta,
    SessionStore, StoreError, StoredEvent, decode_cursor, encode_cursor, lock,
};

mod import;
mod lease;
mod writers;

/// Appends up to this many bytes to a leased session are written where they are asked, not
/// on the blocking pool (one `write` into the page cache costs less than the hop).
const IN_PLACE_BYTES: usize = 16 * 1024;

/// How long a database call waits for another process's write transaction.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The embedded [`SessionStore`] shared by every process on a machine (see the module docs
/// for the layout and the multi-process guarantees).
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
    durability: Durability,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("dir", &self.inner.dir)
            .field("durability", &self.durability)
            .finish()
    }
}

struct Inner {
    dir: PathBuf,
    db: Mutex<Connection>,
    holder: lease::Holder,
    /// The sessions this store holds the lease of, with their open history file.
    leased: Mutex<HashMap<SessionId, Arc<Writer>>>,
    /// Held while a session is leased afresh, so that this store never has two writers of one
    /// session: the database grants its own holder the lease again, and a second writer's
    /// open cut the line the first was writing as a torn tail (an append was lost).
    leasing: Mutex<()>,
}

/// A session's history file while this store holds its lease. Every write happens with
/// `file` locked and `released` false, and the lease is given back with `file` locked: no
/// task of this process writes through a writer whose lease is gone (another holder, or this
/// store leasing the session again, may then open the file and cut what looks like a torn
/// last line, which a write still in flight would be).
struct Writer {
    file: Mutex<File>,
    /// Between a prompt and its turn's end: the lease stays after each append.
    in_turn: std::sync::atomic::AtomicBool,
    /// Set (under `file`) when the lease was given back: the writer is done.
    released: std::sync::atomic::AtomicBool,
}

pub(super) fn sql(e: rusqlite::Error) -> StoreError {
    StoreError::Other(format!("sqlite: {e}"))
}

pub(super) fn encode_meta(meta: &SessionMeta) -> Result<String, StoreError> {
    serde_json::to_string(meta)
        .map_err(|e| StoreError::Other(format!("cannot encode metadata: {e}")))
}

fn decode_meta(body: &str) -> Result<SessionMeta, StoreError> {
    serde_json::from_str(body)
        .map_err(|e| StoreError::Other(format!("corrupt session metadata: {e}")))
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS sessions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        owner TEXT,
        cwd TEXT NOT NULL,
        meta TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS sessions_by_owner ON sessions (owner, seq);
    CREATE TABLE IF NOT EXISTS leases (
        session TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        pid INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL);";

/// Runs `step` again while SQLite answers "database is locked" at once, for at most
/// [`BUSY_TIMEOUT`]. It does so without waiting, whatever the busy timeout, when several
/// processes open a fresh store together: the switch to WAL and the schema's first write
/// each need the file alone (seen as a failed open in `sqlite_processes`, 1 run in 37).
fn when_free<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let until = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match step() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store in `dir`, which other processes may have open
    /// too. A JSON Lines store found there ([`crate::JsonlStore`]'s `index.jsonl`) is
    /// imported first, once. Fails at once, with the path in the message, if the directory
    /// or the database cannot be created or written.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        let shown = dir.display().to_string();
        fs::create_dir_all(dir.join("sessions"))
            .map_err(|e| StoreError::io(format!("cannot create directory {shown}"), e))?;
        let path = dir.join("store.sqlite3");
        let fail = |e: rusqlite::Error| StoreError::Other(format!("{}: {e}", path.display()));
        let mut db = Connection::open(&path).map_err(fail)?;
        db.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // The journal mode needs a moment alone with the file the first time; it is kept.
        when_free(|| db.pragma_update(None, "journal_mode", "WAL")).map_err(fail)?;
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
        when_free(|| db.execute_batch(SCHEMA)).map_err(fail)?;
        import::import_jsonl(&mut db, &dir)?;
        lease::forget_dead(&db, &dir)?;
        let holder = lease::Holder::register(&dir)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                dir,
                db: Mutex::new(db),
                holder,
                leased: Mutex::default(),
                leasing: Mutex::default(),
            }),
            durability: Durability::default(),
        })
    }

    /// The same store, recorded into with `durability` (see [`Durability`]; the default is
    /// [`Durability::Event`]). [`Durability::EventSyncTurn`] `fsync`s the session's history
    /// at the end of each turn.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| StoreError::Other(format!("store task failed: {e}")))?
    }
}

/// Events as the lines of one append.
fn encode_events(events: &[StoredEvent]) -> Result<Vec<u8>, StoreError> {
    let mut buf = Vec::with_capacity(256 * events.len());
    for event in events {
        serde_json::to_writer(&mut buf, event)
            .map_err(|e| StoreError::Other(format!("cannot encode a record: {e}")))?;
        buf.push(b'\n');
    }
    Ok(buf)
}

/// Whether a turn is open after these events (a prompt opens one, its end closes it).
fn turn_open_after(events: &[StoredEvent], before: bool) -> bool {
    events.iter().fold(before, |open, e| match e {
        StoredEvent::Prompt(_) => true,
        StoredEvent::TurnEnd(_) => false,
        StoredEvent::Update(_) => open,
    })
}

impl Inner {
    fn history_path(&self, id: &SessionId) -> PathBuf {
        self.dir
            .join("sessions")
            .join(format!("{}.jsonl", file_stem(id)))
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Connection> {
        lock(&self.db)
    }

    /// Writes `buf` through `writer` (its file locked by the caller as `file`).
    fn write(&self, id: &SessionId, file: &mut File, buf: &[u8]) -> Result<(), StoreError> {
        file.write_all(buf).map_err(|e| {
            StoreError::io(
                format!("cannot write {}", self.history_path(id).display()),
                e,
            )
        })
    }

    /// Appends under the lease; a write that leaves no turn open gives the lease back.
    fn append(&self, id: &SessionId, events: &[StoredEvent]) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        let buf = encode_events(events)?;
        loop {
            let writer = self.lease(id)?;
            let mut file = lock(&writer.file);
            if writer.released.load(Ordering::Acquire) {
                // Another task of this store gave the lease back after we got the writer.
                continue;
            }
            self.write(id, &mut file, &buf)?;
            let open = turn_open_after(events, writer.in_turn.load(Ordering::Relaxed));
            writer.in_turn.store(open, Ordering::Relaxed);
            if !open {
                self.release_locked(id, &writer)?;
            }
            return Ok(());
        }
    }

    /// The append of a session leased here, in a turn, small enough to write in place;
    /// `None`: take the blocking path.
    fn try_append_in_place(
        &self,
        id: &SessionId,
        events: &[StoredEvent],
    ) -> Option<Result<(), StoreError>> {
        use std::sync::atomic::Ordering;
        let writer = self.writer(id)?;
        if !writer.in_turn.load(Ordering::Relaxed) || !turn_open_after(events, true) {
            return None;
        }
        let buf = match encode_events(events) {
            Ok(buf) if buf.len() <= IN_PLACE_BYTES => buf,
            Ok(_) => return None,
            Err(e) => return Some(Err(e)),
        };
        let mut file = lock(&writer.file);
        if writer.released.load(Ordering::Acquire) {
            return None;
        }
        Some(self.write(id, &mut file, &buf))
    }

    fn begin_turn(&self, id: &SessionId) -> Result<(), StoreError> {
        let writer = self.lease(id)?;
        writer
            .in_turn
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    fn create(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let mut db = self.db();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let inserted = tx
            .execute(
                "INSERT OR IGNORE INTO sessions (id, owner, cwd, meta) VALUES (?1, ?2, ?3, ?4)",
                params![
                    &meta.session_id.0,
                    &meta.owner,
                    &meta.cwd,
                    encode_meta(meta)?
                ],
            )
            .map_err(sql)?;
        if inserted == 0 {
            return Err(StoreError::AlreadyExists(meta.session_id.clone()));
        }
        let path = self.history_path(&meta.session_id);
        File::create(&path)
            .map_err(|e| StoreError::io(format!("cannot write {}", path.display()), e))?;
        tx.commit().map_err(sql)
    }

    fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let body: Option<String> = self
            .db()
            .query_row("SELECT meta FROM sessions WHERE id = ?1", [&id.0], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql)?;
        body.as_deref().map(decode_meta).transpose()
    }

    fn update_meta(&self, id: &SessionId, change: &MetaChange) -> Result<(), StoreError> {
        let mut db = self.db();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let body: String = tx
            .query_row("SELECT meta FROM sessions WHERE id = ?1", [&id.0], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql)?
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let mut meta = decode_meta(&body)?;
        meta.apply(change);
        tx.execute(
            "UPDATE sessions SET meta = ?2 WHERE id = ?1",
            params![&id.0, encode_meta(&meta)?],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        if self.writer(id).is_none() && self.meta(id)?.is_none() {
            return Err(StoreError::NotFound(id.clone()));
        }
        let path = self.history_path(id);
        let mut events = Vec::new();
        let max = max.max(1);
        let (end, stopped) = read_lines(&path, from.0, |line, offset| {
            match serde_json::from_slice::<StoredEvent>(line) {
                Ok(event) => events.push(event),
                Err(e) => tracing::warn!(
                    file = %path.display(),
                    offset,
                    error = %e,
                    "skipping a corrupt history record"
                ),
            }
            events.len() < max
        })?;
        Ok(HistoryPage {
            events,
            next: stopped.then_some(HistoryCursor(end)),
        })
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let before = match &query.cursor {
            Some(c) => decode_cursor(c)?,
            None => u64::MAX,
        };
        let before = i64::try_from(before).unwrap_or(i64::MAX);
        let db = self.db();
        let mut stmt = db
            .prepare_cached(
                "SELECT seq, meta FROM sessions
                 WHERE seq < ?1 AND owner IS ?2 AND (?3 IS NULL OR cwd = ?3)
                 ORDER BY seq DESC LIMIT ?4",
            )
            .map_err(sql)?;
        let limit = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![before, &query.owner, &query.cwd, limit], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(sql)?;
        let mut page = ListPage::default();
        for row in rows {
            let (seq, body) = row.map_err(sql)?;
            if page.sessions.len() == query.limit {
                page.next_cursor = Some(encode_cursor(seq as u64 + 1));
                break;
            }
            page.sessions.push(decode_meta(&body)?.summary());
        }
        Ok(page)
    }

    fn sync(&self, id: &SessionId) -> Result<(), StoreError> {
        let path = self.history_path(id);
        let fail = |e| StoreError::io(format!("cannot sync {}", path.display()), e);
        match self.writer(id) {
            Some(writer) => lock(&writer.file).sync_data().map_err(fail),
            None if self.meta(id)?.is_none() => Err(StoreError::NotFound(id.clone())),
            None => File::open(&path).and_then(|f| f.sync_data()).map_err(fail),
        }
    }

    fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        // Under the lease: never under a live writer's feet (nor one of this store's own,
        // which sees the writer done and leases again, to find the session gone).
        let writer = self.lease(id)?;
        let _file = lock(&writer.file);
        writer
            .released
            .store(true, std::sync::atomic::Ordering::Release);
        self.forget(id, &writer);
        {
            let mut db = self.db();
            let tx = db.transaction().map_err(sql)?;
            tx.execute("DELETE FROM sessions WHERE id = ?1", [&id.0])
                .map_err(sql)?;
            tx.execute("DELETE FROM leases WHERE session = ?1", [&id.0])
                .map_err(sql)?;
            tx.commit().map_err(sql)?;
        }
        let path = self.history_path(id);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(
                format!("cannot remove {}", path.display()),
                e,
            )),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A clean end gives every lease back at once (a killed process's are taken over).
        let db = lock(&self.db);
        let _ = db.execute("DELETE FROM leases WHERE holder = ?1", [&self.holder.token]);
    }
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        self.blocking(move |s| s.create(&meta)).await
    }

    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        if let Some(done) = self.inner.try_append_in_place(id, &events) {
            return done;
        }
        let id = id.clone();
        self.blocking(move |s| s.append(&id, &events)).await
    }

    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |s| s.update_meta(&id, &change)).await
    }

    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let id = id.clone();
        self.blocking(move |s| s.meta(&id)).await
    }

    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        let id = id.clone();
        self.blocking(move |s| s.history(&id, from, max)).await
    }

    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError> {
        self.blocking(move |s| s.list(&query)).await
    }

    async fn close(&self, id: &SessionId) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |s| s.unlease(&id)).await
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |s| s.delete(&id)).await
    }

    fn durability(&self) -> Durability {
        self.durability
    }

    async fn sync(&self, id: &SessionId) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |s| s.sync(&id)).await
    }

    async fn begin_turn(&self, id: &SessionId) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |s| s.begin_turn(&id)).await
    }
}

#[cfg(test)]
mod tests;
