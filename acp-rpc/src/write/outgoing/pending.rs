//! Requests sent ahead of their answers: [`Peer::send_typed_request`] returns once the
//! request is queued for the peer, so a caller can send many in order and await their
//! answers later (a pipeline), where [`Peer::typed_request`] waits for each answer before
//! the caller can send the next.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use acp_types::RequestMethod;

use super::typed::decode_response;
use crate::{CallOptions, Error, Peer};

/// A request already sent whose answer has not been awaited yet (see
/// [`Peer::send_typed_request`]). Awaiting it gives the answer, exactly as the call that
/// waits would have; the call's timeout counts from when it was sent. Dropping it before
/// the answer abandons the call as dropping a request's future does (its pending entry is
/// withdrawn, and `$/cancel_request` is sent unless cancel-on-drop is off).
#[must_use = "dropping it abandons the call"]
pub struct PendingResponse<R> {
    answer: Pin<Box<dyn Future<Output = Result<R, Error>> + Send>>,
}

impl<R> PendingResponse<R> {
    pub(super) fn new(answer: impl Future<Output = Result<R, Error>> + Send + 'static) -> Self {
        PendingResponse {
            answer: Box::pin(answer),
        }
    }
}

impl<R> Future for PendingResponse<R> {
    type Output = Result<R, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.answer.as_mut().poll(cx)
    }
}

impl<R> fmt::Debug for PendingResponse<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingResponse").finish_non_exhaustive()
    }
}

impl Peer {
    /// Sends the request `P` is bound to and returns as soon as it is queued for the peer,
    /// before its answer: the [`PendingResponse`] gives the answer when awaited, as
    /// [`Peer::typed_request`] would have.
    ///
    /// Requests sent this way one after another leave in the order sent, and the caller
    /// need not wait a round trip between them: a translation that turns a stream of
    /// notifications into requests keeps a window of them in flight, as the 0.0.9
    /// dialect's `streamAssistantMessageChunk` does. Waiting for room in the outgoing queue
    /// and for one of [`Config::max_pending_requests`](crate::Config::max_pending_requests)
    /// happens here, so the window is bounded by the engine too.
    pub async fn send_typed_request<P: RequestMethod>(
        &self,
        params: &P,
    ) -> Result<PendingResponse<P::Response>, Error>
    where
        P::Response: Send + 'static,
    {
        self.send_typed_request_with(params, CallOptions::default())
            .await
    }

    /// [`Peer::send_typed_request`] with per-call options (timeout, cancel on drop).
    pub async fn send_typed_request_with<P: RequestMethod>(
        &self,
        params: &P,
        options: CallOptions,
    ) -> Result<PendingResponse<P::Response>, Error>
    where
        P::Response: Send + 'static,
    {
        self.send_decoded(
            P::METHOD,
            params,
            options,
            decode_response::<P>,
            |decoded| decoded.map_err(|e| super::typed::undecoded::<P>(&e)),
        )
        .await
    }
}

#[cfg(test)]
mod tests;
