//! acp-agent's MCP connector over streamable HTTP (feature `mcp-http`): the `mcp_test_server`
//! example in `--http` mode (rmcp's own streamable HTTP server) as a child process on a free
//! 127.0.0.1 port, a server that answers every request with 500, and one that is not there;
//! the same example over HTTPS with a certificate of a throwaway CA (Debian's `openssl`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use acp_agent::CancellationToken;
use acp_agent::mcp::{McpConfig, McpConnector, McpError, mcp_capabilities};
use acp_agent::types::{HttpHeader, McpServer, McpServerHttp};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

fn http(name: &str, url: &str, headers: Vec<HttpHeader>) -> McpServer {
    McpServer::Http(McpServerHttp::new(name, url, headers))
}

/// Starts the example in `--http` mode; the child (killed on drop) and its URL.
async fn http_server() -> (tokio::process::Child, String) {
    http_server_with(&[]).await
}

/// Starts the example in `--http` mode with more arguments.
async fn http_server_with(more: &[&str]) -> (tokio::process::Child, String) {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp_test_server");
    let mut child = tokio::process::Command::new(path)
        .arg("--http")
        .args(more)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    (child, url)
}

fn text_of(result: &acp_agent::mcp::CallToolResult) -> String {
    let v = serde_json::to_value(&result.content).unwrap();
    v[0]["text"].as_str().unwrap_or_default().to_owned()
}

fn args(value: Value) -> Option<acp_agent::mcp::JsonObject> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

#[tokio::test]
async fn an_http_server_is_listed_and_called_with_its_headers_and_its_death_is_a_typed_error() {
    assert!(mcp_capabilities().http);
    let (mut child, url) = http_server().await;
    let header = HttpHeader::new("X-Acp-Test", "from the client");
    let connector = McpConnector::start(&[http("web", &url, vec![header])], McpConfig::default());
    let (_, tools) = connector.tools().await.remove(0);
    assert!(tools.unwrap().iter().any(|t| t.qualified == "web/echo"));
    let cancel = CancellationToken::new();
    let r = connector
        .call_tool(
            "web",
            "header",
            args(json!({"name": "x-acp-test"})),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r), "from the client");
    let r = connector
        .call_tool("web", "add", args(json!({"a": 1, "b": 2})), &cancel)
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 3.0})));

    child.kill().await.unwrap();
    let started = Instant::now();
    let e = connector
        .call_tool("web", "echo", None, &cancel)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(e, McpError::Protocol { .. } | McpError::Exited { .. }),
        "{e:?}"
    );
    connector.close().await;
}

#[tokio::test]
async fn a_server_answering_500_and_a_closed_port_fail_to_start_with_typed_errors() {
    use hyper::service::service_fn;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        // Bounded: the test makes a handful of requests.
        for _ in 0..20 {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service = service_fn(|_req| async {
                    let mut response = hyper::Response::new(String::from("boom"));
                    *response.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                    Ok::<_, std::convert::Infallible>(response)
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let servers = [
        http("broken", &format!("http://{addr}/mcp"), vec![]),
        http("gone", &format!("http://{closed}/mcp"), vec![]),
    ];
    let config = McpConfig::default().start_timeout(Duration::from_secs(5));
    let connector = McpConnector::start(&servers, config);
    let started = Instant::now();
    for (name, tools) in connector.tools().await {
        let e = tools.unwrap_err();
        assert!(
            matches!(
                e,
                McpError::Initialize { .. } | McpError::StartTimeout { .. }
            ),
            "{name}: {e:?}"
        );
        eprintln!("{name}: {e}");
    }
    assert!(started.elapsed() < Duration::from_secs(6));
    connector.close().await;
}

/// A certificate for 127.0.0.1 issued by a throwaway certificate authority, made with the
/// `openssl` command in `dir`: returns the paths of the CA's certificate, the host's
/// certificate and its key (PEM).
fn issue_certificate(dir: &std::path::Path) -> [std::path::PathBuf; 3] {
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs (Debian's openssl package)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=acp MCP test CA"];
    ca.extend_from_slice(&ec);
    ca.extend_from_slice(&["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(&ca);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend_from_slice(&ec);
    csr.extend_from_slice(&["-keyout", "host.key", "-out", "host.csr"]);
    openssl(&csr);
    std::fs::write(
        dir.join("host.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "host.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "host.ext",
        "-out",
        "host.crt",
    ]);
    ["ca.pem", "host.crt", "host.key"].map(|f| dir.join(f))
}

#[tokio::test]
async fn an_https_server_is_reached_when_its_ca_is_trusted_and_refused_when_not() {
    let dir = std::env::temp_dir().join(format!("acp-mcp-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let [ca, cert, key] = issue_certificate(&dir);
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let (_child, url) = http_server_with(&["--tls", &cert, &key]).await;
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");

    let trusting = McpConfig::default().root_certificates_pem(std::fs::read(&ca).unwrap());
    let connector = McpConnector::start(&[http("secure", &url, vec![])], trusting);
    let cancel = CancellationToken::new();
    let r = connector
        .call_tool("secure", "echo", args(json!({"text": "over TLS"})), &cancel)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "over TLS");
    connector.close().await;

    // Without the CA the certificate is refused: a typed start failure, within the bound.
    let config = McpConfig::default().start_timeout(Duration::from_secs(5));
    let connector = McpConnector::start(&[http("untrusted", &url, vec![])], config);
    let started = Instant::now();
    let e = connector.tools().await.remove(0).1.unwrap_err();
    assert!(
        matches!(
            e,
            McpError::Initialize { .. } | McpError::StartTimeout { .. }
        ),
        "{e:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(6));
    connector.close().await;

    // A root certificate entry that is not PEM is a typed error too.
    let bad = McpConfig::default().root_certificates_pem(b"not a certificate".to_vec());
    let connector = McpConnector::start(&[http("bad", &url, vec![])], bad);
    let e = connector.tools().await.remove(0).1.unwrap_err();
    assert!(format!("{e}").contains("PEM"), "{e}");
    connector.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
