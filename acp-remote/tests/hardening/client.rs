//! What the remote client bounds against a hostile server: the `initialize` answer and its
//! cookie jar.

use super::*;

type FakeBody = BoxBody<Bytes, Infallible>;

/// A body that never ends (an SSE stream that stays open and quiet).
struct Forever;

impl hyper::body::Body for Forever {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Pending
    }
}

/// A hostile ACP server on loopback: `answer` makes each response from the request's
/// method and headers; every request's headers are kept for the test.
async fn fake_server(
    answer: impl Fn(&Request<Incoming>) -> Response<FakeBody> + Send + Sync + 'static,
) -> (SocketAddr, Arc<Mutex<Vec<hyper::HeaderMap>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let answer = Arc::new(answer);
    let kept = seen.clone();
    tokio::spawn(async move {
        // Bounded: a test makes a handful of connections.
        for _ in 0..64 {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (answer, kept) = (answer.clone(), kept.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    kept.lock().unwrap().push(req.headers().clone());
                    let response = answer(&req);
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, seen)
}

fn full(status: u16, body: impl Into<Bytes>) -> Response<FakeBody> {
    let mut response = Response::new(http_body_util::Full::new(body.into()).boxed());
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    response
}

/// The answer to `initialize` is one message: a server sending one larger than the client's
/// limit gets a clear error, not a client holding whatever it sends.
#[tokio::test]
async fn the_client_bounds_the_initialize_answer() {
    let (addr, _) = fake_server(|_| {
        let pad = "p".repeat(1024 * 1024);
        // 1: the client's first request id, its `initialize`.
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":1,"_meta":{{"pad":"{pad}"}}}}}}"#
        );
        let mut response = full(200, body);
        let headers = response.headers_mut();
        headers.insert("content-type", "application/json".parse().unwrap());
        headers.insert("acp-connection-id", "c1".parse().unwrap());
        response
    })
    .await;
    let options = ConnectOptions::new().max_message_bytes(64 * 1024);
    let url = format!("http://{addr}/acp");
    let conn = connect_client(TestClient::default(), &url, &options, Default::default())
        .await
        .unwrap();
    let Err(error) = within(10, conn.agent().initialize(init())).await else {
        panic!("an answer over the limit was accepted");
    };
    let text = error.to_string();
    assert!(text.contains("over this client's limit of 65536"), "{text}");
    conn.close();
}

/// A server setting dozens of new cookies on every response: the client keeps a bounded
/// jar, so the `Cookie` header it sends stops growing.
#[tokio::test]
async fn the_client_bounds_its_cookie_jar() {
    let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (addr, seen) = fake_server(move |req| {
        let mut response = if req.method() == hyper::Method::GET {
            let mut r = Response::new(Forever.boxed());
            r.headers_mut()
                .insert("content-type", "text/event-stream".parse().unwrap());
            r
        } else if req.headers().get("acp-connection-id").is_none() {
            let mut r = full(
                200,
                r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#,
            );
            r.headers_mut()
                .insert("acp-connection-id", "c1".parse().unwrap());
            r
        } else {
            full(400, "no\n")
        };
        for _ in 0..40 {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let cookie = format!("c{n}={}; Path=/", "v".repeat(100));
            response
                .headers_mut()
                .append("set-cookie", cookie.parse().unwrap());
        }
        response
    })
    .await;
    let url = format!("http://{addr}/acp");
    let conn = connect_client(
        TestClient::default(),
        &url,
        &ConnectOptions::new(),
        Default::default(),
    )
    .await
    .unwrap();
    let agent = conn.agent();
    within(10, agent.initialize(init())).await.unwrap();
    for _ in 0..6 {
        let refused = within(10, agent.new_session(NewSessionRequest::new("/w", []))).await;
        assert!(refused.is_err());
    }
    let seen = seen.lock().unwrap().clone();
    let cookies: Vec<String> = seen
        .iter()
        .filter_map(|h| h.get("cookie").map(|c| c.to_str().unwrap().to_owned()))
        .collect();
    assert!(cookies.len() >= 6, "{}", cookies.len());
    for header in &cookies {
        assert!(header.len() <= 8 * 1024 + 3 * 32, "{}", header.len());
        assert!(header.split("; ").count() <= 32);
    }
    assert_eq!(cookies.last().unwrap().split("; ").count(), 32);
    conn.close();
}
