//! The server side of `acp-bench remote`: each server runs in a child process of this
//! binary (`acp-bench __remote_peer ours|ours-hosted|official`), started and ended here.

use super::*;

/// A server child process.
pub(super) struct ServerChild {
    pub(super) child: Child,
    pub(super) url: String,
}

impl ServerChild {
    pub(super) fn start(kind: &str) -> Result<ServerChild, String> {
        let mut command = if kind == "ts" {
            ts_server()?
        } else {
            let mut command = Command::new(crate::exe());
            command
                .args([REMOTE_PEER_ARG, kind])
                .envs(crate::child_env());
            command
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the {kind} server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
        // The TypeScript server prints `{"url": "..."}`, ours and the official one the URL.
        let url = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| Some(v.get("url")?.as_str()?.to_owned()))
            .unwrap_or_else(|| line.trim().to_owned());
        if !url.starts_with("http://127.0.0.1:") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the {kind} server printed {line:?}, not its URL"));
        }
        Ok(ServerChild { child, url })
    }

    /// The server's address for the profile: `ws://` for WebSocket, `http://` otherwise.
    pub(crate) fn url(&self, websocket: bool) -> String {
        if websocket {
            self.url.replacen("http://", "ws://", 1)
        } else {
            self.url.clone()
        }
    }

    /// Resident memory of the server process (KiB).
    pub(crate) fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The TypeScript SDK's server (the interop matrix's gateway script) in front of the
/// TypeScript bench agent, from the SDK the interop matrix installed.
fn ts_server() -> Result<Command, String> {
    let installed = crate::foreign::installed().ok_or_else(crate::foreign::missing_note)?;
    let modules = installed.npm.to_string_lossy().into_owned();
    let peers = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("node");
    command
        .arg(peers.join("../interop/peers/ts/server.mjs"))
        .args(["--modules", &modules, "--listen", "0", "--", "node"])
        .arg(peers.join("peers/ts/agent.mjs"))
        .args(["--modules", &modules]);
    Ok(command)
}

/// The body of a server process: serve the benchmark agent on a free loopback port, print
/// the URL, stop when stdin closes.
pub fn peer(kind: &str) -> ExitCode {
    let rt = crate::runtime();
    let served = rt.block_on(async {
        let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
        match kind {
            "ours" | HOSTED => {
                let mut limits = Limits::default();
                limits.max_connections = 10_000;
                limits.max_sockets = 20_000;
                let builder = Server::in_process(crate::ours::BenchAgent::default).limits(limits);
                let builder = if kind == HOSTED {
                    // What a team's host runs: identities from a token file (the benchmark's
                    // token is one of two), the default MCP policy and a served root.
                    std::fs::create_dir_all(msg::CWD).map_err(|e| format!("{}: {e}", msg::CWD))?;
                    let tokens = format!("alice:{TOKEN}\nbob:{TOKEN}-bob\n");
                    builder
                        .authenticator(BearerTokens::parse(&tokens).map_err(|e| e.to_string())?)
                        .root(msg::CWD)
                } else {
                    builder
                        .authenticator(BearerToken::new(TOKEN).map_err(|e| e.to_string())?)
                        .unchecked_mcp_servers()
                };
                let server = builder.bind(addr).await.map_err(|e| e.to_string())?;
                println!("{}", server.url());
                wait_for_stdin_eof().await;
                server.shutdown();
                Ok(())
            }
            "official" => {
                let router = AcpHttpServer::new(crate::official::agent).into_router();
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| e.to_string())?;
                let local = listener.local_addr().map_err(|e| e.to_string())?;
                let serving = tokio::spawn(async move { axum::serve(listener, router).await });
                println!("http://{local}/acp");
                wait_for_stdin_eof().await;
                serving.abort();
                Ok(())
            }
            other => Err(format!("unknown remote peer {other:?}")),
        }
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("remote peer: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn wait_for_stdin_eof() {
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
}
