//! A running command: its process group, its output kept in a bounded ring buffer, and its
//! exit status as the protocol reports it.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex};

use acp_types::v1::{SessionId, TerminalExitStatus};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::reaper;

use super::ORPHAN_GRACE;

/// Captured output, keeping the last `limit` bytes.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) buf: VecDeque<u8>,
    pub(crate) limit: usize,
    pub(crate) truncated: bool,
}

impl Output {
    pub(crate) fn push(&mut self, data: &[u8]) {
        // Only the last `limit` bytes of `data` can survive.
        let kept = &data[data.len().saturating_sub(self.limit)..];
        let overflow = (self.buf.len() + kept.len()).saturating_sub(self.limit);
        self.buf.drain(..overflow);
        self.buf.extend(kept);
        if overflow > 0 || kept.len() < data.len() {
            self.truncated = true;
            // Never start inside a UTF-8 sequence: drop continuation bytes.
            while self
                .buf
                .front()
                .is_some_and(|b| (b & 0b1100_0000) == 0b1000_0000)
            {
                self.buf.pop_front();
            }
        }
    }

    /// The text so far; an incomplete trailing sequence is left out while running.
    pub(crate) fn text(&mut self, finished: bool) -> String {
        let buf = self.buf.make_contiguous();
        let bytes = match std::str::from_utf8(buf) {
            Ok(s) => return s.to_owned(),
            Err(e) if e.error_len().is_none() && !finished => &buf[..e.valid_up_to()],
            Err(_) => &buf[..],
        };
        let mut s = String::from_utf8_lossy(bytes).into_owned();
        if s.len() > self.limit {
            // Replacement characters can grow the text: cut at a boundary again.
            let mut cut = s.len() - self.limit;
            while !s.is_char_boundary(cut) {
                cut += 1;
            }
            s.drain(..cut);
        }
        s
    }
}

#[derive(Debug)]
pub(crate) struct Terminal {
    pub(crate) session_id: SessionId,
    pub(crate) output: Arc<Mutex<Output>>,
    pub(crate) exit: watch::Receiver<Option<TerminalExitStatus>>,
    pub(crate) kill: Arc<Notify>,
    pub(crate) pgid: Option<u32>,
    pub(crate) marker: String,
    pub(crate) reap_orphans: bool,
    pub(crate) task: JoinHandle<()>,
}

impl Terminal {
    /// Kills the command's whole process group (grandchildren may outlive the command
    /// itself, so this is done even after it exited), wakes the waiter to kill the child,
    /// and sweeps the orphans that left the group (in the background).
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
        if self.exit.borrow().is_none() {
            self.kill.notify_one();
        }
        if self.reap_orphans {
            let marker = self.marker.clone();
            // The command itself (it leads the group) is the waiter's to reap: were the
            // sweep to reap it first, its exit status would be lost.
            let own: Vec<i32> = self
                .pgid
                .and_then(|p| i32::try_from(p).ok())
                .into_iter()
                .collect();
            let sweep = move || {
                reaper::sweep(&[marker], &own, ORPHAN_GRACE, false);
            };
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => drop(rt.spawn_blocking(sweep)),
                Err(_) => drop(std::thread::spawn(sweep)),
            }
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.kill();
        self.task.abort();
    }
}

/// SIGKILL to process group `pgid` (never our own group, never 0 or 1).
pub(crate) fn kill_group(pgid: u32) {
    reaper::signal_group(pgid, libc::SIGKILL);
}

pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return format!("SIG{sig}"),
    };
    name.to_owned()
}

pub(crate) fn exit_status(status: std::io::Result<std::process::ExitStatus>) -> TerminalExitStatus {
    let mut exit = TerminalExitStatus::new();
    if let Ok(s) = status {
        if let Some(code) = s.code().and_then(|c| u32::try_from(c).ok()) {
            exit = exit.exit_code(code);
        }
        if let Some(sig) = s.signal() {
            exit = exit.signal(signal_name(sig));
        }
    }
    exit
}

pub(crate) async fn pump(mut r: impl AsyncRead + Unpin, out: Arc<Mutex<Output>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => out
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buf[..n]),
        }
    }
}
