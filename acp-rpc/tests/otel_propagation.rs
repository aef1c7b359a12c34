//! OpenTelemetry across the wire (feature `otel`, issue 51): our spans' contexts go out as
//! `_meta.traceparent`, and an incoming one becomes the parent of the span that handles the
//! message, both ways, so one trace runs through both peers; a malformed `traceparent` is
//! ignored and the message served.

mod otel_support;

use std::sync::{Arc, Mutex};

use otel_support::{Spans, attr};

use acp_rpc::{
    Config, Connection, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    to_raw,
};
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{SdkTracerProvider, SimpleSpanProcessor, SpanData};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tracing_subscriber::layer::SubscriberExt;

/// What the CLI installs: the engine's spans through an [`acp_rpc::otel::Recorder`] (the
/// default of the connections this thread makes while the guard lives) and a `tracing`
/// subscriber whose OpenTelemetry layer records the application's spans (here `test`'s)
/// and the hops, into `Spans` both (the message-flow log at DEBUG, which the layer skips).
fn recording() -> (
    Spans,
    SdkTracerProvider,
    impl tracing::Subscriber + Send + Sync,
    acp_rpc::otel::DefaultGuard,
) {
    use tracing_subscriber::Layer as _;
    let spans = Spans::default();
    let recorder = acp_rpc::otel::Recorder::new(SimpleSpanProcessor::new(spans.clone()));
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("test"))
        .with_filter(tracing_subscriber::filter::filter_fn(
            acp_rpc::otel::exported,
        ));
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new(
            "acp_rpc=debug,test=info",
        ))
        .with(layer);
    (spans, provider, subscriber, recorder.set_default())
}

/// Answers `ping` (after notifying `tick` and asking the peer `back`), `back` with its own
/// `_meta`, and records the notifications' params.
#[derive(Clone, Default)]
struct Peer {
    seen: Arc<Mutex<Vec<Value>>>,
}

#[async_trait::async_trait]
impl Handler for Peer {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let params: Value = params.parse()?;
        match method {
            "ping" => {
                cx.peer().notify("tick", &json!({"n": 1})).await?;
                let back: Value = cx.peer().request("back", &json!({})).await?;
                to_raw(&json!({"got": params, "back": back}))
            }
            "back" => to_raw(&params),
            "work" => {
                // The handler's own `tracing` span, and what is current in it and out of it.
                let outside = acp_rpc::otel::current().map(|c| c.span_id().to_string());
                let work = tracing::info_span!(target: "test", "work");
                let inside = work.in_scope(acp_rpc::otel::current);
                let inside = inside.map(|c| c.span_id().to_string());
                to_raw(&json!({"outside": outside, "inside": inside}))
            }
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.seen.lock().unwrap().push(params.parse()?);
        Ok(())
    }
}

/// The lines one side read, as its observer saw them.
type Read = Arc<Mutex<Vec<Value>>>;

fn tapped(read: &Read) -> Config {
    let read = read.clone();
    Config::default().with_observer(acp_rpc::tap::on_line(move |event| {
        if let acp_rpc::tap::TapEvent::Line(acp_rpc::tap::Direction::Incoming, line) = event {
            read.lock()
                .unwrap()
                .push(serde_json::from_slice(line).unwrap());
        }
    }))
}

/// Two connected peers, each with an observer of the lines it reads.
fn connect() -> (Connection, Connection, Peer, Peer, Read, Read) {
    let ((ar, aw), (br, bw)) = acp_rpc::memory::pipe();
    let (a, b) = (Peer::default(), Peer::default());
    let (a_read, b_read) = (Read::default(), Read::default());
    let client = Connection::new(ar, aw, a.clone(), tapped(&a_read));
    let agent = Connection::new(br, bw, b.clone(), tapped(&b_read));
    (client, agent, a, b, a_read, b_read)
}

/// The `_meta.traceparent` of the line of `method` that an observer saw.
fn traceparent_read(read: &Read, method: &str) -> String {
    let lines = read.lock().unwrap();
    let line = lines.iter().find(|l| l["method"] == method).unwrap();
    line["params"]["_meta"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("{method} carried no traceparent: {line}"))
        .to_owned()
}

#[tokio::test]
async fn one_trace_runs_through_both_peers_and_back() {
    let (spans, provider, subscriber, _recording) = recording();
    let _guard = tracing::subscriber::set_default(subscriber);
    let (client, agent, client_side, agent_side, client_read, agent_read) = connect();
    let root = tracing::info_span!(target: "test", "turn");
    let answer: Value = {
        let _entered = root.enter();
        client
            .peer()
            .request("ping", &json!({"x": 1}))
            .await
            .unwrap()
    };
    drop(root);
    // Each message crossed with its sender's context in `_meta` (as the observers read
    // them); the handlers saw the params as the application sent them: the engine took the
    // trace context it used off them.
    let tp = traceparent_read(&agent_read, "ping");
    assert_eq!(answer["got"], json!({"x": 1}));
    let back_tp = traceparent_read(&client_read, "back");
    assert_eq!(answer["back"], json!({}));
    let tick_tp = traceparent_read(&client_read, "tick");
    let ticks = client_side.seen.lock().unwrap().clone();
    assert_eq!(ticks, [json!({"n": 1})]);
    assert!(agent_side.seen.lock().unwrap().is_empty());
    client.close();
    agent.close();
    provider.force_flush().unwrap();

    let turn = &spans.named("turn")[0];
    let trace = turn.span_context.trace_id();
    let out = spans.named("acp.outgoing_request");
    let ping_out = out.iter().find(|s| attr(s, "method") == "ping").unwrap();
    let back_out = out.iter().find(|s| attr(s, "method") == "back").unwrap();
    let incoming = spans.named("acp.request");
    let ping_in = incoming
        .iter()
        .find(|s| attr(s, "method") == "ping")
        .unwrap();
    let back_in = incoming
        .iter()
        .find(|s| attr(s, "method") == "back")
        .unwrap();
    let tick = &spans.named("acp.notification")[0];
    for span in [ping_out, back_out, ping_in, back_in, tick] {
        assert_eq!(span.span_context.trace_id(), trace, "{}", span.name);
    }
    // turn -> ping (client) -> ping (agent) -> back (agent) -> back (client); tick under ping.
    assert_eq!(ping_out.parent_span_id, turn.span_context.span_id());
    assert_eq!(ping_out.span_kind, SpanKind::Client);
    assert_eq!(ping_in.parent_span_id, ping_out.span_context.span_id());
    assert!(ping_in.parent_span_is_remote);
    assert_eq!(ping_in.span_kind, SpanKind::Server);
    assert_eq!(
        tp,
        format!("00-{trace}-{}-01", ping_out.span_context.span_id())
    );
    let context_of = |span: &SpanData| format!("00-{trace}-{}-01", span.span_context.span_id());
    assert_eq!(back_tp, context_of(back_out));
    assert_eq!(tick_tp, context_of(ping_in));
    assert_eq!(back_out.parent_span_id, ping_in.span_context.span_id());
    assert_eq!(back_in.parent_span_id, back_out.span_context.span_id());
    assert_eq!(tick.parent_span_id, ping_in.span_context.span_id());
    // The sent notification is an event on the agent's request span.
    assert!(ping_in.events.iter().any(|e| e.name == "acp.notification"));
}

/// The request's span is current while its handler runs: a `tracing` span the handler opens
/// is its child, and is current in turn inside.
#[tokio::test]
async fn a_handlers_own_tracing_span_is_the_child_of_its_request_span() {
    let (spans, provider, subscriber, _recording) = recording();
    let _guard = tracing::subscriber::set_default(subscriber);
    let (client, agent, ..) = connect();
    let answer: Value = client.peer().request("work", &json!({})).await.unwrap();
    client.close();
    agent.close();
    provider.force_flush().unwrap();
    let handled = &spans.named("acp.request")[0];
    let work = &spans.named("work")[0];
    assert_eq!(work.parent_span_id, handled.span_context.span_id());
    assert_eq!(
        work.span_context.trace_id(),
        handled.span_context.trace_id()
    );
    assert!(!work.parent_span_is_remote);
    assert_eq!(
        answer["outside"],
        handled.span_context.span_id().to_string()
    );
    assert_eq!(answer["inside"], work.span_context.span_id().to_string());
    // Outside any handler nothing is current.
    assert!(acp_rpc::otel::current().is_none());
}

#[tokio::test]
async fn a_failed_request_has_an_error_status_and_its_code() {
    let (spans, provider, subscriber, _recording) = recording();
    let _guard = tracing::subscriber::set_default(subscriber);
    let (client, agent, ..) = connect();
    let err = client
        .peer()
        .request::<_, Value>("nope", &json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code.0, -32601);
    client.close();
    agent.close();
    provider.force_flush().unwrap();
    let incoming = &spans.named("acp.request")[0];
    assert_eq!(attr(incoming, "rpc.jsonrpc.error_code"), "-32601");
    // Method not found is an expected answer (INFO in the flow log), not a failure.
    assert_eq!(incoming.status, Status::Unset);
    assert!(
        spans.named("acp.outgoing_request")[0]
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "rpc.jsonrpc.error_code")
    );
}

#[tokio::test]
async fn without_a_layer_nothing_is_added() {
    let ((ar, aw), (br, bw)) = acp_rpc::memory::pipe();
    let agent = Peer::default();
    let _agent = Connection::new(br, bw, agent, Config::default());
    let client = Connection::new(ar, aw, Peer::default(), Config::default());
    let answer: Value = client
        .peer()
        .request("back", &json!({"x": 1}))
        .await
        .unwrap();
    assert_eq!(answer, json!({"x": 1}));
}

/// The raw lines a peer sends: each request carries `traceparent` (or a bad one).
async fn served_with(traceparent: Value) -> (Value, Spans) {
    let (spans, provider, subscriber, _recording) = recording();
    let _guard = tracing::subscriber::set_default(subscriber);
    let ((ar, aw), (br, mut bw)) = acp_rpc::memory::pipe();
    let _conn = Connection::new(ar, aw, Peer::default(), Config::default());
    let line = json!({
        "jsonrpc": "2.0", "id": 1, "method": "back",
        "params": {"_meta": {"traceparent": traceparent}, "k": "v"},
    });
    bw.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    let mut lines = BufReader::new(br).lines();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    provider.force_flush().unwrap();
    (answer, spans)
}

#[tokio::test]
async fn a_well_formed_incoming_traceparent_is_the_handlers_parent() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (answer, spans) = served_with(json!(tp)).await;
    assert_eq!(answer["result"]["k"], "v");
    let span = &spans.named("acp.request")[0];
    assert_eq!(
        span.span_context.trace_id(),
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
    );
    assert_eq!(
        span.parent_span_id,
        SpanId::from_hex("00f067aa0ba902b7").unwrap()
    );
}

#[tokio::test]
async fn malformed_traceparents_are_ignored_and_the_request_served() {
    for bad in [
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"),
        json!("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
        json!(42),
        json!({"traceparent": "x"}),
        Value::Null,
    ] {
        let (answer, spans) = served_with(bad.clone()).await;
        assert_eq!(answer["result"]["k"], "v", "{bad}: {answer}");
        let span = &spans.named("acp.request")[0];
        // A root span of its own: no parent, a trace id of its own.
        assert_eq!(span.parent_span_id, SpanId::INVALID, "{bad}");
        assert_ne!(
            span.span_context.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );
    }
}

#[test]
fn a_hop_is_the_senders_child_and_with_rewrite_the_next_ones_parent() {
    let (spans, provider, subscriber, _recording) = recording();
    let _guard = tracing::subscriber::set_default(subscriber);
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let message = json!({
        "jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "s", "_meta": {"traceparent": tp, "other": 1}},
    });
    let mut rewritten = message.clone();
    drop(acp_rpc::otel::hop("acp.gateway", &mut rewritten, true));
    let mut passed = message.clone();
    drop(acp_rpc::otel::hop("acp.trace", &mut passed, false));
    let mut answer = json!({"jsonrpc": "2.0", "id": 3, "result": {}});
    drop(acp_rpc::otel::hop("acp.gateway", &mut answer, true));
    provider.force_flush().unwrap();

    let gateway = &spans.named("acp.gateway");
    assert_eq!(gateway.len(), 1, "a response gets no hop");
    let gateway = &gateway[0];
    assert_eq!(
        gateway.parent_span_id,
        SpanId::from_hex("00f067aa0ba902b7").unwrap()
    );
    assert_eq!(attr(gateway, "method"), "session/prompt");
    let trace = gateway.span_context.trace_id();
    assert_eq!(
        rewritten["params"]["_meta"]["traceparent"],
        format!("00-{trace}-{}-01", gateway.span_context.span_id())
    );
    assert_eq!(rewritten["params"]["_meta"]["other"], 1);
    assert_eq!(rewritten["params"]["sessionId"], "s");
    // Without rewrite the message is untouched and the hop a leaf beside the path.
    assert_eq!(passed, message);
    let trace_hop = &spans.named("acp.trace")[0];
    assert_eq!(trace_hop.parent_span_id, gateway.parent_span_id);
}

/// Keeps the DEBUG events of `acp_rpc::otel` (their message and `why`).
#[derive(Clone, Default)]
struct OtelLogs(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for OtelLogs {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Text(String);
        impl tracing::field::Visit for Text {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={value:?} ", field.name()));
            }
        }
        if event.metadata().target() == acp_rpc::otel::TARGET {
            let mut text = Text(String::new());
            event.record(&mut text);
            self.0.lock().unwrap().push(text.0);
        }
    }
}

/// Over a real connection (TCP on loopback), a request and a notification for each bad
/// `traceparent`: each is logged at DEBUG under `acp_rpc::otel` and ignored, the request
/// answered and the notification handled, in spans of their own.
#[tokio::test]
async fn bad_traceparents_over_tcp_are_logged_ignored_and_served() {
    use tracing_subscriber::Layer as _;
    let spans = Spans::default();
    let recorder = acp_rpc::otel::Recorder::new(SimpleSpanProcessor::new(spans.clone()));
    let _recording = recorder.set_default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let logs = OtelLogs::default();
    let subscriber = tracing_subscriber::registry()
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("test"))
                .with_filter(tracing_subscriber::EnvFilter::new("acp_rpc=debug"))
                .with_filter(tracing_subscriber::filter::filter_fn(
                    acp_rpc::otel::exported,
                )),
        )
        .with(
            logs.clone()
                .with_filter(tracing_subscriber::EnvFilter::new("acp_rpc::otel=debug")),
        );
    let _guard = tracing::subscriber::set_default(subscriber);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Peer::default();
    let server = {
        let served = served.clone();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (r, w) = stream.into_split();
            Connection::new(r, w, served, Config::default())
        })
    };
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _server = server.await.unwrap();
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r).lines();
    let bad = [
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"),
        json!("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
        json!(42),
        json!(["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]),
        // Not ASCII where the version is: once a panic in the reader (a slice of the text
        // at byte 2, inside the euro sign's three bytes).
        json!("\u{20ac}-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    ];
    for (i, traceparent) in bad.iter().enumerate() {
        let meta = json!({"traceparent": traceparent});
        let note = json!({"jsonrpc": "2.0", "method": "note", "params": {"i": i, "_meta": meta}});
        let request = json!({
            "jsonrpc": "2.0", "id": i, "method": "back", "params": {"i": i, "_meta": meta},
        });
        w.write_all(format!("{note}\n{request}\n").as_bytes())
            .await
            .unwrap();
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], i, "{traceparent}: {answer}");
        assert_eq!(answer["result"]["i"], i, "{traceparent}: {answer}");
    }
    provider.force_flush().unwrap();
    // Every notification handled, every request in a root span of its own.
    assert_eq!(served.seen.lock().unwrap().len(), bad.len());
    let foreign = TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap();
    let handled = spans.named("acp.request");
    assert_eq!(handled.len(), bad.len());
    for span in handled.iter().chain(&spans.named("acp.notification")) {
        assert_eq!(span.parent_span_id, SpanId::INVALID, "{span:?}");
        assert_ne!(span.span_context.trace_id(), foreign);
    }
    // Each bad value logged twice (the notification and the request), never an error.
    let logs = logs.0.lock().unwrap().clone();
    assert_eq!(logs.len(), 2 * bad.len(), "{logs:#?}");
    assert!(logs.iter().all(|l| l.contains("ignored")), "{logs:#?}");
}
