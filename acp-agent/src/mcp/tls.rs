//! The HTTP client of `http` MCP servers (feature `mcp-http`): reqwest on rustls with ring
//! (no OpenSSL, no aws-lc), trusting the OS's roots and the PEM certificates of
//! [`McpConfig::root_certificates`](super::McpConfig::root_certificates), so `https://`
//! servers work, a private CA included.

use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

/// The OS's trusted roots, read once (reading the certificate store is slow).
fn native_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for error in &found.errors {
            tracing::debug!(%error, "a root certificate of the OS could not be read");
        }
        found.certs
    })
}

/// A reqwest client trusting the OS's roots and the PEM certificates in `extra`; `Err` says
/// which certificate is unusable.
pub(super) fn client(extra: &[Vec<u8>]) -> Result<reqwest::Client, String> {
    let mut roots = RootCertStore::empty();
    let (_, unusable) = roots.add_parsable_certificates(native_roots().iter().cloned());
    if unusable > 0 {
        tracing::debug!(unusable, "root certificates of the OS rustls cannot use");
    }
    for pem in extra {
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("a root certificate is not readable PEM: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("a root certificate is refused: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err("a root certificate entry holds no PEM certificate".into());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // reqwest is built without HTTP/2 here.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}
