//! Event lines the Rust peers write: clients print them on stdout, agents append them to a
//! report file (stdout is their protocol channel).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Where events go.
#[derive(Clone, Debug)]
pub struct Reporter {
    target: Arc<Mutex<Target>>,
}

#[derive(Debug)]
enum Target {
    Stdout,
    File(PathBuf),
    Stderr,
}

impl Reporter {
    /// Events on stdout (clients).
    pub fn stdout() -> Self {
        Self::new(Target::Stdout)
    }

    /// Events appended to `path`, or on stderr when there is no path (agents).
    pub fn file(path: Option<PathBuf>) -> Self {
        Self::new(path.map_or(Target::Stderr, Target::File))
    }

    fn new(target: Target) -> Self {
        Reporter {
            target: Arc::new(Mutex::new(target)),
        }
    }

    /// Writes one event as one JSON line (failures to write are ignored: the matrix will
    /// notice the missing event).
    pub fn event(&self, event: Value) {
        let mut line = event.to_string();
        line.push('\n');
        let target = self.target.lock().unwrap_or_else(|p| p.into_inner());
        let _ = match &*target {
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(line.as_bytes()).and_then(|()| out.flush())
            }
            Target::Stderr => std::io::stderr().write_all(line.as_bytes()),
            Target::File(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes())),
        };
    }
}
