//! A scripted editor for the legacy dialect tests: writes lines as that dialect's editors
//! wrote them and checks, message by message, what the agent writes back.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// The editor's end of the wire: writes lines, reads lines, with a timeout on every read.
pub struct Editor {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
}

impl Editor {
    /// Hands the agent's end of a fresh pipe to `serve` and returns the editor's end.
    pub fn connect(serve: impl FnOnce(ReadHalf<DuplexStream>, WriteHalf<DuplexStream>)) -> Editor {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (r, w) = tokio::io::split(theirs);
        serve(r, w);
        let (r, w) = tokio::io::split(ours);
        Editor {
            lines: BufReader::new(r).lines(),
            out: w,
        }
    }

    pub async fn send(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    pub async fn line(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("the agent answers within 5 s")
            .unwrap()
            .expect("the agent keeps the connection open")
    }

    /// The next line if the agent writes one within `wait`, else `None` (a line written
    /// later is read by the next call: reading lines is cancel-safe).
    pub async fn line_within(&mut self, wait: Duration) -> Option<String> {
        match tokio::time::timeout(wait, self.lines.next_line()).await {
            Ok(line) => Some(line.unwrap().expect("the agent keeps the connection open")),
            Err(_) => None,
        }
    }

    /// Asserts the next line is the message `expected`: the same members with the same
    /// values (so `"params": null` is not the same as no `params`, and a stray `"jsonrpc"`
    /// fails), whatever order serde_json's `preserve_order` feature puts object keys in.
    pub async fn expect(&mut self, expected: &str) {
        let line = self.line().await;
        let got: Value = serde_json::from_str(&line).expect("the agent writes JSON");
        let want: Value = serde_json::from_str(expected).expect("the transcript is JSON");
        assert_eq!(got, want, "\n   got: {line}\nwanted: {expected}");
    }

    /// Asserts the next line is `expected` except for members named in `any`, which must
    /// be present with any value; returns the line as sent.
    pub async fn expect_json(&mut self, expected: Value, any: &[&str]) -> Value {
        let line = self.line().await;
        let mut got: Value = serde_json::from_str(&line).unwrap();
        let mut masked = got.clone();
        for pointer in any {
            let slot = masked
                .pointer_mut(pointer)
                .unwrap_or_else(|| panic!("{pointer} missing in {line}"));
            *slot = Value::Null;
        }
        assert_eq!(masked, expected, "line: {line}");
        got.take()
    }
}
