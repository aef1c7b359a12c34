//! From a connection string as libpq users write it to what tokio-postgres connects with:
//! its [`Config`] and the TLS connector the `sslmode` asks for; and the store's errors,
//! split into what a remote peer may read and what the server's log gets.
//!
//! tokio-postgres parses `sslmode` `disable`, `prefer` and `require` only, and no
//! `sslrootcert`: both are taken out of the string here (URL query parameters or `key=value`
//! pairs), the rest is tokio-postgres's to parse.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use acp_store::StoreError;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres::Config;

use crate::redact::{percent_decode, redact, redact_with};
use crate::tls::{MakeRustlsConnect, Verify};

/// How much TLS a connection has, as libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Never TLS.
    Disable,
    /// TLS when the server offers it, else in plain; no certificate check (the default).
    Prefer,
    /// TLS or no connection; no certificate check (unless an `sslrootcert` is given: then
    /// the chain is checked, as `verify-ca`, as libpq does).
    Require,
    /// TLS, the server's certificate chained to a root of `sslrootcert`; any host name.
    VerifyCa,
    /// TLS, the chain checked and the certificate naming the host connected to.
    VerifyFull,
}

impl SslMode {
    /// The libpq spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

impl std::str::FromStr for SslMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err("sslmode=allow is not supported: use disable or prefer".into());
            }
            other => {
                return Err(format!(
                    "unknown sslmode {other:?}: use disable, prefer, require, verify-ca or \
                     verify-full"
                ));
            }
        })
    }
}

/// A connection string made ready: the tokio-postgres config and its TLS connector.
pub(crate) struct Prepared {
    pub(crate) config: Config,
    pub(crate) tls: MakeRustlsConnect,
    pub(crate) mode: SslMode,
}

/// Reads `spec` (a `postgres://` URL or `key=value` pairs) with its `sslmode` and
/// `sslrootcert`; a missing password comes from `PGPASSWORD`, as with libpq. Every error is
/// a clear message without the password.
pub(crate) fn prepare(spec: &str) -> Result<Prepared, String> {
    let (rest, taken) = take_ssl_params(spec);
    let mut config: Config = rest.parse().map_err(|e| {
        redact_with(
            &format!("not a PostgreSQL connection string: {e}"),
            password_in(spec).as_deref(),
        )
    })?;
    let mut mode = None;
    let mut root = None;
    for (key, value) in taken {
        match key {
            SslKey::Mode => mode = Some(value.parse::<SslMode>()?),
            SslKey::RootCert => root = Some(value),
        }
    }
    let system = root.as_deref() == Some("system");
    // As libpq: `sslrootcert=system` means verify-full unless said otherwise, and nothing
    // weaker.
    let mode = match (mode, system) {
        (None, true) => SslMode::VerifyFull,
        (Some(m), true) if m != SslMode::VerifyFull => {
            return Err(format!(
                "sslrootcert=system needs sslmode=verify-full (not {})",
                m.as_str()
            ));
        }
        (m, _) => m.unwrap_or(SslMode::Prefer),
    };
    let verify = match mode {
        SslMode::Disable | SslMode::Prefer => Verify::Nothing,
        SslMode::Require => match &root {
            Some(file) => Verify::Chain(roots(Path::new(file))?),
            None => Verify::Nothing,
        },
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = match &root {
                Some(_) if system => system_roots()?,
                Some(file) => roots(Path::new(file))?,
                None => roots(&default_root_file()?)?,
            };
            if mode == SslMode::VerifyCa {
                Verify::Chain(roots)
            } else {
                Verify::ChainAndName(roots)
            }
        }
    };
    config.ssl_mode(match mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    if config.get_password().is_none()
        && let Some(password) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty())
    {
        config.password(password.as_encoded_bytes());
    }
    let tls = MakeRustlsConnect::new(verify)?;
    Ok(Prepared { config, tls, mode })
}

/// The password written in `spec`, for hiding it wherever a message might echo it.
fn password_in(spec: &str) -> Option<String> {
    let config: Config = take_ssl_params(spec).0.parse().ok()?;
    config
        .get_password()
        .map(|p| String::from_utf8_lossy(p).into_owned())
}

/// libpq's default root file for the verify modes: `~/.postgresql/root.crt`.
fn default_root_file() -> Result<PathBuf, String> {
    let file = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".postgresql/root.crt"))
        .filter(|f| f.exists());
    file.ok_or_else(|| {
        "sslmode verify-ca and verify-full check the server's certificate against root \
         certificates: give sslrootcert=FILE (PEM), sslrootcert=system for the system's \
         trusted roots, or put them in ~/.postgresql/root.crt"
            .to_owned()
    })
}

/// The PEM certificates of `file`, as roots; an unreadable file, or one without any
/// certificate, is an error naming it.
fn roots(file: &Path) -> Result<Arc<RootCertStore>, String> {
    let shown = file.display();
    let pem = std::fs::read(file).map_err(|e| format!("sslrootcert {shown}: {e}"))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("sslrootcert {shown}: not readable PEM: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("sslrootcert {shown}: a certificate is refused: {e}"))?;
    }
    if roots.is_empty() {
        return Err(format!("sslrootcert {shown}: no PEM certificate in it"));
    }
    Ok(Arc::new(roots))
}

/// The operating system's trusted roots (`sslrootcert=system`).
fn system_roots() -> Result<Arc<RootCertStore>, String> {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::debug!(%error, "a root certificate of the OS could not be read");
    }
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        return Err("sslrootcert=system: the system has no trusted root certificates".into());
    }
    Ok(Arc::new(roots))
}

/// The parameters taken out of a connection string before tokio-postgres parses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SslKey {
    Mode,
    RootCert,
}

fn ssl_key(key: &str) -> Option<SslKey> {
    match key {
        "sslmode" => Some(SslKey::Mode),
        "sslrootcert" => Some(SslKey::RootCert),
        _ => None,
    }
}

/// `spec` without its `sslmode` and `sslrootcert` parameters, and their values in order.
/// A string this cannot read is returned whole, for tokio-postgres to report.
fn take_ssl_params(spec: &str) -> (String, Vec<(SslKey, String)>) {
    let url = ["postgres://", "postgresql://"]
        .iter()
        .any(|scheme| spec.starts_with(scheme));
    if url {
        take_from_url(spec)
    } else {
        take_from_key_values(spec).unwrap_or_else(|| (spec.to_owned(), Vec::new()))
    }
}

fn take_from_url(spec: &str) -> (String, Vec<(SslKey, String)>) {
    // As tokio-postgres reads a URL: the user information ends at the first `@`, the
    // query starts at the first `?` after it.
    let after_creds = spec.find('@').map(|i| i + 1).unwrap_or(0);
    let Some(q) = spec[after_creds..].find('?').map(|q| after_creds + q) else {
        return (spec.to_owned(), Vec::new());
    };
    let mut taken = Vec::new();
    let mut kept = Vec::new();
    for param in spec[q + 1..].split('&') {
        let key = param.split_once('=').map(|(k, v)| (percent_decode(k), v));
        match key.as_ref().and_then(|(k, v)| Some((ssl_key(k)?, v))) {
            Some((key, value)) => taken.push((key, percent_decode(value))),
            None => kept.push(param),
        }
    }
    let mut rest = spec[..q].to_owned();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    (rest, taken)
}

/// The `key=value` form, read as tokio-postgres reads it (white space around `=`, values
/// quoted with `'` or not, backslash escapes); `None` when it does not read.
fn take_from_key_values(spec: &str) -> Option<(String, Vec<(SslKey, String)>)> {
    let mut rest = String::with_capacity(spec.len());
    let mut taken = Vec::new();
    let mut chars = spec.char_indices().peekable();
    let mut kept_from = 0;
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            break;
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        chars.next_if(|(_, c)| *c == '=')?;
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match chars.next()? {
                    (_, '\'') => break,
                    (_, '\\') => value.push(chars.next()?.1),
                    (_, c) => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    if let Some((_, next)) = chars.next() {
                        value.push(next);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        let end = chars.peek().map(|&(i, _)| i).unwrap_or(spec.len());
        if let Some(key) = ssl_key(&key) {
            rest.push_str(&spec[kept_from..start]);
            kept_from = end;
            taken.push((key, value));
        }
    }
    rest.push_str(&spec[kept_from..]);
    Some((rest, taken))
}

/// A store error from a failure talking to the database: the peer's version says what
/// failed and its kind; the detail (server, cause) is for the log and the library user.
pub(crate) fn backend_error(what: &str, target: &str, kind: &str, cause: &str) -> StoreError {
    StoreError::Backend {
        public: format!("PostgreSQL: {what}: {kind} (details in the server's log)"),
        detail: redact(&format!("PostgreSQL {target}: {what}: {}", hint(cause))),
    }
}

/// A tokio-postgres error as a store error.
pub(crate) fn pg_error(what: &str, target: &str, e: &tokio_postgres::Error) -> StoreError {
    let (kind, cause) = match e.as_db_error() {
        Some(db) => (
            format!("the database refused it (SQLSTATE {})", db.code().code()),
            format!("{} ({})", db.message(), db.code().code()),
        ),
        None if e.is_closed() => ("the connection to the database closed".to_owned(), chain(e)),
        None => ("the database connection failed".to_owned(), chain(e)),
    };
    backend_error(what, target, &kind, &cause)
}

/// A pool error (no connection to be had) as a store error.
pub(crate) fn pool_error(target: &str, e: &deadpool_postgres::PoolError) -> StoreError {
    let cause = match e {
        deadpool_postgres::PoolError::Backend(e) => chain(e),
        other => other.to_string(),
    };
    let detail = redact(&format!(
        "cannot reach PostgreSQL at {target}: {}",
        hint(&cause)
    ));
    StoreError::Backend {
        public: "PostgreSQL: the database cannot be reached (details in the server's log)".into(),
        detail,
    }
}

/// An error with its causes (the outer texts stop at "error connecting to server").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `cause`, with what to do about the TLS failures a setting explains.
fn hint(cause: &str) -> String {
    let hint = if cause.contains("server does not support TLS") {
        "; the sslmode asks for TLS and the server has none: turn on `ssl` in the server's \
         postgresql.conf, or connect with sslmode=prefer or disable"
    } else if cause.contains("UnknownIssuer") || cause.contains("unknown issuer") {
        "; the server's certificate is not signed by a root of sslrootcert"
    } else if cause.contains("NotValidForName") || cause.contains("not valid for name") {
        "; the server's certificate does not name the host connected to (sslmode=verify-full)"
    } else {
        ""
    };
    format!("{cause}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssl_parameters_are_taken_out_of_a_url() {
        let (rest, taken) = take_ssl_params(
            "postgres://me:p%3Fw@db:5432/acp?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca.pem",
        );
        assert_eq!(rest, "postgres://me:p%3Fw@db:5432/acp?application_name=x");
        assert_eq!(
            taken,
            vec![
                (SslKey::Mode, "verify-full".to_owned()),
                (SslKey::RootCert, "/etc/ca.pem".to_owned())
            ]
        );
        let (rest, taken) = take_ssl_params("postgresql://db/acp?sslmode=require");
        assert_eq!(rest, "postgresql://db/acp");
        assert_eq!(taken, vec![(SslKey::Mode, "require".to_owned())]);
        let (rest, taken) = take_ssl_params("postgres://db/acp");
        assert_eq!((rest.as_str(), taken.len()), ("postgres://db/acp", 0));
    }

    #[test]
    fn ssl_parameters_are_taken_out_of_key_values() {
        let (rest, taken) = take_ssl_params(
            "host=db sslmode = verify-ca  sslrootcert='/my certs/ca.pem' dbname=acp",
        );
        assert_eq!(rest, "host=db    dbname=acp");
        assert_eq!(
            taken,
            vec![
                (SslKey::Mode, "verify-ca".to_owned()),
                (SslKey::RootCert, "/my certs/ca.pem".to_owned())
            ]
        );
        let config: Config = rest.parse().unwrap();
        assert_eq!(config.get_dbname(), Some("acp"));
        // Unreadable: handed over whole, for tokio-postgres to say why.
        let (rest, taken) = take_ssl_params("host=db sslmode='verify-full");
        assert_eq!(
            (rest.as_str(), taken.len()),
            ("host=db sslmode='verify-full", 0)
        );
    }

    #[test]
    fn the_modes_map_onto_tokio_postgres() {
        use tokio_postgres::config::SslMode as Pg;
        for (spec, mode, pg) in [
            ("postgres://db/acp", SslMode::Prefer, Pg::Prefer),
            (
                "postgres://db/acp?sslmode=disable",
                SslMode::Disable,
                Pg::Disable,
            ),
            ("host=db sslmode=prefer", SslMode::Prefer, Pg::Prefer),
            ("host=db sslmode=require", SslMode::Require, Pg::Require),
        ] {
            let prepared = prepare(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(prepared.mode, mode, "{spec}");
            assert_eq!(prepared.config.get_ssl_mode(), pg, "{spec}");
        }
    }

    #[test]
    fn bad_ssl_settings_are_clear_errors() {
        let err = prepare("postgres://db/acp?sslmode=verify_full")
            .err()
            .unwrap();
        assert!(err.contains("unknown sslmode \"verify_full\""), "{err}");
        assert!(err.contains("verify-full"), "{err}");
        let err = prepare("host=db sslmode=allow").err().unwrap();
        assert!(err.contains("allow is not supported"), "{err}");
        let err = prepare("postgres://db/acp?sslmode=verify-full&sslrootcert=/no/such.pem")
            .err()
            .unwrap();
        assert!(err.contains("sslrootcert /no/such.pem"), "{err}");
        let empty = std::env::temp_dir().join(format!("acp-pg-empty-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = prepare(&format!(
            "host=db sslmode=verify-ca sslrootcert={}",
            empty.display()
        ))
        .err()
        .unwrap();
        let _ = std::fs::remove_file(&empty);
        assert!(err.contains("no PEM certificate"), "{err}");
        let err = prepare("postgres://db/acp?sslmode=require&sslrootcert=system")
            .err()
            .unwrap();
        assert!(err.contains("needs sslmode=verify-full"), "{err}");
    }

    #[test]
    fn a_parse_error_shows_no_password() {
        let err = prepare("postgres://me:s3cret@db:notaport/acp")
            .err()
            .unwrap();
        assert!(err.contains("not a PostgreSQL connection string"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[test]
    fn the_detail_of_an_error_is_for_the_log_only() {
        let StoreError::Backend { public, detail } = backend_error(
            "list sessions",
            "postgres://db.example:6543/acp",
            "the database connection failed",
            "connection refused",
        ) else {
            panic!("a backend error");
        };
        assert!(detail.contains("db.example:6543/acp"), "{detail}");
        for secret in ["db.example", "6543", "/acp"] {
            assert!(!public.contains(secret), "{public}");
        }
        assert!(public.contains("list sessions"), "{public}");
    }
}
