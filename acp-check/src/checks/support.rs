//! What a run keeps beside its checks: how an agent process exited, and the 1 MB file
//! of the scratch workspace.

use std::path::Path;

/// How an agent process exited (see [`super::run::Conn::exit`]).
pub(crate) struct Exit {
    /// Its command line.
    pub command: String,
    /// Its exit status, in words (`exit status: 2`, `signal: 9 (SIGKILL)`).
    pub status: String,
    /// The last lines it wrote to stderr.
    pub stderr_tail: String,
}

impl Exit {
    /// The whole story, as `acp chat` tells it: `agent `CMD` exited (exit status: 2) before
    /// answering `initialize`; last stderr output: ...` (a tail of one line on the same
    /// line, a longer one on the lines below).
    pub fn before_initialize(&self) -> String {
        let head = format!(
            "agent `{}` exited ({}) before answering `initialize`",
            self.command, self.status
        );
        let tail = self.stderr_tail.trim_end();
        if tail.is_empty() {
            format!("{head}; it wrote nothing to stderr")
        } else if !tail.contains('\n') {
            format!("{head}; last stderr output: {tail}")
        } else {
            format!("{head}; last stderr output:\n{tail}")
        }
    }
}

/// Fills `file` in `dir` with 1 MB of text (lines of readable words).
pub(crate) fn write_megabyte(dir: &Path, file: &str) -> std::io::Result<()> {
    let mut text = String::with_capacity(1 << 20);
    let mut n = 0u32;
    while text.len() < 1 << 20 {
        n += 1;
        text.push_str(&format!(
            "line {n:06}: acp check fills this file to measure a 1 MB read\n"
        ));
    }
    text.truncate(1 << 20);
    std::fs::write(dir.join(file), text)
}
