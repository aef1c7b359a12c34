//! JSON-RPC 2.0 batches, answered on a connection whose [`Framing::batches`] is set (draft
//! protocol v2's; v1 and the legacy dialects refuse a batch with one `-32600`, as the
//! official SDKs do).
//!
//! A batch is one line holding a JSON array of messages. It is answered as JSON-RPC 2.0
//! says: its elements are handled as if they had come one per line, in array order (a
//! notification or a response in it is delivered as usual), and the answers to its requests
//! leave together, as one array on one line, once every one of them is answered. An
//! element that is not a message gets its own error in the array (`id: null`, or the
//! request's id where it has one); a batch of only notifications and responses is answered
//! with nothing at all. A line that is not JSON gets one `-32700`, an empty array one
//! `-32600`, and an array of more than the bound's elements one `-32600` that names both
//! counts: none of its elements is handled (and none is kept in memory while it is
//! counted). This crate never sends a batch.
//!
//! Memory: the line is bounded by [`Config::max_message_size`](crate::Config) as any line
//! is; its elements are borrowed from it; the answers of a batch wait in its collector
//! until the last one, so one batch holds at most [`Framing::batches`] answers. Each request
//! of a batch is admitted like a lone request
//! ([`Config::max_unanswered_requests`](crate::Config)).
//!
//! [`Framing::batches`]: crate::Framing::batches

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::error::Error;
use crate::message::{RequestId, write_response};
use crate::observe::MessageKind;
use crate::write::queued::Outgoing;
use crate::write::reply::Reply;
use crate::write::state::{Shared, lock};

/// Whether a line is a batch: its first non-blank character opens an array.
pub(crate) fn is_batch(line: &str) -> bool {
    line.bytes().find(|b| !b.is_ascii_whitespace()) == Some(b'[')
}

/// The elements of a batch, borrowed from its line, or why it is answered with one error.
pub(crate) fn split(line: &str, max: usize) -> Result<Vec<&RawValue>, Error> {
    let elements = Elements { max };
    let mut de = serde_json::Deserializer::from_str(line);
    let counted = elements
        .deserialize(&mut de)
        .and_then(|counted| de.end().map(|()| counted))
        .map_err(|e| Error::parse_error(format!("parse error: {e}")))?;
    match counted {
        (_, 0) => Err(Error::invalid_request("empty batch")),
        (_, total) if total > max => Err(Error::invalid_request(format!(
            "batch of {total} messages exceeds the maximum of {max}"
        ))),
        (items, _) => Ok(items),
    }
}

/// Reads an array: its first `max` elements borrowed, the rest only counted (skipped, so a
/// long batch of small elements costs no memory per element).
struct Elements {
    max: usize,
}

impl<'de> DeserializeSeed<'de> for Elements {
    type Value = (Vec<&'de RawValue>, usize);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Elements {
    type Value = (Vec<&'de RawValue>, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        let mut total = 0usize;
        loop {
            if items.len() < self.max {
                match seq.next_element::<&'de RawValue>()? {
                    Some(item) => items.push(item),
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            total += 1;
        }
        Ok((items, total))
    }
}

/// The answers of one batch, gathered until the last of its requests is answered and then
/// queued as one array.
pub(crate) struct Batch {
    shared: Arc<Shared>,
    parts: Mutex<Parts>,
}

#[derive(Default)]
struct Parts {
    /// The answers so far, as `,`-separated response objects (no brackets yet).
    array: Vec<u8>,
    /// Requests of the batch whose handlers have not answered yet.
    outstanding: usize,
    /// Every element has been read: the last answer sends the array.
    sealed: bool,
    /// Told once the array is written (see `RequestContext::response_written`).
    written: Vec<oneshot::Sender<()>>,
}

/// One request of a batch: its handler's answer goes into the batch instead of the writer's
/// queue. Dropped without an answer (the connection ended), it stops being waited for.
pub(crate) struct Member {
    batch: Option<Arc<Batch>>,
}

impl Batch {
    pub(crate) fn new(shared: Arc<Shared>) -> Arc<Batch> {
        Arc::new(Batch {
            shared,
            parts: Mutex::new(Parts::default()),
        })
    }

    /// A request of the batch, to be answered through [`Member::answer`].
    pub(crate) fn member(self: &Arc<Self>) -> Member {
        lock(&self.parts).outstanding += 1;
        Member {
            batch: Some(self.clone()),
        }
    }

    /// Adds one serialized response.
    pub(crate) fn add(&self, response: &[u8]) {
        crate::observe::sent(
            self.shared.config.observer.as_ref(),
            MessageKind::Response,
            None,
            None,
            response,
        );
        let mut parts = lock(&self.parts);
        if !parts.array.is_empty() {
            parts.array.push(b',');
        }
        parts.array.extend_from_slice(response);
    }

    /// The array, when the batch is complete (sealed, nothing outstanding) and has answers.
    fn take_if_complete(parts: &mut Parts) -> Option<Outgoing> {
        if !parts.sealed || parts.outstanding > 0 || parts.array.is_empty() {
            return None;
        }
        let mut frame = Vec::with_capacity(parts.array.len() + 2);
        frame.push(b'[');
        frame.append(&mut parts.array);
        frame.push(b']');
        Some(Outgoing::Frame(frame).signalled(std::mem::take(&mut parts.written)))
    }

    /// Marks the batch as having all its elements handed on, and sends its answers if
    /// every one of them is in.
    pub(crate) async fn seal(&self) {
        lock(&self.parts).sealed = true;
        self.send_if_complete().await;
    }

    async fn send_if_complete(&self) {
        let frame = Self::take_if_complete(&mut lock(&self.parts));
        if let Some(frame) = frame {
            let _ = self.shared.send(frame).await;
        }
    }
}

impl Member {
    /// Adds the request's answer to its batch and, if it was the last one awaited, queues
    /// the batch's array.
    pub(crate) async fn answer(
        mut self,
        id: &RequestId,
        result: Result<Reply, Error>,
        written: Vec<oneshot::Sender<()>>,
    ) {
        let Some(batch) = self.batch.take() else {
            return;
        };
        let result = result.and_then(Reply::into_raw);
        let mut buf = Vec::with_capacity(128);
        write_response(&mut buf, &batch.shared.config.framing, Some(id), &result);
        batch.add(&buf);
        {
            let mut parts = lock(&batch.parts);
            parts.written.extend(written);
            parts.outstanding -= 1;
        }
        batch.send_if_complete().await;
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if let Some(batch) = self.batch.take() {
            lock(&batch.parts).outstanding -= 1;
            tracing::debug!("a request of a batch ended unanswered (the connection ended)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_batch_splits_into_its_elements_as_written() {
        let items = split(r#" [ {"a":1}, 2 ,"x"] "#, 8).unwrap();
        let texts: Vec<&str> = items.iter().map(|r| r.get()).collect();
        assert_eq!(texts, [r#"{"a":1}"#, "2", r#""x""#]);
    }

    #[test]
    fn an_empty_too_long_or_broken_batch_is_one_error() {
        assert_eq!(split("[]", 8).unwrap_err().code.0, -32600);
        let long = format!("[{}1]", "1,".repeat(20));
        let error = split(&long, 8).unwrap_err();
        assert_eq!(error.code.0, -32600);
        assert_eq!(
            error.message,
            "batch of 21 messages exceeds the maximum of 8"
        );
        assert_eq!(split("[1,", 8).unwrap_err().code.0, -32700);
        assert_eq!(split("[1] x", 8).unwrap_err().code.0, -32700);
        // A syntax error past the bound is still a parse error.
        let broken = format!("[{}}}]", "1,".repeat(20));
        assert_eq!(split(&broken, 8).unwrap_err().code.0, -32700);
    }
}
