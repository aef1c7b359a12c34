use std::time::Duration;

use acp_rpc::transport::{FrameSink, FrameSource};
use futures_util::{SinkExt, StreamExt};
use std::future::poll_fn;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::*;

const WAIT: Duration = Duration::from_secs(5);

/// The client's carrier over one end of a pipe, and the other end.
fn raw_pair() -> (SocketFrames, SocketSink, CancellationToken, DuplexStream) {
    let (server, client) = tokio::io::duplex(1 << 16);
    let io: Box<dyn Io> = Box::new(client);
    let (frames, sink, over) = carrier(
        Upgraded {
            io,
            leftover: BytesMut::new(),
        },
        1 << 20,
    );
    (frames, sink, over, server)
}

/// The client's carrier and tungstenite's server on the other end.
async fn pair() -> (SocketFrames, SocketSink, WebSocketStream<DuplexStream>) {
    let (frames, sink, _over, server) = raw_pair();
    let server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
    (frames, sink, server)
}

async fn next_frame(frames: &mut SocketFrames) -> Option<Bytes> {
    tokio::time::timeout(WAIT, poll_fn(|cx| frames.poll_frame(cx)))
        .await
        .expect("a frame or the end in time")
}

/// The status code of the client's close frame, read off the raw pipe: masked, two bytes.
async fn client_close_code(server: &mut DuplexStream) -> u16 {
    let mut frame = [0u8; 8];
    tokio::time::timeout(WAIT, server.read_exact(&mut frame))
        .await
        .expect("the close in time")
        .expect("read");
    assert_eq!(
        frame[..2],
        [0x88, 0x82],
        "a final, masked close of two bytes"
    );
    let mask = &frame[2..6];
    u16::from_be_bytes([frame[6] ^ mask[0], frame[7] ^ mask[1]])
}

#[tokio::test]
async fn a_ping_is_answered_with_its_pong_while_the_messages_go_on() {
    let (mut frames, _sink, mut server) = pair().await;
    server
        .send(Message::Ping(Bytes::from_static(b"still there?")))
        .await
        .unwrap();
    server.send(Message::text("{}")).await.unwrap();
    assert_eq!(next_frame(&mut frames).await.as_deref(), Some(&b"{}"[..]));
    let answer = tokio::time::timeout(WAIT, server.next()).await.unwrap();
    assert!(
        matches!(&answer, Some(Ok(Message::Pong(p))) if &p[..] == b"still there?"),
        "{answer:?}"
    );
}

#[tokio::test]
async fn the_servers_close_is_answered_and_ends_the_input() {
    let (mut frames, _sink, mut server) = pair().await;
    server.close(None).await.unwrap();
    assert_eq!(next_frame(&mut frames).await, None);
    // tungstenite's server ends its stream once the client's answer came.
    let answer = tokio::time::timeout(WAIT, server.next()).await.unwrap();
    assert!(
        matches!(&answer, None | Some(Ok(Message::Close(_)))),
        "{answer:?}"
    );
    assert_eq!(next_frame(&mut frames).await, None, "and stays ended");
}

#[tokio::test]
async fn broken_frames_end_the_input_with_the_close_code_that_says_why() {
    for (bytes, code) in [
        (&[0x81, 0x81, 1, 2, 3, 4, 5][..], 1002), // a masked server frame
        (&[0x83, 0x00][..], 1002),                // an opcode RFC 6455 does not define
        (&[0x81, 0x01, 0xff][..], 1007),          // text that is not UTF-8
        (&[0x81, 0x7f, 0, 0, 0, 0, 0x10, 0, 0, 0][..], 1009), // 256 MiB announced
    ] {
        let (mut frames, _sink, _over, mut server) = raw_pair();
        server.write_all(bytes).await.unwrap();
        assert_eq!(next_frame(&mut frames).await, None, "{bytes:?}");
        assert_eq!(client_close_code(&mut server).await, code, "{bytes:?}");
    }
}

#[tokio::test]
async fn the_end_of_the_engines_output_sends_a_normal_close_then_nothing() {
    let (_frames, mut sink, over, mut server) = raw_pair();
    sink.send(Bytes::from_static(b"{\"a\":1}")).unwrap();
    poll_fn(|cx| sink.poll_close(cx)).await.unwrap();
    assert!(
        over.is_cancelled(),
        "the token is cancelled once the close went out"
    );
    // The message, then the close: a masked frame of 7 bytes, then one of 2.
    let mut message = [0u8; 13];
    server.read_exact(&mut message).await.unwrap();
    assert_eq!(message[..2], [0x81, 0x87]);
    let unmasked: Vec<u8> = message[6..]
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ message[2 + i % 4])
        .collect();
    assert_eq!(unmasked, b"{\"a\":1}");
    assert_eq!(client_close_code(&mut server).await, 1000);
    // Nothing is sent after the close frame.
    sink.send(Bytes::from_static(b"late")).unwrap();
    let _ = poll_fn(|cx| sink.poll_flush(cx)).await;
    let mut more = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_millis(100), server.read(&mut more)).await;
    assert!(read.is_err(), "nothing after the close: {read:?}");
}

#[tokio::test]
async fn messages_reach_tungstenites_server_unmasked_and_in_order() {
    let (_frames, mut sink, mut server) = pair().await;
    for i in 0..100 {
        poll_fn(|cx| sink.poll_ready(cx)).await.unwrap();
        sink.send(Bytes::from(format!("{{\"n\":{i}}}"))).unwrap();
    }
    poll_fn(|cx| sink.poll_flush(cx)).await.unwrap();
    for i in 0..100 {
        let got = tokio::time::timeout(WAIT, server.next()).await.unwrap();
        let Some(Ok(Message::Text(text))) = got else {
            panic!("a text frame, not {got:?}")
        };
        assert_eq!(text.as_str(), format!("{{\"n\":{i}}}"));
    }
    poll_fn(|cx| sink.poll_close(cx)).await.unwrap();
    let closing = tokio::time::timeout(WAIT, server.next()).await.unwrap();
    assert!(
        matches!(&closing, Some(Ok(Message::Close(Some(c)))) if c.code == CloseCode::Normal),
        "{closing:?}"
    );
}

#[tokio::test]
async fn a_server_that_pings_and_never_reads_does_not_grow_the_clients_output() {
    let (mut frames, _sink, _over, mut server) = raw_pair();
    let ping = [0x89, 0x7d];
    let payload = [b'p'; 125];
    let writer = tokio::spawn(async move {
        for _ in 0..20_000 {
            server.write_all(&ping).await.unwrap();
            server.write_all(&payload).await.unwrap();
        }
        server.write_all(&[0x81, 0x02, b'{', b'}']).await.unwrap();
        server
    });
    // 2.5 MiB of pings, their pongs with nobody to read them, then a message.
    assert_eq!(next_frame(&mut frames).await.as_deref(), Some(&b"{}"[..]));
    let _server = writer.await.unwrap();
    let held = lock(&frames.out).unwritten();
    assert!(
        held < OUT_HIGH_WATER + 200,
        "{held} bytes of pongs held for a server that reads nothing"
    );
}
