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
