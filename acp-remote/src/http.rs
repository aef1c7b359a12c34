//! The HTTP response bodies both the server and the live dashboard answer with: the one body
//! type, an SSE body fed by a channel, a plain-text answer. (Kept apart from the server so
//! that the dashboard, which the server serves, does not import the server back.)

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

/// The response body type of every answer.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// An SSE response body fed by a channel (the server's stream pump, the dashboard's
/// events); dropped by hyper when the client goes away, which ends its feeder.
pub(crate) struct SseBody(pub(crate) mpsc::Receiver<Bytes>);

impl hyper::body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b))))
    }
}

/// A plain-text answer.
pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *response.status_mut() = status;
    if !body.is_empty() {
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
    }
    response
}
