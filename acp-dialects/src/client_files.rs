//! Where a legacy agent's file calls go when a v1 client drives it, for every dialect: to
//! the v1 client for what it advertised in `initialize`, else to
//! [`crate::AdapterOptions::fs`], else refused with `-32601` saying why.

use std::sync::{Arc, OnceLock};

use acp_rpc::{Error, Peer};
use acp_types::v1;

use crate::{AdapterOptions, Dialect, LocalFiles, refused};

/// The file access behind a translation for a v1 client.
pub(crate) struct ClientFiles {
    dialect: Dialect,
    /// What the v1 client advertised in `initialize`.
    advertised: OnceLock<v1::FileSystemCapabilities>,
    fs: Option<Arc<dyn LocalFiles>>,
    /// Why a call is refused when neither serves it (after `<method>: `).
    refusal: &'static str,
}

impl ClientFiles {
    pub(crate) fn new(dialect: Dialect, options: &AdapterOptions, refusal: &'static str) -> Self {
        ClientFiles {
            dialect,
            advertised: OnceLock::new(),
            fs: options.fs.clone(),
            refusal,
        }
    }

    /// Records what the client advertised (the first `initialize` counts).
    pub(crate) fn advertise(&self, capabilities: &v1::ClientCapabilities) {
        let _ = self.advertised.set(capabilities.fs.clone());
    }

    fn advertised(&self) -> v1::FileSystemCapabilities {
        self.advertised.get().cloned().unwrap_or_default()
    }

    /// The local file access, for `method`, which the v1 client does not serve.
    pub(crate) fn local(&self, method: &str) -> Result<&dyn LocalFiles, Error> {
        self.fs
            .as_deref()
            .ok_or_else(|| refused(self.dialect, method, self.refusal))
    }

    /// `fs/read_text_file` on the client when it advertised it, else locally.
    pub(crate) async fn read_text_file(
        &self,
        client: &Peer,
        method: &str,
        request: v1::ReadTextFileRequest,
    ) -> Result<v1::ReadTextFileResponse, Error> {
        if self.advertised().read_text_file {
            client.typed_request(&request).await
        } else {
            self.local(method)?.read_text_file(request).await
        }
    }

    /// `fs/write_text_file` on the client when it advertised it, else locally.
    pub(crate) async fn write_text_file(
        &self,
        client: &Peer,
        method: &str,
        request: v1::WriteTextFileRequest,
    ) -> Result<(), Error> {
        if self.advertised().write_text_file {
            client.typed_request(&request).await.map(|_| ())
        } else {
            self.local(method)?
                .write_text_file(request)
                .await
                .map(|_| ())
        }
    }
}
