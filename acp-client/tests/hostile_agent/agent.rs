//! The hostile agent of `tests/hostile_agent.rs`: the scenarios it plays when the test
//! binary runs itself as the child (`HOSTILE_AGENT=scenario`).

use std::io::{BufRead, BufWriter, Write};

use super::*;

struct Wire {
    input: std::io::BufReader<std::io::Stdin>,
    out: BufWriter<std::io::Stdout>,
}

impl Wire {
    fn new() -> Self {
        Wire {
            input: std::io::BufReader::new(std::io::stdin()),
            out: BufWriter::with_capacity(1 << 20, std::io::stdout()),
        }
    }

    /// The next request line, parsed (`None` at EOF).
    fn next(&mut self) -> Option<serde_json::Value> {
        let mut line = String::new();
        if self.input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        serde_json::from_str(&line).ok()
    }

    fn send(&mut self, line: &str) {
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.write_all(b"\n");
        let _ = self.out.flush();
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let _ = self.out.write_all(bytes);
        let _ = self.out.flush();
    }

    /// Reads requests until one of `method`; returns its id as JSON text.
    fn expect(&mut self, method: &str) -> String {
        loop {
            let msg = self.next().unwrap_or_else(|| std::process::exit(0));
            if msg["method"] == method {
                return msg["id"].to_string();
            }
        }
    }

    fn answer_initialize(&mut self) {
        let id = self.expect("initialize");
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":1,"agentCapabilities":{{}},"authMethods":[]}}}}"#
        ));
    }

    fn answer_new_session(&mut self) {
        let id = self.expect("session/new");
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessionId":"s1"}}}}"#
        ));
    }

    fn update(&mut self, text: &str) {
        let text = serde_json::to_string(text).unwrap();
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{text}}}}}}}}}"#
        ));
    }

    fn end_turn(&mut self, id: &str) {
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#
        ));
    }

    /// Serves on: initialize, session/new, and prompts answered at once.
    fn serve(&mut self) {
        while let Some(msg) = self.next() {
            let id = msg["id"].to_string();
            match msg["method"].as_str() {
                Some("initialize") => self.send(&format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":1,"agentCapabilities":{{}},"authMethods":[]}}}}"#
                )),
                Some("session/new") => self.send(&format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessionId":"s1"}}}}"#
                )),
                Some("session/prompt") => self.end_turn(&id),
                _ => {}
            }
        }
    }
}

fn big_line(len: usize) -> Vec<u8> {
    let mut line = Vec::with_capacity(len + 64);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""#);
    line.resize(len, b'x');
    line.extend_from_slice(b"\"}}}}\n");
    line
}

pub(super) fn scale() -> usize {
    std::env::var("HOSTILE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

pub(super) fn run_agent(scenario: &str) {
    let mut w = Wire::new();
    match scenario {
        "silent_after_initialize" => {
            w.answer_initialize();
            while w.next().is_some() {}
        }
        "invalid_utf8_before_initialize" => {
            w.send_raw(b"\xff\xfe{\"jsonrpc\":\"2.0\"}\n\xc3\x28\n");
            w.serve();
        }
        "invalid_utf8_mid_prompt" => {
            w.answer_initialize();
            w.answer_new_session();
            let id = w.expect("session/prompt");
            w.update("before");
            w.send_raw(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":\"\xff\xff\"}\n",
            );
            w.update("after");
            w.end_turn(&id);
            w.serve();
        }
        "line_200mib" => {
            // 200 MiB without a line end, then a valid conversation.
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..200 {
                w.send_raw(&chunk);
            }
            w.send_raw(b"\n");
            w.serve();
        }
        "notification_60mib" => {
            w.answer_initialize();
            w.answer_new_session();
            let id = w.expect("session/prompt");
            w.send_raw(&big_line(60 << 20));
            w.end_turn(&id);
            w.serve();
        }
        "line_cut_by_eof" => {
            w.expect("initialize");
            w.send_raw(br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVer"#);
            eprintln!("cutting my answer short");
            std::process::exit(7);
        }
        "million_updates" => {
            w.answer_initialize();
            w.answer_new_session();
            let id = w.expect("session/prompt");
            for i in 0..scale() {
                w.update(&format!("chunk {i}"));
            }
            w.end_turn(&id);
            w.serve();
        }
        "unknown_and_duplicate_ids" => {
            let id = w.expect("initialize");
            let ok = r#""result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}"#;
            w.send(&format!(r#"{{"jsonrpc":"2.0","id":999,{ok}}}"#));
            w.send(&format!(r#"{{"jsonrpc":"2.0","id":"nope",{ok}}}"#));
            w.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},{ok}}}"#));
            w.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},{ok}}}"#));
            w.serve();
        }
        "result_and_error" => {
            let id = w.expect("initialize");
            w.send(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":1}},"error":{{"code":1,"message":"m"}}}}"#
            ));
            // And one for an id nobody waits for: it must not be answered.
            w.send(r#"{"jsonrpc":"2.0","id":4242,"result":1,"error":{"code":1,"message":"m"}}"#);
            w.send(r#"{"jsonrpc":"2.0","id":"check","method":"nope"}"#);
            // Before the check's answer the client sends exactly one error: for the bad
            // response its initialize waited for. The stray one is not answered.
            let mut errors_before_check = 0;
            loop {
                let Some(msg) = w.next() else {
                    std::process::exit(2)
                };
                if msg.get("method").is_some() {
                    continue;
                }
                if msg["id"] == "check" {
                    let ok = msg["error"]["code"] == -32601 && errors_before_check == 1;
                    eprintln!("errors before the check: {errors_before_check}");
                    std::process::exit(if ok { 0 } else { 3 });
                }
                errors_before_check += 1;
            }
        }
        "odd_ids_unknown_methods_wrong_params" => {
            w.answer_initialize();
            let requests = [
                (r#"1180591620717411303424"#, "fs/read_text_file", "{}"),
                ("1.5", "fs/read_text_file", "{}"),
                ("null", "fs/read_text_file", "{}"),
                ("{}", "fs/read_text_file", "{}"),
                ("true", "fs/read_text_file", "{}"),
                ("-0", "nope", "{}"),
                (r#""""#, "nope", "{}"),
                (r#""\u0000\ud800""#, "nope", "{}"),
                ("7", "session/request_permission", r#"{"sessionId":5}"#),
                ("8", "fs/read_text_file", r#"[1,2,3]"#),
                ("9", "_unknown/ext", "{}"),
            ];
            for (id, method, params) in requests {
                w.send(&format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
                ));
            }
            // Every request gets exactly one answer; report the codes on stderr, then
            // answer nothing else but the shutdown (EOF).
            let mut codes = Vec::new();
            while codes.len() < requests.len() {
                let Some(msg) = w.next() else { break };
                if msg.get("method").is_none() {
                    codes.push(format!("{}:{}", msg["id"], msg["error"]["code"]));
                }
            }
            eprintln!("codes {}", codes.join(" "));
            std::process::exit(if codes.len() == requests.len() { 0 } else { 4 });
        }
        "deep_nesting" => {
            let depth = 200_000;
            let mut line = br#"{"jsonrpc":"2.0","method":"session/update","params":"#.to_vec();
            line.extend(std::iter::repeat_n(b'[', depth));
            line.extend(std::iter::repeat_n(b']', depth));
            line.extend_from_slice(b"}\n");
            w.send_raw(&line);
            let mut line =
                br#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":"#.to_vec();
            line.extend(std::iter::repeat_n(b'{', depth));
            line.extend_from_slice(b"\n");
            w.send_raw(&line);
            w.serve();
        }
        "stderr_flood" => {
            let mut err = std::io::stderr().lock();
            let line = [b'e'; 1023];
            for _ in 0..(100 * 1024) {
                let _ = err.write_all(&line);
                let _ = err.write_all(b"\n");
            }
            let _ = err.write_all(b"the last line\n");
            drop(err);
            w.serve();
        }
        "exit_mid_prompt" => {
            w.answer_initialize();
            w.answer_new_session();
            w.expect("session/prompt");
            w.update("about to crash");
            eprintln!("fatal: out of cheese");
            std::process::exit(3);
        }
        "stdout_closed" => {
            w.answer_initialize();
            w.answer_new_session();
            w.expect("session/prompt");
            drop(w.out);
            // SAFETY: closing our own stdout descriptor; nothing else uses it afterwards.
            unsafe { libc::close(1) };
            std::thread::sleep(Duration::from_secs(30));
        }
        "stdin_closed" => {
            w.answer_initialize();
            // SAFETY: closing our own stdin descriptor; nothing reads it afterwards.
            unsafe { libc::close(0) };
            std::thread::sleep(Duration::from_secs(30));
        }
        "escape_sequences" => {
            w.answer_initialize();
            w.answer_new_session();
            let id = w.expect("session/prompt");
            w.update("\u{1b}[2J\u{1b}]0;pwned\u{7}\u{1b}[31mred\r\u{0}\u{9b}");
            w.end_turn(&id);
            w.serve();
        }
        "requests_never_read" => {
            // Never reads stdin: every answer the client writes stays in the pipe.
            let n = scale();
            for i in 0..n {
                w.out
                    .write_all(
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{i},"method":"fs/read_text_file","params":{{"sessionId":"s1","path":"/nope/{i}"}}}}"#
                        )
                        .as_bytes(),
                    )
                    .unwrap();
                w.out.write_all(b"\n").unwrap();
            }
            w.out.flush().unwrap();
            eprintln!("wrote all {n} requests");
            std::thread::sleep(Duration::from_secs(60));
        }
        "leaves_a_helper" => {
            // A helper in our process group that cleans up on SIGTERM; we exit on EOF.
            let marker = std::env::var("MARKER").unwrap();
            // Never waited for on purpose: the helper is meant to outlive this agent.
            #[allow(clippy::zombie_processes)]
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "trap 'echo cleaned > {marker}; exit 0' TERM; while :; do sleep 0.05; done"
                ))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            w.serve();
        }
        other => panic!("unknown scenario {other}"),
    }
}
