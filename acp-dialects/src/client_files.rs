//! Where a legacy agent's file calls go when a v1 client drives it, for every dialect: to
//! the v1 client for what it advertised in `initialize`, else to
//! [`crate::AdapterOptions::fs`], else refused with the dialect's error saying why.

use std::sync::{Arc, OnceLock};

use acp_rpc::{Error, Peer};
use acp_types::v1;

use crate::{AdapterOptions, LocalFiles};

/// The file access behind a translation for a v1 client.
pub(crate) struct ClientFiles {
    /// What the v1 client advertised in `initialize`.
    advertised: OnceLock<v1::FileSystemCapabilities>,
    fs: Option<Arc<dyn LocalFiles>>,
    /// The dialect's error for a call of `method` that neither serves.
    refusal: fn(&str) -> Error,
}

impl ClientFiles {
    pub(crate) fn new(options: &AdapterOptions, refusal: fn(&str) -> Error) -> Self {
        ClientFiles {
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
        self.fs.as_deref().ok_or_else(|| (self.refusal)(method))
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
