//! The upgrade against a server written out by hand on a loopback socket, so that what it
//! sends and when (frames in the same write as its `101`, a refusal's body, a head that
//! never ends) is exact.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use crate::Error;
use crate::client::websocket::tests::Seen;
use crate::client::{ConnectOptions, connect_transport};

const WAIT: Duration = Duration::from_secs(5);

/// Reads a request's head; returns its `Sec-WebSocket-Key`.
async fn read_request(socket: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        socket.read_exact(&mut byte).await.expect("the request");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("text");
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| value.trim().to_owned())
        })
        .expect("a key")
}

/// A server on loopback that answers the first connection's upgrade request with what
/// `answer` makes of its key, then holds the socket open for a while.
async fn server(answer: impl FnOnce(String) -> Vec<u8> + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/acp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let key = read_request(&mut socket).await;
        socket.write_all(&answer(key)).await.unwrap();
        tokio::time::sleep(WAIT).await;
    });
    url
}

fn switching(key: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    )
    .into_bytes()
}

#[tokio::test]
async fn frames_sent_right_behind_the_101_reach_the_engine() {
    let url = server(|key| {
        let mut out = switching(&key);
        for method in ["first", "second"] {
            let text = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
            out.extend([0x81, text.len() as u8]);
            out.extend(text.as_bytes());
        }
        out
    })
    .await;
    let transport = connect_transport(&url, &ConnectOptions::new())
        .await
        .expect("upgraded");
    let seen = Seen::default();
    let _conn = acp_rpc::Connection::over(transport, seen.clone(), acp_rpc::Config::default());
    tokio::time::timeout(WAIT, async {
        while seen.0.lock().unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("both frames arrived");
    assert_eq!(*seen.0.lock().unwrap(), ["first", "second"]);
}

#[tokio::test]
async fn a_refused_upgrade_says_why_with_the_servers_body() {
    let url =
        server(|_| b"HTTP/1.1 403 Forbidden\r\nContent-Length: 12\r\n\r\nnot for you.".to_vec())
            .await;
    let error = connect_transport(&url, &ConnectOptions::new())
        .await
        .map(|_| ())
        .expect_err("refused");
    assert!(
        matches!(&error, Error::Refused { status: 403, message } if message == "not for you."),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_head_that_never_ends_fails_the_upgrade_without_holding_it() {
    let url = server(|_| {
        let mut out = b"HTTP/1.1 101 Switching Protocols\r\n".to_vec();
        while out.len() < 200 * 1024 {
            out.extend(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        out
    })
    .await;
    let outcome = tokio::time::timeout(WAIT, connect_transport(&url, &ConnectOptions::new()))
        .await
        .expect("an answer in time");
    assert!(outcome.is_err(), "a head of 200 KiB was taken");
}

#[tokio::test]
async fn a_server_that_never_answers_the_upgrade_fails_the_connect_in_time() {
    // The request is read, and nothing is sent back for longer than the open timeout.
    let url = server(|_| Vec::new()).await;
    let outcome = tokio::time::timeout(WAIT, connect_transport(&url, &ConnectOptions::new()))
        .await
        .expect("an answer before the test's own limit");
    let error = outcome.map(|_| ()).expect_err("no upgrade");
    assert!(
        matches!(&error, Error::WebSocket(why) if why.contains("did not answer")),
        "{error:?}"
    );
}
