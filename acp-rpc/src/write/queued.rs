//! What the writer is handed: one message queued for the transport, serialized or to be
//! serialized into the writer's buffer.

use tokio::sync::oneshot;

use crate::message::RequestId;
use crate::write::reply::Reply;

/// One message queued for the writer.
pub(crate) enum Outgoing {
    /// A complete serialized message (no line end).
    Frame(Vec<u8>),
    /// A message not written as text: for a transport that takes messages as values (see
    /// [`crate::transport`]); any other gets its text. Boxed: every future that sends a
    /// message holds an `Outgoing`, and a message value is several times a frame's size.
    Message(Box<crate::message::Message>),
    /// A notification whose params are the sender's value
    /// ([`Peer::notify_value`](crate::Peer::notify_value)): handed on as it is to a
    /// transport that takes values, written as text for any other.
    Value {
        /// The method.
        method: &'static str,
        /// The params.
        params: crate::ParamsValue,
    },
    /// A successful response, its result written straight into the batch buffer (a large
    /// result gets no frame of its own): the envelope up to `"result":`, then the result
    /// (with any line break turned into a space), then `}`. A result that fails to serialize is answered with
    /// `-32603` instead.
    Response {
        /// The request's id (the envelope is written around the result in the writer's
        /// buffer, so an answer costs no buffer of its own).
        id: RequestId,
        /// The result.
        body: Reply,
    },
    /// A message whose sender wants to know when it is on the wire (see
    /// [`RequestContext::response_written`](crate::RequestContext::response_written)): each
    /// sender is told once the write that carries it has been flushed.
    Signalled(Box<Outgoing>, Vec<oneshot::Sender<()>>),
}

impl Outgoing {
    /// This message, with `written` told once it has been written and flushed (dropped
    /// unsent if it never is, so its receiver learns that too).
    pub(crate) fn signalled(self, written: Vec<oneshot::Sender<()>>) -> Outgoing {
        if written.is_empty() {
            self
        } else {
            Outgoing::Signalled(Box::new(self), written)
        }
    }
}

impl From<Vec<u8>> for Outgoing {
    fn from(frame: Vec<u8>) -> Self {
        Outgoing::Frame(frame)
    }
}
