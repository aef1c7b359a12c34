//! Shared by the acp-cli tests: a tmux session to drive `acp chat` as a person would, and
//! the paths of the binaries under test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_rpc::{Error, Handler, NotificationContext, Params, RawValue, RequestContext};
use serde_json::Value;

/// The `acp` binary under test.
pub fn acp() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_acp"))
}

/// Whether `program` runs; prints why a test is skipped when it does not.
pub fn have(program: &str, test: &str) -> bool {
    let found = Command::new(program)
        .arg(if program == "tmux" { "-V" } else { "--version" })
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipping {test}: `{program}` is not installed (.ci/run installs it)");
    }
    found
}

/// The echo agent example with its MCP connector (feature `mcp`). Under `cargo xtask test`
/// (which says so with `ACP_TEST_EXAMPLES_BUILT`) the workspace build made it, with `mcp`
/// on (acp-cli turns it on), and it is used as it is; otherwise it is built on demand into
/// the same target directory, as `cargo test -p acp-cli` does not build acp-agent's examples.
/// (A package-scoped build beside the workspace's has other features: it recompiled acp-agent
/// and its dependencies for minutes, with every other test waiting on cargo's lock.)
pub fn echo_agent() -> PathBuf {
    let exe = acp();
    let debug = exe.parent().expect("target dir");
    let agent = debug.join("examples/echo_agent");
    if std::env::var_os("ACP_TEST_EXAMPLES_BUILT").is_some() && agent.exists() {
        return agent;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .args([
            "-p",
            "acp-agent",
            "--features",
            "mcp,v2",
            "--example",
            "echo_agent",
        ])
        .env("CARGO_TARGET_DIR", debug.parent().expect("target root"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the echo agent failed");
    assert!(
        agent.exists(),
        "{} missing after the build",
        agent.display()
    );
    agent
}

/// acp-agent's `mcp_test_server` example (an MCP server on rmcp's server side), built into
/// the same target directory when it is not there yet (`cargo test --workspace` builds it:
/// acp-cli turns on acp-agent's `mcp`; a rebuild here would recompile acp-agent).
pub fn mcp_test_server() -> PathBuf {
    let exe = acp();
    let debug = exe.parent().expect("target dir");
    let server = debug.join("examples/mcp_test_server");
    if server.exists() {
        return server;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .args([
            "-p",
            "acp-agent",
            "--features",
            "mcp",
            "--example",
            "mcp_test_server",
        ])
        .env("CARGO_TARGET_DIR", debug.parent().expect("target root"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the MCP test server failed");
    server
}

/// A scratch directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("acp-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(std::fs::canonicalize(&dir).unwrap())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A tmux server of our own (its own socket) running one command in one window.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` (a shell command line) in a 100x50 window; after it exits the window
    /// shows `EXIT=<status>` and stays.
    pub fn start(name: &str, command: &str) -> Tmux {
        let socket = format!("acp-test-{name}-{}", std::process::id());
        let tmux = Tmux { socket };
        // The shell catches Ctrl-C (its children get the default action back) so that it
        // outlives the program and reports its status.
        // The prompt history goes to a file of the test's, never the user's (a command may
        // set ACP_HISTORY itself to share one between runs).
        let history = std::env::temp_dir().join(format!("{}.history", tmux.socket));
        let line = format!(
            "trap 'true' INT; ACP_HISTORY={}; export ACP_HISTORY; {command}; echo EXIT=$?; sleep 60",
            sh(&history)
        );
        let status = tmux
            .cmd()
            .args([
                "new-session",
                "-d",
                "-x",
                "100",
                "-y",
                "50",
                "sh",
                "-c",
                &line,
            ])
            .status()
            .expect("tmux runs");
        assert!(status.success());
        tmux
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    /// Types `keys` (tmux key names: "Enter", "Tab", "C-c", or literal text).
    pub fn send(&self, keys: &[&str]) {
        let status = self
            .cmd()
            .arg("send-keys")
            .arg("-t")
            .arg("0")
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Types text literally, then Enter.
    pub fn line(&self, text: &str) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", "0", "-l", text])
            .status()
            .unwrap();
        assert!(status.success());
        self.send(&["Enter"]);
    }

    /// The screen and its scrollback.
    pub fn screen(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "0", "-S", "-2000"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `text` `times` times; panics with the screen after 30 s
    /// (generous: CI shares two cores with the build).
    pub fn wait_for_n(&self, text: &str, times: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= times {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {text:?} (x{times}); the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_for_n(text, 1)
    }

    /// Ctrl-D (end of input), once the line editor shows an empty prompt line as the last
    /// line: typed while the CLI still finishes a command or a turn, the terminal's own line
    /// discipline takes it as an end of input for nobody. (The editor switches the terminal
    /// to raw mode before it draws the prompt.)
    pub fn end_input(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            let last = screen.lines().rev().find(|l| !l.trim().is_empty());
            if last.is_some_and(|l| l.trim_end() == "you>") {
                break;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for an empty prompt line; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.send(&["C-d"]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
        let history = std::env::temp_dir().join(format!("{}.history", self.socket));
        let _ = std::fs::remove_file(history);
    }
}

/// Shell-quotes a path for the tmux command line.
pub fn sh(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// Logs every `session/update`; answers no request.
#[derive(Clone, Default)]
pub struct UpdateLog(pub Arc<Mutex<Vec<Value>>>);

#[acp_rpc::async_trait]
impl Handler for UpdateLog {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        _p: Params,
    ) -> Result<Box<RawValue>, Error> {
        Err(Error::method_not_found(method))
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _m: &str,
        params: Params,
    ) -> Result<(), Error> {
        let p: Value = params.parse()?;
        self.0.lock().unwrap().push(p["update"].clone());
        Ok(())
    }
}

impl UpdateLog {
    pub fn texts(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }
}

/// A running server process that prints its `http://` URL on stdout (`acp serve`), stopped
/// on drop: SIGTERM, then SIGKILL after 10 s, and reaped (unless [`Served::kill_9`] already
/// ended it).
pub struct Served {
    /// The process.
    pub child: std::process::Child,
    /// The first `http://` word it printed.
    pub url: String,
    /// Its stdout's later lines.
    lines: std::sync::mpsc::Receiver<String>,
    killed: bool,
}

impl Served {
    /// Starts `cmd` with stdout piped here and waits up to 20 s for a line naming its URL.
    pub fn spawn(mut cmd: Command) -> Served {
        use std::io::{BufRead, BufReader};
        cmd.stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("the server starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let url = loop {
            let line = lines
                .recv_timeout(Duration::from_secs(20))
                .expect("the server prints its URL");
            if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                break url.to_owned();
            }
        };
        Served {
            child,
            url,
            lines,
            killed: false,
        }
    }

    /// The next line the server prints after its URL, waiting up to `timeout`.
    pub fn next_line(&self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// `kill -9`: the server dies mid-whatever, as in a crash.
    pub fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.killed = true;
    }
}

impl Served {
    /// Stops the server: SIGTERM, then up to 10 s for it to exit. `Ok(None)` when
    /// [`Served::kill_9`] already ended it, `Ok(status)` when it exited, `Err` when it had to
    /// be killed.
    pub fn stop(&mut self) -> Result<Option<std::process::ExitStatus>, String> {
        if self.killed {
            return Ok(None);
        }
        self.killed = true;
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Ok(Some(status));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err("the server did not stop on SIGTERM within 10 s".into())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Waits for `child` (its stdout and stderr piped) and returns its output; kills it and
/// panics naming `what` if it runs for longer than `limit`.
pub fn output_within(
    mut child: std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::Output {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
