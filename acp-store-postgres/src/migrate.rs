//! The embedded, numbered migrations, applied at open.
//!
//! `acp_store_schema` holds one row per version applied. Opening takes a transaction-scoped
//! advisory lock first, so of several processes opening one database at once the first
//! applies what is missing and the others then find it applied. Each migration runs in
//! that same transaction: a failed one leaves the schema as it was.

use acp_store::StoreError;

use crate::pg_error;

/// The migrations, in order: (version, SQL). Append only; never edit a released one.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_sessions.sql")),
    (2, include_str!("../migrations/0002_owners.sql")),
];

/// The schema version this crate brings a database to.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The advisory lock key of schema changes (any constant no other program of the
/// database uses; these are the bytes of "acpstore").
const LOCK_KEY: i64 = 0x6163_7073_746f_7265;

/// Brings the schema up to [`SCHEMA_VERSION`]; refuses a database newer than that.
pub(crate) async fn run(
    client: &mut tokio_postgres::Client,
    target: &str,
) -> Result<(), StoreError> {
    let err = |what: &'static str| move |e: tokio_postgres::Error| pg_error(what, target, &e);
    let tx = client.transaction().await.map_err(err("migrate"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(err("migrate"))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS acp_store_schema ( \
             version INT PRIMARY KEY, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .await
    .map_err(err("migrate"))?;
    let current: i32 = tx
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM acp_store_schema",
            &[],
        )
        .await
        .map_err(err("migrate"))?
        .get(0);
    if current > SCHEMA_VERSION {
        return Err(StoreError::Other(format!(
            "PostgreSQL {target}: the session schema is at version {current}, newer than this \
             build knows ({SCHEMA_VERSION}); upgrade acp-store-postgres"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(sql).await.map_err(err("migrate"))?;
        tx.execute(
            "INSERT INTO acp_store_schema (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(err("migrate"))?;
        tracing::info!(version, %target, "session store schema migrated");
    }
    tx.commit().await.map_err(err("migrate"))
}
