//! Who writes a session: the holders of a [`super::SqliteStore`] directory and their leases.
//!
//! Every open store is a *holder*: at open it creates `DIR/holders/TOKEN.lock` and keeps an
//! exclusive `flock` on it for its lifetime. The operating system drops that lock when the
//! process ends, however it ends (`kill -9` included), so "can another process lock the
//! holder's file?" tells a live holder from a dead one without trusting a pid (which the
//! system reuses) or a clock.
//!
//! A *lease* is a row of the `leases` table: session, holder, pid. A holder writes a
//! session's history only under its lease. Taking one is a transaction: no row, or a row of
//! this holder, or a row of a dead holder (taken over: the dead process's torn last line is
//! cut when the history file is opened) gives the lease; a row of a live holder is
//! [`StoreError::Leased`].

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use acp_types::v1::SessionId;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::sql;
use crate::StoreError;
use crate::jsonl::files::try_lock;

/// This process's hold on a store directory: its token and its locked file.
pub(super) struct Holder {
    pub(super) token: String,
    path: PathBuf,
    _file: File,
}

impl Holder {
    /// Registers a new holder in `dir` (its lock file created and locked).
    pub(super) fn register(dir: &Path) -> Result<Holder, StoreError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let holders = dir.join("holders");
        fs::create_dir_all(&holders).map_err(|e| {
            StoreError::io(format!("cannot create directory {}", holders.display()), e)
        })?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let token = format!(
            "{}-{nanos:x}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = holders.join(format!("{token}.lock"));
        let fail = |e| StoreError::io(format!("cannot write {}", path.display()), e);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(fail)?;
        try_lock(&file).map_err(|e| {
            fail(e.unwrap_or_else(|| std::io::Error::other("a fresh lock file is locked")))
        })?;
        Ok(Holder {
            token,
            path,
            _file: file,
        })
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Whether the holder `token` of `dir` is alive (its lock file is locked by someone). A
/// dead holder's file is removed.
pub(super) fn alive(dir: &Path, token: &str) -> bool {
    // A token names a file only if it is one we could have written.
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return false;
    }
    let path = dir.join("holders").join(format!("{token}.lock"));
    let file = match OpenOptions::new().write(true).open(&path) {
        Ok(f) => f,
        Err(_) => return false,
    };
    match try_lock(&file) {
        Ok(()) => {
            let _ = fs::remove_file(&path);
            false
        }
        Err(None) => true,
        // Cannot tell: take it for alive (refusing is safe, taking over is not).
        Err(Some(_)) => true,
    }
}

/// Takes the lease of session `id` for `holder` (see the module doc): `NotFound` if the
/// store has no such session, [`StoreError::Leased`] if a live holder has it.
pub(super) fn acquire(
    db: &mut Connection,
    dir: &Path,
    holder: &str,
    id: &SessionId,
) -> Result<(), StoreError> {
    let tx = db
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let exists = tx
        .query_row("SELECT 1 FROM sessions WHERE id = ?1", [&id.0], |_| Ok(()))
        .optional()
        .map_err(sql)?
        .is_some();
    if !exists {
        return Err(StoreError::NotFound(id.clone()));
    }
    let current: Option<(String, u32)> = tx
        .query_row(
            "SELECT holder, pid FROM leases WHERE session = ?1",
            [&id.0],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql)?;
    if let Some((other, pid)) = current
        && other != holder
    {
        if alive(dir, &other) {
            return Err(StoreError::Leased {
                id: id.clone(),
                pid,
            });
        }
        tracing::info!(session = %id.0, pid, "taking over the lease of a process that ended");
    }
    tx.execute(
        "INSERT OR REPLACE INTO leases (session, holder, pid) VALUES (?1, ?2, ?3)",
        params![&id.0, holder, std::process::id()],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)
}

/// Gives the lease of session `id` back (if `holder` has it).
pub(super) fn release(db: &Connection, holder: &str, id: &SessionId) -> Result<(), StoreError> {
    db.execute(
        "DELETE FROM leases WHERE session = ?1 AND holder = ?2",
        params![&id.0, holder],
    )
    .map(|_| ())
    .map_err(sql)
}

/// Drops the leases of holders that are gone (at open: their sessions are free again).
pub(super) fn forget_dead(db: &Connection, dir: &Path) -> Result<(), StoreError> {
    let holders: Vec<String> = {
        let mut stmt = db
            .prepare("SELECT DISTINCT holder FROM leases")
            .map_err(sql)?;
        stmt.query_map([], |r| r.get(0))
            .map_err(sql)?
            .collect::<Result<_, _>>()
            .map_err(sql)?
    };
    for token in holders {
        if !alive(dir, &token) {
            db.execute("DELETE FROM leases WHERE holder = ?1", [&token])
                .map_err(sql)?;
        }
    }
    Ok(())
}
