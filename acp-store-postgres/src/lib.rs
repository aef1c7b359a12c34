//! A [`SessionStore`] on PostgreSQL, for agents on several processes or hosts that share
//! their sessions: what one records, another lists, loads and resumes.
//!
//! ```no_run
//! # async fn run() -> Result<(), acp_store::StoreError> {
//! let store = acp_store_postgres::PostgresStore::open("postgres://acp@127.0.0.1/acp").await?;
//! # let _ = store; Ok(()) }
//! ```
//!
//! [`PostgresStore::open`] connects (failing at once, with the server named, when it cannot)
//! and brings the schema up to date: the migrations are embedded, numbered, and applied in
//! order under an advisory lock, so processes opening the same database at once apply each
//! exactly once ([`SCHEMA_VERSION`] is the newest; a database newer than this crate is
//! refused). Connections come from a small pool (deadpool); a connection the server
//! dropped is replaced on next use, so the store recovers by itself when a database that
//! went away comes back, and every call in between fails with an error naming the cause
//! (which the connection answers as a JSON-RPC error).
//!
//! # TLS and passwords
//!
//! The connection string is libpq's, a URL or `key=value` pairs, TLS included: `sslmode`
//! `disable`, `prefer` (the default: TLS when the server offers it), `require` (TLS, the
//! certificate not checked), `verify-ca` (its chain checked against `sslrootcert`) and
//! `verify-full` (the chain and the host name); `sslrootcert=FILE` (PEM) or `system`.
//!
//! ```no_run
//! # async fn run() -> Result<(), acp_store::StoreError> {
//! let store = acp_store_postgres::PostgresStore::open(
//!     "postgres://acp@db.internal/acp?sslmode=verify-full&sslrootcert=/etc/acp/db-ca.pem",
//! )
//! .await?;
//! # let _ = store; Ok(()) }
//! ```
//!
//! TLS is rustls with the ring provider; client certificates and channel binding are not
//! supported. A missing password is taken from `PGPASSWORD`, as libpq does. An unknown
//! `sslmode` or an unusable root file is an error at open, before anything connects.
//!
//! A password never appears in this crate's errors ([`redact`] hides it in each form, and is
//! there for the caller's own messages). A failure once the store is open is a
//! [`StoreError::Backend`]: its `Display` (for the log, for the caller) names the server,
//! while what a remote client is sent names only the operation and the kind of failure.
//!
//! # Owners
//!
//! Each session row keeps its owner (`acp_sessions.owner`, the identity that created it;
//! NULL for the unnamed identity, which the rows of a database from before owners become
//! on migration), and `list` reads only the rows of the query's owner.
//!
//! # Isolation, operation by operation
//!
//! Everything runs at PostgreSQL's default, READ COMMITTED, each operation one statement
//! (so one implicit transaction) unless said otherwise:
//!
//! * `append`: one statement that takes the session row's lock (`UPDATE ... RETURNING` of
//!   its event counter) and inserts the events numbered from it. A second append to the
//!   same session waits for the first to commit and then reads the counter it left, so two
//!   writers (two hosts) never interleave the events of one append nor lose either; events
//!   are visible to every reader once the statement commits, that is at the latest at the
//!   next turn boundary of the writer (with [`Durability::Turn`], a turn is one append;
//!   with the per-event settings each event is visible as it is sent).
//! * `update_meta`: a transaction that reads the metadata `FOR UPDATE` and writes it back:
//!   concurrent changes (a mode set on one host, a title on another) are applied one after
//!   the other, none lost.
//! * `create` (`ON CONFLICT DO NOTHING`: of two creators of one id exactly one wins),
//!   `delete` (the history goes with the row, by cascade), `meta`, `history` and `list`:
//!   single statements; a read sees what was committed when it started. A history is read
//!   in pages by event number, so a page never repeats or skips an event even while
//!   another host appends.
//!
//! Not promised: with the per-event durabilities, two hosts running a turn on one session
//! *at the same time* (which the protocol does not do: one prompt per session at a time)
//! store their events in arrival order, interleaved event by event (none lost).

use std::time::Duration;

use acp_store::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta,
    SessionStore, SessionSummary, StoreError, StoredEvent,
};
use acp_types::v1::SessionId;
use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};

mod connect;
mod migrate;
mod redact;
mod tls;

pub use migrate::SCHEMA_VERSION;
pub use redact::redact;

/// Connections the pool keeps at most, unless [`PostgresStore::open_with`] says otherwise.
pub const DEFAULT_POOL_SIZE: usize = 8;

/// How long connecting (and waiting for a pooled connection) may take before the call
/// fails: a database that is down is an error in seconds, not a hang.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A [`SessionStore`] in a PostgreSQL database (see the crate docs for the isolation of
/// each operation). Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// The server as shown in errors (host, port, database; never the password).
    target: String,
    durability: Durability,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .field("durability", &self.durability)
            .finish()
    }
}

/// The server of a connection config, for messages.
fn describe(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("postgres://{host}:{port}/{db}")
}

pub(crate) use connect::pg_error;

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`, or the
    /// `key=value` form; TLS as its `sslmode` says, see the crate docs) with a pool of
    /// [`DEFAULT_POOL_SIZE`] connections, and brings its schema up to date. Fails at once,
    /// naming the server, when it cannot connect.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, DEFAULT_POOL_SIZE).await
    }

    /// [`PostgresStore::open`] with a pool of at most `pool_size` connections (at least 1).
    pub async fn open_with(url: &str, pool_size: usize) -> Result<Self, StoreError> {
        let connect::Prepared {
            mut config,
            tls,
            mode,
        } = connect::prepare(url).map_err(StoreError::Other)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("acp-store-postgres");
        }
        let target = describe(&config);
        tracing::debug!(%target, sslmode = mode.as_str(), "connecting to the session store");
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT * 2))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Other(redact(&format!("PostgreSQL {target}: {e}"))))?;
        let store = PostgresStore {
            pool,
            target,
            durability: Durability::default(),
        };
        let mut client = store.client().await?;
        migrate::run(&mut client, &store.target).await?;
        Ok(store)
    }

    /// The same store, recorded into with `durability` (see [`Durability`]; default
    /// [`Durability::Event`], one round trip per transport write of the connection, which
    /// carries every update queued meanwhile; [`Durability::Turn`] writes a turn in one). A commit is durable when it returns, so
    /// [`Durability::EventSyncTurn`] costs nothing more than `Event` here.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The server, as errors name it (no password).
    pub fn target(&self) -> &str {
        &self.target
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| connect::pool_error(&self.target, &e))
    }

    fn err(&self, what: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
        let what = what.to_owned();
        move |e| pg_error(&what, &self.target, &e)
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Other(format!("cannot encode: {e}")))
}

fn decode_meta(text: &str) -> Result<SessionMeta, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Other(format!("corrupt session metadata in the database: {e}")))
}

/// A row of `SELECT meta, owner`: the metadata with the owner of the `owner` column (the
/// one that counts: rows from before owners existed have none in their JSON either way).
fn decode_row(row: &tokio_postgres::Row) -> Result<SessionMeta, StoreError> {
    let mut meta = decode_meta(row.get(0))?;
    meta.owner = row.get(1);
    Ok(meta)
}

/// The list cursor: the creation number of the last row handed out.
fn list_cursor(seq: i64) -> String {
    format!("p{seq}")
}

fn parse_list_cursor(cursor: &str) -> Result<i64, StoreError> {
    cursor
        .strip_prefix('p')
        .and_then(|n| n.parse().ok())
        .filter(|n: &i64| *n >= 0)
        .ok_or_else(|| StoreError::BadCursor(cursor.to_owned()))
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        let text = encode(&meta)?;
        let client = self.client().await?;
        let rows = client
            .execute(
                "INSERT INTO acp_sessions (session_id, cwd, meta, owner) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (session_id) DO NOTHING",
                &[&meta.session_id.0.as_str(), &meta.cwd, &text, &meta.owner],
            )
            .await
            .map_err(self.err("create"))?;
        if rows == 0 {
            return Err(StoreError::AlreadyExists(meta.session_id));
        }
        Ok(())
    }

    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        let texts = events.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        let client = self.client().await?;
        if texts.is_empty() {
            let found = client
                .query_opt(
                    "SELECT 1 FROM acp_sessions WHERE session_id = $1",
                    &[&id.0.as_str()],
                )
                .await
                .map_err(self.err("append"))?;
            return found
                .map(|_| ())
                .ok_or_else(|| StoreError::NotFound(id.clone()));
        }
        // One statement: the counter's row lock orders concurrent appends of a session.
        let inserted = client
            .execute(
                "WITH s AS ( \
                     UPDATE acp_sessions SET next_event = next_event + cardinality($2::text[]) \
                     WHERE session_id = $1 \
                     RETURNING seq, next_event - cardinality($2::text[]) AS first) \
                 INSERT INTO acp_events (session_seq, n, event) \
                 SELECT s.seq, s.first + e.ord - 1, e.event \
                 FROM s, unnest($2::text[]) WITH ORDINALITY AS e(event, ord)",
                &[&id.0.as_str(), &texts],
            )
            .await
            .map_err(self.err("append"))?;
        if inserted == 0 {
            return Err(StoreError::NotFound(id.clone()));
        }
        Ok(())
    }

    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(self.err("update metadata"))?;
        let row = tx
            .query_opt(
                "SELECT meta, owner FROM acp_sessions WHERE session_id = $1 FOR UPDATE",
                &[&id.0.as_str()],
            )
            .await
            .map_err(self.err("update metadata"))?
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let mut meta = decode_row(&row)?;
        meta.apply(&change);
        tx.execute(
            "UPDATE acp_sessions SET meta = $2 WHERE session_id = $1",
            &[&id.0.as_str(), &encode(&meta)?],
        )
        .await
        .map_err(self.err("update metadata"))?;
        tx.commit().await.map_err(self.err("update metadata"))
    }

    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT meta, owner FROM acp_sessions WHERE session_id = $1",
                &[&id.0.as_str()],
            )
            .await
            .map_err(self.err("read metadata"))?;
        row.map(|r| decode_row(&r)).transpose()
    }

    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        let max = max.clamp(1, 100_000);
        let from = i64::try_from(from.0).unwrap_or(i64::MAX);
        let client = self.client().await?;
        // The session row even when the page is empty (no row at all: no such session).
        let rows = client
            .query(
                "SELECT e.n, e.event FROM acp_sessions s \
                 LEFT JOIN LATERAL ( \
                     SELECT n, event FROM acp_events \
                     WHERE session_seq = s.seq AND n >= $2 ORDER BY n LIMIT $3) e ON true \
                 WHERE s.session_id = $1",
                &[&id.0.as_str(), &from, &(max as i64 + 1)],
            )
            .await
            .map_err(self.err("read history"))?;
        if rows.is_empty() {
            return Err(StoreError::NotFound(id.clone()));
        }
        let mut page = HistoryPage::default();
        for row in rows {
            let (Some(n), Some(text)) =
                (row.get::<_, Option<i64>>(0), row.get::<_, Option<&str>>(1))
            else {
                continue;
            };
            if page.events.len() == max {
                page.next = Some(HistoryCursor(n as u64));
                break;
            }
            match serde_json::from_str(text) {
                Ok(event) => page.events.push(event),
                Err(e) => tracing::warn!(
                    session = %id.0, event = n, error = %e,
                    "skipping a history record that does not parse"
                ),
            }
        }
        Ok(page)
    }

    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError> {
        let before = match &query.cursor {
            Some(c) => parse_list_cursor(c)?,
            None => i64::MAX,
        };
        let limit = query.limit.min(10_000);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT seq, meta, owner FROM acp_sessions \
                 WHERE seq < $1 AND ($2::text IS NULL OR cwd = $2) \
                 AND (owner = $4 OR ($4::text IS NULL AND owner IS NULL)) \
                 ORDER BY seq DESC LIMIT $3",
                &[&before, &query.cwd, &(limit as i64 + 1), &query.owner],
            )
            .await
            .map_err(self.err("list sessions"))?;
        let mut page = ListPage::default();
        let mut last = None;
        for row in rows {
            if page.sessions.len() == limit {
                page.next_cursor = last.map(list_cursor);
                break;
            }
            let mut meta = decode_meta(row.get(1))?;
            meta.owner = row.get(2);
            let summary: SessionSummary = meta.summary();
            page.sessions.push(summary);
            last = Some(row.get::<_, i64>(0));
        }
        Ok(page)
    }

    async fn close(&self, _id: &SessionId) -> Result<(), StoreError> {
        // Nothing is held per session: every call takes a pooled connection and returns it.
        Ok(())
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let client = self.client().await?;
        let rows = client
            .execute(
                "DELETE FROM acp_sessions WHERE session_id = $1",
                &[&id.0.as_str()],
            )
            .await
            .map_err(self.err("delete"))?;
        if rows == 0 {
            return Err(StoreError::NotFound(id.clone()));
        }
        Ok(())
    }

    fn durability(&self) -> Durability {
        self.durability
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// List cursors are the store's own; anything else is a bad cursor, not a panic.
    #[test]
    fn list_cursors_round_trip_and_reject_strangers() {
        assert_eq!(parse_list_cursor(&list_cursor(42)).unwrap(), 42);
        for bad in ["", "p", "p-1", "c12", "p99999999999999999999", "pé"] {
            assert!(
                matches!(parse_list_cursor(bad), Err(StoreError::BadCursor(_))),
                "{bad}"
            );
        }
    }

    /// Errors name the server, never the password.
    #[test]
    fn the_target_shows_no_password() {
        let config: tokio_postgres::Config =
            "postgres://me:secret@db.example:6543/acp".parse().unwrap();
        let shown = describe(&config);
        assert_eq!(shown, "postgres://db.example:6543/acp");
        assert!(!shown.contains("secret"));
    }
}
