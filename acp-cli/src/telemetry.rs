//! Logs and traces for every `acp` command (issue 51, docs/OBSERVABILITY.md).
//!
//! * Logs go to stderr, filtered by `RUST_LOG`: as text, or (`acp serve --log-format json`)
//!   as one JSON object a line with the trace and span ids of the span it was logged in.
//! * Traces are exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//!   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, with the standard variables:
//!   `OTEL_SERVICE_NAME` (default `acp-COMMAND`), `OTEL_EXPORTER_OTLP_PROTOCOL`
//!   (`http/protobuf`, the default, or `http/json`), `OTEL_EXPORTER_OTLP_HEADERS`,
//!   `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*` (the batch processor). `grpc` is not built
//!   in: it falls back to `http/protobuf`, with a warning.
//!
//! The spans are acp-rpc's (`acp.request`, `acp.outgoing_request`, and `acp.notification`
//! for a notification outside a prompt turn; inside one it is an event on the turn's span:
//! feature `otel`), recorded off the hot path by its [`acp_rpc::otel::Recorder`], and the
//! `tracing` spans of the hops of the gateway (`acp.gateway`) and of `acp trace`
//! (`acp.trace`); `ACP_OTEL_FILTER` (a `RUST_LOG`-style filter, default [`OTEL_FILTER`])
//! picks which `tracing` spans and events go to the exporter.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::FilterExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// What the `tracing` layer exports without `ACP_OTEL_FILTER`: the hops and INFO events of
/// `acp` crates. The engine's spans do not go through it (its recorder exports them), so
/// the message-flow log stays off but for its warnings and errors (and, whatever the filter,
/// [`acp_rpc::otel::exported`] keeps its spans and per-message events out).
pub const OTEL_FILTER: &str = "info,acp_rpc::flow=warn,acp_rpc::otel=info";

/// The telemetry variables an `acp serve` gateway agent gets by default (see
/// `sandbox::DEFAULT_PASS`): where and how to export, never the headers (an API key) nor the
/// service name (the agent is a service of its own).
pub const PASSED_TO_AGENTS: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_BSP_*",
    "ACP_OTEL_FILTER",
];

/// How long the last spans may take to leave when the command ends.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable text (the default).
    #[default]
    Text,
    /// One JSON object a line, with `trace_id` and `span_id` when logged in a traced span.
    Json,
}

/// The installed telemetry; [`Telemetry::shutdown`] sends what is still buffered.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the global subscriber for command `command` (`chat`, `serve`, ...): the log
    /// on stderr, and the OpenTelemetry layer when traces are exported (or, for JSON logs,
    /// always, so each line has the trace id that came in with the request).
    pub fn init(command: &str, format: LogFormat) -> Telemetry {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            // The message-flow log (acp_rpc::flow) is asked for with RUST_LOG: a failed
            // request is already reported on screen by the chat itself.
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,acp_rpc::flow=off"));
        let log = match format {
            LogFormat::Text => tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .boxed(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .event_format(json::JsonLines)
                .boxed(),
        }
        .with_filter(filter);
        let exporting = endpoint_set();
        let provider = (exporting || format == LogFormat::Json)
            .then(|| provider(command, exporting))
            .flatten();
        if provider.is_some() {
            // The recorder of every connection the command makes (ids only for JSON logs
            // without an exporter).
            let recorder = RECORDER.get_or_init(acp_rpc::otel::Recorder::ids_only);
            recorder.install();
        }
        let otel = provider.as_ref().map(|provider| {
            let filter = std::env::var("ACP_OTEL_FILTER")
                .ok()
                .and_then(|f| tracing_subscriber::EnvFilter::try_new(f).ok())
                .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(OTEL_FILTER));
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("acp"))
                .with_filter(exported(filter))
        });
        tracing_subscriber::registry().with(log).with(otel).init();
        Telemetry { provider }
    }

    /// Sends the spans still buffered (waiting at most a few seconds for the collector).
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown_with_timeout(FLUSH_TIMEOUT)
        {
            eprintln!("acp: telemetry: {e}");
        }
    }
}

/// What the OpenTelemetry layer takes: what `level` passes, of our own crates only (the
/// exporter's HTTP client must not trace itself), and not the message-flow log's
/// per-message events ([`acp_rpc::otel::exported`]). One filter of both conditions (`and`):
/// two nested `with_filter`s each answer for themselves, and a callsite the outer one passes
/// (a TRACE event of the engine) is then enabled for the subscriber even though the inner
/// one drops it, so the engine would time every message for a log nobody receives.
fn exported<S>(
    level: tracing_subscriber::EnvFilter,
) -> impl tracing_subscriber::layer::Filter<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let ours = tracing_subscriber::filter::filter_fn(|meta| {
        meta.target().starts_with("acp") && acp_rpc::otel::exported(meta)
    });
    level.and(ours)
}

/// `acp trace`'s hop (`acp.trace`) for a line it passes on unchanged: a span that is a
/// child of the message's `_meta.traceparent`, beside the path (the bytes are not
/// rewritten). Nothing is parsed unless hops are recorded.
pub fn passing_hop(line: &str) {
    if !acp_rpc::otel::hop_enabled() {
        return;
    }
    if let Ok(mut message) = serde_json::from_str::<serde_json::Value>(line)
        && message.get("method").is_some()
    {
        drop(acp_rpc::otel::hop("acp.trace", &mut message, false));
    }
}

/// Whether an OTLP endpoint is configured (an empty value counts as unset).
fn endpoint_set() -> bool {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// The engine's recorder, set by [`provider`] when it exports.
static RECORDER: std::sync::OnceLock<acp_rpc::otel::Recorder> = std::sync::OnceLock::new();

/// The tracer provider: exporting over OTLP/HTTP (through the engine's recorder, which takes
/// the `tracing` layer's spans too), or (for JSON logs) recording ids only.
fn provider(command: &str, exporting: bool) -> Option<SdkTracerProvider> {
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none_or(|v| v.is_empty()) {
        resource = resource.with_service_name(format!("acp-{command}"));
    }
    let builder = SdkTracerProvider::builder().with_resource(resource.build());
    if !exporting {
        return Some(builder.build());
    }
    match exporter() {
        Ok(exporter) => {
            let batch = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter).build();
            let recorder = RECORDER.get_or_init(|| acp_rpc::otel::Recorder::new(batch));
            Some(builder.with_span_processor(recorder.clone()).build())
        }
        Err(e) => {
            eprintln!("acp: telemetry: cannot export traces: {e}");
            None
        }
    }
}

/// The OTLP/HTTP span exporter, configured by the standard variables.
fn exporter() -> Result<opentelemetry_otlp::SpanExporter, String> {
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    // reqwest is built here without a crypto provider of its own (acp-agent's `mcp-http`
    // picks ring explicitly): the exporter's client takes the process default, ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http();
    let protocol = std::env::var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .unwrap_or_default();
    match protocol.trim() {
        // The specification's default; the crate's own is JSON when both are built in.
        "" | "http/protobuf" => builder = builder.with_protocol(Protocol::HttpBinary),
        "http/json" => builder = builder.with_protocol(Protocol::HttpJson),
        other => {
            eprintln!(
                "acp: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL={other} is not built in; \
                 using http/protobuf (a collector's port 4318)"
            );
            builder = builder.with_protocol(Protocol::HttpBinary);
        }
    }
    if let Some(client) = endpoint()
        .filter(|e| is_plain_http(e))
        .and_then(|_| plain_client())
    {
        use opentelemetry_otlp::WithHttpConfig;
        builder = builder.with_http_client(client);
    }
    builder.build().map_err(|e| e.to_string())
}

/// The endpoint traces go to: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (empty counts as unset, as for the exporter).
fn endpoint() -> Option<String> {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
}

/// Whether `endpoint` is plain `http://` (no TLS).
fn is_plain_http(endpoint: &str) -> bool {
    endpoint
        .trim()
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// The exporter's HTTP client for a plain `http://` endpoint: the one the exporter would
/// build (blocking, with the OTLP timeout), without TLS roots. The default one loads the
/// system's root certificates when it is built, at every command's start, for a
/// connection that never uses TLS. `None` if it cannot be built: the exporter then builds
/// its own.
fn plain_client() -> Option<reqwest::blocking::Client> {
    // reqwest asks for the process's crypto provider even with no TLS to make.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let timeout = otlp_timeout();
    // On a thread of its own, as the exporter builds its default client: a blocking client
    // made inside a tokio runtime would panic.
    std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .timeout(timeout)
            .tls_certs_only(Vec::<reqwest::Certificate>::new())
            .build()
            .ok()
    })
    .join()
    .ok()
    .flatten()
}

/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds),
/// else the specification's 10 s.
fn otlp_timeout() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
    .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// The JSON log lines of `--log-format json`.
mod json {
    use std::fmt;

    use serde_json::{Map, Value};
    use tracing::field::{Field, Visit};
    use tracing_subscriber::fmt::format::Writer;
    use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
    use tracing_subscriber::registry::LookupSpan;

    /// One JSON object a line: `timestamp` (RFC 3339, UTC), `level`, `target`, the event's
    /// fields (`message` among them), `span` (the innermost span's name) and, in a traced
    /// span, `trace_id` and `span_id` (lower-case hex, as in `traceparent`).
    pub struct JsonLines;

    impl<S, N> FormatEvent<S, N> for JsonLines
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        fn format_event(
            &self,
            ctx: &FmtContext<'_, S, N>,
            mut writer: Writer<'_>,
            event: &tracing::Event<'_>,
        ) -> fmt::Result {
            let meta = event.metadata();
            let mut line = Map::new();
            line.insert("timestamp".into(), timestamp().into());
            line.insert("level".into(), meta.level().as_str().into());
            line.insert("target".into(), meta.target().into());
            event.record(&mut Fields(&mut line));
            if let Some(span) = ctx.lookup_current() {
                line.insert("span".into(), span.name().into());
            }
            if let Some(context) = acp_rpc::otel::current() {
                line.insert("trace_id".into(), context.trace_id().to_string().into());
                line.insert("span_id".into(), context.span_id().to_string().into());
            }
            writeln!(writer, "{}", Value::Object(line))
        }
    }

    /// The event's fields as JSON values.
    struct Fields<'a>(&'a mut Map<String, Value>);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0
                .insert(field.name().into(), format!("{value:?}").into());
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().into(), value.into());
        }
        fn record_i64(&mut self, field: &Field, value: i64) {
            self.0.insert(field.name().into(), value.into());
        }
        fn record_u64(&mut self, field: &Field, value: u64) {
            self.0.insert(field.name().into(), value.into());
        }
        fn record_f64(&mut self, field: &Field, value: f64) {
            self.0.insert(field.name().into(), value.into());
        }
        fn record_bool(&mut self, field: &Field, value: bool) {
            self.0.insert(field.name().into(), value.into());
        }
    }

    /// Now as RFC 3339 in UTC with milliseconds (`2026-11-29T07:01:02.345Z`).
    fn timestamp() -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let secs = now.as_secs() as i64;
        let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            now.subsec_millis()
        )
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
    fn civil_from_days(z: i64) -> (i64, u32, u32) {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m, d)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn days_become_dates() {
            assert_eq!(super::civil_from_days(0), (1970, 1, 1));
            assert_eq!(super::civil_from_days(20_786), (2026, 11, 29));
            assert_eq!(super::civil_from_days(11_016), (2000, 2, 29));
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn only_a_plain_http_endpoint_gets_the_client_without_tls_roots() {
        for plain in [
            "http://127.0.0.1:4318",
            "HTTP://collector:4318/v1/traces",
            " http://x",
        ] {
            assert!(super::is_plain_http(plain), "{plain}");
        }
        for tls in ["https://collector:4318", "httpx://a", "http:/", ""] {
            assert!(!super::is_plain_http(tls), "{tls}");
        }
        // Built outside and inside a runtime alike.
        assert!(super::plain_client().is_some());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(runtime.block_on(async { super::plain_client() }).is_some());
    }

    /// Whether the engine's per-message TRACE timing would run under `subscriber`.
    fn engine_trace_enabled(subscriber: impl tracing::Subscriber + Send + Sync) -> bool {
        tracing::subscriber::with_default(
            subscriber,
            || tracing::enabled!(target: "acp_rpc::dispatch", tracing::Level::TRACE),
        )
    }

    fn sink() -> impl Layer<tracing_subscriber::Registry> {
        tracing_subscriber::fmt::layer().with_writer(std::io::sink)
    }

    /// The layer's one filter keeps the engine's TRACE callsites off; the two nested filters
    /// it replaced turned them on (the outer passes an `acp_rpc` target), which is what made
    /// every traced notification read the clock.
    #[test]
    fn the_exporting_layer_leaves_the_engines_trace_events_off() {
        let level = || tracing_subscriber::EnvFilter::new(super::OTEL_FILTER);
        let one = tracing_subscriber::registry().with(sink().with_filter(super::exported(level())));
        assert!(!engine_trace_enabled(one));
        let nested = tracing_subscriber::registry().with(sink().with_filter(level()).with_filter(
            tracing_subscriber::filter::filter_fn(|meta| {
                meta.target().starts_with("acp") && acp_rpc::otel::exported(meta)
            }),
        ));
        assert!(
            engine_trace_enabled(nested),
            "the nested form this replaced enabled them (if this fails, tracing-subscriber changed and the test no longer shows the difference)"
        );
        let warn =
            tracing_subscriber::registry().with(sink().with_filter(super::exported(level())));
        let enabled = tracing::subscriber::with_default(
            warn,
            || tracing::enabled!(target: "acp_rpc::otel::hop", tracing::Level::INFO),
        );
        assert!(enabled, "the hops' spans are still exported");
    }
}
