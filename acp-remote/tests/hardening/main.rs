//! What a hostile or broken peer cannot make either side hold (issue 45, "what the security
//! review found besides"): a client that stops reading its WebSocket or SSE stream is cut off
//! within the write timeout; the dashboard's event streams are capped; the queue towards the
//! agent is bounded in bytes; the client bounds the `initialize` answer and its cookie jar;
//! `/metrics` without a credential answers loopback host names only; an agent line over the
//! message limit ends the connection with a clear error and the child is reaped.
//!
//! Loopback only; every wait has a deadline.

mod client;
#[path = "../support/mod.rs"]
mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use acp_client::process::AgentCommand;
use acp_remote::{BearerToken, ConnectOptions, Limits, LiveFeed, Metrics, Server, connect_client};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use support::raw::{event_with, open, request, send};
use support::wire::{AUTH, INIT, JSON, NEW, SSE, TOKEN, initialize};
use support::{TestClient, init, reaped, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Bytes of each chunk the flooding agent streams, and how many: far more than the kernel
/// buffers of a loopback socket hold.
const CHUNK: usize = 64 * 1024;
const CHUNKS: usize = 600;

/// Answers a prompt with [`CHUNKS`] chunks of [`CHUNK`] bytes.
#[derive(Default)]
struct Flood;

#[acp_agent::async_trait]
impl Agent for Flood {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1))
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("flood"))
    }

    async fn prompt(&self, _: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let chunk = "x".repeat(CHUNK);
        for _ in 0..CHUNKS {
            cx.session().message_chunk(chunk.clone()).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// A server of [`Flood`] whose writes time out after a second; the output stall is left
/// long, so only the write timeout can end a stalled connection within a test's time.
async fn flood_server() -> acp_remote::RunningServer {
    let mut limits = Limits::default();
    limits.write_timeout = Duration::from_secs(1);
    limits.max_output_stall = Duration::from_secs(600);
    Server::in_process(|| Flood)
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .limits(limits)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// A TCP connection with a small receive buffer, so that a reader that stops fills it soon.
async fn small_socket(addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Reads `socket` until the server closes it (end of stream or a reset); `false` if it is
/// still open after `secs`.
async fn closed_within(socket: &mut TcpStream, secs: u64) -> bool {
    let read = async {
        let mut sink = vec![0u8; 1 << 16];
        loop {
            match socket.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(secs), read)
        .await
        .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_that_stops_reading_is_closed_within_the_write_timeout() {
    let server = flood_server().await;
    let mut req = format!("ws://{}/acp", server.local_addr())
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let tcp = small_socket(server.local_addr()).await;
    let (mut ws, _) = tokio_tungstenite::client_async(req, tcp).await.unwrap();
    ws.send(Message::text(INIT)).await.unwrap();
    support::wire::answer(&mut ws, 0).await;
    ws.send(Message::text(NEW)).await.unwrap();
    support::wire::answer(&mut ws, 1).await;
    let prompt = r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"flood","prompt":[{"type":"text","text":"go"}]}}"#;
    ws.send(Message::text(prompt)).await.unwrap();
    assert_eq!(server.connections(), 1);
    // From here on the client reads nothing: the server's writes wait, then time out.
    let started = Instant::now();
    while server.connections() > 0 && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        server.connections(),
        0,
        "the stalled WebSocket's connection was released"
    );
    // The socket is closed too: what was in flight drains, then it ends.
    let mut tcp = ws.into_inner();
    assert!(closed_within(&mut tcp, 10).await, "the socket was closed");
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_client_that_stops_reading_has_its_stream_closed_within_the_write_timeout() {
    let server = flood_server().await;
    let addr = server.local_addr();
    let conn = initialize(addr, AUTH).await;
    let (r, mut main) = open(
        addr,
        &request(
            "GET",
            "/acp",
            &[AUTH, SSE, ("Acp-Connection-Id", &conn)],
            "",
        ),
    )
    .await;
    assert_eq!(r.status, 200);
    let posted = send(
        addr,
        &request(
            "POST",
            "/acp",
            &[AUTH, JSON, ("Acp-Connection-Id", &conn)],
            NEW,
        ),
    )
    .await;
    assert_eq!(posted.status, 202);
    event_with(&mut main, "flood").await;
    // The session's stream, on a socket that will stop being read once its headers are in.
    let mut stalled = small_socket(addr).await;
    let get = request(
        "GET",
        "/acp",
        &[
            AUTH,
            SSE,
            ("Acp-Connection-Id", &conn),
            ("Acp-Session-Id", "flood"),
        ],
        "",
    );
    stalled.write_all(&get).await.unwrap();
    let mut head = Vec::new();
    within(10, async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            assert_eq!(stalled.read(&mut byte).await.unwrap(), 1);
            head.push(byte[0]);
        }
    })
    .await;
    assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
    let prompt = r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"flood","prompt":[{"type":"text","text":"go"}]}}"#;
    let posted = send(
        addr,
        &request(
            "POST",
            "/acp",
            &[
                AUTH,
                JSON,
                ("Acp-Connection-Id", &conn),
                ("Acp-Session-Id", "flood"),
            ],
            prompt,
        ),
    )
    .await;
    assert_eq!(posted.status, 202);
    // Unread for a while: the kernel buffers fill, a write waits, the timeout (1 s) passes.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        closed_within(&mut stalled, 10).await,
        "the stalled SSE stream's socket was closed"
    );
    // The connection itself stays, for the client to reopen its stream.
    assert_eq!(server.connections(), 1);
    server.shutdown();
}

/// A feed whose state never changes: its event streams stay open and quiet.
struct Still;

impl LiveFeed for Still {
    fn page(&self) -> String {
        "<!doctype html><title>still</title>".to_owned()
    }

    fn next(
        &self,
        _seen: u64,
    ) -> Pin<Box<dyn std::future::Future<Output = (u64, String)> + Send + '_>> {
        Box::pin(std::future::pending())
    }
}

/// Opens `GET /events` on `addr`: its status, and the socket (kept open while it lives).
async fn viewer(addr: SocketAddr) -> (u16, String, TcpStream) {
    let bytes = format!(
        "GET /events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        addr.port()
    );
    let (r, socket) = open(addr, bytes.as_bytes()).await;
    (r.status, r.body, socket)
}

/// Past [`acp_remote::live::MAX_EVENT_STREAMS`] viewers, the next gets 503; one leaving makes
/// room. On a server's dashboard and on `serve_live` (`acp trace --serve`) alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_event_streams_past_the_cap_are_refused_with_503() {
    let feed: Arc<dyn LiveFeed> = Arc::new(Still);
    let server = Server::in_process(|| Flood)
        .dashboard(feed.clone())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let live = acp_remote::serve_live("127.0.0.1:0".parse().unwrap(), feed, None)
        .await
        .unwrap();
    let cap = acp_remote::live::MAX_EVENT_STREAMS;
    for addr in [server.local_addr(), live.local_addr()] {
        let mut open_viewers = Vec::new();
        for _ in 0..cap {
            let (status, _, socket) = viewer(addr).await;
            assert_eq!(status, 200);
            open_viewers.push(socket);
        }
        let (status, body, _) = viewer(addr).await;
        assert_eq!(status, 503, "{addr}: {body}");
        assert!(body.contains("too many viewers"), "{body}");
        // One leaves: a new one gets in (once the server has seen it go).
        drop(open_viewers.pop());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, _, socket) = viewer(addr).await;
            if status == 200 {
                open_viewers.push(socket);
                break;
            }
            assert!(Instant::now() < deadline, "no room after a viewer left");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    server.shutdown();
    live.shutdown();
}

/// A gateway whose agent answers `initialize` and then never reads its input again.
async fn deaf_gateway(limits: Limits) -> acp_remote::RunningServer {
    let script = r#"read -r line
printf '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\n'
exec sleep 20"#;
    Server::gateway(AgentCommand::new("sh").arg("-c").arg(script))
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .limits(limits)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// What waits for an agent that does not read is bounded in bytes: past
/// `max_inbound_bytes` a notification is refused (429 over HTTP, a JSON-RPC error over
/// WebSocket), where the queue used to take 64 messages of any size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_towards_the_agent_is_bounded_in_bytes() {
    let mut limits = Limits::default();
    limits.max_inbound_bytes = 1024 * 1024;
    let server = deaf_gateway(limits).await;
    let addr = server.local_addr();
    let pad = "p".repeat(512 * 1024);
    let note = format!(r#"{{"jsonrpc":"2.0","method":"x/note","params":{{"pad":"{pad}"}}}}"#);
    let conn = initialize(addr, AUTH).await;
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let r = send(
            addr,
            &request(
                "POST",
                "/acp",
                &[AUTH, JSON, ("Acp-Connection-Id", &conn)],
                &note,
            ),
        )
        .await;
        statuses.push(r.status);
        if r.status == 429 {
            assert_eq!(r.header("retry-after").as_deref(), Some("1"));
            assert!(r.body.contains("not yet read"), "{}", r.body);
            break;
        }
        assert_eq!(r.status, 202, "{r:?}");
    }
    // About two in the child's pipe (1 MiB, see `acp_rpc::stdio::grow_pipe`), one in the
    // pipe's write (counted until written) and one queued: 1 MiB, so the sixth at the
    // latest does not fit (the queue used to take 64).
    assert!(
        statuses.len() <= 6 && statuses.last() == Some(&429),
        "{statuses:?}"
    );

    // Over WebSocket: a request that does not fit is answered with an error, with its id.
    let (mut ws, _) = support::wire::websocket(&server).await;
    ws.send(Message::text(INIT)).await.unwrap();
    support::wire::answer(&mut ws, 0).await;
    let mut refused = None;
    for id in 10..22 {
        let request =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x/ask","params":{{"pad":"{pad}"}}}}"#);
        ws.send(Message::text(request)).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_millis(500), async {
            loop {
                match ws.next().await {
                    Some(Ok(Message::Text(t))) => {
                        return serde_json::from_str::<serde_json::Value>(&t).unwrap();
                    }
                    Some(Ok(_)) => {}
                    other => panic!("socket ended: {other:?}"),
                }
            }
        })
        .await;
        if let Ok(answer) = answer {
            refused = Some((id, answer));
            break;
        }
    }
    let (id, answer) = refused.expect("a request past the bound is refused");
    assert!(id <= 15, "refused only after {id}");
    assert_eq!(answer["id"], id);
    assert_eq!(answer["error"]["code"], -32000);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("not yet read"), "{message}");
    server.shutdown();
}

/// `/metrics` of a server without a credential answers only requests naming a loopback
/// host, as its dashboard does: a page of another site rebound to 127.0.0.1 is refused.
#[tokio::test]
async fn metrics_without_a_credential_answer_only_loopback_host_names() {
    let server = Server::in_process(|| Flood)
        .metrics(Metrics::new())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    let get = |host: String| async move {
        let bytes = format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\n\r\n");
        send(addr, bytes.as_bytes()).await
    };
    for host in [
        format!("127.0.0.1:{}", addr.port()),
        format!("localhost:{}", addr.port()),
    ] {
        let r = get(host.clone()).await;
        assert_eq!(r.status, 200, "{host}: {}", r.body);
        assert!(r.body.contains("acp_connections_open"), "{}", r.body);
    }
    for host in [
        format!("rebound.example:{}", addr.port()),
        "10.0.0.1".to_owned(),
    ] {
        let r = get(host.clone()).await;
        assert_eq!(r.status, 403, "{host}: {}", r.body);
        assert!(!r.body.contains("acp_"), "{}", r.body);
        assert!(r.body.contains("loopback"), "{}", r.body);
    }
    server.shutdown();
}

/// A gateway agent that answers `initialize` (naming its pid) and then answers
/// `session/new` with a line of 200,000 bytes, and then sleeps: only the server can end it.
fn oversized_agent() -> AgentCommand {
    let script = r#"read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentInfo":{"name":"big","version":"%s"}}}\n' "$id" "$$"
read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"' "$id"
head -c 200000 /dev/zero | tr '\0' x
printf '"}}\n'
exec sleep 20"#;
    AgentCommand::new("sh").arg("-c").arg(script)
}

/// A line over `max_message_bytes` from the agent ends the connection, as the deployment
/// page says: the request it answered gets an error naming the limit, the connection is
/// gone and the child is reaped. Over both profiles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_line_from_the_agent_ends_the_connection_with_a_clear_error() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 64 * 1024;
    let server = Server::gateway(oversized_agent())
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .limits(limits)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let options = ConnectOptions::new().token(TOKEN);
    for url in [server.url(), server.url().replace("http://", "ws://")] {
        let conn = connect_client(TestClient::default(), &url, &options, Default::default())
            .await
            .unwrap();
        let agent = conn.agent();
        let info = within(10, agent.initialize(init())).await.unwrap();
        let pid = info.agent_info.unwrap().version;
        let error = within(10, agent.new_session(NewSessionRequest::new("/w", [])))
            .await
            .expect_err("the oversized answer is an error");
        let text = error.to_string();
        assert!(
            text.contains("over this server's limit of 65536 bytes"),
            "{url}: {text}"
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.connections() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(server.connections(), 0, "{url}: the connection ended");
        assert!(reaped(&pid).await, "{url}: the agent {pid} was reaped");
        conn.close();
    }
    server.shutdown();
}
