//! Downloads: the registry document and binary archives, over HTTPS (reqwest on rustls with
//! ring, the OS's roots), or plain HTTP to a loopback address (tests, a local mirror).
//! Every redirect is held to the same rule, sizes are capped, and an archive is hashed
//! (SHA-256) as it is written.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::RegistryError;

/// The largest archive downloaded (the official registry's largest is under 200 MB).
pub const MAX_ARCHIVE_BYTES: u64 = 1 << 30;

/// How long a download may go without receiving a byte.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// Checks that `url` may be fetched: `https://`, or `http://` to a loopback address
/// (`127.0.0.0/8`, `[::1]`, `localhost`); anything else is refused with the reason.
pub fn check_url(url: &str) -> Result<reqwest::Url, RegistryError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| RegistryError::Url(format!("{url}: not a URL ({e})")))?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if is_loopback(&parsed) => Ok(parsed),
        "http" => Err(RegistryError::Url(format!(
            "{url}: plain http is refused (only https, or http to a loopback address)"
        ))),
        other => Err(RegistryError::Url(format!(
            "{url}: the {other}: scheme is refused (only https)"
        ))),
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

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

/// An HTTP client for the registry and its archives.
#[derive(Clone, Debug)]
pub struct Fetcher {
    client: reqwest::Client,
}

impl Fetcher {
    /// A client trusting the OS's root certificates.
    pub fn new() -> Result<Fetcher, RegistryError> {
        let mut roots = RootCertStore::empty();
        let _ = roots.add_parsable_certificates(native_roots().iter().cloned());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| RegistryError::Http(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error("too many redirects");
            }
            match check_url(attempt.url().as_str()) {
                Ok(_) => attempt.follow(),
                Err(why) => {
                    let refused = format!("a redirect is refused: {why}");
                    attempt.error(refused)
                }
            }
        });
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(config)
            .redirect(redirects)
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("acp-rs/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RegistryError::Http(format!("HTTP client: {e}")))?;
        Ok(Fetcher { client })
    }

    async fn get(&self, url: &str) -> Result<reqwest::Response, RegistryError> {
        let checked = check_url(url)?;
        let response = self
            .client
            .get(checked)
            .send()
            .await
            .map_err(|e| RegistryError::Http(format!("{url}: {}", chain(&e))))?;
        if !response.status().is_success() {
            return Err(RegistryError::Http(format!(
                "{url}: the server answered {}",
                response.status()
            )));
        }
        Ok(response)
    }

    /// The bytes of a registry document at `url` (at most
    /// [`MAX_DOCUMENT_BYTES`](super::MAX_DOCUMENT_BYTES)); parse them with
    /// [`Registry::from_json`](super::Registry::from_json).
    pub async fn document(&self, url: &str) -> Result<Vec<u8>, RegistryError> {
        let mut response = self.get(url).await?;
        let limit = super::MAX_DOCUMENT_BYTES;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| RegistryError::Http(format!("{url}: cut off: {}", chain(&e))))?
        {
            if body.len() + chunk.len() > limit {
                return Err(RegistryError::Http(format!("{url}: over {limit} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Downloads `url` into `file`, returning its size and SHA-256 (hex). A response cut
    /// off before its announced length is an error.
    pub(super) async fn to_file(
        &self,
        url: &str,
        file: &mut tokio::fs::File,
    ) -> Result<(u64, String), RegistryError> {
        let mut response = self.get(url).await?;
        if let Some(length) = response.content_length()
            && length > MAX_ARCHIVE_BYTES
        {
            return Err(RegistryError::Http(format!(
                "{url}: {length} bytes, over the {MAX_ARCHIVE_BYTES} downloaded"
            )));
        }
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            RegistryError::Http(format!(
                "{url}: the download stopped after {size} bytes: {}",
                chain(&e)
            ))
        })? {
            size += chunk.len() as u64;
            if size > MAX_ARCHIVE_BYTES {
                return Err(RegistryError::Http(format!(
                    "{url}: over the {MAX_ARCHIVE_BYTES} bytes downloaded"
                )));
            }
            hasher.update(&chunk);
            file.write_all(&chunk)
                .await
                .map_err(|e| RegistryError::Io(format!("writing the download: {e}")))?;
        }
        file.flush()
            .await
            .map_err(|e| RegistryError::Io(format!("writing the download: {e}")))?;
        Ok((size, hex(&hasher.finalize())))
    }
}

/// An error with its sources, so "error sending request" says why.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let line = s.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = s.source();
    }
    text
}

/// Lower-case hex of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (hex) of `bytes`.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_and_loopback_http_are_fetched() {
        for ok in [
            "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json",
            "http://127.0.0.1:8080/r.json",
            "http://127.1.2.3/r.json",
            "http://[::1]:9/r.json",
            "http://localhost:9/r.json",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("http://example.com/r.json", "plain http"),
            ("http://10.0.0.1/r.json", "plain http"),
            ("ftp://127.0.0.1/r.json", "ftp"),
            ("file:///etc/passwd", "file"),
            ("not a url", "not a URL"),
        ] {
            let e = check_url(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
