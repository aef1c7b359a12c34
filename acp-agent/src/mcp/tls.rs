//! The HTTP client of `http` MCP servers (feature `mcp-http`): reqwest on rustls with ring
//! (no OpenSSL, no aws-lc), trusting the OS's roots and the PEM certificates of
//! [`McpConfig::root_certificates`](super::McpConfig::root_certificates), so `https://`
//! servers work, a private CA included. Given an [`McpPolicy`], the client connects only
//! to addresses the policy allows (checked after resolving: [`Checked`]) and follows a
//! redirect only to a URL the policy allows.

use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

use super::McpPolicy;

/// The most redirects followed for one request (reqwest's default).
const MAX_REDIRECTS: usize = 10;

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

/// A reqwest client trusting the OS's roots and the PEM certificates in `extra`, held to
/// `policy` when there is one; `Err` says which certificate is unusable.
pub(super) fn client(
    extra: &[Vec<u8>],
    policy: Option<&Arc<McpPolicy>>,
) -> Result<reqwest::Client, String> {
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
    let mut builder = reqwest::Client::builder().tls_backend_preconfigured(config);
    if let Some(policy) = policy {
        let checked = policy.clone();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error("too many redirects");
            }
            match checked.check_url_now(attempt.url().as_str()) {
                Ok(_) => attempt.follow(),
                Err(why) => {
                    let refused = format!("a redirect to {} is refused: {why}", attempt.url());
                    attempt.error(refused)
                }
            }
        });
        builder = builder
            .redirect(redirects)
            .dns_resolver(Arc::new(Checked(policy.clone())));
    }
    builder.build().map_err(|e| format!("HTTP client: {e}"))
}

/// The system's resolver, keeping only the addresses the policy lets the host connect to
/// ([`McpPolicy::connect_allowed`]): what a name resolves to when the client connects is
/// what counts, whatever it resolved to when the request was checked.
struct Checked(Arc<McpPolicy>);

impl reqwest::dns::Resolve for Checked {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed: Vec<_> = found
                .filter(|a| policy.connect_allowed(&host, a.ip()))
                .collect();
            if allowed.is_empty() {
                let why = format!("{host} resolves to no address the MCP policy allows");
                return Err(why.into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use reqwest::dns::{Name, Resolve};

    use super::*;

    #[tokio::test]
    async fn the_resolver_keeps_only_the_addresses_the_policy_allows() {
        // `localhost` resolves to loopback addresses only: none is left.
        let policy = Arc::new(McpPolicy::new());
        let refused = Checked(policy).resolve(Name::from_str("localhost").unwrap());
        let err = refused.await.err().expect("localhost refused");
        assert!(err.to_string().contains("localhost"), "{err}");
        // A host an allowed prefix names may resolve anywhere.
        let policy = McpPolicy::new().allow_url("http://localhost:1/").unwrap();
        let allowed = Checked(Arc::new(policy)).resolve(Name::from_str("localhost").unwrap());
        let addrs: Vec<_> = allowed.await.unwrap().collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
        assert!(!addrs.is_empty());
    }
}
