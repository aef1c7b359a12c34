//! Typed calls: methods bound to their params and result types by `acp-types`
//! ([`RequestMethod`]), so a caller names a params value and gets the method's result type.

use acp_types::{NotificationMethod, RequestMethod};

use crate::{CallOptions, Error, Params, Peer};

impl Peer {
    /// Sends the request `P` is bound to (its wire name is `P::METHOD`) and reads the typed
    /// result, honouring the method's "a `null` result reads as the default" rule. A result
    /// that does not fit is `-32603` naming the method.
    pub async fn typed_request<P: RequestMethod>(&self, params: &P) -> Result<P::Response, Error>
    where
        P::Response: Send + 'static,
    {
        self.typed_request_with(params, CallOptions::default())
            .await
    }

    /// [`Peer::typed_request`] with per-call options (timeout, cancel on drop).
    pub async fn typed_request_with<P: RequestMethod>(
        &self,
        params: &P,
        options: CallOptions,
    ) -> Result<P::Response, Error>
    where
        P::Response: Send + 'static,
    {
        let decoded = self
            .request_decoded(P::METHOD, params, options, decode_response::<P>)
            .await?;
        decoded.map_err(|e| undecoded::<P>(&e))
    }
}

impl Params {
    /// Reads these params as the request `P`, honouring the method's "`null` params read as
    /// the default" rule (absent params count as `null`). `-32602` names the field.
    pub fn parse_request<P: RequestMethod>(&self) -> Result<P, Error> {
        self.parse_or_default(P::PARAMS_NULL_AS_DEFAULT)
    }

    /// Reads these params as the notification `P`, with the same rule as
    /// [`Params::parse_request`].
    pub fn parse_notification<P: NotificationMethod>(&self) -> Result<P, Error> {
        self.parse_or_default(P::PARAMS_NULL_AS_DEFAULT)
    }

    /// The one place that says what "`null` params read as the default" means.
    fn parse_or_default<P: serde::de::DeserializeOwned>(
        &self,
        null_as_default: bool,
    ) -> Result<P, Error> {
        if null_as_default && self.raw().is_none_or(|r| r.get().trim() == "null") {
            crate::deserialize_params("{}")
        } else {
            self.parse()
        }
    }
}

/// The error of a result that does not fit `P`'s response type: `-32603` naming the method.
pub(super) fn undecoded<P: RequestMethod>(e: &serde_json::Error) -> Error {
    Error::internal_error(format!(
        "response to {} did not deserialize: {e}",
        P::METHOD
    ))
}

/// Reads `P`'s result where the reader received it.
pub(super) fn decode_response<P: RequestMethod>(text: &str) -> serde_json::Result<P::Response> {
    P::decode_response(text)
}
