//! Whole conversations through both profiles against an in-process agent: initialize,
//! session/new, a prompt with streamed updates, a permission request and a file read
//! answered by the client; several connections at once, each with its own sessions.

mod support;

use std::sync::atomic::Ordering;

use acp_remote::{BearerToken, ConnectOptions, Profile, Server, connect_client};
use support::{TestAgent, TestClient, converse, within};

const TOKEN: &str = "test-token-0123456789";

async fn server() -> acp_remote::RunningServer {
    Server::in_process(TestAgent::default)
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

async fn round_trip(url: &str) {
    let client = TestClient::default();
    let options = ConnectOptions::new().token(TOKEN);
    let conn = connect_client(client.clone(), url, &options, Default::default())
        .await
        .unwrap();
    let (_, text) = within(10, converse(&conn)).await;
    assert_eq!(text, "alpha\nbeta\ngamma\n");
    assert_eq!(client.permissions.load(Ordering::Relaxed), 1);
    assert_eq!(client.reads.load(Ordering::Relaxed), 1);
    conn.close();
}

#[tokio::test]
async fn streamable_http_round_trip() {
    let server = server().await;
    round_trip(&server.url()).await;
    server.shutdown();
}

#[tokio::test]
async fn websocket_round_trip() {
    let server = server().await;
    let url = server.url().replace("http://", "ws://");
    round_trip(&url).await;
    server.shutdown();
}

#[tokio::test]
async fn the_profile_option_overrides_the_scheme() {
    let server = server().await;
    let options = ConnectOptions::new()
        .token(TOKEN)
        .profile(Profile::WebSocket);
    let link = acp_remote::connect(&server.url(), &options).await.unwrap();
    assert_eq!(link.profile, Profile::WebSocket);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_over_both_profiles_at_once() {
    let server = server().await;
    let http = server.url();
    let ws = http.replace("http://", "ws://");
    let mut tasks = Vec::new();
    for i in 0..8 {
        let url = if i % 2 == 0 { http.clone() } else { ws.clone() };
        tasks.push(tokio::spawn(async move { round_trip(&url).await }));
    }
    for task in tasks {
        within(20, task).await.unwrap();
    }
    // Each connection ended with its client (DELETE or the socket's close).
    within(5, async {
        while server.connections() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    server.shutdown();
}

#[tokio::test]
async fn a_wrong_token_fails_initialize_over_http_and_the_upgrade_over_websocket() {
    let server = server().await;
    let options = ConnectOptions::new().token("wrong");
    let conn = connect_client(
        TestClient::default(),
        &server.url(),
        &options,
        Default::default(),
    )
    .await
    .unwrap();
    let error = within(5, conn.agent().initialize(support::init()))
        .await
        .unwrap_err();
    assert!(error.message.contains("401"), "{error:?}");
    let ws = server.url().replace("http://", "ws://");
    let error = acp_remote::connect(&ws, &options).await.unwrap_err();
    assert!(
        matches!(error, acp_remote::Error::Refused { status: 401, .. }),
        "{error:?}"
    );
    server.shutdown();
}

#[tokio::test]
async fn listening_beyond_loopback_without_a_credential_is_refused() {
    let refused = Server::in_process(TestAgent::default)
        .bind("0.0.0.0:0".parse().unwrap())
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("without a credential"),
        "{refused}"
    );
    // Loopback without one is fine (local development).
    let local = Server::in_process(TestAgent::default)
        .bind("[::1]:0".parse().unwrap())
        .await;
    if let Ok(local) = local {
        assert!(local.url().starts_with("http://[::1]:"));
        local.shutdown();
    }
}

/// The server goes away mid-turn: the pending prompt resolves with an error (no hang), over
/// either profile.
async fn server_killed_mid_stream(websocket: bool) {
    use acp_agent::types::*;
    let server = server().await;
    let url = if websocket {
        server.url().replace("http://", "ws://")
    } else {
        server.url()
    };
    let options = ConnectOptions::new().token(TOKEN);
    let conn = connect_client(TestClient::default(), &url, &options, Default::default())
        .await
        .unwrap();
    let agent = conn.agent();
    within(5, agent.initialize(support::init())).await.unwrap();
    let session = within(5, agent.new_session(NewSessionRequest::new("/w", [])))
        .await
        .unwrap();
    let mut turn = agent.prompt_stream(PromptRequest::new(session.session_id, ["slow".into()]));
    // The turn is streaming: one update arrived.
    assert!(matches!(
        within(5, turn.next()).await,
        Some(acp_client::PromptEvent::Update(_))
    ));
    server.shutdown();
    let end = within(10, async {
        loop {
            match turn.next().await {
                Some(acp_client::PromptEvent::Update(_)) => continue,
                Some(acp_client::PromptEvent::Done(result)) => return Some(result),
                None => return None,
            }
        }
    })
    .await;
    assert!(
        !matches!(end, Some(Ok(_))),
        "the turn cannot end well: {end:?}"
    );
    within(10, conn.closed()).await;
}

#[tokio::test]
async fn a_server_killed_mid_stream_fails_the_pending_turn_over_http() {
    server_killed_mid_stream(false).await;
}

#[tokio::test]
async fn a_server_killed_mid_stream_fails_the_pending_turn_over_websocket() {
    server_killed_mid_stream(true).await;
}

/// A load balancer's stickiness cookie: a proxy in front of the server sets `lb=node-1` on the
/// first response of each TCP connection; the client sends it back on every later request
/// (the SSE streams' connections included), so all of a connection's requests can be routed
/// to one node.
#[tokio::test]
async fn the_client_sends_back_the_cookies_a_load_balancer_sets() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server().await;
    let upstream = server.local_addr();
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/acp", proxy.local_addr().unwrap());
    let (requests, with_cookie) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (r, c) = (requests.clone(), with_cookie.clone());
    tokio::spawn(async move {
        while let Ok((client, _)) = proxy.accept().await {
            let backend = tokio::net::TcpStream::connect(upstream).await.unwrap();
            let (mut client_read, mut client_write) = client.into_split();
            let (mut backend_read, mut backend_write) = backend.into_split();
            let (r, c) = (r.clone(), c.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = client_read.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let text = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                    if text.contains(" /acp http/1.1") {
                        r.fetch_add(1, Ordering::Relaxed);
                        if text.contains("cookie: lb=node-1") {
                            c.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if backend_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            tokio::spawn(async move {
                let mut buf = vec![0u8; 1 << 16];
                let mut first = true;
                while let Ok(n) = backend_read.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut out = buf[..n].to_vec();
                    if first && let Some(i) = out.windows(2).position(|w| w == b"\r\n") {
                        let cookie = b"\r\nSet-Cookie: lb=node-1; Path=/; HttpOnly";
                        out.splice(i..i, cookie.iter().copied());
                    }
                    first = false;
                    if client_write.write_all(&out).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let options = ConnectOptions::new().token(TOKEN);
    let conn = connect_client(TestClient::default(), &url, &options, Default::default())
        .await
        .unwrap();
    let (_, text) = within(10, converse(&conn)).await;
    assert_eq!(text, "alpha\nbeta\ngamma\n");
    let (total, sticky) = (
        requests.load(Ordering::Relaxed),
        with_cookie.load(Ordering::Relaxed),
    );
    // Every request after the first (initialize, which got the cookie) carried it.
    assert!(total >= 5, "{total} requests");
    assert_eq!(
        sticky,
        total - 1,
        "{sticky} of {total} requests carried the cookie"
    );
    conn.close();
    server.shutdown();
}

/// An agent whose sessions live in a store every server shares (as `acp serve --store`
/// hosts do): a restarted server's agent resumes them.
#[derive(Clone, Default)]
struct StoredAgent {
    sessions: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[acp_agent::async_trait]
impl acp_agent::Agent for StoredAgent {
    async fn initialize(
        &self,
        _: acp_agent::types::InitializeRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::InitializeResponse, acp_agent::Error> {
        use acp_agent::types::*;
        Ok(
            InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
                AgentCapabilities::new().session_capabilities(
                    SessionCapabilities::new().resume(SessionResumeCapabilities::new()),
                ),
            ),
        )
    }

    async fn new_session(
        &self,
        _: acp_agent::types::NewSessionRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::NewSessionResponse, acp_agent::Error> {
        let mut sessions = self.sessions.lock().unwrap();
        let id = format!("stored-{}", sessions.len());
        sessions.push(id.clone());
        Ok(acp_agent::types::NewSessionResponse::new(id))
    }

    async fn resume_session(
        &self,
        p: acp_agent::types::ResumeSessionRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::ResumeSessionResponse, acp_agent::Error> {
        if self.sessions.lock().unwrap().contains(&p.session_id.0) {
            Ok(acp_agent::types::ResumeSessionResponse::new())
        } else {
            Err(acp_agent::Error::resource_not_found(format!(
                "no session {}",
                p.session_id
            )))
        }
    }

    async fn prompt(
        &self,
        p: acp_agent::types::PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<acp_agent::types::PromptResponse, acp_agent::Error> {
        use acp_agent::types::*;
        if matches!(p.prompt.first(), Some(ContentBlock::Text(t)) if t.text == "slow") {
            // Held until the server goes away (bounded).
            tokio::select! {
                _ = cx.cancelled() => return Ok(PromptResponse::new(StopReason::Cancelled)),
                _ = tokio::time::sleep(std::time::Duration::from_secs(20)) => {}
            }
        }
        cx.session().message_chunk("done").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

async fn stored_server(
    addr: std::net::SocketAddr,
    agent: &StoredAgent,
    token: &str,
) -> acp_remote::RunningServer {
    let agent = agent.clone();
    // The port the previous server listened on is free once its accept loop has ended.
    within(10, async {
        loop {
            let agent = agent.clone();
            let bound = Server::in_process(move || agent.clone())
                .authenticator(BearerToken::new(token).unwrap())
                .bind(addr)
                .await;
            match bound {
                Ok(server) => return server,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
    })
    .await
}

/// The negotiation of the tests: v1, with file reading advertised.
fn negotiate() -> acp_client::negotiate::NegotiateOptions {
    acp_client::negotiate::NegotiateOptions::new(support::init())
}

/// A policy that retries an unreachable server for a few seconds.
fn patient() -> acp_client::restart::RestartPolicy {
    use acp_client::restart::{Backoff, RestartPolicy, RetryRule};
    RestartPolicy {
        timeout: RetryRule {
            retries: 20,
            backoff: Backoff::Exponential {
                first: std::time::Duration::from_millis(25),
            },
        },
        ..RestartPolicy::default()
    }
}

/// A first server with a [`StoredAgent`], and a supervised client connected to it over
/// `scheme` (`http` or `ws`).
async fn supervised_client(
    scheme: &str,
) -> (
    StoredAgent,
    acp_remote::RunningServer,
    acp_client::restart::SupervisedAgent<TestClient>,
) {
    let agent = StoredAgent::default();
    let first = stored_server("127.0.0.1:0".parse().unwrap(), &agent, TOKEN).await;
    let url = format!("{scheme}://{}/acp", first.local_addr());
    let connector = acp_remote::RemoteConnector::new(url, ConnectOptions::new().token(TOKEN));
    let supervised = within(
        10,
        acp_client::restart::SupervisedAgent::connect(
            connector,
            TestClient::default(),
            negotiate(),
            patient(),
        ),
    )
    .await
    .expect("connect");
    (agent, first, supervised)
}

/// The server restarts under a supervised client: the turn in flight fails naming the
/// reconnection, the client connects again (a new `initialize`), resumes its session on the
/// new server and goes on with the same session id, over either profile.
async fn a_supervised_client_reconnects_and_resumes(websocket: bool) {
    use acp_agent::types::*;
    use acp_client::restart::{SessionRestore, SupervisorStatus};

    let (agent, first, supervised) = supervised_client(if websocket { "ws" } else { "http" }).await;
    let addr = first.local_addr();
    let session = within(5, supervised.new_session(NewSessionRequest::new("/w", [])))
        .await
        .unwrap()
        .session_id;
    let turn = within(
        5,
        supervised.prompt(PromptRequest::new(session.clone(), ["hi".into()])),
    )
    .await
    .unwrap();
    assert_eq!(turn.stop_reason, StopReason::EndTurn);

    let held = tokio::spawn({
        let supervised = supervised.clone();
        let session = session.clone();
        async move {
            supervised
                .prompt(PromptRequest::new(session, ["slow".into()]))
                .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    first.shutdown();
    let second = stored_server(addr, &agent, TOKEN).await;

    let error = within(15, held)
        .await
        .unwrap()
        .expect_err("the held turn fails");
    assert_eq!(error.code, acp_rpc::ErrorCode::CONNECTION_CLOSED, "{error}");
    let data = error.data.clone().unwrap_or_default();
    assert_eq!(data["restart"]["session"], "resumed", "{error}: {data}");
    assert_eq!(
        supervised.status(),
        SupervisorStatus::Running { restarts: 1 }
    );
    assert_eq!(
        supervised.last_restore(),
        vec![(session.clone(), SessionRestore::Resumed)]
    );
    // The same session id goes on, on the new server.
    let turn = within(
        5,
        supervised.prompt(PromptRequest::new(session.clone(), ["again".into()])),
    )
    .await
    .unwrap();
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    assert_eq!(second.connections(), 1);
    within(5, supervised.shutdown(std::time::Duration::from_secs(2))).await;
    // The goodbye reached the server: the connection is gone, not left to its idle timeout.
    within(5, async {
        while second.connections() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_client_reconnects_and_resumes_over_http() {
    a_supervised_client_reconnects_and_resumes(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_client_reconnects_and_resumes_over_websocket() {
    a_supervised_client_reconnects_and_resumes(true).await;
}

/// A server that comes back refusing the credential: the supervisor does not retry (the
/// user must act) and says why, over either profile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_credential_on_reconnection_is_not_retried() {
    use acp_client::restart::{FailureKind, SupervisorStatus};

    for scheme in ["http", "ws"] {
        let (agent, first, supervised) = supervised_client(scheme).await;
        let addr = first.local_addr();
        let mut status = supervised.watch_status();
        first.shutdown();
        let _second = stored_server(addr, &agent, "another-token-0123456789").await;
        let failed = within(15, async {
            loop {
                if let SupervisorStatus::Failed { error } = status.borrow_and_update().clone() {
                    return error;
                }
                status.changed().await.expect("the supervisor is alive");
            }
        })
        .await;
        assert_eq!(
            FailureKind::of(&failed),
            FailureKind::Authentication,
            "{scheme}: {failed}"
        );
    }
}
