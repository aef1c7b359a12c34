//! Prometheus metrics of a [`Server`](crate::Server): what `GET /metrics` answers with when
//! [`ServerBuilder::metrics`](crate::ServerBuilder::metrics) is on, in the text exposition
//! format, through the Prometheus organisation's `prometheus-client` crate.
//!
//! The counts come from the server's routing, fed through the same observer interface an
//! application embedding acp-agent or acp-client installs ([`acp_rpc::observe::Observer`]):
//! [`Metrics`] is one. "Received" is what the remote clients sent (towards the agents),
//! "sent" what went back to them.
//!
//! | metric | labels | what |
//! | --- | --- | --- |
//! | `acp_connections_open` | | ACP connections open now (both profiles) |
//! | `acp_connections_total` | | ACP connections opened |
//! | `acp_connections_refused_total` | `reason` (`limit`, `agent_start`) | connections refused |
//! | `acp_sessions_open` | | sessions the open connections know |
//! | `acp_sessions_total` | | sessions created, loaded or resumed |
//! | `acp_messages_total` | `direction`, `kind` | JSON-RPC messages, by request/notification/response |
//! | `acp_message_bytes_total` | `direction` | their size (JSON lines without line ends) |
//! | `acp_requests_total` | `method`, `outcome` | client requests answered: `ok` or the error code |
//! | `acp_request_duration_seconds` | `method` | from forwarding a client request to its answer |
//! | `acp_notifications_total` | `method`, `kind` | notifications; `kind` is a `session/update`'s `sessionUpdate` |
//! | `acp_agent_processes` | | gateway agent processes running |
//! | `acp_agent_processes_started_total` | | gateway agent processes started |
//! | `acp_store_operations_total` | `operation`, `outcome` | session store operations ([`crate::MeteredStore`]): `ok` or the error's kind |
//! | `acp_store_operation_duration_seconds` | `operation` | their duration |
//!
//! Label values are bounded: `method` is one of the protocol's methods or `other`, `kind`
//! one of the session update kinds or `other`, `outcome` `ok`, a standard error code or
//! `error`. No session or connection id is ever a label. A gateway's agent process is never
//! restarted (it lives and ends with its connection), so there is no restart count.

use std::sync::{Arc, OnceLock};

use acp_rpc::observe::{MessageEvent, MessageKind, Observer, RequestEvent};
use acp_rpc::{Direction, ErrorCode};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// The content type of [`Metrics::encode`]: OpenMetrics text, what `prometheus-client` writes
/// and what Prometheus asks for first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`Metrics::encode_text`]: the Prometheus text format 0.0.4, for
/// scrapers that do not ask for OpenMetrics (`curl`, `promtool check metrics`, older agents).
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The kinds of `session/update` (the schema's `SessionUpdate` variants); anything else is
/// counted as `other`.
const UPDATE_KINDS: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "compaction_update",
    "compaction_summary_chunk",
    "plan_update",
    "subagent_update",
    "session_message_chunk",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MessageLabels {
    direction: &'static str,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabel {
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NotificationLabels {
    method: &'static str,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    operation: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: &'static str,
}

type Histograms = Family<MethodLabel, Histogram, fn() -> Histogram>;
type StoreHistograms = Family<OperationLabel, Histogram, fn() -> Histogram>;

/// A server's metrics: an [`Observer`] of its connections plus the server's own counts
/// (connections, sessions, agent processes). Cheap to update (atomics and a short lock per
/// label set); [`Metrics::encode`] writes the exposition.
pub struct Metrics {
    registry: Registry,
    connections_open: Gauge,
    connections: Counter,
    refused: Family<ReasonLabel, Counter>,
    sessions_open: Gauge,
    sessions: Counter,
    messages: Family<MessageLabels, Counter>,
    bytes: Family<DirectionLabel, Counter>,
    requests: Family<RequestLabels, Counter>,
    durations: Histograms,
    notifications: Family<NotificationLabels, Counter>,
    agent_processes: Gauge,
    agent_processes_started: Counter,
    store_operations: Family<StoreLabels, Counter>,
    store_durations: StoreHistograms,
    hot: HotCounters,
}

/// The counters every message touches, each taken from its family once: a family lookup
/// hashes the labels and takes a lock, too much for every chunk of a streamed answer. A
/// counter is created (and shows in the exposition) when first counted, as before.
#[derive(Default)]
struct HotCounters {
    /// By direction (received, sent) and kind ([`kind_index`]).
    messages: [[OnceLock<Counter>; 4]; 2],
    /// Bytes by direction.
    bytes: [OnceLock<Counter>; 2],
    /// `session/update` notifications by kind: [`UPDATE_KINDS`], then `other`.
    updates: [OnceLock<Counter>; UPDATE_KINDS.len() + 1],
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

fn duration_histogram() -> Histogram {
    // 1 ms to about 4.4 minutes: a prompt turn runs for minutes.
    Histogram::new(exponential_buckets(0.001, 2.0, 19))
}

fn store_histogram() -> Histogram {
    // 10 us to about 5 s: an append to a local file up to a slow database.
    Histogram::new(exponential_buckets(0.00001, 4.0, 10))
}

impl Metrics {
    /// Fresh metrics, every count at zero.
    pub fn new() -> Arc<Metrics> {
        let mut registry = Registry::with_prefix("acp");
        let connections_open = Gauge::default();
        registry.register(
            "connections_open",
            "ACP connections open now",
            connections_open.clone(),
        );
        let connections = Counter::default();
        registry.register("connections", "ACP connections opened", connections.clone());
        let refused = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "connections_refused",
            "ACP connections refused (limit reached, agent failed to start)",
            refused.clone(),
        );
        let sessions_open = Gauge::default();
        registry.register(
            "sessions_open",
            "Sessions known to the open connections",
            sessions_open.clone(),
        );
        let sessions = Counter::default();
        registry.register(
            "sessions",
            "Sessions created, loaded or resumed",
            sessions.clone(),
        );
        let messages = Family::<MessageLabels, Counter>::default();
        registry.register(
            "messages",
            "JSON-RPC messages received from clients and sent to them",
            messages.clone(),
        );
        let bytes = Family::<DirectionLabel, Counter>::default();
        registry.register_with_unit(
            "message",
            "Size of the JSON-RPC messages, without line ends",
            Unit::Bytes,
            bytes.clone(),
        );
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Client requests answered, by method and outcome (ok or the error code)",
            requests.clone(),
        );
        let durations: Histograms = Family::new_with_constructor(duration_histogram);
        registry.register_with_unit(
            "request_duration",
            "Time from forwarding a client request to the agent to its answer",
            Unit::Seconds,
            durations.clone(),
        );
        let notifications = Family::<NotificationLabels, Counter>::default();
        registry.register(
            "notifications",
            "Notifications by method and, for session/update, by update kind",
            notifications.clone(),
        );
        let agent_processes = Gauge::default();
        registry.register(
            "agent_processes",
            "Gateway agent processes running",
            agent_processes.clone(),
        );
        let agent_processes_started = Counter::default();
        registry.register(
            "agent_processes_started",
            "Gateway agent processes started",
            agent_processes_started.clone(),
        );
        let store_operations = Family::<StoreLabels, Counter>::default();
        registry.register(
            "store_operations",
            "Session store operations, by operation and outcome (ok or the error's kind)",
            store_operations.clone(),
        );
        let store_durations: StoreHistograms = Family::new_with_constructor(store_histogram);
        registry.register_with_unit(
            "store_operation_duration",
            "Time a session store operation took",
            Unit::Seconds,
            store_durations.clone(),
        );
        Arc::new(Metrics {
            registry,
            connections_open,
            connections,
            refused,
            sessions_open,
            sessions,
            messages,
            bytes,
            requests,
            durations,
            notifications,
            agent_processes,
            agent_processes_started,
            store_operations,
            store_durations,
            hot: HotCounters::default(),
        })
    }

    /// The exposition, in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// The exposition in the Prometheus text format 0.0.4 ([`TEXT_CONTENT_TYPE`]): the same
    /// samples as [`Metrics::encode`]; a counter's `# HELP`/`# TYPE` name its samples'
    /// `_total` name (OpenMetrics names the family without it), and the OpenMetrics-only
    /// `# UNIT` and `# EOF` lines are left out.
    pub fn encode_text(&self) -> String {
        let open = self.encode();
        let counters: std::collections::HashSet<&str> = open
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
            .collect();
        let mut out = String::with_capacity(open.len() + 256);
        for line in open.lines() {
            if line.starts_with("# UNIT ") || line == "# EOF" {
                continue;
            }
            let meta = ["# HELP ", "# TYPE "]
                .into_iter()
                .find(|p| line.starts_with(p));
            if let Some(prefix) = meta {
                let rest = &line[prefix.len()..];
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                if counters.contains(name) {
                    out.push_str(&format!("{prefix}{name}_total {tail}\n"));
                    continue;
                }
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    pub(crate) fn connection_opened(&self) {
        self.connections.inc();
        self.connections_open.inc();
    }

    pub(crate) fn connection_closed(&self, sessions: usize) {
        self.connections_open.dec();
        self.sessions_open.dec_by(sessions as i64);
    }

    pub(crate) fn connection_refused(&self, reason: &'static str) {
        self.refused.get_or_create(&ReasonLabel { reason }).inc();
    }

    pub(crate) fn session_opened(&self) {
        self.sessions.inc();
        self.sessions_open.inc();
    }

    pub(crate) fn agent_started(&self) {
        self.agent_processes_started.inc();
        self.agent_processes.inc();
    }

    pub(crate) fn agent_ended(&self) {
        self.agent_processes.dec();
    }

    /// One store operation (`operation` and `outcome` from fixed sets, see
    /// [`crate::MeteredStore`]).
    pub(crate) fn store_operation(
        &self,
        operation: &'static str,
        outcome: &'static str,
        took: std::time::Duration,
    ) {
        let labels = StoreLabels { operation, outcome };
        self.store_operations.get_or_create(&labels).inc();
        self.store_durations
            .get_or_create(&OperationLabel { operation })
            .observe(took.as_secs_f64());
    }
}

/// One of the protocol's method names, or `other`.
fn method_label(method: &str) -> &'static str {
    acp_agent::types::METHODS
        .iter()
        .find(|m| m.name == method)
        .map_or("other", |m| m.name)
}

fn kind_label(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::Request => "request",
        MessageKind::Notification => "notification",
        MessageKind::Response => "response",
        _ => "invalid",
    }
}

fn direction_label(direction: Direction) -> &'static str {
    match direction {
        Direction::Incoming => "received",
        Direction::Outgoing => "sent",
    }
}

fn outcome_label(outcome: Result<(), ErrorCode>) -> &'static str {
    let Err(code) = outcome else { return "ok" };
    match code {
        ErrorCode::PARSE_ERROR => "-32700",
        ErrorCode::INVALID_REQUEST => "-32600",
        ErrorCode::METHOD_NOT_FOUND => "-32601",
        ErrorCode::INVALID_PARAMS => "-32602",
        ErrorCode::INTERNAL_ERROR => "-32603",
        ErrorCode::AUTH_REQUIRED => "-32000",
        ErrorCode::RESOURCE_NOT_FOUND => "-32002",
        ErrorCode::REQUEST_CANCELLED => "-32800",
        ErrorCode::CONNECTION_CLOSED => "-32099",
        ErrorCode::REQUEST_TIMED_OUT => "-32098",
        _ => "error",
    }
}

/// A `session/update`'s kind, from a scan of its text: its position in [`UPDATE_KINDS`]
/// (`UPDATE_KINDS.len()` for `other`) and its label.
fn update_kind(event: &MessageEvent<'_>) -> (usize, &'static str) {
    let other = (UPDATE_KINDS.len(), "other");
    let Some(kind) = acp_rpc::flow::string_field(event.text(), "sessionUpdate") else {
        return other;
    };
    UPDATE_KINDS
        .iter()
        .position(|k| *k == kind)
        .map_or(other, |i| (i, UPDATE_KINDS[i]))
}

fn direction_index(direction: Direction) -> usize {
    match direction {
        Direction::Incoming => 0,
        Direction::Outgoing => 1,
    }
}

fn kind_index(kind: MessageKind) -> usize {
    match kind {
        MessageKind::Request => 0,
        MessageKind::Notification => 1,
        MessageKind::Response => 2,
        _ => 3,
    }
}

impl Observer for Metrics {
    fn message(&self, event: &MessageEvent<'_>) {
        let direction = direction_label(event.direction);
        let d = direction_index(event.direction);
        self.hot.messages[d][kind_index(event.kind)]
            .get_or_init(|| {
                let labels = MessageLabels {
                    direction,
                    kind: kind_label(event.kind),
                };
                self.messages.get_or_create(&labels).clone()
            })
            .inc();
        self.hot.bytes[d]
            .get_or_init(|| {
                let labels = DirectionLabel { direction };
                self.bytes.get_or_create(&labels).clone()
            })
            .inc_by(event.size as u64);
        if event.kind != MessageKind::Notification {
            return;
        }
        match event.method {
            Some("session/update") => {
                let (i, kind) = update_kind(event);
                self.hot.updates[i]
                    .get_or_init(|| {
                        let labels = NotificationLabels {
                            method: "session/update",
                            kind,
                        };
                        self.notifications.get_or_create(&labels).clone()
                    })
                    .inc();
            }
            Some(method) => {
                let labels = NotificationLabels {
                    method: method_label(method),
                    kind: "none",
                };
                self.notifications.get_or_create(&labels).inc();
            }
            None => {}
        }
    }

    fn request(&self, event: &RequestEvent<'_>) {
        let method = method_label(event.method);
        let labels = RequestLabels {
            method,
            outcome: outcome_label(event.outcome),
        };
        self.requests.get_or_create(&labels).inc();
        self.durations
            .get_or_create(&MethodLabel { method })
            .observe(event.latency.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_bounded_to_known_values() {
        assert_eq!(method_label("session/prompt"), "session/prompt");
        assert_eq!(method_label("_vendor/anything"), "other");
        assert_eq!(outcome_label(Ok(())), "ok");
        assert_eq!(outcome_label(Err(ErrorCode::METHOD_NOT_FOUND)), "-32601");
        assert_eq!(outcome_label(Err(ErrorCode(-1))), "error");
        let text = br#"{"sessionId":"s","update":{"sessionUpdate":"tool_call"}}"#;
        let event = MessageEvent::new_external(
            Direction::Outgoing,
            MessageKind::Notification,
            Some("session/update"),
            None,
            text.len(),
            text,
        );
        assert_eq!(update_kind(&event), (3, "tool_call"));
        let text = br#"{"update":{"sessionUpdate":"made_up_kind"}}"#;
        let event = MessageEvent::new_external(
            Direction::Outgoing,
            MessageKind::Notification,
            Some("session/update"),
            None,
            text.len(),
            text,
        );
        assert_eq!(update_kind(&event), (UPDATE_KINDS.len(), "other"));
    }
}
