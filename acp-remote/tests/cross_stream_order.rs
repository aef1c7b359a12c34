//! Order across the SSE streams of one Streamable HTTP connection. The answer to
//! `session/load` travels on the connection stream and the replayed history on the session
//! stream: two sockets. A scripted server here puts the answer on the wire *before* the
//! history (the worst a network can do with the agent's order), and the client must still
//! deliver the history first; it must also open the session stream before it POSTs the load.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use acp_agent::types::*;
use acp_client::Client;
use acp_remote::{ConnectOptions, connect_client};

/// How long after the answer the scripted server writes the history: well inside the hold.
const HISTORY_LAG: Duration = Duration::from_millis(20);

#[derive(Default)]
struct Script {
    /// What the server saw, in order ("stream s-1", "load").
    seen: Mutex<Vec<String>>,
    connection_stream: Mutex<Option<mpsc::Sender<Bytes>>>,
    session_stream: Mutex<Option<mpsc::Sender<Bytes>>>,
}

type Body = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

/// An SSE response fed by the returned sender.
fn sse() -> (Response<Body>, mpsc::Sender<Bytes>) {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        let data = rx.recv().await?;
        let mut event = b"data: ".to_vec();
        event.extend_from_slice(&data);
        event.extend_from_slice(b"\n\n");
        Some((Ok(Frame::data(Bytes::from(event))), rx))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(events)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        "text/event-stream".parse().unwrap(),
    );
    (response, tx)
}

async fn serve(script: Arc<Script>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let session = req
        .headers()
        .get("acp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *req.method() {
        hyper::Method::GET => {
            let (response, tx) = sse();
            match session {
                Some(s) => {
                    script.seen.lock().unwrap().push(format!("stream {s}"));
                    *script.session_stream.lock().unwrap() = Some(tx);
                }
                None => *script.connection_stream.lock().unwrap() = Some(tx),
            }
            Ok(response)
        }
        hyper::Method::POST => {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let message: Value = serde_json::from_slice(&body).unwrap();
            match message["method"].as_str() {
                Some("initialize") => {
                    let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "protocolVersion": 1,
                        "agentCapabilities": {"loadSession": true},
                    }});
                    let mut response = full(StatusCode::OK, &answer.to_string());
                    let headers = response.headers_mut();
                    headers.insert("acp-connection-id", "c-1".parse().unwrap());
                    headers.insert(
                        hyper::header::CONTENT_TYPE,
                        "application/json".parse().unwrap(),
                    );
                    Ok(response)
                }
                Some("session/load") => {
                    script.seen.lock().unwrap().push("load".into());
                    tokio::spawn(answer_then_replay(script.clone(), message["id"].clone()));
                    Ok(full(StatusCode::ACCEPTED, ""))
                }
                _ => Ok(full(StatusCode::ACCEPTED, "")),
            }
        }
        _ => Ok(full(StatusCode::ACCEPTED, "")),
    }
}

/// The answer on the connection stream first, the history on the session stream after
/// [`HISTORY_LAG`] (waiting for that stream if the client has not opened it yet).
async fn answer_then_replay(script: Arc<Script>, id: Value) {
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {}});
    let connection = script.connection_stream.lock().unwrap().clone().unwrap();
    connection
        .send(Bytes::from(answer.to_string()))
        .await
        .unwrap();
    tokio::time::sleep(HISTORY_LAG).await;
    let session = loop {
        if let Some(tx) = script.session_stream.lock().unwrap().clone() {
            break tx;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    for (kind, text) in [
        ("user_message_chunk", "an earlier question"),
        ("agent_message_chunk", "an earlier answer"),
    ] {
        let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s-1",
            "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}},
        }});
        session.send(Bytes::from(update.to_string())).await.unwrap();
    }
}

struct Quiet;

#[acp_client::async_trait]
impl Client for Quiet {}

#[tokio::test]
async fn the_replayed_history_comes_before_the_load_answer_sent_ahead_of_it() {
    let script = Arc::new(Script::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/acp", listener.local_addr().unwrap());
    let served = script.clone();
    let server = tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let script = served.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| serve(script.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(socket), service)
                    .await;
            });
        }
    });

    let conn = connect_client(Quiet, &url, &ConnectOptions::new(), Default::default())
        .await
        .unwrap();
    let agent = conn.agent();
    let loaded = tokio::time::timeout(Duration::from_secs(10), async {
        agent
            .initialize(InitializeRequest::new(ProtocolVersion::V1))
            .await
            .expect("initialize");
        agent
            .load_session_history(LoadSessionRequest::new([], "/w", "s-1"))
            .await
            .expect("session/load")
    })
    .await
    .expect("timed out");

    let kinds: Vec<_> = loaded
        .history
        .iter()
        .map(|u| serde_json::to_value(u).unwrap()["sessionUpdate"].clone())
        .collect();
    assert_eq!(
        kinds,
        [json!("user_message_chunk"), json!("agent_message_chunk")],
        "the history, before the answer"
    );
    assert_eq!(
        *script.seen.lock().unwrap(),
        ["stream s-1", "load"],
        "the session stream is open before the load is POSTed"
    );
    conn.close();
    server.abort();
}
