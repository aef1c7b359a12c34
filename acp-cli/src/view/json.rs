//! [`JsonEvents`]: one JSON object per line on stdout, for scripts.

use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use acp_types::v1::*;
use serde_json::json;

use super::View;

/// NDJSON events on stdout: `{"event": ..., ...}` per line.
pub struct JsonEvents {
    out: Mutex<Box<dyn Write + Send>>,
}

impl JsonEvents {
    /// Events on stdout.
    pub fn stdout() -> JsonEvents {
        JsonEvents {
            out: Mutex::new(Box::new(std::io::stdout())),
        }
    }

    fn emit(&self, value: serde_json::Value) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = serde_json::to_writer(&mut *out, &value);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}

impl View for JsonEvents {
    fn update(&self, update: &SessionUpdate) {
        self.emit(json!({"event": "update", "update": update}));
    }
    fn info(&self, text: &str) {
        self.emit(json!({"event": "info", "message": text}));
    }
    fn error(&self, text: &str) {
        self.emit(json!({"event": "error", "message": text}));
    }
    fn question(&self, lines: &[String]) {
        self.emit(json!({"event": "question", "lines": lines}));
    }
    fn answered(&self, kind: &str, answer: &str) {
        self.emit(json!({"event": "answer", "kind": kind, "answer": answer}));
    }
    fn terminal_output(&self, command: &str, output: &str, exit: Option<u32>) {
        self.emit(json!({"event": "terminal_output", "command": command, "output": output, "exitCode": exit}));
    }
    fn user(&self, text: &str) {
        self.emit(json!({"event": "prompt", "text": text}));
    }
    fn turn_started(&self) {}
    fn tick(&self) {}
    fn turn_ended(&self, outcome: &str, elapsed: Duration) {
        self.emit(json!({"event": "done", "stopReason": outcome, "elapsedMs": elapsed.as_millis() as u64}));
    }
}
