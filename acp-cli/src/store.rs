//! Where the built-in agent keeps its sessions: `--store` (a directory, the embedded SQLite
//! store that every agent process on the machine can share; `jsonl:DIR` for JSON Lines files
//! that one process at a time uses; or a PostgreSQL database for a `postgres://` URL, which
//! several hosts can share) and `--durability`, read the same way by `acp agent`, `acp serve`
//! and `acp chat`.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use acp_agent::store::{Durability, JsonlStore, SqliteStore, StoreSlot};
use clap::Args;

use crate::secret_env::STORE_ENV;

/// The durability named when no `--durability` is given.
pub const DURABILITY_ENV: &str = "ACP_STORE_DURABILITY";

/// `--store` and `--durability`, with their environment fallbacks. `Debug` shows the
/// store as [`describe`] does (no password).
#[derive(Args, Clone, Default)]
pub struct StoreArgs {
    /// Keep the built-in agent's sessions in this directory (created if missing; every agent
    /// process on the machine may use it at once, each session written by one at a time; a
    /// JSON Lines store found there is imported), in JSON Lines files with `jsonl:DIR` (one
    /// process at a time), or in the PostgreSQL database of a `postgres://` URL (shared by
    /// every agent process and host using it): they can be listed, loaded and resumed by
    /// later runs. TLS to the database
    /// as libpq: `?sslmode=verify-full&sslrootcert=ca.pem` (also `disable`, `prefer`, the
    /// default, `require`, `verify-ca`); the password may come from `PGPASSWORD`. Default:
    /// `ACP_STORE`, if set.
    #[arg(long)]
    pub store: Option<OsString>,
    /// When a turn is written to the store: `event` (each update before it is sent: a
    /// killed agent keeps what the client saw; the default), `event-sync-turn` (and an
    /// fsync per turn), `turn` (at its end), or `<N>ms` (batches at most N ms apart, for a
    /// database). Default: `ACP_STORE_DURABILITY`, else `event`.
    #[arg(long)]
    pub durability: Option<Durability>,
}

impl std::fmt::Debug for StoreArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreArgs")
            .field("store", &self.store.as_deref().map(describe))
            .field("durability", &self.durability)
            .finish()
    }
}

impl StoreArgs {
    /// The store named by `--store`, else by `ACP_STORE`.
    pub fn spec(&self) -> Option<OsString> {
        self.store
            .clone()
            .or_else(|| std::env::var_os(STORE_ENV).filter(|v| !v.is_empty()))
    }

    /// `--durability`, else `ACP_STORE_DURABILITY`, else the default (`event`).
    pub fn durability(&self) -> Result<Durability, String> {
        if let Some(d) = self.durability {
            return Ok(d);
        }
        match std::env::var(DURABILITY_ENV) {
            Ok(text) if !text.is_empty() => {
                text.parse().map_err(|e| format!("{DURABILITY_ENV}: {e}"))
            }
            _ => Ok(Durability::default()),
        }
    }

    /// Opens the store these arguments name, if any, with a description for messages. A
    /// durability that does not parse is an error even without a store: the setting is
    /// wrong wherever it is used next.
    pub async fn open(&self) -> Result<Option<(StoreSlot, String)>, String> {
        let durability = self.durability()?;
        let Some(spec) = self.spec() else {
            return Ok(None);
        };
        let store = open_any_store(&spec, durability).await?;
        Ok(Some((store, describe(&spec))))
    }
}

/// The store `spec` names: a PostgreSQL database for a `postgres://` or `postgresql://` URL,
/// a [`JsonlStore`] directory for `jsonl:DIR`, else a [`SqliteStore`] directory. An
/// unreachable database or an unusable directory is an error here, before anything is
/// served.
pub async fn open_any_store(spec: &OsStr, durability: Durability) -> Result<StoreSlot, String> {
    let text = spec.to_string_lossy();
    if is_database(&text) {
        let store = acp_store_postgres::PostgresStore::open(&text)
            .await
            .map_err(|e| acp_store_postgres::redact(&format!("the session store: {e}")))?;
        return Ok(store.with_durability(durability).into());
    }
    if let Some(dir) = text.strip_prefix(JSONL_PREFIX) {
        let dir = Path::new(dir);
        return JsonlStore::open(dir)
            .map(|s| s.with_durability(durability).into())
            .map_err(|e| format!("the session store {}: {e}", dir.display()));
    }
    open_directory(Path::new(spec)).map(|s| s.with_durability(durability).into())
}

/// The prefix of `--store` that asks for JSON Lines files.
const JSONL_PREFIX: &str = "jsonl:";

/// Opens (creating it if needed) a session store directory: the embedded store shared by
/// the machine's agent processes.
pub fn open_directory(dir: &Path) -> Result<SqliteStore, String> {
    SqliteStore::open(dir).map_err(|e| format!("the session store {}: {e}", dir.display()))
}

fn is_database(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// How a store is named in messages and logs: its password hidden, in whichever form it
/// is written (see [`acp_store_postgres::redact`], the one place that knows them).
pub fn describe(spec: &OsStr) -> String {
    acp_store_postgres::redact(&spec.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_is_shown_without_its_password() {
        let shown = describe(OsStr::new("postgres://acp:s3cret@127.0.0.1:5432/acp"));
        assert_eq!(shown, "postgres://acp:***@127.0.0.1:5432/acp");
        let shown = describe(OsStr::new("postgres://127.0.0.1/acp?password=s3cret"));
        assert_eq!(shown, "postgres://127.0.0.1/acp?password=***");
        let args = StoreArgs {
            store: Some("postgres://acp:s3cret@db/acp".into()),
            durability: None,
        };
        assert!(!format!("{args:?}").contains("s3cret"));
        assert_eq!(describe(OsStr::new("/var/lib/acp")), "/var/lib/acp");
        assert_eq!(
            describe(OsStr::new("postgresql://127.0.0.1/acp")),
            "postgresql://127.0.0.1/acp"
        );
    }
}
