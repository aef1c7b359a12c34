//! The SQLite candidate for the embedded session store (rusqlite, `bundled`), measured
//! against `acp_agent::store::JsonlStore` by `acp-bench store`. It implements the same
//! `SessionStore` trait with the settings an embedded SQLite store would ship with: WAL
//! journal, `synchronous = NORMAL` (like the JSONL store, what is written survives the
//! process being killed; a power loss may lose the last transactions).

use std::path::Path;
use std::sync::{Arc, Mutex};

use acp_agent::store::{
    HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta, SessionStore,
    SessionSummary, StoreError, StoredEvent,
};
use acp_agent::types::SessionId;
use rusqlite::{Connection, OptionalExtension, params};

/// A `SessionStore` in one SQLite database file.
#[derive(Clone)]
pub struct SqliteStore {
    db: Arc<Mutex<Connection>>,
}

fn sql(e: rusqlite::Error) -> StoreError {
    StoreError::Other(format!("sqlite: {e}"))
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Other(e.to_string()))
}

impl SqliteStore {
    /// Opens (creating) `dir/sessions.sqlite3`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Other(e.to_string()))?;
        let db = Connection::open(dir.join("sessions.sqlite3")).map_err(sql)?;
        db.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS sessions (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 id TEXT NOT NULL UNIQUE,
                 cwd TEXT NOT NULL,
                 row TEXT NOT NULL,
                 meta TEXT NOT NULL,
                 owner TEXT,
                 events INTEGER NOT NULL DEFAULT 0);
             CREATE INDEX IF NOT EXISTS sessions_by_cwd ON sessions (cwd, seq);
             CREATE TABLE IF NOT EXISTS events (
                 session INTEGER NOT NULL,
                 n INTEGER NOT NULL,
                 body TEXT NOT NULL,
                 PRIMARY KEY (session, n)) WITHOUT ROWID;",
        )
        .map_err(sql)?;
        Ok(SqliteStore {
            db: Arc::new(Mutex::new(db)),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&mut db.lock().unwrap()))
            .await
            .map_err(|e| StoreError::Other(e.to_string()))?
    }
}

fn seq_of(db: &Connection, id: &SessionId) -> Result<(i64, i64), StoreError> {
    db.query_row(
        "SELECT seq, events FROM sessions WHERE id = ?1",
        [&id.0],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
    .map_err(sql)?
    .ok_or_else(|| StoreError::NotFound(id.clone()))
}

#[acp_agent::async_trait]
impl SessionStore for SqliteStore {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        self.blocking(move |db| {
            let row = json(&meta.summary())?;
            let body = json(&meta)?;
            db.execute(
                "INSERT INTO sessions (id, cwd, row, meta, owner) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![meta.session_id.0, meta.cwd, row, body, meta.owner],
            )
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _)
                    if f.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    StoreError::AlreadyExists(meta.session_id.clone())
                }
                e => sql(e),
            })?;
            Ok(())
        })
        .await
    }

    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let tx = db.transaction().map_err(sql)?;
            let (seq, count) = seq_of(&tx, &id)?;
            {
                let mut insert = tx
                    .prepare_cached("INSERT INTO events (session, n, body) VALUES (?1, ?2, ?3)")
                    .map_err(sql)?;
                for (i, event) in events.iter().enumerate() {
                    insert
                        .execute(params![seq, count + i as i64, json(event)?])
                        .map_err(sql)?;
                }
            }
            tx.execute(
                "UPDATE sessions SET events = ?1 WHERE seq = ?2",
                params![count + events.len() as i64, seq],
            )
            .map_err(sql)?;
            tx.commit().map_err(sql)
        })
        .await
    }

    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let tx = db.transaction().map_err(sql)?;
            let (row, meta): (String, String) = tx
                .query_row(
                    "SELECT row, meta FROM sessions WHERE id = ?1",
                    [&id.0],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(sql)?
                .ok_or_else(|| StoreError::NotFound(id.clone()))?;
            let mut row: SessionSummary =
                serde_json::from_str(&row).map_err(|e| StoreError::Other(e.to_string()))?;
            row.apply(&change);
            let meta = if change.changes_details() {
                let mut meta: SessionMeta =
                    serde_json::from_str(&meta).map_err(|e| StoreError::Other(e.to_string()))?;
                meta.apply(&change);
                json(&meta)?
            } else {
                meta
            };
            tx.execute(
                "UPDATE sessions SET row = ?1, meta = ?2 WHERE id = ?3",
                params![json(&row)?, meta, id.0],
            )
            .map_err(sql)?;
            tx.commit().map_err(sql)
        })
        .await
    }

    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let found: Option<(String, String)> = db
                .query_row(
                    "SELECT row, meta FROM sessions WHERE id = ?1",
                    [&id.0],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(sql)?;
            let Some((row, meta)) = found else {
                return Ok(None);
            };
            let row: SessionSummary =
                serde_json::from_str(&row).map_err(|e| StoreError::Other(e.to_string()))?;
            let mut meta: SessionMeta =
                serde_json::from_str(&meta).map_err(|e| StoreError::Other(e.to_string()))?;
            meta.title = row.title;
            meta.updated_at = row.updated_at;
            Ok(Some(meta))
        })
        .await
    }

    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let (seq, count) = seq_of(db, &id)?;
            let mut select = db
                .prepare_cached(
                    "SELECT body FROM events WHERE session = ?1 AND n >= ?2 ORDER BY n LIMIT ?3",
                )
                .map_err(sql)?;
            let rows = select
                .query_map(params![seq, from.0 as i64, max as i64], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(sql)?;
            let mut events = Vec::new();
            for body in rows {
                let body = body.map_err(sql)?;
                events.push(
                    serde_json::from_str(&body).map_err(|e| StoreError::Other(e.to_string()))?,
                );
            }
            let end = from.0 + events.len() as u64;
            Ok(HistoryPage {
                events,
                next: (end < count as u64).then_some(HistoryCursor(end)),
            })
        })
        .await
    }

    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError> {
        self.blocking(move |db| {
            let before = match &query.cursor {
                Some(c) => c
                    .strip_prefix('c')
                    .and_then(|n| n.parse::<i64>().ok())
                    .ok_or_else(|| StoreError::BadCursor(c.clone()))?,
                None => i64::MAX,
            };
            let limit = query.limit as i64 + 1;
            let mut out: Vec<(i64, String)> = Vec::new();
            let map = |r: &rusqlite::Row<'_>| Ok((r.get(0)?, r.get(1)?));
            match &query.cwd {
                Some(cwd) => {
                    let mut s = db
                        .prepare_cached("SELECT seq, row FROM sessions WHERE cwd = ?1 AND seq < ?2 AND owner IS ?4 ORDER BY seq DESC LIMIT ?3")
                        .map_err(sql)?;
                    for r in s.query_map(params![cwd, before, limit, query.owner], map).map_err(sql)? {
                        out.push(r.map_err(sql)?);
                    }
                }
                None => {
                    let mut s = db
                        .prepare_cached(
                            "SELECT seq, row FROM sessions WHERE seq < ?1 AND owner IS ?3 ORDER BY seq DESC LIMIT ?2",
                        )
                        .map_err(sql)?;
                    for r in s.query_map(params![before, limit, query.owner], map).map_err(sql)? {
                        out.push(r.map_err(sql)?);
                    }
                }
            }
            let mut page = ListPage::default();
            if out.len() > query.limit {
                let (seq, _) = out[query.limit];
                page.next_cursor = Some(format!("c{}", seq + 1));
                out.truncate(query.limit);
            }
            for (_, row) in out {
                page.sessions.push(
                    serde_json::from_str(&row).map_err(|e| StoreError::Other(e.to_string()))?,
                );
            }
            Ok(page)
        })
        .await
    }

    async fn close(&self, _id: &SessionId) -> Result<(), StoreError> {
        Ok(())
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let tx = db.transaction().map_err(sql)?;
            let (seq, _) = seq_of(&tx, &id)?;
            tx.execute("DELETE FROM events WHERE session = ?1", [seq])
                .map_err(sql)?;
            tx.execute("DELETE FROM sessions WHERE seq = ?1", [seq])
                .map_err(sql)?;
            tx.commit().map_err(sql)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listing shows one owner's sessions only (`None`: those without one), as the
    /// `SessionStore` contract asks, so the comparison with the other stores stays fair.
    #[tokio::test]
    async fn a_listing_shows_one_owners_sessions() {
        let dir = std::env::temp_dir().join(format!("acp-bench-sqlite-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = SqliteStore::open(&dir).unwrap();
        for (id, owner) in [("u", None), ("a", Some("alice")), ("b", Some("bob"))] {
            let meta = SessionMeta::new(SessionId(id.into()), "/w").owned_by(owner.map(Into::into));
            store.create(meta).await.unwrap();
        }
        for cwd in [None, Some("/w".to_owned())] {
            for (owner, expected) in [(None, "u"), (Some("alice"), "a"), (Some("bob"), "b")] {
                let query = ListQuery {
                    owner: owner.map(Into::into),
                    cwd: cwd.clone(),
                    cursor: None,
                    limit: 10,
                };
                let page = store.list(query).await.unwrap();
                let ids: Vec<_> = page
                    .sessions
                    .iter()
                    .map(|s| s.session_id.0.as_str())
                    .collect();
                assert_eq!(ids, [expected], "{owner:?} {cwd:?}");
            }
        }
        let a = store.meta(&SessionId("a".into())).await.unwrap().unwrap();
        assert_eq!(a.owner.as_deref(), Some("alice"));
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
