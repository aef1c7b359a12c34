//! A proxy chain in one process (feature `unstable_proxy_chains`): a raw client -> our
//! conductor -> our proxy (acp-agent's `proxy`) -> the test agent, over in-memory pipes,
//! with every line of every hop read back through the generated message types.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::conductor::{ChainEnd, Component, Conductor, conduct};
use acp_agent::proxy::{Message, NotificationStep, Proxy, ProxyContext, RequestStep, serve_proxy};
use acp_rpc::{Config, Connection, Direction};
use acp_types::v1::{
    AgentNotification, AgentRequest, ClientNotification, ClientRequest, InitializeProxyRequest,
    InitializeResponse, ProxySuccessorNotification, ProxySuccessorRequest,
};
use serde_json::{Value, json};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf, duplex, split};

use crate::common::{FullAgent, Recorder};

type Lines = Arc<Mutex<Vec<(usize, Direction, Value)>>>;

/// Tags every agent message chunk going to the client, answers `_proxy/ping` itself, drops
/// `_proxy/drop` notifications and adds a `_meta` key to the capabilities.
struct Tagger;

#[acp_agent::async_trait]
impl Proxy for Tagger {
    async fn request_from_predecessor(&self, _cx: &ProxyContext, request: Message) -> RequestStep {
        if request.method == "_proxy/ping" {
            return RequestStep::Answer(acp_rpc::to_raw(&json!({"pong": true})));
        }
        RequestStep::Forward(request)
    }

    async fn notification_from_predecessor(
        &self,
        _cx: &ProxyContext,
        n: Message,
    ) -> NotificationStep {
        if n.method == "_proxy/drop" {
            return NotificationStep::Drop;
        }
        NotificationStep::Forward(n)
    }

    async fn notification_from_successor(
        &self,
        _cx: &ProxyContext,
        n: Message,
    ) -> NotificationStep {
        let mut params: Value = serde_json::from_str(n.params.as_ref().unwrap().get()).unwrap();
        if let Some(Value::String(text)) = params.pointer_mut("/update/content/text") {
            *text = format!("[tagged] {text}");
        }
        NotificationStep::Forward(Message::new(n.method, &params).unwrap())
    }

    async fn initialized(&self, mut answer: InitializeResponse) -> InitializeResponse {
        answer.agent_capabilities.meta =
            Some(serde_json::from_value(json!({"proxied": true})).unwrap());
        answer.protocol_version = 99u16.into();
        answer
    }
}

type End = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

fn pipe() -> (End, End) {
    let (a, b) = duplex(64 * 1024);
    (split(a), split(b))
}

/// Records every line of one hop of the conductor, tagged with the hop's index.
fn tapped(hop: usize, lines: &Lines) -> Config {
    let lines = lines.clone();
    Config::default().with_observer(acp_rpc::tap::on_line(move |event| {
        if let acp_rpc::TapEvent::Line(dir, line) = event {
            let value = serde_json::from_slice(line).expect("every line is JSON");
            lines.lock().unwrap().push((hop, dir, value));
        }
    }))
}

struct Chain {
    client: Connection,
    conductor: Conductor,
    _proxy: Connection,
    _agent: acp_agent::AgentConnection,
    rec: Recorder,
    lines: Lines,
}

/// client -> conductor -> Tagger -> FullAgent.
fn chain(rec: Recorder) -> Chain {
    let lines: Lines = Arc::default();
    let ((cr, cw), (ccr, ccw)) = pipe();
    let ((pr, pw), (cpr, cpw)) = pipe();
    let ((ar, aw), (car, caw)) = pipe();
    let client = Connection::new(cr, cw, rec.clone(), Config::default());
    let proxy = serve_proxy(Tagger, pr, pw, Config::default());
    let agent = acp_agent::Builder::new(FullAgent).io(ar, aw);
    // One tap for the conductor: it sees the client hop and both component hops, but tells
    // them apart only by direction, so the hop is read from the message itself below.
    let conductor = conduct(
        Box::new(ccr),
        Box::new(ccw),
        vec![
            Component {
                name: "proxy `tagger`".into(),
                reader: Box::new(cpr),
                writer: Box::new(cpw),
            },
            Component {
                name: "agent `full`".into(),
                reader: Box::new(car),
                writer: Box::new(caw),
            },
        ],
        tapped(0, &lines),
    )
    .expect("a chain");
    Chain {
        client,
        conductor,
        _proxy: proxy,
        _agent: agent,
        rec,
        lines,
    }
}

/// Every request and notification the conductor read or wrote is a message of the schema
/// (the generated types read it), and so is what a `proxy/successor` envelope carries.
fn check_schema(lines: &Lines) -> usize {
    let lines = lines.lock().unwrap();
    let mut checked = 0;
    for (_, _, msg) in lines.iter() {
        assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
        let Some(method) = msg["method"].as_str() else {
            assert!(
                msg.get("result").is_some() != msg.get("error").is_some(),
                "a response has a result or an error: {msg}"
            );
            continue;
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let (method, params) = if method == "proxy/successor" {
            if msg.get("id").is_some() {
                let e: ProxySuccessorRequest = serde_json::from_value(params).expect("envelope");
                (e.method, e.params.unwrap_or(Value::Null))
            } else {
                let e: ProxySuccessorNotification =
                    serde_json::from_value(params).expect("envelope");
                (e.method, e.params.unwrap_or(Value::Null))
            }
        } else {
            (method.to_string(), params)
        };
        // The message enums hold the stable methods; the unstable one is read by its type.
        let ok = if method == "proxy/initialize" {
            serde_json::from_value::<InitializeProxyRequest>(params.clone()).is_ok()
        } else if msg.get("id").is_some() {
            ClientRequest::decode(&method, params.clone()).is_ok()
                || AgentRequest::decode(&method, params.clone()).is_ok()
        } else {
            ClientNotification::decode(&method, params.clone()).is_ok()
                || AgentNotification::decode(&method, params.clone()).is_ok()
        };
        assert!(ok, "not a schema message: {method} {params}");
        checked += 1;
    }
    checked
}

async fn call(c: &Connection, method: &str, params: Value) -> Result<Value, acp_rpc::Error> {
    tokio::time::timeout(Duration::from_secs(10), c.peer().request(method, &params))
        .await
        .expect("no answer within 10 s")
}

#[tokio::test]
async fn a_turn_crosses_the_chain_with_updates_a_client_call_and_the_proxys_changes() {
    let c = chain(Recorder::default());
    let init = call(
        &c.client,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": crate::common::all_caps()}),
    )
    .await
    .unwrap();
    // The proxy added its key, and could not change the version.
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["_meta"], json!({"proxied": true}));
    // The proxy answered `proxy/initialize` (not `initialize`): the conductor sent it.
    let sent: Vec<String> = c
        .lines
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, d, m)| *d == Direction::Outgoing && m.get("id").is_some())
        .filter_map(|(_, _, m)| m["method"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        sent,
        ["proxy/initialize", "initialize"],
        "the proxy got proxy/initialize, the agent initialize"
    );
    let session = call(
        &c.client,
        "session/new",
        json!({"cwd": "/", "mcpServers": []}),
    )
    .await
    .unwrap();
    let sid = session["sessionId"].clone();
    // A request the agent makes of the client crosses the chain both ways.
    let turn = call(
        &c.client,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "read"}]}),
    )
    .await
    .unwrap();
    assert_eq!(turn["stopReason"], "end_turn");
    let stream = call(
        &c.client,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "stream"}]}),
    )
    .await
    .unwrap();
    assert_eq!(stream["stopReason"], "end_turn");
    let texts: Vec<String> = c
        .rec
        .updates
        .lock()
        .unwrap()
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["update"]["content"]["text"].as_str().map(str::to_string))
        .collect();
    assert!(
        texts.iter().any(|t| t == "[tagged] ok: hello"),
        "the client's answer reached the agent: {texts:?}"
    );
    // The chunks the agent awaited arrived in order, tagged, before the turn's answer.
    let chunks: Vec<&String> = texts
        .iter()
        .filter(|t| t.starts_with("[tagged] chunk "))
        .collect();
    let expected: Vec<String> = (0..20).map(|i| format!("[tagged] chunk {i}")).collect();
    assert_eq!(chunks, expected.iter().collect::<Vec<_>>());
    assert_eq!(
        c.rec.calls.lock().unwrap().as_slice(),
        ["fs/read_text_file"]
    );
    // The proxy answers some requests itself and drops some notifications.
    assert_eq!(
        call(&c.client, "_proxy/ping", json!({})).await.unwrap(),
        json!({"pong": true})
    );
    c.client
        .peer()
        .notify("_proxy/drop", &json!({}))
        .await
        .unwrap();
    assert!(check_schema(&c.lines) > 40);
    let dropped = c
        .lines
        .lock()
        .unwrap()
        .iter()
        .any(|(_, d, m)| *d == Direction::Outgoing && m.to_string().contains("_proxy/drop"));
    assert!(!dropped, "a dropped notification never reaches the agent");
}

#[tokio::test]
async fn cancelling_a_turn_withdraws_the_permission_request_on_every_hop() {
    let (tx, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let rec = Recorder {
        permission_tx: Some(tx),
        ..Recorder::default()
    };
    let c = chain(rec);
    call(
        &c.client,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await
    .unwrap();
    let session = call(
        &c.client,
        "session/new",
        json!({"cwd": "/", "mcpServers": []}),
    )
    .await
    .unwrap();
    let sid = session["sessionId"].clone();
    let peer = c.client.peer().clone();
    let params =
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "permission then wait"}]});
    let turn =
        tokio::spawn(async move { peer.request::<_, Value>("session/prompt", &params).await });
    tokio::time::timeout(Duration::from_secs(10), asked.recv())
        .await
        .expect("the permission request crossed the chain");
    c.client
        .peer()
        .notify("session/cancel", &json!({"sessionId": sid}))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer["stopReason"], "cancelled");
    // The agent's cancellation of its request reached the client through both hops.
    tokio::time::timeout(Duration::from_secs(10), async {
        while !c
            .rec
            .calls
            .lock()
            .unwrap()
            .iter()
            .any(|m| m == "permission withdrawn")
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the permission request was withdrawn");
    let cancels = c
        .lines
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, d, m)| *d == Direction::Outgoing && m["method"] == "$/cancel_request")
        .count();
    assert_eq!(
        cancels, 2,
        "one $/cancel_request per hop the request crossed (proxy, client)"
    );
    check_schema(&c.lines);
}

#[tokio::test]
async fn a_component_that_goes_away_fails_the_waiting_turn_with_its_name_and_ends_the_chain() {
    let c = chain(Recorder::default());
    call(
        &c.client,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await
    .unwrap();
    let session = call(
        &c.client,
        "session/new",
        json!({"cwd": "/", "mcpServers": []}),
    )
    .await
    .unwrap();
    let peer = c.client.peer().clone();
    let params =
        json!({"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "wait"}]});
    let turn =
        tokio::spawn(async move { peer.request::<_, Value>("session/prompt", &params).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    c._proxy.close();
    let err = tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(err.message.contains("proxy `tagger`"), "{err:?}");
    let end = tokio::time::timeout(Duration::from_secs(10), c.conductor.closed())
        .await
        .expect("the chain ends");
    assert_eq!(
        end,
        ChainEnd::ComponentEnded {
            index: 0,
            name: "proxy `tagger`".into()
        }
    );
    assert_eq!(end.component(), Some(0));
}

/// The client leaving is the normal end: the conductor says so (so `acp conduct` exits 0
/// although its components then exit on their closed input).
#[tokio::test]
async fn the_client_leaving_ends_the_chain_as_a_normal_end() {
    let c = chain(Recorder::default());
    call(
        &c.client,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await
    .unwrap();
    c.client.close();
    let end = tokio::time::timeout(Duration::from_secs(10), c.conductor.closed())
        .await
        .expect("the chain ends");
    assert_eq!(end, ChainEnd::ClientLeft);
}

#[tokio::test]
async fn bad_envelopes_and_plain_initialize_get_json_rpc_errors_and_the_proxy_keeps_serving() {
    // A raw conductor in front of the proxy.
    let ((pr, pw), (cr, cw)) = pipe();
    let _proxy = serve_proxy(Tagger, pr, pw, Config::default());
    let conductor = Connection::new(cr, cw, Recorder::default(), Config::default());
    let err = call(&conductor, "proxy/successor", json!({"params": {}}))
        .await
        .unwrap_err();
    assert_eq!(err.code.0, -32602, "{err:?}");
    let err = call(
        &conductor,
        "proxy/initialize",
        json!({"protocolVersion": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code.0, -32602, "{err:?}");
    let err = call(&conductor, "initialize", json!({"protocolVersion": 1}))
        .await
        .unwrap_err();
    assert_eq!(err.code.0, -32600, "{err:?}");
    // Still serving: a request from the successor reaches the conductor as a plain request.
    let answer = call(
        &conductor,
        "proxy/successor",
        json!({"method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/x"}}),
    )
    .await
    .unwrap();
    assert_eq!(
        answer,
        json!({"content": "hello"}),
        "the forwarded request's answer is the envelope's"
    );
}
