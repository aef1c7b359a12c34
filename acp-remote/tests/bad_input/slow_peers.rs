//! Slow, idle and silent peers: idle connections and clients that never read are closed, a
//! client that reads late still gets its whole turn, WebSocket clients that stop answering
//! pings are closed, slow clients and message floods are cut off, and ten thousand idle
//! sockets leave memory bounded.

use super::*;

#[tokio::test]
async fn an_idle_connection_and_one_whose_client_never_reads_are_closed() {
    let mut limits = Limits::default();
    limits.idle_timeout = Duration::from_secs(1);
    limits.max_buffered_bytes = 2048;
    limits.max_output_stall = Duration::from_millis(500);
    let server = server(limits).await;
    let addr = server.local_addr();
    // Idle: nothing for longer than the timeout.
    let idle = initialize(addr, AUTH).await;
    // Never reads: a session whose stream is never opened, and a turn writing far more than
    // the buffer holds: the agent is held at the limit, and once the client has taken nothing
    // for the stall time the connection is closed.
    let (conn, session, stream) = with_session(addr).await;
    drop(stream);
    let slow = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"slow"}}]}}}}"#
    );
    let ids = [
        AUTH,
        JSON,
        ("Acp-Connection-Id", conn.as_str()),
        ("Acp-Session-Id", session.as_str()),
    ];
    assert_eq!(
        send(addr, &request("POST", "/acp", &ids, &slow))
            .await
            .status,
        202
    );
    within(10, async {
        while server.connections() > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    for id in [idle, conn] {
        let r: Raw = send(
            addr,
            &request(
                "POST",
                "/acp",
                &[AUTH, JSON, ("Acp-Connection-Id", &id)],
                NEW,
            ),
        )
        .await;
        assert_eq!(r.status, 404);
    }
    server.shutdown();
}

/// Backpressure, not loss: a client that opens its session stream only after its agent has
/// written far more than the connection may hold still gets every message of the turn, in
/// order, and the answer; the agent was made to wait meanwhile.
#[tokio::test]
async fn a_client_that_reads_late_gets_all_of_its_turn() {
    let mut limits = Limits::default();
    limits.max_buffered_bytes = 2048;
    limits.max_output_stall = Duration::from_secs(5);
    let server = server(limits).await;
    let addr = server.local_addr();
    let (conn, session, _stream) = with_session(addr).await;
    let ids = [
        AUTH,
        JSON,
        ("Acp-Connection-Id", conn.as_str()),
        ("Acp-Session-Id", session.as_str()),
    ];
    let slow = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"slow"}}]}}}}"#
    );
    let posted = send(addr, &request("POST", "/acp", &ids, &slow)).await;
    assert_eq!(posted.status, 202);
    // A second of 20 ms ticks (some 150 bytes each) is well over the 2 KiB limit.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (r, mut stream) = support::raw::open(
        addr,
        &request(
            "GET",
            "/acp",
            &[
                AUTH,
                SSE,
                ("Acp-Connection-Id", conn.as_str()),
                ("Acp-Session-Id", session.as_str()),
            ],
            "",
        ),
    )
    .await;
    assert_eq!(r.status, 200);
    let seen = within(20, async {
        use tokio::io::AsyncReadExt;
        let mut seen = r.body.clone().into_bytes();
        while !String::from_utf8_lossy(&seen).contains("stopReason") {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the stream ended before the turn's answer");
            seen.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    })
    .await;
    let mut at = 0;
    for i in 0..200 {
        let tick = format!("\"tick {i}\\n\"");
        let found = seen[at..].find(&tick);
        assert!(found.is_some(), "{tick} missing or out of order");
        at += found.unwrap();
    }
    assert!(seen.contains(r#""stopReason":"end_turn""#), "{seen}");
    assert_eq!(server.connections(), 1);
    server.shutdown();
}

/// A WebSocket client that reads (and so answers pings, as every WebSocket library does) is
/// kept across many ping intervals and still served; one that goes silent is pinged, then
/// closed with 1001, and its connection ends.
#[tokio::test]
async fn a_websocket_client_that_stops_answering_pings_is_closed() {
    let mut limits = Limits::default();
    limits.websocket_ping_interval = Duration::from_millis(100);
    let server = server(limits).await;

    let (mut alive, _) = websocket(&server).await;
    let mut pings = 0;
    let listening = within(5, async {
        let until = tokio::time::Instant::now() + Duration::from_millis(800);
        while let Ok(frame) = tokio::time::timeout_at(until, alive.next()).await {
            match frame {
                Some(Ok(Message::Ping(_))) => pings += 1,
                Some(Ok(Message::Close(frame))) => panic!("closed while answering: {frame:?}"),
                Some(Ok(_)) => {}
                other => panic!("socket ended: {other:?}"),
            }
        }
    });
    listening.await;
    assert!(pings >= 3, "pinged while silent: {pings}");
    assert_eq!(server.connections(), 1);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
    alive.send(Message::text(init)).await.unwrap();
    assert_eq!(answer(&mut alive, 1).await["result"]["protocolVersion"], 1);
    drop(alive);
    within(5, async {
        while server.connections() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    // Silent: nothing read (so no pong) for longer than two intervals.
    let (mut silent, _) = websocket(&server).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut seen = Vec::new();
    let code = within(5, async {
        loop {
            match silent.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(frame)) => seen.push(frame),
                _ => return None,
            }
        }
    })
    .await;
    assert_eq!(code, Some(1001), "after {seen:?}");
    assert!(matches!(seen.first(), Some(Message::Ping(_))), "{seen:?}");
    within(5, async {
        while server.connections() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    server.shutdown();
}

/// acp-remote's own client answers the pings while its application is quiet: idle for many
/// intervals, then a whole conversation.
#[tokio::test]
async fn the_remote_client_answers_pings_while_its_application_is_quiet() {
    let mut limits = Limits::default();
    limits.websocket_ping_interval = Duration::from_millis(100);
    let server = server(limits).await;
    let url = format!("ws://{}/acp", server.local_addr());
    let options = acp_remote::ConnectOptions::new().token(TOKEN);
    let client = support::TestClient::default();
    let conn = acp_remote::connect_client(client, &url, &options, Default::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(server.connections(), 1, "still open after 7 intervals");
    let (_, text) = within(10, support::converse(&conn)).await;
    assert!(!text.is_empty());
    server.shutdown();
}

/// Reads until the server closes the socket; whatever it wrote first.
async fn until_closed(socket: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&seen).into_owned(),
            Ok(n) => seen.extend_from_slice(&chunk[..n]),
        }
    }
}

#[tokio::test]
async fn slow_clients_are_cut_off_and_sockets_are_bounded() {
    use tokio::io::AsyncWriteExt;
    let mut limits = Limits::default();
    limits.header_timeout = Duration::from_millis(300);
    limits.body_timeout = Duration::from_millis(300);
    let server = server(limits).await;
    let addr = server.local_addr();
    // Slow-loris headers: half a request line, then nothing: the socket is closed.
    let mut loris = tokio::net::TcpStream::connect(addr).await.unwrap();
    loris
        .write_all(b"POST /acp HTTP/1.1\r\nHost: t")
        .await
        .unwrap();
    within(5, until_closed(&mut loris)).await;
    // Slow body: the headers promise 100 bytes, 10 come: 408.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /acp HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let answer = within(5, until_closed(&mut slow)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    server.shutdown();
    // Sockets: three held open (mid-headers), the fourth is closed at once; once they go,
    // the server serves again.
    let mut limits = Limits::default();
    limits.max_sockets = 3;
    let server = self::server(limits).await;
    let addr = server.local_addr();
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
        held.push(s);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut fourth = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _ = fourth
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        .await;
    assert_eq!(within(5, until_closed(&mut fourth)).await, "");
    drop(held);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let health = send(addr, &request("GET", "/healthz", &[], "")).await;
    assert_eq!(health.status, 200);
    server.shutdown();
}

/// Over `max_messages_per_second` a POST gets 429 with `Retry-After` and a WebSocket
/// request a JSON-RPC error with its id; neither reaches the agent, and the connection
/// serves again once the rate allows.
#[tokio::test]
async fn a_connection_over_its_message_rate_is_told_to_slow_down() {
    let mut limits = Limits::default();
    limits.max_messages_per_second = 5;
    let server = server(limits).await;
    let addr = server.local_addr();
    let conn = initialize(addr, AUTH).await;
    let ids = [AUTH, JSON, ("Acp-Connection-Id", conn.as_str())];
    let note = r#"{"jsonrpc":"2.0","method":"_note","params":{}}"#;
    let mut statuses = Vec::new();
    for _ in 0..10 {
        statuses.push(send(addr, &request("POST", "/acp", &ids, note)).await);
    }
    let limited: Vec<&Raw> = statuses.iter().filter(|r| r.status == 429).collect();
    assert!(
        (5..=6).contains(&limited.len()),
        "{:?}",
        statuses.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert_eq!(limited[0].header("retry-after").as_deref(), Some("1"));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        send(addr, &request("POST", "/acp", &ids, note))
            .await
            .status,
        202
    );

    let (mut ws, _) = websocket(&server).await;
    for id in 1..=10 {
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":1}}}}"#
        );
        ws.send(Message::text(init)).await.unwrap();
    }
    // Refusals come at once, the agent's answers later: read until all ten ids answered.
    let mut answered = std::collections::HashMap::new();
    within(10, async {
        while answered.len() < 10 {
            if let Some(Ok(Message::Text(t))) = ws.next().await {
                let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                answered.insert(v["id"].as_i64().unwrap(), v);
            }
        }
    })
    .await;
    let refused: Vec<_> = answered
        .values()
        .filter(|a| a["error"]["code"] == -32000)
        .collect();
    assert!((5..=6).contains(&refused.len()), "{answered:?}");
    for answer in refused {
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("slow down"), "{answer}");
    }
    server.shutdown();
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// 10,000 idle sockets (connected, sending nothing) against the default socket limit
/// (1,024): past the limit each is closed at once, the held ones when their headers are
/// late; memory stays bounded (the process holds both ends here, so the bound covers the
/// flood's own sockets too), and the server serves as soon as the flood stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_idle_sockets_leave_memory_bounded_and_the_server_serving() {
    const SOCKETS: usize = 10_000;
    let mut limits = Limits::default();
    limits.header_timeout = Duration::from_millis(500);
    let server = server(limits).await;
    let addr = server.local_addr();
    let before = rss_kib();
    let mut flood = Vec::with_capacity(SOCKETS);
    let mut refused = 0;
    within(60, async {
        for _ in 0..SOCKETS {
            match tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr))
                .await
            {
                Ok(Ok(socket)) => flood.push(socket),
                _ => refused += 1,
            }
        }
    })
    .await;
    let grown_mib = (rss_kib().saturating_sub(before)) / 1024;
    eprintln!(
        "{} of {SOCKETS} sockets connected ({refused} refused or timed out); RSS grew {grown_mib} MiB",
        flood.len()
    );
    assert!(
        flood.len() >= SOCKETS / 2,
        "{refused} of {SOCKETS} connects failed"
    );
    // (The other tests of this binary run beside it in the same process: a loose bound,
    // which 10,000 sockets each buffering even 64 KiB would still break tenfold.)
    assert!(grown_mib < 256, "memory grew by {grown_mib} MiB");
    // Every socket is closed by the server: at once past the limit, after the header
    // timeout within it.
    let open = within(30, async {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut open = 0;
            for socket in &flood {
                // Still open: nothing to read yet (end of stream or a reset: closed).
                let mut byte = [0u8; 1];
                if let Err(e) = socket.try_read(&mut byte)
                    && e.kind() == std::io::ErrorKind::WouldBlock
                {
                    open += 1;
                }
            }
            if open == 0 {
                return open;
            }
        }
    })
    .await;
    assert_eq!(open, 0);
    let health = send(addr, &request("GET", "/healthz", &[], "")).await;
    assert_eq!(health.status, 200, "served during the flood's aftermath");
    drop(flood);
    let _ = initialize(addr, AUTH).await;
    server.shutdown();
}

/// A client that pings while its agent streams gets a pong for each ping, and every streamed
/// message whole and in order: the server's own frames and tungstenite's pongs go out
/// through one socket without landing inside each other.
#[tokio::test]
async fn pings_during_a_stream_are_answered_between_whole_messages() {
    let server = server(Limits::default()).await;
    let (mut ws, _) = websocket(&server).await;
    ws.send(Message::text(INIT)).await.unwrap();
    answer(&mut ws, 0).await;
    ws.send(Message::text(NEW)).await.unwrap();
    let created = answer(&mut ws, 1).await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let prompt = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "slow"}]},
    });
    ws.send(Message::text(prompt.to_string())).await.unwrap();
    let (mut ticks, mut pongs, mut pings) = (0, 0, 0);
    within(20, async {
        while ticks < 25 {
            match ws.next().await {
                Some(Ok(Message::Text(text))) => {
                    let message: serde_json::Value =
                        serde_json::from_str(&text).expect("a whole JSON message");
                    let chunk = &message["params"]["update"]["content"]["text"];
                    if let Some(chunk) = chunk.as_str() {
                        assert_eq!(chunk, format!("tick {ticks}\n"), "in order");
                        ticks += 1;
                        // Two pings a tick, so that pongs and messages interleave.
                        for _ in 0..2 {
                            ws.send(Message::Ping(format!("p{pings}").into()))
                                .await
                                .unwrap();
                            pings += 1;
                        }
                    }
                }
                Some(Ok(Message::Pong(payload))) => {
                    assert_eq!(&payload[..], format!("p{pongs}").as_bytes(), "in order");
                    pongs += 1;
                }
                Some(Ok(_)) => {}
                other => panic!("the socket ended: {other:?}"),
            }
        }
    })
    .await;
    assert!(pongs >= pings - 2, "{pongs} pongs for {pings} pings");
    server.shutdown();
}
