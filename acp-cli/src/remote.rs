//! How the commands that reach a remote agent (`acp chat`, `acp sessions`, `acp check`) are
//! told how to: the options that go with `--url`, turned into acp-remote's
//! [`ConnectOptions`](acp_remote::ConnectOptions) in one place.

use std::path::PathBuf;

use clap::Args;

/// The options of `--url` (the URL itself stays on each command, which says what it
/// conflicts with).
#[derive(Args, Clone, Debug, Default)]
pub struct RemoteArgs {
    /// With --url: speak the WebSocket profile even for an http:// URL.
    #[arg(long, requires = "url")]
    pub ws: bool,
    /// With --url: the bearer token is the first line of this file (else `ACP_TOKEN`).
    #[arg(long, requires = "url")]
    pub token_file: Option<PathBuf>,
    /// With an https:// or wss:// URL: also trust the certificates in this PEM file (a
    /// private certificate authority, or the server's self-signed certificate). The
    /// system's root certificates stay trusted.
    #[arg(long, requires = "url", value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
}

impl RemoteArgs {
    /// The connection options these arguments name: the token (read from its file or
    /// `ACP_TOKEN`), the profile and the extra root certificates.
    pub fn connect_options(&self) -> Result<acp_remote::ConnectOptions, String> {
        let mut options = acp_remote::ConnectOptions::new();
        if let Some(token) = crate::serve::token(self.token_file.as_deref())? {
            options = options.token(token);
        }
        if self.ws {
            options = options.profile(acp_remote::Profile::WebSocket);
        }
        if let Some(file) = &self.ca_file {
            let pem =
                std::fs::read(file).map_err(|e| format!("--ca-file {}: {e}", file.display()))?;
            options = options.root_certificates_pem(pem);
        }
        Ok(options)
    }
}
