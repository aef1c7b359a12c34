//! The byte stream under both profiles: TCP for `http://` and `ws://`, TLS over TCP (rustls,
//! feature `tls`) for `https://` and `wss://`.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::Remote;
use crate::Error;

/// A connected stream to the server, plain or encrypted.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// Connects to the server of `remote` (and makes the TLS handshake for a secure URL).
pub(crate) async fn open(remote: &Remote) -> Result<Box<dyn Io>, Error> {
    let target = &remote.target;
    let tcp = TcpStream::connect(&target.authority)
        .await
        .map_err(Error::Io)?;
    let _ = tcp.set_nodelay(true);
    if !target.secure {
        return Ok(Box::new(tcp));
    }
    secure(remote, tcp).await
}

#[cfg(feature = "tls")]
async fn secure(remote: &Remote, tcp: TcpStream) -> Result<Box<dyn Io>, Error> {
    let config = remote
        .tls
        .clone()
        .ok_or_else(|| Error::Config("no TLS configuration for a secure URL".into()))?;
    let name = tls::server_name(&remote.target.host)?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| {
            Error::Io(std::io::Error::new(
                e.kind(),
                format!("TLS with {}: {e}", remote.target.host),
            ))
        })?;
    Ok(Box::new(stream))
}

#[cfg(not(feature = "tls"))]
async fn secure(_: &Remote, _: TcpStream) -> Result<Box<dyn Io>, Error> {
    Err(Error::Config(
        "https:// and wss:// need acp-remote's `tls` feature".into(),
    ))
}

/// The client's TLS configuration: rustls on ring, the OS's root certificates (read once)
/// plus the ones the application adds, HTTP/1.1 over ALPN.
#[cfg(feature = "tls")]
pub(crate) mod tls {
    use std::sync::{Arc, OnceLock};

    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore};

    use crate::Error;

    /// The OS's trusted roots, loaded on first use (reading the certificate store is slow).
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

    /// A configuration trusting the OS's roots and the PEM certificates in `extra`.
    pub(crate) fn config(extra: &[Vec<u8>]) -> Result<Arc<ClientConfig>, Error> {
        let mut roots = RootCertStore::empty();
        let (_, unusable) = roots.add_parsable_certificates(native_roots().iter().cloned());
        if unusable > 0 {
            tracing::debug!(unusable, "root certificates of the OS rustls cannot use");
        }
        for pem in extra {
            let mut added = 0;
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| {
                    Error::Config(format!("a root certificate is not readable PEM: {e}"))
                })?;
                roots
                    .add(cert)
                    .map_err(|e| Error::Config(format!("a root certificate is refused: {e}")))?;
                added += 1;
            }
            if added == 0 {
                return Err(Error::Config(
                    "the root certificate file holds no PEM certificate".into(),
                ));
            }
        }
        if roots.is_empty() {
            return Err(Error::Config(
                "no trusted root certificate: the OS has none rustls can read; give one \
                 (ConnectOptions::root_certificates_pem, `acp --ca-file`)"
                    .into(),
            ));
        }
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The name the server's certificate must carry: a DNS name or an IP address (an IPv6
    /// address without its brackets).
    pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, Error> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        ServerName::try_from(host.to_owned())
            .map_err(|e| Error::Config(format!("`{host}` is not a name TLS can check: {e}")))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_file_without_certificates_is_refused_with_a_reason() {
            let error = config(&[b"not a certificate".to_vec()]).unwrap_err();
            assert!(error.to_string().contains("no PEM certificate"), "{error}");
        }

        #[test]
        fn hosts_become_the_names_certificates_carry() {
            assert!(matches!(
                server_name("[::1]").unwrap(),
                ServerName::IpAddress(_)
            ));
            assert!(matches!(
                server_name("agents.example.com").unwrap(),
                ServerName::DnsName(_)
            ));
        }
    }
}
