//! The server process of a remote cell: started before the client, in its own process group,
//! on a free loopback port; its URL is read from the first line it prints
//! ([`crate::peers::remote`]); stopped after the client by closing its stdin (a clean stop,
//! so its agent process gets EOF and the tap records the agent's exit), then killed.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a server may take to print its URL.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a server has to stop after its stdin closed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A running server process.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// Its endpoint, `http://127.0.0.1:PORT/acp`.
    pub url: String,
}

impl ServerProcess {
    /// Starts `command` (its stderr to `stderr`) and waits for its URL line.
    pub fn start(command: &[OsString], stderr: &Path) -> Result<ServerProcess, String> {
        let (program, args) = command.split_first().ok_or("no server command")?;
        let err = std::fs::File::create(stderr)
            .map_err(|e| format!("cannot create {}: {e}", stderr.display()))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start the server {program:?}: {e}"))?;
        let stdout = child.stdout.take().ok_or("the server's stdout was taken")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut server = ServerProcess {
            child,
            url: String::new(),
        };
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(line) => line,
            Err(_) => {
                server.kill();
                return Err(format!(
                    "the server printed no URL within {START_TIMEOUT:?}"
                ));
            }
        };
        let url = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| v["url"].as_str().map(str::to_owned));
        match url {
            Some(url) => {
                server.url = url;
                Ok(server)
            }
            None => {
                server.kill();
                Err(format!("the server printed {line:?}, not its URL"))
            }
        }
    }

    /// Closes its stdin and waits (bounded) for it to exit, then kills what is left of its
    /// process group.
    pub fn stop(mut self) {
        drop(self.child.stdin.take());
        let start = Instant::now();
        while start.elapsed() < STOP_TIMEOUT {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    fn kill(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kills process group `pgid` (never 0 or 1).
pub fn kill_group(pgid: u32) {
    if pgid > 1 {
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
    }
}
