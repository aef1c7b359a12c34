//! TLS to a real PostgreSQL with `ssl = on` (a certificate for `localhost`/`127.0.0.1` from a
//! throwaway authority made with `openssl`), and to one without TLS: each `sslmode` does
//! what libpq's does, and whether a connection is TLS is read from the server's own
//! `pg_stat_ssl`. Loopback only: a wrong host name is given with `hostaddr=127.0.0.1`.

mod support;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_store_postgres::PostgresStore;

/// The TLS server of this test binary.
fn tls_server() -> Option<&'static support::Server> {
    static SERVER: OnceLock<Option<support::Server>> = OnceLock::new();
    SERVER.get_or_init(support::Server::start_tls).as_ref()
}

/// A name no other connection of the server has, to find ours in `pg_stat_activity`.
fn app_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("tls-test-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Whether the open connections of application `app` are TLS, as the server sees them
/// (asked over a connection of the test's own).
async fn uses_tls(server: &support::Server, app: &str) -> bool {
    let (client, connection) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user=acp dbname=postgres",
            server.port
        ),
        tokio_postgres::NoTls,
    )
    .await
    .expect("the test's own connection");
    tokio::spawn(connection);
    let rows = client
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .unwrap();
    assert!(
        !rows.is_empty(),
        "the store's connections of {app} are open"
    );
    let ssl: Vec<bool> = rows.iter().map(|r| r.get(0)).collect();
    assert!(ssl.iter().all(|s| *s == ssl[0]), "{ssl:?}");
    ssl[0]
}

/// A URL of a fresh database of `server`, reached at `host` (TCP to 127.0.0.1 whatever the
/// name), with `params` and a fresh application name (returned).
fn url(server: &support::Server, host: &str, params: &str) -> (String, String) {
    let db = server.fresh_db();
    let db = db.rsplit('/').next().unwrap();
    let app = app_name();
    let url = format!(
        "postgres://acp@{host}:{}/{db}?hostaddr=127.0.0.1&application_name={app}&{params}",
        server.port
    );
    (url, app)
}

fn root(path: &std::path::Path) -> String {
    path.display().to_string()
}

#[tokio::test]
async fn verify_full_with_the_right_authority_connects_over_tls() {
    let Some(server) = tls_server() else { return };
    let tls = server.tls.as_ref().unwrap();
    for host in ["127.0.0.1", "localhost"] {
        let (url, app) = url(
            server,
            host,
            &format!("sslmode=verify-full&sslrootcert={}", root(&tls.ca)),
        );
        let store = PostgresStore::open(&url)
            .await
            .unwrap_or_else(|e| panic!("{host}: {e}"));
        assert!(uses_tls(server, &app).await, "{host}");
        drop(store);
    }
    // The key-value form, as libpq users write it.
    let db = server.fresh_db();
    let db = db.rsplit('/').next().unwrap();
    let app = app_name();
    let spec = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user=acp dbname={db} application_name={app} \
         sslmode=verify-full sslrootcert='{}'",
        server.port,
        root(&tls.ca)
    );
    let _store = PostgresStore::open(&spec).await.unwrap();
    assert!(uses_tls(server, &app).await);
}

#[tokio::test]
async fn verify_full_refuses_a_name_the_certificate_lacks_and_verify_ca_does_not_check_it() {
    let Some(server) = tls_server() else { return };
    let tls = server.tls.as_ref().unwrap();
    let ca = root(&tls.ca);
    let (wrong, _) = url(
        server,
        "wrong.example",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let err = PostgresStore::open(&wrong).await.unwrap_err().to_string();
    assert!(err.contains("does not name the host connected to"), "{err}");
    let (chain_only, app) = url(
        server,
        "wrong.example",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    );
    let _store = PostgresStore::open(&chain_only).await.unwrap();
    assert!(uses_tls(server, &app).await);
}

#[tokio::test]
async fn a_wrong_authority_is_refused() {
    let Some(server) = tls_server() else { return };
    let tls = server.tls.as_ref().unwrap();
    let other = root(&tls.other_ca);
    // `require` with a root file checks the chain too, as libpq does.
    for mode in ["verify-full", "verify-ca", "require"] {
        let (url, _) = url(
            server,
            "127.0.0.1",
            &format!("sslmode={mode}&sslrootcert={other}"),
        );
        let err = PostgresStore::open(&url).await.unwrap_err().to_string();
        assert!(
            err.contains("not signed by a root of sslrootcert"),
            "{mode}: {err}"
        );
    }
}

#[tokio::test]
async fn require_and_prefer_encrypt_without_checking_and_disable_does_not_encrypt() {
    let Some(server) = tls_server() else { return };
    for (params, tls) in [
        ("sslmode=require", true),
        ("sslmode=prefer", true),
        // The default is prefer.
        ("connect_timeout=5", true),
        ("sslmode=disable", false),
    ] {
        // No certificate check: a name the certificate lacks is fine.
        let (url, app) = url(server, "wrong.example", params);
        let _store = PostgresStore::open(&url)
            .await
            .unwrap_or_else(|e| panic!("{params}: {e}"));
        assert_eq!(uses_tls(server, &app).await, tls, "{params}");
    }
}

#[tokio::test]
async fn a_server_without_tls_is_refused_by_require_and_reached_in_plain_by_prefer() {
    let Some(server) = support::shared() else {
        return;
    };
    assert!(server.tls.is_none());
    for mode in ["require", "verify-full"] {
        let (url, _) = url(server, "127.0.0.1", &format!("sslmode={mode}"));
        let url = if mode == "verify-full" {
            // A root file is needed before any connection is tried: any PEM will do, the
            // server refuses TLS first.
            let Some(tls) = tls_server().and_then(|s| s.tls.as_ref()) else {
                return;
            };
            format!("{url}&sslrootcert={}", root(&tls.ca))
        } else {
            url
        };
        let err = PostgresStore::open(&url).await.unwrap_err().to_string();
        assert!(err.contains("server does not support TLS"), "{mode}: {err}");
        assert!(err.contains("turn on `ssl`"), "{mode}: {err}");
    }
    for mode in ["prefer", "disable"] {
        let (url, app) = url(server, "127.0.0.1", &format!("sslmode={mode}"));
        let _store = PostgresStore::open(&url)
            .await
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert!(!uses_tls(server, &app).await, "{mode}");
    }
}

/// Bad settings are errors at open, before anything connects.
#[tokio::test]
async fn an_unknown_sslmode_or_a_missing_root_file_is_a_clear_error_at_open() {
    let err = PostgresStore::open("postgres://acp:s3cret@127.0.0.1:1/acp?sslmode=verify")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown sslmode \"verify\""), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    let err = PostgresStore::open(
        "host=127.0.0.1 port=1 sslmode=verify-full sslrootcert=/nonexistent/root.pem",
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("sslrootcert /nonexistent/root.pem"), "{err}");
}

/// A role that signs in with a password (SCRAM-SHA-256, the server's default) over a
/// verified TLS connection, as a real deployment has it; a wrong password is refused
/// without being shown.
#[tokio::test]
async fn a_password_role_signs_in_over_verified_tls_and_a_wrong_password_is_not_shown() {
    let Some(server) = tls_server() else { return };
    let tls = server.tls.as_ref().unwrap();
    let role = support::PASSWORD_ROLE;
    let db = server.fresh_db();
    let db = db.rsplit('/').next().unwrap().to_owned();
    let (admin, connection) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user=acp dbname=postgres",
            server.port
        ),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN PASSWORD 'right-pw'; ALTER DATABASE {db} OWNER TO {role}"
        ))
        .await
        .unwrap();
    let spec = |password: &str, app: &str| {
        format!(
            "postgres://{role}:{password}@localhost:{}/{db}?hostaddr=127.0.0.1&application_name={app}\
             &sslmode=verify-full&sslrootcert={}",
            server.port,
            root(&tls.ca)
        )
    };
    let app = app_name();
    let _store = PostgresStore::open(&spec("right-pw", &app))
        .await
        .expect("SCRAM over TLS");
    assert!(uses_tls(server, &app).await);
    let err = PostgresStore::open(&spec("wrong-pw", &app_name()))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(!err.contains("wrong-pw"), "{err}");
}
