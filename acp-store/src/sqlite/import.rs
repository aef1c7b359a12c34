//! A [`crate::JsonlStore`] directory becomes a [`super::SqliteStore`] the first time the
//! latter opens it: every session's listing row and metadata go into the database (with
//! their creation numbers, so listings keep their order), and the history files stay where
//! they are (both stores keep them as `sessions/NAME.jsonl`, one event per line). Then
//! `index.jsonl` is renamed `index.jsonl.imported`; nothing else is touched, so nothing is
//! lost and the import never runs twice.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::sql;
use crate::{JsonlStore, StoreError};

/// The `settings` key set once a JSON Lines index was imported.
const IMPORTED: &str = "jsonl-imported";

/// Imports the JSON Lines store in `dir`, if there is one not imported yet; returns how
/// many sessions were imported. Runs in one write transaction, so a second process opening
/// the store at the same time waits for it and then finds it done. A JSON Lines store that
/// an older process still holds open is an error (its later writes would be lost).
pub(super) fn import_jsonl(db: &mut Connection, dir: &Path) -> Result<usize, StoreError> {
    let index = dir.join("index.jsonl");
    if !index.exists() {
        return Ok(0);
    }
    let tx = db
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let done = tx
        .query_row("SELECT 1 FROM settings WHERE key = ?1", [IMPORTED], |_| {
            Ok(())
        })
        .optional()
        .map_err(sql)?
        .is_some();
    if done || !index.exists() {
        return Ok(0);
    }
    let jsonl = JsonlStore::open(dir).map_err(|e| match e {
        StoreError::Locked(shown) => StoreError::Other(format!(
            "{shown} holds a JSON Lines session store that another process (an older acp) is \
             still using; stop it, then open the store again to import it"
        )),
        other => other,
    })?;
    let sessions = jsonl.export()?;
    for (seq, meta) in &sessions {
        let body = super::encode_meta(meta)?;
        tx.execute(
            "INSERT OR IGNORE INTO sessions (seq, id, owner, cwd, meta) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![*seq as i64, &meta.session_id.0, &meta.owner, &meta.cwd, body],
        )
        .map_err(sql)?;
    }
    tx.execute(
        "INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)",
        params![IMPORTED, sessions.len().to_string()],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)?;
    drop(jsonl);
    let renamed = dir.join("index.jsonl.imported");
    std::fs::rename(&index, &renamed)
        .map_err(|e| StoreError::io(format!("cannot rename {}", index.display()), e))?;
    tracing::info!(
        dir = %dir.display(),
        sessions = sessions.len(),
        "imported a JSON Lines session store (its index is now index.jsonl.imported)"
    );
    Ok(sessions.len())
}
