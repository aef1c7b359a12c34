//! A small MCP server built with rmcp's own server side, spoken to over stdio: the real peer of
//! acp-agent's MCP connector tests (`tests/mcp_connector.rs`), started as a child process.
//!
//! Its behaviour is picked by arguments, so one binary plays every server a test needs:
//! - `--silent`: never answers `initialize` (reads stdin and says nothing);
//! - `--slow-start MS`: waits that long before serving;
//! - `--crash-once FILE`: the `crash` tool exits the process (status 3) only if FILE does not
//!   exist yet, and creates it, so the restarted server answers normally (without this flag
//!   every `crash` call exits);
//! - `--pid-file FILE`: writes its process id there, then the grandchild's (one a line);
//! - `--http`: serves streamable HTTP on 127.0.0.1 (a free port) instead of stdio, and prints
//!   `http://127.0.0.1:PORT/mcp` as its first stdout line; with `--tls CERT KEY` (PEM files)
//!   too, HTTPS (rustls on ring), printing `https://127.0.0.1:PORT/mcp`;
//! - `--grandchild`: starts a `sleep 300` in its process group, the orphan a careless
//!   shutdown would leave behind.
//!
//! Tools: `echo {text}` (text back), `add {a, b}` (text and structured content), `image` (a
//! one-pixel PNG), `resource` (an embedded text resource), `sleep {ms}` (answers after that
//! long), `flood {bytes}` (a text of that size), `fail` (a tool error), `crash` (see above),
//! `env {name}` (the value of an environment variable), `header {name}` (the value of a
//! header of the HTTP request, in `--http` mode), `grow` (adds the tool `extra` and sends
//! `notifications/tools/list_changed`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// A one-pixel PNG, base64.
const PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

struct TestServer {
    crash_marker: Option<String>,
    /// Set by `grow`: the tool `extra` is listed too.
    grown: AtomicBool,
}

fn tool(name: &'static str, description: &'static str, props: Value) -> Tool {
    let schema = json!({"type": "object", "properties": props});
    let Value::Object(schema) = schema else {
        unreachable!("a json! object is an object")
    };
    Tool::new(name, description, Arc::new(schema))
}

fn arg<'a>(request: &'a CallToolRequestParams, name: &str) -> Option<&'a Value> {
    request.arguments.as_ref().and_then(|a| a.get(name))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![
            tool(
                "echo",
                "Says the text back",
                json!({"text": {"type": "string"}}),
            ),
            tool(
                "add",
                "Adds two numbers",
                json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            ),
            tool("image", "A one-pixel image", json!({})),
            tool("resource", "An embedded text resource", json!({})),
            tool(
                "sleep",
                "Answers after ms",
                json!({"ms": {"type": "number"}}),
            ),
            tool(
                "flood",
                "A text of that many bytes",
                json!({"bytes": {"type": "number"}}),
            ),
            tool("fail", "A tool error", json!({})),
            tool("crash", "Exits the server mid-call", json!({})),
            tool(
                "env",
                "An environment variable",
                json!({"name": {"type": "string"}}),
            ),
            tool(
                "header",
                "An HTTP request header",
                json!({"name": {"type": "string"}}),
            ),
            tool("grow", "Adds the tool extra", json!({})),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool("extra", "There since grow", json!({})));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "echo" => {
                let text = arg(&request, "text").and_then(Value::as_str).unwrap_or("");
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            "add" => {
                let n = |k| arg(&request, k).and_then(Value::as_f64).unwrap_or(0.0);
                let sum = n("a") + n("b");
                let mut r = CallToolResult::success(vec![ContentBlock::text(sum.to_string())]);
                r.structured_content = Some(json!({"sum": sum}));
                r
            }
            "image" => CallToolResult::success(vec![ContentBlock::image(PIXEL, "image/png")]),
            "resource" => CallToolResult::success(vec![ContentBlock::embedded_text(
                "file:///notes.txt",
                "remember the milk",
            )]),
            "sleep" => {
                let ms = arg(&request, "ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))])
            }
            "flood" => {
                let n = arg(&request, "bytes").and_then(Value::as_u64).unwrap_or(0);
                CallToolResult::success(vec![ContentBlock::text("x".repeat(n as usize))])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("the tool failed on purpose")]),
            "crash" => {
                let marker = self.crash_marker.as_deref();
                if marker.is_none_or(|m| !std::path::Path::new(m).exists()) {
                    if let Some(m) = marker {
                        let _ = std::fs::write(m, "crashed");
                    }
                    eprintln!("mcp_test_server: crashing on purpose");
                    std::process::exit(3);
                }
                CallToolResult::success(vec![ContentBlock::text("survived")])
            }
            "env" => {
                let name = arg(&request, "name").and_then(Value::as_str).unwrap_or("");
                let value = std::env::var(name).unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(value)])
            }
            "header" => {
                let name = arg(&request, "name").and_then(Value::as_str).unwrap_or("");
                let parts = context.extensions.get::<http::request::Parts>();
                let value = parts
                    .and_then(|p| p.headers.get(name))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                CallToolResult::success(vec![ContentBlock::text(value)])
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let changed = ToolListChangedNotification {
                    method: Default::default(),
                    extensions: Default::default(),
                };
                let note = ServerNotification::ToolListChangedNotification(changed);
                let _ = context.peer.send_notification(note).await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "extra" => CallToolResult::success(vec![ContentBlock::text("extra ran")]),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

fn value_after(args: &[String], flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut pids = vec![std::process::id()];
    if args.iter().any(|a| a == "--grandchild") {
        // Not waited for: the connector's process-group kill must take it down.
        if let Ok(child) = std::process::Command::new("sleep").arg("300").spawn() {
            pids.push(child.id());
        }
    }
    if let Some(path) = value_after(&args, "--pid-file") {
        let text: Vec<String> = pids.iter().map(u32::to_string).collect();
        let _ = std::fs::write(path, text.join("\n"));
    }
    eprintln!("mcp_test_server: starting");
    if args.iter().any(|a| a == "--silent") {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
        return;
    }
    if let Some(ms) = value_after(&args, "--slow-start").and_then(|v| v.parse().ok()) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if args.iter().any(|a| a == "--http") {
        let tls = args.iter().position(|a| a == "--tls").map(|i| {
            let file = |n: usize| std::fs::read(&args[i + n]).expect("--tls CERT KEY: readable");
            tls_acceptor(&file(1), &file(2))
        });
        serve_http(tls).await;
        return;
    }
    let server = TestServer {
        crash_marker: value_after(&args, "--crash-once"),
        grown: AtomicBool::new(false),
    };
    let Ok(running) = server.serve(rmcp::transport::stdio()).await else {
        eprintln!("mcp_test_server: initialize failed");
        std::process::exit(2);
    };
    let _ = running.waiting().await;
}

/// A TLS acceptor (rustls on ring) for the certificate chain and key in PEM.
fn tls_acceptor(cert: &[u8], key: &[u8]) -> tokio_rustls::TlsAcceptor {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let chain: Vec<_> = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<_, _>>()
        .expect("PEM certificates");
    let key = PrivateKeyDer::from_pem_slice(key).expect("a PEM private key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("a usable certificate and key");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// Streamable HTTP on a free 127.0.0.1 port (over TLS when given an acceptor), one hyper
/// connection task per client.
async fn serve_http(tls: Option<tokio_rustls::TlsAcceptor>) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let service = StreamableHttpService::new(
        || {
            Ok(TestServer {
                crash_marker: None,
                grown: AtomicBool::new(false),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!("{scheme}://{addr}/mcp");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        let tls = tls.clone();
        tokio::spawn(async move {
            let http = hyper::server::conn::http1::Builder::new();
            match tls {
                None => {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = http.serve_connection(io, service).await;
                }
                Some(tls) => {
                    // A client that refuses the certificate ends the handshake here.
                    let Ok(stream) = tls.accept(stream).await else {
                        return;
                    };
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = http.serve_connection(io, service).await;
                }
            }
        });
    }
}
