//! OpenTelemetry's notifications are events on their session's turn (feature `otel`, issue
//! 51): a prompt turn's `session/update`s and `session/cancel` are `acp.notification` events
//! on the `session/prompt` spans of both sides (not spans of their own), handled in the
//! client's span of the turn, bounded per turn; and every request span says the roles.

mod otel_support;

use std::sync::{Arc, Mutex};

use otel_support::{Spans, attr};

use acp_rpc::{
    Config, Connection, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    to_raw,
};
use opentelemetry::trace::{SpanContext, TracerProvider as _};
use opentelemetry_sdk::trace::{SdkTracerProvider, SimpleSpanProcessor, SpanData};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tracing_subscriber::layer::SubscriberExt;

/// What the CLI installs: the engine's spans through an [`acp_rpc::otel::Recorder`], and
/// a `tracing-opentelemetry` layer filtered by [`acp_rpc::otel::exported`].
fn recording() -> (
    Spans,
    SdkTracerProvider,
    impl tracing::Subscriber + Send + Sync,
    acp_rpc::otel::DefaultGuard,
) {
    use tracing_subscriber::Layer;
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

/// The agent: `session/prompt` streams `n` updates, then waits for the client's
/// `session/cancel` before it answers.
#[derive(Clone, Default)]
struct Agent {
    cancelled: Arc<Notify>,
}

#[async_trait::async_trait]
impl Handler for Agent {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let params: Value = params.parse()?;
        match method {
            "initialize" => to_raw(&json!({"protocolVersion": 1})),
            "session/prompt" => {
                let session = params["sessionId"].clone();
                for i in 0..params["n"].as_u64().unwrap_or(0) {
                    let update = json!({"sessionId": session, "update": {"i": i}});
                    cx.peer().notify("session/update", &update).await?;
                }
                self.cancelled.notified().await;
                to_raw(&json!({"stopReason": "cancelled"}))
            }
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        if method == "session/cancel" {
            self.cancelled.notify_one();
        }
        Ok(())
    }
}

/// The client: records the span context each update is handled in.
#[derive(Clone, Default)]
struct Client {
    handled_in: Arc<Mutex<Vec<Option<SpanContext>>>>,
    updates: Arc<Notify>,
}

#[async_trait::async_trait]
impl Handler for Client {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        _params: Params,
    ) -> Result<Box<RawValue>, Error> {
        Err(Error::method_not_found(method))
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        let context = acp_rpc::otel::current();
        self.handled_in.lock().unwrap().push(context);
        self.updates.notify_one();
        Ok(())
    }
}

/// One turn of `n` updates, the client cancelling it once the last update is handled.
async fn turn(n: u64) -> (Spans, Client) {
    let (spans, provider, subscriber, _recording) = recording();
    let _guard = tracing::subscriber::set_default(subscriber);
    let ((ar, aw), (br, bw)) = acp_rpc::memory::pipe();
    let client = Client::default();
    let agent = Connection::new(br, bw, Agent::default(), Config::default());
    let conn = Connection::new(ar, aw, client.clone(), Config::default());
    let peer = conn.peer();
    let _: Value = peer
        .request("initialize", &json!({"protocolVersion": 1}))
        .await
        .unwrap();
    let prompt = {
        let peer = peer.clone();
        tokio::spawn(async move {
            peer.request::<_, Value>("session/prompt", &json!({"sessionId": "s-1", "n": n}))
                .await
        })
    };
    while (client.handled_in.lock().unwrap().len() as u64) < n {
        client.updates.notified().await;
    }
    peer.notify("session/cancel", &json!({"sessionId": "s-1"}))
        .await
        .unwrap();
    let answer = prompt.await.unwrap().unwrap();
    assert_eq!(answer["stopReason"], "cancelled");
    conn.close();
    agent.close();
    provider.force_flush().unwrap();
    (spans, client)
}

#[tokio::test(flavor = "current_thread")]
async fn a_turns_notifications_are_events_on_both_sides_prompt_spans() {
    let (spans, client) = turn(3).await;
    assert!(
        spans.named("acp.notification").is_empty(),
        "no notification has a span of its own: {:#?}",
        spans.named("acp.notification")
    );
    let sent = spans.one("acp.outgoing_request", "session/prompt");
    let handled = spans.one("acp.request", "session/prompt");
    assert_eq!(handled.parent_span_id, sent.span_context.span_id());
    assert_eq!(attr(&sent, "session_id"), "s-1");
    assert_eq!(attr(&handled, "session_id"), "s-1");

    // The agent's span: three updates out, the cancel in.
    let events = notification_events(&handled);
    assert_eq!(
        events,
        vec![
            ("session/update".into(), "outgoing".into(), None),
            ("session/update".into(), "outgoing".into(), None),
            ("session/update".into(), "outgoing".into(), None),
            (
                "session/cancel".into(),
                "incoming".into(),
                Some(sent.span_context.span_id())
            ),
        ]
    );
    // The client's span: the cancel out, the three updates in, each naming the agent's
    // span as its sender (the update's `traceparent`).
    let events = notification_events(&sent);
    let incoming: Vec<_> = events.iter().filter(|e| e.1 == "incoming").collect();
    assert_eq!(incoming.len(), 3, "{events:?}");
    for (method, _, parent) in incoming {
        assert_eq!(method, "session/update");
        assert_eq!(*parent, Some(handled.span_context.span_id()));
    }
    assert!(
        events
            .iter()
            .any(|e| e.0 == "session/cancel" && e.1 == "outgoing")
    );
    assert_eq!(attr(&sent, "acp.notifications"), "4");
    assert_eq!(attr(&handled, "acp.notifications"), "4");
    // The client handled each update in its span of the turn.
    for context in client.handled_in.lock().unwrap().iter() {
        assert_eq!(
            context.as_ref().map(|c| c.span_id()),
            Some(sent.span_context.span_id())
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn every_request_span_has_the_roles_the_outcome_and_the_session() {
    let (spans, _) = turn(1).await;
    for (name, role, peer) in [
        ("acp.outgoing_request", "client", "agent"),
        ("acp.request", "agent", "client"),
    ] {
        for method in ["initialize", "session/prompt"] {
            let span = spans.one(name, method);
            assert_eq!(attr(&span, "acp.role"), role, "{name} {method}");
            assert_eq!(attr(&span, "acp.peer.role"), peer, "{name} {method}");
            assert_eq!(attr(&span, "outcome"), "ok", "{name} {method}");
            assert_eq!(attr(&span, "rpc.system"), "jsonrpc", "{name} {method}");
            assert!(!attr(&span, "message_id").is_empty(), "{name} {method}");
        }
        // The per-message log events are not exported: only the turn's notifications.
        let prompt = spans.one(name, "session/prompt");
        assert!(
            prompt.events.iter().all(|e| e.name == "acp.notification"),
            "{:?}",
            prompt.events
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_long_turn_keeps_the_first_events_and_counts_them_all() {
    let n = u64::from(acp_rpc::otel::MAX_EVENTS) + 40;
    let (spans, _) = turn(n).await;
    let sent = spans.one("acp.outgoing_request", "session/prompt");
    let handled = spans.one("acp.request", "session/prompt");
    for span in [&sent, &handled] {
        assert_eq!(
            notification_events(span).len(),
            acp_rpc::otel::MAX_EVENTS as usize
        );
        assert_eq!(attr(span, "acp.notifications"), (n + 1).to_string());
    }
    assert!(spans.named("acp.notification").is_empty());
}

/// The `acp.notification` events of a span: method, direction, and the span id of the
/// sender's `traceparent`.
fn notification_events(
    span: &SpanData,
) -> Vec<(String, String, Option<opentelemetry::trace::SpanId>)> {
    span.events
        .iter()
        .filter(|e| e.name == "acp.notification")
        .map(|e| {
            let get = |key: &str| {
                e.attributes
                    .iter()
                    .find(|kv| kv.key.as_str() == key)
                    .map(|kv| kv.value.to_string())
            };
            let parent = get("traceparent").map(|tp| {
                let context = acp_rpc::otel::parse_traceparent(&tp).unwrap();
                context.span_id()
            });
            (
                get("method").unwrap_or_default(),
                get("direction").unwrap_or_default(),
                parent,
            )
        })
        .collect()
}

/// The agent of [`a_handlers_updates_go_to_their_sessions_turn_in_the_span_current`]:
/// `s-2`'s prompt says it started and waits to be released; `s-1`'s sends an update of
/// `s-2`, then one of its own from inside a `tracing` span of its own, and releases `s-2`'s.
#[derive(Clone, Default)]
struct TwoTurns {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

#[async_trait::async_trait]
impl Handler for TwoTurns {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        use tracing::Instrument as _;
        let params: Value = params.parse()?;
        match (method, params["sessionId"].as_str()) {
            ("session/prompt", Some("s-2")) => {
                self.started.notify_one();
                self.release.notified().await;
            }
            ("session/prompt", Some("s-1")) => {
                let other = json!({"sessionId": "s-2", "update": {"from": "s-1"}});
                cx.peer().notify("session/update", &other).await?;
                let own = json!({"sessionId": "s-1", "update": {"in": "child"}});
                let child = tracing::info_span!(target: "test", "child");
                cx.peer()
                    .notify("session/update", &own)
                    .instrument(child)
                    .await?;
                self.release.notify_one();
            }
            _ => return Err(Error::method_not_found(method)),
        }
        to_raw(&json!({"stopReason": "end_turn"}))
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        Ok(())
    }
}

/// A notification the handler of a turn sends counts on the turn of the session it names,
/// and carries the span current where it is sent: of another session, it goes to that
/// session's turn; from inside a span the handler opened, it carries that span's context.
#[tokio::test(flavor = "current_thread")]
async fn a_handlers_updates_go_to_their_sessions_turn_in_the_span_current() {
    let (spans, provider, subscriber, _recording) = recording();
    let _guard = tracing::subscriber::set_default(subscriber);
    let ((ar, aw), (br, bw)) = acp_rpc::memory::pipe();
    let client = Client::default();
    let two = TwoTurns::default();
    let agent = Connection::new(br, bw, two.clone(), Config::default());
    let conn = Connection::new(ar, aw, client.clone(), Config::default());
    let peer = conn.peer();
    let prompt = |session: &'static str| {
        let peer = peer.clone();
        tokio::spawn(async move {
            peer.request::<_, Value>("session/prompt", &json!({"sessionId": session}))
                .await
        })
    };
    let second = prompt("s-2");
    // s-2's turn is open on both sides before s-1's starts.
    two.started.notified().await;
    let first = prompt("s-1");
    for answer in [first.await, second.await] {
        assert_eq!(answer.unwrap().unwrap()["stopReason"], "end_turn");
    }
    conn.close();
    agent.close();
    provider.force_flush().unwrap();

    let handled = |session: &str| {
        spans
            .named("acp.request")
            .into_iter()
            .find(|s| attr(s, "session_id") == session)
            .unwrap_or_else(|| panic!("the agent's span of {session}'s prompt"))
    };
    let sent = |session: &str| {
        spans
            .named("acp.outgoing_request")
            .into_iter()
            .find(|s| attr(s, "session_id") == session)
            .unwrap_or_else(|| panic!("the client's span of {session}'s prompt"))
    };
    let child = spans.named("child");
    assert_eq!(child.len(), 1, "{child:#?}");
    let child = &child[0];
    assert_eq!(child.parent_span_id, handled("s-1").span_context.span_id());
    // Counted on the turn of the session each names, on both sides.
    for span in [handled("s-1"), handled("s-2"), sent("s-1"), sent("s-2")] {
        assert_eq!(attr(&span, "acp.notifications"), "1", "{span:#?}");
    }
    // Each carried the span current where it was sent: s-1's handler for s-2's update,
    // the handler's own span for s-1's.
    let carried = |span: &SpanData| {
        let events = notification_events(span);
        assert_eq!(events.len(), 1, "{events:?}");
        events[0].2
    };
    assert_eq!(
        carried(&sent("s-2")),
        Some(handled("s-1").span_context.span_id())
    );
    assert_eq!(carried(&sent("s-1")), Some(child.span_context.span_id()));
}
