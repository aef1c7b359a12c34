//! `--features otel`: the cost of OpenTelemetry (issue 51, BENCHMARKS.md "OpenTelemetry").
//!
//! Built with the feature, acp-rpc writes and reads `_meta.traceparent`; nothing more happens
//! until `ACP_BENCH_OTEL=1` is set: then the bench starts an OTLP/HTTP receiver on loopback
//! that reads and discards every export, points `OTEL_EXPORTER_OTLP_ENDPOINT` at it (the
//! peer processes inherit it), and both sides install a `tracing` subscriber whose
//! OpenTelemetry layer exports acp-rpc's spans there in batches, as `acp` does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Keeps the exporter alive; flushes on drop.
pub struct Guard(SdkTracerProvider);

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
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("acp-bench"))
        .with_filter(tracing_subscriber::EnvFilter::new("acp_rpc::flow=debug"));
    tracing_subscriber::registry().with(layer).init();
    Some(Guard(provider))
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
