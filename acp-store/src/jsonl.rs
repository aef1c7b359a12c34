//! [`JsonlStore`]: the embedded on-disk default, append-only JSON Lines in one directory.
//!
//! ```text
//! DIR/LOCK                      held (flock) by the one process that writes the store
//! DIR/index.jsonl               one line per create / metadata change / delete; replayed at
//!                               open into the in-memory index (compacted when mostly stale)
//! DIR/sessions/<name>.jsonl     the history: one StoredEvent per line, appended
//! DIR/sessions/<name>.meta.json the full metadata (modes, config options), replaced atomically
//! ```
//!
//! Crash safety: every append is one `write` of whole lines to a file opened for appending,
//! so a process killed at any moment leaves every completed record intact and at worst one
//! torn last line, which readers ignore with a warning and the next append cuts off first.
//! A line that does not parse in the middle of a file is reported with its file and byte
//! offset and skipped. The data reaches the operating system at each append (it survives the
//! process being killed). It is `fsync`ed only with [`Durability::EventSyncTurn`], once per
//! turn (the history file and the index): by default a power loss may lose the last records.
//! That is chosen, not forgotten: an `fsync` costs milliseconds on common disks (more than a
//! whole streamed turn takes to record; BENCHMARKS.md has the figures), the sessions are
//! conversation logs rather than the user's files, and what a power loss can take is the
//! same torn or missing tail the reader already survives.
//! A second process opening the same directory is refused with [`StoreError::Locked`].

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use acp_types::v1::SessionId;
use async_trait::async_trait;

use crate::lock;
use crate::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta,
    SessionStore, StoreError, StoredEvent, decode_cursor, encode_cursor,
};

pub(crate) mod files;
mod index;
use files::{cut_torn_tail, file_stem, read_lines, try_lock};
use index::{Index, IndexRecord, encode_events, read_index, to_line};

/// At most this many session files are kept open for appending (the least recently opened
/// is closed first); an idle session holds no file.
const OPEN_FILES: usize = 64;

/// Appends up to this many bytes to an open file are written in place, not on the blocking
/// pool (see `Inner::try_append_in_place`).
const IN_PLACE_BYTES: usize = 16 * 1024;

/// The embedded on-disk [`SessionStore`]: needs only a directory (see the module docs for
/// the layout and the crash-safety rules).
#[derive(Clone)]
pub struct JsonlStore {
    inner: Arc<Inner>,
    durability: Durability,
}

impl std::fmt::Debug for JsonlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlStore")
            .field("dir", &self.inner.dir)
            .field("durability", &self.durability)
            .finish()
    }
}

struct Inner {
    dir: PathBuf,
    /// Held for the store's lifetime: the exclusive lock on `DIR/LOCK`.
    _lock: File,
    index: Mutex<Index>,
    /// Open history files, by session, in opening order.
    open: Mutex<Vec<(SessionId, Arc<Mutex<File>>)>>,
}

/// How long [`JsonlStore::open`] waits out a lock that is held for a moment only.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

/// Takes the store's lock, trying again for up to [`LOCK_WAIT`]. A process that starts a
/// program while it has a store open (any thread; tests do it all the time) lends a copy of
/// the lock's descriptor to the child between `fork` and `exec`, so a store closed just
/// before can look held for a few milliseconds. A lock still held after the wait belongs to
/// a live process, and the caller gets [`StoreError::Locked`].
fn lock_waiting_out_forks(file: &std::fs::File) -> Result<(), Option<std::io::Error>> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match try_lock(file) {
            Err(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

impl JsonlStore {
    /// Opens (creating if needed) the store in `dir`. Fails, with the path in the message,
    /// if the directory cannot be created or written, or if another process holds it (after
    /// waiting up to 250 ms, the time a lock lent to a starting child process lasts).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        let shown = dir.display().to_string();
        fs::create_dir_all(dir.join("sessions"))
            .map_err(|e| StoreError::io(format!("cannot create directory {shown}"), e))?;
        let lock_path = dir.join("LOCK");
        let lock_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StoreError::io(format!("cannot write in {shown}"), e))?;
        lock_waiting_out_forks(&lock_file).map_err(|e| match e {
            Some(e) => StoreError::io(format!("cannot lock {}", lock_path.display()), e),
            None => StoreError::Locked(shown.clone()),
        })?;
        let index = read_index(&dir)?;
        let store = JsonlStore {
            inner: Arc::new(Inner {
                dir,
                _lock: lock_file,
                index: Mutex::new(index),
                open: Mutex::default(),
            }),
            durability: Durability::default(),
        };
        store.inner.compact_if_stale()?;
        Ok(store)
    }

    /// The same store, recorded into with `durability` (see [`Durability`]; the default is
    /// [`Durability::Event`]). [`Durability::EventSyncTurn`] `fsync`s the session's history
    /// and the index at the end of each turn.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Every session with its creation number, oldest first, in full (what
    /// [`crate::SqliteStore`] imports from a JSON Lines store).
    pub(crate) fn export(&self) -> Result<Vec<(u64, SessionMeta)>, StoreError> {
        let ids: Vec<(u64, SessionId)> = lock(&self.inner.index)
            .order
            .iter()
            .map(|(seq, id)| (*seq, id.clone()))
            .collect();
        let mut out = Vec::with_capacity(ids.len());
        for (seq, id) in ids {
            if let Some(meta) = self.inner.read_meta(&id)? {
                out.push((seq, meta));
            }
        }
        Ok(out)
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

impl Inner {
    fn history_path(&self, id: &SessionId) -> PathBuf {
        self.dir
            .join("sessions")
            .join(format!("{}.jsonl", file_stem(id)))
    }

    fn meta_path(&self, id: &SessionId) -> PathBuf {
        self.dir
            .join("sessions")
            .join(format!("{}.meta.json", file_stem(id)))
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("index.jsonl")
    }

    /// Appends one record to the index file (the caller holds the index lock).
    fn log(&self, index: &mut Index, record: &IndexRecord) -> Result<(), StoreError> {
        let mut line = Vec::with_capacity(256);
        to_line(record, &mut line)?;
        let file = index
            .file
            .as_mut()
            .ok_or_else(|| StoreError::Other("index file not open".into()))?;
        file.write_all(&line).map_err(|e| {
            StoreError::io(format!("cannot write {}", self.index_path().display()), e)
        })?;
        index.lines += 1;
        Ok(())
    }

    /// Rewrites `index.jsonl` with only the live rows when most of its lines are stale
    /// (written to a temporary file, then renamed over the old one).
    fn compact_if_stale(&self) -> Result<(), StoreError> {
        let mut index = lock(&self.index);
        if index.lines <= 2 * index.rows.len() + 1024 {
            return Ok(());
        }
        let path = self.index_path();
        let tmp = self.dir.join("index.jsonl.tmp");
        let fail = |e| StoreError::io(format!("cannot compact {}", path.display()), e);
        let mut out = Vec::new();
        for (seq, id) in &index.order {
            let row = index.rows[id].1.clone();
            to_line(&IndexRecord::Put { seq: *seq, row }, &mut out)?;
        }
        fs::write(&tmp, &out).map_err(fail)?;
        fs::rename(&tmp, &path).map_err(fail)?;
        index.file = Some(OpenOptions::new().append(true).open(&path).map_err(fail)?);
        index.lines = index.rows.len();
        Ok(())
    }

    fn write_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let path = self.meta_path(&meta.session_id);
        let tmp = path.with_extension("json.tmp");
        let fail = |e| StoreError::io(format!("cannot write {}", path.display()), e);
        let body = serde_json::to_vec(meta)
            .map_err(|e| StoreError::Other(format!("cannot encode metadata: {e}")))?;
        fs::write(&tmp, body).map_err(fail)?;
        fs::rename(&tmp, &path).map_err(fail)
    }

    fn read_meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let Some(row) = lock(&self.index).rows.get(id).map(|(_, r)| r.clone()) else {
            return Ok(None);
        };
        let path = self.meta_path(id);
        let mut meta = match fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<SessionMeta>(&bytes) {
                Ok(meta) => meta,
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "corrupt session metadata; using the index row");
                    SessionMeta::new(id.clone(), row.cwd.clone())
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                SessionMeta::new(id.clone(), row.cwd.clone())
            }
            Err(e) => return Err(StoreError::io(format!("cannot read {}", path.display()), e)),
        };
        // The index row is the newest word on what a listing shows.
        meta.title = row.title;
        meta.created_at = row.created_at;
        meta.updated_at = row.updated_at;
        meta.additional_directories = row.additional_directories;
        meta.owner = row.owner;
        Ok(Some(meta))
    }

    /// The open history file of a session (opened, and its torn tail cut, on first use).
    fn history_file(&self, id: &SessionId) -> Result<Arc<Mutex<File>>, StoreError> {
        let mut open = lock(&self.open);
        if let Some((_, f)) = open.iter().find(|(s, _)| s == id) {
            return Ok(f.clone());
        }
        let path = self.history_path(id);
        let fail = |e| StoreError::io(format!("cannot write {}", path.display()), e);
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(fail)?;
        cut_torn_tail(&mut file, &path).map_err(fail)?;
        if open.len() >= OPEN_FILES {
            open.remove(0);
        }
        let file = Arc::new(Mutex::new(file));
        open.push((id.clone(), file.clone()));
        Ok(file)
    }

    fn forget_file(&self, id: &SessionId) {
        lock(&self.open).retain(|(s, _)| s != id);
    }

    fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        let mut index = lock(&self.index);
        if index.rows.contains_key(&meta.session_id) {
            return Err(StoreError::AlreadyExists(meta.session_id));
        }
        self.write_meta(&meta)?;
        let path = self.history_path(&meta.session_id);
        File::create(&path)
            .map_err(|e| StoreError::io(format!("cannot write {}", path.display()), e))?;
        index.next += 1;
        let seq = index.next;
        let row = meta.summary();
        self.log(
            &mut index,
            &IndexRecord::Put {
                seq,
                row: row.clone(),
            },
        )?;
        index.order.insert(seq, meta.session_id.clone());
        index.rows.insert(meta.session_id, (seq, row));
        Ok(())
    }

    fn append(&self, id: &SessionId, events: &[StoredEvent]) -> Result<(), StoreError> {
        if !lock(&self.index).rows.contains_key(id) {
            return Err(StoreError::NotFound(id.clone()));
        }
        let buf = encode_events(events)?;
        let file = self.history_file(id)?;
        self.write_history(id, &file, &buf)
    }

    /// An append small enough to write where it is asked (on the caller's thread, not the
    /// blocking pool) to a session whose file is open already: one `write` of a few
    /// hundred bytes into the page cache costs microseconds, where the hop to the blocking
    /// pool and back costs tens (per streamed event with [`Durability::Event`]). `None`:
    /// take the blocking path (a file to open, a large batch).
    fn try_append_in_place(
        &self,
        id: &SessionId,
        events: &[StoredEvent],
    ) -> Option<Result<(), StoreError>> {
        let file = lock(&self.open)
            .iter()
            .find(|(s, _)| s == id)
            .map(|(_, f)| f.clone())?;
        if !lock(&self.index).rows.contains_key(id) {
            return Some(Err(StoreError::NotFound(id.clone())));
        }
        let buf = match encode_events(events) {
            Ok(buf) if buf.len() <= IN_PLACE_BYTES => buf,
            Ok(_) => return None,
            Err(e) => return Some(Err(e)),
        };
        Some(self.write_history(id, &file, &buf))
    }

    fn write_history(
        &self,
        id: &SessionId,
        file: &Mutex<File>,
        buf: &[u8],
    ) -> Result<(), StoreError> {
        let mut file = lock(file);
        file.write_all(buf).map_err(|e| {
            StoreError::io(
                format!("cannot write {}", self.history_path(id).display()),
                e,
            )
        })
    }

    fn update_meta(&self, id: &SessionId, change: &MetaChange) -> Result<(), StoreError> {
        if change.changes_details() {
            let mut meta = self
                .read_meta(id)?
                .ok_or_else(|| StoreError::NotFound(id.clone()))?;
            meta.apply(change);
            self.write_meta(&meta)?;
        }
        let mut index = lock(&self.index);
        let (seq, mut row) = index
            .rows
            .get(id)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        row.apply(change);
        self.log(
            &mut index,
            &IndexRecord::Put {
                seq,
                row: row.clone(),
            },
        )?;
        index.rows.insert(id.clone(), (seq, row));
        Ok(())
    }

    fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        if !lock(&self.index).rows.contains_key(id) {
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
        let index = lock(&self.index);
        let mut page = ListPage::default();
        for (&seq, id) in index.order.range(..before).rev() {
            let row = &index.rows[id].1;
            if row.owner != query.owner || query.cwd.as_ref().is_some_and(|cwd| *cwd != row.cwd) {
                continue;
            }
            if page.sessions.len() == query.limit {
                page.next_cursor = Some(encode_cursor(seq + 1));
                break;
            }
            page.sessions.push(row.clone());
        }
        Ok(page)
    }

    /// Flushes the session's history file and the index to the disk.
    fn sync(&self, id: &SessionId) -> Result<(), StoreError> {
        if !lock(&self.index).rows.contains_key(id) {
            return Err(StoreError::NotFound(id.clone()));
        }
        let file = self.history_file(id)?;
        let path = self.history_path(id);
        lock(&file)
            .sync_data()
            .map_err(|e| StoreError::io(format!("cannot sync {}", path.display()), e))?;
        let index = lock(&self.index);
        if let Some(file) = &index.file {
            file.sync_data().map_err(|e| {
                StoreError::io(format!("cannot sync {}", self.index_path().display()), e)
            })?;
        }
        Ok(())
    }

    fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let mut index = lock(&self.index);
        let (seq, _) = index
            .rows
            .get(id)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        self.log(&mut index, &IndexRecord::Delete(id.clone()))?;
        index.rows.remove(id);
        index.order.remove(&seq);
        drop(index);
        self.forget_file(id);
        for path in [self.history_path(id), self.meta_path(id)] {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(StoreError::io(
                        format!("cannot remove {}", path.display()),
                        e,
                    ));
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SessionStore for JsonlStore {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        self.blocking(move |s| s.create(meta)).await
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
        self.blocking(move |s| s.read_meta(&id)).await
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
        // In memory: no file is touched.
        self.inner.list(&query)
    }

    async fn close(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.forget_file(id);
        Ok(())
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
}
