//! One call's bookkeeping: the waiter the pending map holds for it (decoding its result
//! straight from the reader's line where it can), and the guard that withdraws it when the
//! caller stops waiting.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{CANCEL_METHOD, CancelParams};
use crate::error::Error;
use crate::message::{RequestId, write_notification};
use crate::observe::{self, MessageKind};
use crate::write::state::{Shared, Waiter, lock};

/// Removes the pending entry of an abandoned call and sends `$/cancel_request` for it.
pub(super) struct CallGuard<'a> {
    pub(super) shared: &'a Arc<Shared>,
    pub(super) id: i64,
    pub(super) armed: bool,
    pub(super) sent: bool,
    pub(super) cancel_on_drop: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let removed = lock(&self.shared.pending).map.remove(&self.id).is_some();
        let shared = self.shared;
        if !(removed
            && self.sent
            && self.cancel_on_drop
            && shared.config.framing.notifications
            && !shared.is_closed())
        {
            return;
        }
        let mut buf = Vec::with_capacity(64);
        let params = CancelParams {
            request_id: RequestId::Int(self.id),
        };
        if write_notification(&mut buf, &shared.config.framing, CANCEL_METHOD, &params).is_err() {
            return;
        }
        tracing::debug!(id = self.id, "request abandoned: sending {CANCEL_METHOD}");
        let kind = MessageKind::Notification;
        observe::sent(
            shared.config.observer.as_ref(),
            kind,
            Some(CANCEL_METHOD),
            None,
            &buf,
        );
        match shared.out_tx.try_send(buf.into()) {
            Ok(()) => {}
            Err(tokio::sync::mpsc::error::TrySendError::Full(buf)) => {
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    let shared = shared.clone();
                    handle.spawn(async move {
                        let _ = shared.send(buf).await;
                    });
                }
            }
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// What the reader sends the caller: the decoded result (or the panic `decode` raised), or
/// the error the peer answered with.
pub(super) type Outcome<T, E> = Result<std::thread::Result<Result<T, E>>, Error>;

/// The caller of [`Peer::call`] as the pending map holds it: where its outcome goes, and how
/// its result type is read.
pub(super) struct CallWaiter<T, E> {
    /// `None` once the outcome has been sent.
    pub(super) tx: Option<oneshot::Sender<Outcome<T, E>>>,
    pub(super) decode: fn(&str) -> Result<T, E>,
}

impl<T: Send + 'static, E: Send + 'static> Waiter for CallWaiter<T, E> {
    fn try_unvalidated(&mut self, result: &str) -> bool {
        // A caller that is gone, a decode error and a panic all take the ordinary path: it
        // validates the line (malformed JSON must still be answered) and delivers, once.
        if self.tx.as_ref().is_none_or(oneshot::Sender::is_closed) {
            return false;
        }
        let decode = self.decode;
        match std::panic::catch_unwind(AssertUnwindSafe(|| decode(result))) {
            Ok(Ok(value)) => {
                if let Some(tx) = self.tx.take() {
                    let _ = tx.send(Ok(Ok(Ok(value))));
                }
                true
            }
            Ok(Err(_)) | Err(_) => false,
        }
    }

    fn deliver(mut self: Box<Self>, result: Result<&RawValue, Error>) {
        let Some(tx) = self.tx.take() else { return };
        if tx.is_closed() {
            return; // the caller is gone: nothing to read the result for
        }
        let decode = self.decode;
        let decoded =
            result.map(|raw| std::panic::catch_unwind(AssertUnwindSafe(|| decode(raw.get()))));
        let _ = tx.send(decoded);
    }
}

/// The raw result, copied out of the reader's line (what [`Peer::request_raw`] returns).
/// Validates text that has not been (see [`Waiter::try_unvalidated`]).
pub(super) fn copy_raw(text: &str) -> Result<Box<RawValue>, serde_json::Error> {
    RawValue::from_string(text.to_owned())
}

/// The result read as `R` (the error still needs the method's name; see
/// [`Peer::request_with`]).
pub(super) fn decode_value<R: DeserializeOwned>(text: &str) -> Result<R, Error> {
    crate::params::deserialize_params::<R>(text)
}
