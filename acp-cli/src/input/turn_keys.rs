//! Keys typed while a turn runs. The line editor is not on screen then (the agent's output
//! is), so the keyboard thread reads the keys itself, in the terminal's non-canonical mode
//! without echo (Ctrl-C still raises SIGINT): the line being typed goes to the chat's loop
//! as [`TurnKey::Typing`] (shown beside the spinner), a finished one as [`TurnKey::Line`]
//! (a follow-up: steering or the queue). What is left unfinished when the turn ends is the
//! start of the next prompt line. The thread waits on stdin and a wake pipe together
//! (`poll(2)` without a timeout), so a question or the end of the turn takes the keyboard
//! back at once.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A key event of a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnKey {
    /// The line being typed changed; this is all of it.
    Typing(String),
    /// A line was finished with Enter (never empty).
    Line(String),
}

/// Where an escape sequence (an arrow, a function key) is being skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    /// After ESC.
    Start,
    /// After `ESC [` or `ESC O`: until the final byte.
    Sequence,
}

/// The line typed during a turn, fed the bytes the terminal delivers.
#[derive(Debug, Default)]
pub(super) struct LineBuffer {
    bytes: Vec<u8>,
    escape: Escape,
}

/// A line longer than this is not grown further (memory stays bounded).
const MAX_LINE: usize = 64 * 1024;

impl LineBuffer {
    /// Takes in `input`; returns what changed, in order. Enter finishes a non-empty line,
    /// Backspace removes a character, Ctrl-U the whole line, Ctrl-W the last word; escape
    /// sequences and other control keys are ignored.
    pub(super) fn feed(&mut self, input: &[u8]) -> Vec<TurnKey> {
        let mut events = Vec::new();
        let mut changed = false;
        for &byte in input {
            match self.escape {
                Escape::Start => {
                    self.escape = if byte == b'[' || byte == b'O' {
                        Escape::Sequence
                    } else {
                        Escape::None
                    };
                    continue;
                }
                Escape::Sequence => {
                    if (0x40..=0x7e).contains(&byte) {
                        self.escape = Escape::None;
                    }
                    continue;
                }
                Escape::None => {}
            }
            match byte {
                b'\r' | b'\n' => {
                    if changed {
                        events.push(TurnKey::Typing(self.text()));
                        changed = false;
                    }
                    let line = self.take();
                    if !line.trim().is_empty() {
                        events.push(TurnKey::Line(line));
                    } else if !line.is_empty() {
                        events.push(TurnKey::Typing(String::new()));
                    }
                }
                0x7f | 0x08 => {
                    // Back over one character: its continuation bytes, then its first.
                    while self.bytes.last().is_some_and(|b| b & 0xc0 == 0x80) {
                        self.bytes.pop();
                    }
                    changed |= self.bytes.pop().is_some();
                }
                0x15 => {
                    changed |= !self.bytes.is_empty();
                    self.bytes.clear();
                }
                0x17 => {
                    while self.bytes.last() == Some(&b' ') {
                        self.bytes.pop();
                    }
                    while self.bytes.last().is_some_and(|b| *b != b' ') {
                        self.bytes.pop();
                    }
                    changed = true;
                }
                0x1b => self.escape = Escape::Start,
                b'\t' => {
                    if self.bytes.len() < MAX_LINE {
                        self.bytes.push(b' ');
                        changed = true;
                    }
                }
                byte if byte < 0x20 => {}
                byte => {
                    if self.bytes.len() < MAX_LINE {
                        self.bytes.push(byte);
                        changed = true;
                    }
                }
            }
        }
        if changed {
            events.push(TurnKey::Typing(self.text()));
        }
        events
    }

    /// The line so far.
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// Takes the line so far, leaving it empty.
    pub(super) fn take(&mut self) -> String {
        let text = self.text();
        self.bytes.clear();
        self.escape = Escape::None;
        text
    }
}

/// The terminal in the mode of a turn (no line editing by the terminal, no echo, signals
/// kept); the mode before is restored on drop. `None` when stdin is not a terminal.
pub(super) struct TurnMode {
    saved: libc::termios,
}

impl TurnMode {
    pub(super) fn enter() -> Option<TurnMode> {
        // SAFETY: tcgetattr fills a termios we own; failure (not a terminal) leaves it unused.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return None;
        }
        let mut quiet = saved;
        quiet.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ECHONL);
        quiet.c_cc[libc::VMIN] = 1;
        quiet.c_cc[libc::VTIME] = 0;
        // TCSANOW: nothing typed so far is discarded.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) } != 0 {
            return None;
        }
        Some(TurnMode { saved })
    }
}

impl Drop for TurnMode {
    fn drop(&mut self) {
        // SAFETY: restores the attributes read in `enter`.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}

/// The pipe that wakes the keyboard thread out of its wait on stdin.
pub(super) struct Wake {
    read: OwnedFd,
    write: OwnedFd,
}

/// What the wait saw.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ready {
    /// Stdin has bytes (or reached its end).
    Stdin,
    /// Someone woke the thread.
    Woken,
}

impl Wake {
    pub(super) fn new() -> std::io::Result<Wake> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 fills the two descriptors, which we then own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both were just opened and are owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Wake { read, write })
    }

    /// Wakes the waiting thread (a full pipe already will).
    pub(super) fn wake(&self) {
        // SAFETY: writes one byte from a buffer we own to a descriptor we own.
        unsafe { libc::write(self.write.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }

    /// Waits until stdin (when `stdin`) has bytes or the thread is woken; a wake is
    /// consumed.
    pub(super) fn wait(&self, stdin: bool) -> Ready {
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: self.read.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: libc::STDIN_FILENO,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let count = if stdin { 2 } else { 1 };
            // SAFETY: `fds` is ours and `count` is at most its length; -1: no timeout.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), count, -1) };
            if n < 0 {
                // EINTR (a Ctrl-C): wait again.
                continue;
            }
            if fds[0].revents != 0 {
                let mut drain = [0u8; 64];
                // SAFETY: reads into a buffer we own from a non-blocking descriptor we own.
                while unsafe { libc::read(self.read.as_raw_fd(), drain.as_mut_ptr().cast(), 64) }
                    > 0
                {}
                return Ready::Woken;
            }
            if stdin && fds[1].revents != 0 {
                return Ready::Stdin;
            }
        }
    }
}

/// Reads what stdin has (after [`Wake::wait`] said it has something); `None` at its end or
/// on an error.
pub(super) fn read_stdin() -> Option<Vec<u8>> {
    let mut buf = [0u8; 512];
    // SAFETY: reads into a buffer we own.
    let n = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
    (n > 0).then(|| buf[..n as usize].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typing(text: &str) -> TurnKey {
        TurnKey::Typing(text.to_owned())
    }

    #[test]
    fn enter_finishes_a_line_and_blank_lines_are_not_sent() {
        let mut line = LineBuffer::default();
        assert_eq!(line.feed(b"ab"), [typing("ab")]);
        assert_eq!(
            line.feed(b"c\r"),
            [typing("abc"), TurnKey::Line("abc".into())]
        );
        assert_eq!(line.feed(b"\r"), []);
        assert_eq!(line.feed(b"  \n"), [typing("  "), typing("")]);
        assert_eq!(line.take(), "");
    }

    #[test]
    fn backspace_removes_a_whole_character_and_ctrl_u_the_line() {
        let mut line = LineBuffer::default();
        line.feed("né".as_bytes());
        assert_eq!(line.feed(&[0x7f]), [typing("n")]);
        line.feed(b"o way");
        assert_eq!(line.feed(&[0x17]), [typing("no ")]);
        assert_eq!(line.feed(&[0x15]), [typing("")]);
        // Nothing to remove: nothing changes.
        assert_eq!(line.feed(&[0x7f]), []);
    }

    #[test]
    fn escape_sequences_and_control_keys_are_ignored_and_what_is_left_is_taken() {
        let mut line = LineBuffer::default();
        // Up arrow, Alt-x, F1 (ESC O P), Ctrl-D, then text split across reads.
        assert_eq!(line.feed(b"\x1b[A\x1bx\x1bOP\x04go"), [typing("go")]);
        assert_eq!(line.feed(b"\x1b["), []);
        assert_eq!(line.feed(b"1;5Con"), [typing("goon")]);
        assert_eq!(line.take(), "goon");
        assert_eq!(line.feed(b"x"), [typing("x")]);
    }

    #[test]
    fn a_line_stops_growing_at_its_limit() {
        let mut line = LineBuffer::default();
        line.feed(&vec![b'a'; MAX_LINE + 10]);
        assert_eq!(line.take().len(), MAX_LINE);
    }

    #[test]
    fn a_wake_ends_the_wait_once() {
        let wake = Wake::new().unwrap();
        wake.wake();
        wake.wake();
        assert_eq!(wake.wait(false), Ready::Woken);
        // Both bytes were consumed: a new wake is needed to return again.
        wake.wake();
        assert_eq!(wake.wait(false), Ready::Woken);
    }
}
