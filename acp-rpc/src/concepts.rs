//! How the engine behaves (documentation only).
//!
//! # Framing
//!
//! One JSON-RPC message per line (`\n`; a trailing `\r` is stripped). A leading UTF-8 BOM
//! is skipped, blank lines are skipped. The reader reads an ordinary line where it lies in
//! its buffer and leaves every other case to the [`LineCodec`](crate::LineCodec), which
//! turns bytes into [`Frame`](crate::Frame)s; the writer writes one line per message.
//! Dispatch works on whole messages, whatever carried them. Output is compact JSON; raw
//! values returned by handlers have any (whitespace) line break replaced by a space so they
//! cannot break framing. The writer drains every message that is ready into one reused
//! buffer and flushes once per batch.
//!
//! Each line is parsed once into an envelope; `params` stay [`RawValue`](crate::RawValue)s
//! until the handler knows their type, and a response's `result` is parsed into the caller's
//! type where it lies in the line. A handler that receives streams of one notification can
//! skip the envelope pass: [`Handler::start_notification`](crate::Handler::start_notification)
//! is offered notifications written the usual way (`{"jsonrpc":"2.0","method":...,"params":...}`)
//! and parses their params straight from the line, which validates it; anything it does not
//! parse goes the ordinary way.
//!
//! # Transports
//!
//! Lines are one [`transport`](crate::transport); the engine reads and writes whole
//! messages, and the in-memory pair and the frame adapter hand it one message per frame
//! with no line framing at all (a frame is read as a line is, from the envelope on).
//! **Every guarantee on this page holds on every transport**: the message size limit (a
//! frame over it is answered and skipped like an over-long line), the ordering, the
//! observer (told of each line and each message once, in the same words), backpressure
//! and the write stall timeout (the frame channels are bounded like a pipe, and a
//! [`FrameSink`](crate::transport::FrameSink) the engine writes to holds it back the same
//! way), and the end of input (the other side dropping its sender, or a
//! [`FrameSource`](crate::transport::FrameSource) ending, is EOF).
//! `tests/transport_conformance.rs` runs the same checks on all three, the frame adapter
//! with channels and with a carrier the engine drives itself. One exception, by design: a notification one engine
//! hands another in the same process as a value
//! ([`Peer::notify_value`](crate::Peer::notify_value) over a memory pair) is not measured
//! against the size limit, as it is never read from anywhere; it is written as text, and
//! then measured, as soon as a handler, an observer or a log needs the text.
//!
//! # Observing
//!
//! A connection has one observer slot,
//! [`Config::observer`](crate::Config::observer): an [`Observer`](crate::Observer), or
//! several as one ([`Observers`](crate::Observers); each
//! [`Config::with_observer`](crate::Config::with_observer) adds one). It is told every raw
//! line as it crossed the wire, every message and every finished request, by the reader
//! and the writer as they pass them; a wire trace
//! ([`tap::recorder`](crate::tap::recorder)), a channel of lines and metrics are all
//! observers. Message-flow logging ([`flow`](crate::flow), `tracing`) is built in beside
//! it and always on (cheap when its level is off). Without an observer the engine pays one
//! `Option` check per line, message and request.
//!
//! # Ids and directions
//!
//! Each side numbers its own requests, so the same id may travel both ways: a line with
//! `"method"` is an incoming request (with `"id"`) or notification (without), any other
//! object is a response to one of *our* requests. Our ids are integers from a
//! per-connection counter starting at 1. Incoming ids (integer or string) are echoed
//! exactly; `null` appears only in error replies to lines we could not attribute.
//!
//! # Concurrency
//!
//! * Incoming requests each run on their own task, concurrently, at most
//!   [`Config::max_concurrent_handlers`](crate::Config::max_concurrent_handlers) at once;
//!   the rest wait for a slot *without* stopping the reader, so responses to the handlers'
//!   own requests keep arriving (a handler may await a request to the peer while the peer
//!   does the same: no deadlock). Responses are written as soon as they are ready, in any
//!   order. Waiting requests are held in memory (each is a small task plus its params),
//!   at most [`Config::max_unanswered_requests`](crate::Config::max_unanswered_requests) of
//!   them (see *Limits and backpressure*).
//! * Notifications are handled one at a time, in arrival order. When every earlier
//!   notification is handled, a notification's handler is first polled by the reader itself:
//!   one that finishes without waiting (most do) costs no hop and no wake-up. One that waits,
//!   and every notification read while one waits, goes to the notification worker task,
//!   which runs each to its end before the next.
//! * Our own requests: [`Peer::request`](crate::Peer::request) waits for the answer;
//!   [`Peer::send_typed_request`](crate::Peer::send_typed_request) returns once the request
//!   is queued, in order with everything sent before it, and its
//!   [`PendingResponse`](crate::PendingResponse) gives the answer later. A caller that turns
//!   a stream into requests (the legacy dialects' chunks) keeps a window of them in flight
//!   instead of waiting a round trip for each; at most
//!   [`Config::max_pending_requests`](crate::Config::max_pending_requests) of ours await
//!   answers at once, on either form.
//!
//! # Ordering
//!
//! The engine keeps order itself, on every transport; nothing above it need read wire
//! lines to keep it (an observer's lines are for logging and tracing). Four guarantees:
//!
//! 1. **Notifications before answers.** The response to one of our requests is delivered
//!    to its caller only after the handlers of all notifications that arrived *before* it
//!    have completed. So a client has processed every `session/update` of a prompt before
//!    the prompt's result returns. Implementation: responses that arrive while
//!    notifications are still queued go through the same FIFO as the notifications; when
//!    the worker is idle they are delivered directly by the reader.
//! 2. **Notifications before requests, where the handler asks.** A request whose method
//!    [`Handler::waits_for_earlier_notifications`](crate::Handler::waits_for_earlier_notifications)
//!    names reaches its handler only after every notification read before it has been
//!    handled: ACP's `session/request_permission` about a tool call comes after the
//!    `session/update` that announced the call (acp-client orders every request an agent
//!    sends). The wait has no timeout and counts no lines: it ends when the notification
//!    worker has handled those notifications (or the request is cancelled). Other requests
//!    start at once; a handler can still wait by hand with
//!    [`RequestContext::notifications_handled`](crate::RequestContext::notifications_handled).
//! 3. **A handler learns when its response is on the wire.**
//!    [`RequestContext::response_written`](crate::RequestContext::response_written) resolves
//!    once the response has been written to the transport and flushed (or fails when the
//!    connection ends first). ACP's agent holds a new session's updates until its
//!    `session/new` answer is out this way.
//! 4. **Nothing overtakes a written response.** Every message leaves through one writer in
//!    the order it was sent (queued or written straight through, see the writer), so
//!    whatever the application sends once a response was written follows it on the wire.
//!
//! * **Cost**: a slow notification handler delays every later response and ordered
//!   request (and, once the ordered queue of [`Config::ordered_queue`](crate::Config::ordered_queue)
//!   items is full, reading). A notification handler must not await a request to the
//!   peer: that response would wait for the handler itself. Spawn a task for such work.
//!
//! # Cancellation
//!
//! * Outgoing: dropping the future of [`Peer::request`](crate::Peer::request) removes the
//!   pending entry and sends `$/cancel_request` with `{"requestId": id}` (disable per call
//!   with [`CallOptions`](crate::CallOptions) or per connection with
//!   [`Config::cancel_on_drop`](crate::Config::cancel_on_drop)). A timeout does the same.
//!   Dialects without notifications never send it.
//! * Incoming: `$/cancel_request` is handled by the engine itself (the handler never sees
//!   it). The handler's future is dropped, its
//!   [`RequestContext::cancelled`](crate::RequestContext::cancelled) fires, and the request
//!   is answered with `-32800`. The reader reads on only once that answer is queued, so
//!   it goes out before the answer to anything read after the `$/cancel_request` (a peer
//!   may hang up as soon as its next request is answered). Cancelling a finished or
//!   unknown request is a no-op.
//!
//! # Errors
//!
//! One error type, [`Error`](crate::Error) `{code, message, data}`. Bad input never ends
//! the connection:
//!
//! | input | reply |
//! | --- | --- |
//! | malformed JSON, invalid UTF-8 | `-32700`, `id: null` |
//! | valid JSON that is not a message (wrong types, no method and no result/error, `jsonrpc` missing, null or non-integer/string request id, named exactly as sent) | `-32600`, `id: null` |
//! | a batch (JSON array), batches off (v1, legacy) | `-32600`, `id: null`, "batches are not supported" (like the official SDKs) |
//! | a batch, batches on (v2): empty, or over the bound | `-32600`, `id: null` (see [Batches](#batches)) |
//! | a line longer than the limit | `-32600`, `id: null` |
//! | unknown method | `-32601` with the request's id (unknown notification: logged, ignored) |
//! | params that do not deserialize ([`Params::parse`](crate::Params::parse)) | `-32602`, `data: {"field", "message"}` |
//! | a handler error | that error |
//! | a handler panic | `-32603` for that request only |
//! | a request whose id is still in flight | `-32600` with that id (the first request still gets its own answer) |
//! | a `jsonrpc` other than `"2.0"` on a request | `-32600` with the request's id |
//! | a response for an unknown id (malformed ones included) | logged, ignored |
//! | a malformed response (result and error, neither) to a request of ours | the caller gets the error; `-32600`, `id: null` |
//!
//! Local errors, made by this crate for the caller and never sent by a peer:
//! [`ErrorCode::CONNECTION_CLOSED`](crate::ErrorCode::CONNECTION_CLOSED) (`-32099`: the
//! connection ended before the answer) and
//! [`ErrorCode::REQUEST_TIMED_OUT`](crate::ErrorCode::REQUEST_TIMED_OUT) (`-32098`: the
//! call's timeout passed; the peer is sent `$/cancel_request`). A side crate's local refusal
//! (acp-agent's `CAPABILITY_NOT_ADVERTISED`) uses the code the peer would have answered.
//!
//! Which error type a user sees: this [`Error`](crate::Error), everywhere: the result of
//! every call, what every handler and trait method answers with (acp-agent and acp-client
//! re-export it as their `Error`). `acp_types::v1::Error` is the schema's error object, data
//! inside a message (with unknown fields kept); the two convert with `From` (feature `v1`,
//! which acp-agent and acp-client turn on).
//!
//! # Batches
//!
//! JSON-RPC 2.0 lets a line hold an array of messages, a batch. Whether one is answered is
//! a knob of the wire, [`Framing::batches`](crate::Framing::batches): off by default, and
//! so on v1 and the legacy dialects, where a batch gets one `-32600` "batches are not
//! supported" (the official Rust and TypeScript SDKs refuse it the same way); on with a
//! bound ([`DEFAULT_MAX_BATCH`](crate::DEFAULT_MAX_BATCH), 128) in draft v2's framing,
//! which acp-dialects' v2 sides use, so a connection answers batches exactly when v2 was
//! negotiated (the v2 draft's conformance suite requires an agent to). With batches on:
//!
//! * Each element is handled as if it had come on a line of its own, in array order
//!   (requests concurrently as usual, notifications in order, a response delivered to its
//!   caller; `$/cancel_request` works on a batch's requests).
//! * The answers to its requests leave together, one array on one line, once the last of
//!   them is answered (in any order; match them by id). Notifications and responses get
//!   none, and a batch of only those is answered with nothing at all, never `[]`.
//! * An element that is not a message gets its own error in the array (`-32600`, `id:
//!   null`, or the request's id when it has a usable one); a nested array is such an
//!   element.
//! * A line that is not JSON gets one `-32700`; an empty array one `-32600`; an array of
//!   more elements than the bound one `-32600` that names both counts, and none of its
//!   elements is handled. The elements past the bound are only counted, never kept, so a
//!   line of millions of tiny elements costs no more memory than its own bytes.
//! * A batch's requests are admitted like lone ones
//!   ([`Config::max_unanswered_requests`](crate::Config::max_unanswered_requests)); its
//!   answers wait in the batch until the last, so a batch holds at most its bound of them.
//!
//! This crate never sends a batch: every message it writes is a line of its own.
//!
//! # Limits and backpressure
//!
//! * [`Config::max_message_size`](crate::Config::max_message_size) (default 64 MiB): a longer
//!   line is dropped as it streams in, never assembled whole: the reader holds at most the
//!   limit (what it must read before the line proves too long) plus one read chunk, gives
//!   that memory back once the line is skipped, and goes on with the next line.
//! * The outgoing queue is bounded ([`Config::outgoing_queue`](crate::Config::outgoing_queue)):
//!   when the peer reads slowly, `notify`/`request` (and handler responses) wait.
//!   Senders share it fairly: the room the writer makes goes first to those waiting, and a
//!   sender that finds room while others wait yields to them once it has taken its share of
//!   the queue (its capacity over the senders waiting and itself),
//!   so many sessions streaming at once all progress instead of one streaming to its end
//!   while the others' next updates wait.
//! * **A peer that stops reading**: output that waits while the transport takes not one
//!   byte of it for [`Config::write_stall_timeout`](crate::Config::write_stall_timeout)
//!   (30 s) ends the connection with
//!   [`CloseReason::WriteStalled`](crate::CloseReason::WriteStalled); every pending call
//!   fails with an error that names the stall, so a process blocked on such a peer can
//!   exit. A slow reader that takes some bytes now and then is never cut off.
//! * **Bounded admission**: at most
//!   [`Config::max_unanswered_requests`](crate::Config::max_unanswered_requests) (1024)
//!   incoming requests are read and not yet answered. At the cap the reader stops reading;
//!   the peer's further writes fill the OS pipe and block it. Nothing is refused or lost:
//!   reading resumes as answers are queued. A handler awaiting the peer's answer to its own
//!   request stops counting, so the reader stays free to read that answer.
//! * **No deadlock between two peers**: a reader stops only at the admission cap, and our
//!   own requests awaiting answers are capped lower
//!   ([`Config::max_pending_requests`](crate::Config::max_pending_requests), 512; calls
//!   made by request handlers excepted, each bounded by a request of the peer's we
//!   admitted). So a peer on the same defaults never holds enough of our requests to
//!   reach its cap: its reader never stops for admission, and answers keep flowing both
//!   ways however many calls each side makes at once (tested with 10,000 each way).
//!
//! # Shutdown
//!
//! EOF, a read error, a write error (the peer closed its input), a write stall or
//! [`Connection::close`](crate::Connection::close) end the connection: every pending
//! outgoing call fails at once with `-32099`, in-flight request handlers are cancelled
//! (and not answered), queued output is flushed within
//! [`Config::shutdown_flush_timeout`](crate::Config::shutdown_flush_timeout), and
//! [`Connection::closed`](crate::Connection::closed) returns the
//! [`CloseReason`](crate::CloseReason). Responses and notifications that arrived before EOF
//! are still delivered.
