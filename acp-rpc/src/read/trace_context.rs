//! The trace context the reader takes off what it reads (feature `otel`, on a connection
//! that records spans).
//!
//! A peer of ours writes a message's trace context first in its params,
//! `{"_meta":{"traceparent":"…"},…}`. The reader reads it to parent the span that handles
//! the message, and then takes it off, so the handler does not build a `_meta` map for what
//! the engine has already used: that map (a boxed object with a key and a string) cost about
//! as much as the rest of what tracing adds to a streamed notification. A `_meta` with
//! anything else in it, or a `tracestate`, reaches the handler whole. The observer still
//! sees each line as it was read.

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};

use serde_json::value::RawValue;

use super::Reader;

/// The trace context taken off the message being read, if any.
#[cfg(feature = "otel")]
pub(crate) type Taken = Option<crate::observe::otel::Taken>;
/// The trace context taken off the message being read: never any without the feature.
#[cfg(not(feature = "otel"))]
pub(crate) type Taken = Option<std::convert::Infallible>;

impl Reader {
    /// Whether the reader takes trace contexts off what it reads: the connection records
    /// spans.
    pub(super) fn takes_trace_context(&self) -> bool {
        #[cfg(feature = "otel")]
        return self.shared.trace.recorder().is_some();
        #[cfg(not(feature = "otel"))]
        false
    }

    /// Takes the trace context off a line in place (see
    /// [`take_from_line`](crate::observe::otel::take_from_line)).
    pub(super) fn take_from_line(&self, line: &mut [u8]) -> Taken {
        #[cfg(feature = "otel")]
        if self.takes_trace_context() {
            return crate::observe::otel::take_from_line(line);
        }
        let _ = line;
        None
    }

    /// A frame its transport hands over, as a line the reader may edit: the frame itself when
    /// nothing else holds it; a copy when something does and there is a trace context to
    /// take off; else the frame back (`Err`), to be read as it is.
    pub(super) fn editable_frame(&self, frame: Bytes) -> Result<BytesMut, Bytes> {
        match frame.try_into_mut() {
            Ok(unique) => Ok(unique),
            #[cfg(feature = "otel")]
            Err(shared) if crate::observe::otel::would_take_from_line(&shared) => {
                Ok(BytesMut::from(&shared[..]))
            }
            Err(shared) => Err(shared),
        }
    }

    /// Takes the trace context off params held on their own, unless the line they came in
    /// had it taken already (`taken`).
    pub(super) fn take_from_params(
        &self,
        params: &mut Option<Box<RawValue>>,
        taken: Taken,
    ) -> Taken {
        #[cfg(feature = "otel")]
        if taken.is_none() && self.takes_trace_context() {
            return crate::observe::otel::take_from_params(params);
        }
        let _ = params;
        taken
    }
}

/// A notification's params with what the reader took off them skipped: from their new `{`
/// (`params` is the params' text in `line` as the envelope gave it, spaces first).
pub(super) fn params_after<'l>(line: &'l str, params: &'l str, taken: &Taken) -> &'l str {
    #[cfg(feature = "otel")]
    if let Some(taken) = taken {
        let start = params.as_ptr().addr() - line.as_ptr().addr();
        let end = start + params.len();
        if (start..end).contains(&taken.params_at) {
            return &line[taken.params_at..end];
        }
    }
    let _ = (line, taken);
    params
}

/// The line as it was read, for the observer: the member the reader took off put back.
pub(super) fn as_read<'l>(line: &'l [u8], taken: &Taken) -> Cow<'l, [u8]> {
    #[cfg(feature = "otel")]
    if let Some(taken) = taken {
        return Cow::Owned(taken.restore(line));
    }
    let _ = taken;
    Cow::Borrowed(line)
}
