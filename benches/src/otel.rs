//! `--features otel`: the cost of OpenTelemetry (issue 51, BENCHMARKS.md "OpenTelemetry").
//!
//! Built with the feature, acp-rpc can write and read `_meta.traceparent`; nothing happens
//! until the exporter is on: the bench starts an OTLP/HTTP receiver on loopback that reads and
//! discards every export, points `OTEL_EXPORTER_OTLP_ENDPOINT` at it, and both sides export
//! there in batches as `acp` does: acp-rpc's spans through its recorder
//! ([`acp_rpc::otel::Recorder`]) and a `tracing` subscriber whose OpenTelemetry layer takes
//! the rest (the same filter as `acp`'s).
//!
//! * `acp-bench otel [--runs N] [--chunks N] [--requests N]`: scenarios a and b (ours, stdio)
//!   with the exporter off and on in one run, alternating, medians and on/off printed;
//! * `ACP_BENCH_OTEL=1 acp-bench ...`: any bench with the exporter on throughout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::ExitCode;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Keeps the exporter alive; flushes on drop.
pub struct Guard(SdkTracerProvider);

/// The filter of `acp`'s OpenTelemetry layer (`acp_cli::telemetry::OTEL_FILTER`).
const FILTER: &str = "info,acp_rpc::flow=warn,acp_rpc::otel=info";

/// An exporting provider over `exporter` and the engine's recorder feeding it.
fn provider(
    exporter: opentelemetry_otlp::SpanExporter,
) -> (SdkTracerProvider, acp_rpc::otel::Recorder) {
    let batch = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter).build();
    let recorder = acp_rpc::otel::Recorder::new(batch);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    (provider, recorder)
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.shutdown();
    }
}

/// In the bench's own process: with `ACP_BENCH_OTEL` set, starts the discarding receiver
/// and sets the endpoint for the peers; then [`init`].
pub fn init_main() -> Option<Guard> {
    std::env::var_os("ACP_BENCH_OTEL")?;
    let listener = TcpListener::bind("127.0.0.1:0").ok()?;
    let endpoint = format!("http://{}", listener.local_addr().ok()?);
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || discard(stream));
        }
    });
    // SAFETY: set before any other thread of ours reads the environment (the receiver's
    // threads do not).
    unsafe { std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint) };
    eprintln!("acp-bench: exporting spans to {endpoint} (discarded)");
    init()
}

/// In any process: with `ACP_BENCH_OTEL` and an endpoint set, installs the exporting
/// subscriber.
pub fn init() -> Option<Guard> {
    std::env::var_os("ACP_BENCH_OTEL")?;
    std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT")?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .build()
        .ok()?;
    let (provider, recorder) = provider(exporter);
    recorder.install();
    let layer = layer(&provider);
    tracing_subscriber::registry().with(layer).init();
    Some(Guard(provider))
}

/// Whether the agent processes started now export (the `on` half of `acp-bench otel`).
static ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The discarding receiver's URL, once started by `acp-bench otel`.
static ENDPOINT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// What an agent process gets to export (`acp-bench otel`, the `on` half), else nothing.
pub fn child_env() -> Vec<(String, String)> {
    match ENDPOINT.get() {
        Some(endpoint) if ON.load(std::sync::atomic::Ordering::Relaxed) => vec![
            ("ACP_BENCH_OTEL".to_owned(), "1".to_owned()),
            ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), endpoint.clone()),
        ],
        _ => Vec::new(),
    }
}

/// The rows compared, with the direction that is better.
const ROWS: &[(&str, &str, bool)] = &[
    ("a_stdio", "a. notifications/s", true),
    ("b_rate", "b. requests/s", true),
    ("b_p50", "b. p50 µs", false),
    ("b_p99", "b. p99 µs", false),
];

/// `acp-bench otel`: a and b (ours, stdio, current-thread runtimes) with the exporter off
/// and on, alternating within each run; prints each row's medians and on as a share of off
/// (for a latency, off / on: the share of off's speed that on keeps).
pub fn compare(args: &[String]) -> ExitCode {
    let mut options = match crate::Options::parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "error: {e}
usage: acp-bench otel [--runs N] [--chunks N] [--requests N]"
            );
            return ExitCode::from(2);
        }
    };
    options.flavor = "current".to_owned();
    let _ = crate::FLAVOR.set(options.flavor.clone());
    let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
        eprintln!("error: no loopback port for the receiver");
        return ExitCode::FAILURE;
    };
    let endpoint = format!(
        "http://{}",
        listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || discard(stream));
        }
    });
    let _ = ENDPOINT.set(endpoint.clone());
    let Some((provider, recorder, dispatch)) = exporting(&endpoint) else {
        eprintln!("error: the OTLP exporter cannot be built");
        return ExitCode::FAILURE;
    };
    let scenarios: Vec<_> = crate::scenarios(&options)
        .into_iter()
        .filter(|s| matches!(s.letter, 'a' | 'b') && s.transport == crate::Transport::Stdio)
        .collect();
    let mut samples: std::collections::BTreeMap<(&str, bool), Vec<f64>> = Default::default();
    eprintln!(
        "acp-bench otel: {} runs, a {} chunks, b {} requests; exporting to {endpoint} (discarded); load {}",
        options.runs,
        options.chunks,
        options.requests,
        crate::load_average()
    );
    for run in 0..options.runs {
        for s in &scenarios {
            // Alternate which half goes first, so drift hits both alike.
            let order = if run % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for on in order {
                ON.store(on, std::sync::atomic::Ordering::Relaxed);
                let _scope = on.then(|| {
                    (
                        tracing::dispatcher::set_default(&dispatch),
                        recorder.set_default(),
                    )
                });
                let rows = crate::measure(crate::Impl::Ours, s.transport, s.plan)
                    .and_then(|out| (s.extract)(&options, &out));
                match rows {
                    Ok(rows) => {
                        for (key, value) in rows {
                            eprintln!(
                                "run {} {} {key} = {value:.1}",
                                run + 1,
                                if on { "on " } else { "off" }
                            );
                            samples.entry((key, on)).or_default().push(value);
                        }
                    }
                    Err(e) => {
                        eprintln!(
                            "run {} {} {}: {e}",
                            run + 1,
                            s.letter,
                            if on { "on" } else { "off" }
                        );
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
    }
    ON.store(false, std::sync::atomic::Ordering::Relaxed);
    let _ = provider.shutdown();
    if recorder.dropped() > 0 {
        eprintln!(
            "acp-bench otel: {} spans dropped (the recorder's queue was full)",
            recorder.dropped()
        );
    }
    println!("| ours, stdio | exporter off | exporter on (discarded) | on / off |");
    println!("| --- | ---: | ---: | ---: |");
    for (key, label, higher) in ROWS {
        let off = crate::table::median(samples.get(&(*key, false)).map_or(&[][..], Vec::as_slice));
        let on = crate::table::median(samples.get(&(*key, true)).map_or(&[][..], Vec::as_slice));
        if let (Some(off), Some(on)) = (off, on) {
            let share = if *higher { on / off } else { off / on };
            println!("| {label} | {off:.1} | {on:.1} | {:.0}% |", share * 100.0);
        }
    }
    println!("(load average after: {})", crate::load_average());
    ExitCode::SUCCESS
}

/// The exporting provider, its recorder and a subscriber of it (the bench's own process,
/// entered per measurement), as [`init`] installs them.
fn exporting(
    endpoint: &str,
) -> Option<(
    SdkTracerProvider,
    acp_rpc::otel::Recorder,
    tracing::Dispatch,
)> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .build()
        .ok()?;
    let (provider, recorder) = provider(exporter);
    let subscriber = tracing_subscriber::registry().with(layer(&provider));
    Some((provider, recorder, tracing::Dispatch::new(subscriber)))
}

/// The OpenTelemetry layer, filtered as `acp` filters it.
fn layer<S>(provider: &SdkTracerProvider) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::filter::FilterExt;
    // As `acp` exports: our crates' hops and warnings, not the message-flow log (one filter
    // of both conditions, as `acp`'s telemetry explains).
    let ours = tracing_subscriber::filter::filter_fn(|meta| {
        meta.target().starts_with("acp") && acp_rpc::otel::exported(meta)
    });
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("acp-bench"))
        .with_filter(tracing_subscriber::EnvFilter::new(FILTER).and(ours))
}

/// Reads HTTP/1.1 requests and answers each with an empty `200`.
fn discard(stream: std::net::TcpStream) {
    let Ok(write) = stream.try_clone() else {
        return;
    };
    let mut write = write;
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        if std::io::copy(&mut (&mut reader).take(length as u64), &mut std::io::sink()).is_err() {
            return;
        }
        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        if write.write_all(answer).is_err() {
            return;
        }
    }
}
