//! The engine's spans off the hot path (feature `otel`): a finished request or notification
//! is a [`SpanRecord`] of a few fields pushed into a bounded buffer; the [`Recorder`]'s
//! thread builds the OpenTelemetry spans from them and hands them to the span processor (the
//! provider's batch exporter), so the connection never builds, formats or exports a span.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Event, SpanContext, SpanId, SpanKind, Status};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks, SpanProcessor};

use crate::message::RequestId;
use crate::sync::lock;

/// How many finished spans wait at most for the recorder's thread; past that they are
/// dropped and counted ([`Recorder::dropped`]), never waited for.
pub const QUEUE_CAPACITY: usize = 4096;

/// How often the recorder's thread takes the waiting spans (sooner when a quarter of the
/// queue is full).
const INTERVAL: Duration = Duration::from_millis(50);

/// One `acp.notification` event of a turn: when, which method, which way, and (received)
/// the sender's `traceparent`.
pub(crate) struct EventRecord {
    pub(crate) at: SystemTime,
    pub(crate) method: Cow<'static, str>,
    pub(crate) direction: &'static str,
    pub(crate) remote: Option<Box<str>>,
}

/// How a request ended.
pub(crate) enum Outcome {
    Ok,
    /// An error answer: its code, and its message when it is a failure (an error status).
    Error {
        code: i32,
        failure: Option<String>,
    },
}

/// A finished engine span: what the recorder's thread turns into an OpenTelemetry span.
pub(crate) struct SpanRecord {
    pub(crate) name: &'static str,
    pub(crate) kind: SpanKind,
    pub(crate) context: SpanContext,
    pub(crate) parent: SpanId,
    pub(crate) parent_remote: bool,
    pub(crate) start: SystemTime,
    pub(crate) end: SystemTime,
    pub(crate) method: Cow<'static, str>,
    pub(crate) id: Option<RequestId>,
    pub(crate) session: Option<Box<str>>,
    pub(crate) roles: Option<(&'static str, &'static str)>,
    pub(crate) outcome: Option<Outcome>,
    pub(crate) events: Vec<EventRecord>,
    /// Notifications seen in the span's turn (events or not), when it was one.
    pub(crate) notifications: u64,
}

impl SpanRecord {
    /// The OpenTelemetry span.
    fn into_span_data(self, scope: &InstrumentationScope) -> SpanData {
        let mut attributes = Vec::with_capacity(9);
        attributes.push(KeyValue::new("method", self.method));
        if let Some(id) = &self.id {
            attributes.push(KeyValue::new("message_id", id.to_string()));
            attributes.push(KeyValue::new("rpc.system", "jsonrpc"));
        }
        if let Some(session) = self.session {
            attributes.push(KeyValue::new("session_id", String::from(session)));
        }
        if let Some((ours, peer)) = self.roles {
            attributes.push(KeyValue::new("acp.role", ours));
            attributes.push(KeyValue::new("acp.peer.role", peer));
        }
        let mut status = Status::Unset;
        match self.outcome {
            None => {}
            Some(Outcome::Ok) => attributes.push(KeyValue::new("outcome", "ok")),
            Some(Outcome::Error { code, failure }) => {
                attributes.push(KeyValue::new("outcome", "error"));
                attributes.push(KeyValue::new("rpc.jsonrpc.error_code", i64::from(code)));
                if let Some(message) = failure {
                    status = Status::error(message);
                }
            }
        }
        if self.notifications > 0 {
            let count = i64::try_from(self.notifications).unwrap_or(i64::MAX);
            attributes.push(KeyValue::new("acp.notifications", count));
        }
        let events = self
            .events
            .into_iter()
            .map(|e| {
                let mut attributes = vec![
                    KeyValue::new("method", e.method),
                    KeyValue::new("direction", e.direction),
                ];
                if let Some(remote) = e.remote {
                    attributes.push(KeyValue::new(super::TRACEPARENT, String::from(remote)));
                }
                Event::new("acp.notification", e.at, attributes, 0)
            })
            .collect();
        let mut span_events = SpanEvents::default();
        span_events.events = events;
        SpanData {
            span_context: self.context,
            parent_span_id: self.parent,
            parent_span_is_remote: self.parent_remote,
            span_kind: self.kind,
            name: Cow::Borrowed(self.name),
            start_time: self.start,
            end_time: self.end,
            attributes,
            dropped_attributes_count: 0,
            events: span_events,
            links: SpanLinks::default(),
            status,
            instrumentation_scope: scope.clone(),
        }
    }
}

/// Where the engine's spans go: a span processor (the tracer provider's, typically its
/// batch exporter) fed from a bounded queue by a thread of the recorder's own.
///
/// Register it with the provider, which gives it its resource and flushes and shuts it down
/// with everything else, and make it the engine's (globally with [`Recorder::install`], or
/// on this thread with [`Recorder::set_default`]); each [`Connection`](crate::Connection)
/// takes the one current when it is made. `tracing` spans recorded by a
/// `tracing-opentelemetry` layer on the same provider (the application's own, the hops)
/// reach the processor through it as well.
///
/// ```
/// use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanExporter};
///
/// fn provider(exporter: impl SpanExporter + 'static) -> SdkTracerProvider {
///     let batch = BatchSpanProcessor::builder(exporter).build();
///     let recorder = acp_rpc::otel::Recorder::new(batch);
///     let provider = SdkTracerProvider::builder()
///         .with_span_processor(recorder.clone())
///         .build();
///     recorder.install();
///     provider
/// }
/// ```
#[derive(Clone)]
pub struct Recorder(Arc<Inner>);

struct Inner {
    /// `None`: ids only (trace ids in logs, nothing exported).
    processor: Option<RwLock<Box<dyn SpanProcessor>>>,
    scope: InstrumentationScope,
    queue: Mutex<Vec<SpanRecord>>,
    /// Whoever drains the queue (the thread, a flush) holds this while it exports, so a
    /// flush returns only once what was queued before it reached the processor.
    draining: Mutex<Vec<SpanRecord>>,
    wake: Condvar,
    dropped: AtomicU64,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("exports", &self.0.processor.is_some())
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl Recorder {
    /// A recorder that hands the engine's spans to `processor`.
    pub fn new(processor: impl SpanProcessor + 'static) -> Recorder {
        Self::with(Some(Box::new(processor)), true)
    }

    /// A recorder that exports nothing: the engine still gives every request a span
    /// context (carried in `_meta`, current while its handler runs, so log lines can name
    /// the trace), and records nothing.
    pub fn ids_only() -> Recorder {
        Self::with(None, false)
    }

    /// `thread`: whether a thread of its own drains the queue (else only flushes do).
    fn with(processor: Option<Box<dyn SpanProcessor>>, thread: bool) -> Recorder {
        let exports = processor.is_some();
        let scope = InstrumentationScope::builder("acp-rpc")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let inner = Arc::new(Inner {
            processor: processor.map(RwLock::new),
            scope,
            queue: Mutex::new(Vec::with_capacity(if exports { QUEUE_CAPACITY } else { 0 })),
            draining: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            dropped: AtomicU64::new(0),
        });
        if exports && thread {
            let weak = Arc::downgrade(&inner);
            let _ = std::thread::Builder::new()
                .name("acp-otel".into())
                .spawn(move || run(weak));
        }
        Recorder(inner)
    }

    /// Makes this the recorder of the connections made from now on, in the whole process
    /// (where no [`Recorder::set_default`] says otherwise). Once only: `false` if one was
    /// installed already.
    pub fn install(&self) -> bool {
        GLOBAL.set(self.clone()).is_ok()
    }

    /// Makes this the recorder of the connections this thread makes until the guard drops
    /// (tests; an application with several providers).
    pub fn set_default(&self) -> DefaultGuard {
        let previous = DEFAULT.with(|d| d.replace(Some(self.clone())));
        DefaultGuard { previous }
    }

    /// The recorder a connection made now on this thread takes, if any.
    pub(crate) fn current() -> Option<Recorder> {
        DEFAULT
            .with(|d| d.borrow().clone())
            .or_else(|| GLOBAL.get().cloned())
    }

    /// How many finished spans were dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }

    /// Whether spans are recorded at all (not [`Recorder::ids_only`]).
    pub(crate) fn exports(&self) -> bool {
        self.0.processor.is_some()
    }

    /// Queues a finished span; drops it (counted) when the queue is full. Never blocks on
    /// the export: the lock is held for a push.
    pub(crate) fn push(&self, record: SpanRecord) {
        if !self.exports() {
            return;
        }
        let mut queue = lock(&self.0.queue);
        if queue.len() >= QUEUE_CAPACITY {
            drop(queue);
            self.0.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        queue.push(record);
        if queue.len() == QUEUE_CAPACITY / 4 {
            self.0.wake.notify_one();
        }
    }

    /// Builds and hands on every queued span.
    fn drain(&self) {
        self.0.drain();
    }
}

impl Inner {
    fn drain(&self) {
        let Some(processor) = &self.processor else {
            return;
        };
        let mut batch = lock(&self.draining);
        {
            let mut queue = lock(&self.queue);
            if queue.is_empty() {
                return;
            }
            std::mem::swap(&mut *queue, &mut *batch);
        }
        let processor = processor.read().unwrap_or_else(|e| e.into_inner());
        for record in batch.drain(..) {
            processor.on_end(record.into_span_data(&self.scope));
        }
    }
}

/// The recorder's thread: drains the queue every [`INTERVAL`] (or when a quarter full),
/// until the recorder is gone.
fn run(weak: Weak<Inner>) {
    while let Some(inner) = weak.upgrade() {
        {
            let queue = lock(&inner.queue);
            if queue.len() < QUEUE_CAPACITY / 4 {
                let _ = inner.wake.wait_timeout(queue, INTERVAL);
            }
        }
        inner.drain();
    }
}

static GLOBAL: OnceLock<Recorder> = OnceLock::new();

thread_local! {
    static DEFAULT: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// Restores the thread's previous recorder when dropped (see [`Recorder::set_default`]).
pub struct DefaultGuard {
    previous: Option<Recorder>,
}

impl Drop for DefaultGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        DEFAULT.with(|d| *d.borrow_mut() = previous);
    }
}

impl SpanProcessor for Recorder {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        if let Some(processor) = &self.0.processor {
            processor
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .on_start(span, cx);
        }
    }

    fn on_end(&self, span: SpanData) {
        if let Some(processor) = &self.0.processor {
            processor
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .on_end(span);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.drain();
        match &self.0.processor {
            Some(processor) => processor
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .force_flush(),
            None => Ok(()),
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.drain();
        match &self.0.processor {
            Some(processor) => processor
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .shutdown_with_timeout(timeout),
            None => Ok(()),
        }
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        if let Some(processor) = &self.0.processor {
            processor
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .set_resource(resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{TraceFlags, TraceId, TraceState};

    /// Counts the spans it is given.
    #[derive(Debug, Default, Clone)]
    struct Count(Arc<AtomicU64>);

    impl SpanProcessor for Count {
        fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &opentelemetry::Context) {}
        fn on_end(&self, _: SpanData) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
            Ok(())
        }
    }

    fn record() -> SpanRecord {
        let now = SystemTime::now();
        SpanRecord {
            name: "acp.request",
            kind: SpanKind::Server,
            context: SpanContext::new(
                TraceId::from_bytes([1; 16]),
                SpanId::from_bytes([2; 8]),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent: SpanId::INVALID,
            parent_remote: false,
            start: now,
            end: now,
            method: Cow::Borrowed("m"),
            id: Some(RequestId::Int(1)),
            session: None,
            roles: None,
            outcome: Some(Outcome::Ok),
            events: Vec::new(),
            notifications: 0,
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_a_flush_hands_on_the_rest() {
        let count = Count::default();
        let recorder = Recorder::with(Some(Box::new(count.clone())), false);
        for _ in 0..QUEUE_CAPACITY + 5 {
            recorder.push(record());
        }
        assert_eq!(recorder.dropped(), 5);
        assert_eq!(
            count.0.load(Ordering::Relaxed),
            0,
            "nothing built on the hot path"
        );
        recorder.force_flush().unwrap();
        assert_eq!(count.0.load(Ordering::Relaxed), QUEUE_CAPACITY as u64);
        // The queue has room again.
        recorder.push(record());
        recorder.force_flush().unwrap();
        assert_eq!(count.0.load(Ordering::Relaxed), QUEUE_CAPACITY as u64 + 1);
    }

    #[test]
    fn the_recorders_thread_hands_on_what_waits_without_a_flush() {
        let count = Count::default();
        let recorder = Recorder::new(count.clone());
        recorder.push(record());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while count.0.load(Ordering::Relaxed) == 0 {
            assert!(std::time::Instant::now() < deadline, "never exported");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_record_becomes_its_span() {
        let mut r = record();
        r.session = Some("s-1".into());
        r.roles = Some(("agent", "client"));
        r.outcome = Some(Outcome::Error {
            code: -32603,
            failure: Some("boom".into()),
        });
        r.notifications = 3;
        let scope = InstrumentationScope::builder("t").build();
        let span = r.into_span_data(&scope);
        let get = |key: &str| {
            span.attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| kv.value.to_string())
        };
        assert_eq!(get("method").as_deref(), Some("m"));
        assert_eq!(get("message_id").as_deref(), Some("1"));
        assert_eq!(get("session_id").as_deref(), Some("s-1"));
        assert_eq!(get("acp.role").as_deref(), Some("agent"));
        assert_eq!(get("outcome").as_deref(), Some("error"));
        assert_eq!(get("rpc.jsonrpc.error_code").as_deref(), Some("-32603"));
        assert_eq!(get("acp.notifications").as_deref(), Some("3"));
        assert_eq!(span.status, Status::error("boom"));
        assert_eq!(span.span_kind, SpanKind::Server);
    }
}
