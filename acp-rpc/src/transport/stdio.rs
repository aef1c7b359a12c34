//! This process's stdin and stdout as async streams that do not hop through a thread pool
//! when they can avoid it.
//!
//! `tokio::io::stdin()`/`stdout()` run every read and write on tokio's blocking thread pool:
//! each message crosses threads twice, which dominates the latency of a round trip and caps
//! the throughput of a stream. An editor runs its agent with pipes (or, from Node.js,
//! Unix sockets) on stdin and stdout; on Unix, [`stdin`] and [`stdout`] then register a
//! duplicate of the descriptor with tokio's reactor in non-blocking mode, so reads and
//! writes are plain system calls on the connection's own task. For anything else (a
//! terminal, a file, another platform) they fall back to tokio's blocking versions. A pipe
//! also gets a 1 MiB buffer where the kernel allows it ([`grow_pipe`]), so a large message
//! crosses in one step rather than sixteen.
//!
//! Non-blocking mode is a property of the open pipe, shared with every descriptor that
//! refers to it: it stays set after the connection ends, and a subprocess that inherits this
//! stdin or stdout sees it too. An agent must not let subprocesses inherit its protocol
//! stdio anyway (they would read or corrupt protocol bytes): give them `Stdio::null()` or
//! their own pipes. Stderr is the one descriptor the process itself keeps writing to with
//! blocking calls (`eprintln!`, which panics on an error, and log output): when stdin or
//! stdout is the very same pipe or socket as stderr (`2>&1`, or one socket for all three),
//! that stream stays on tokio's blocking version, so a full pipe makes `eprintln!` wait
//! rather than fail with `WouldBlock`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// This process's stdin; see the [module docs](self).
#[derive(Debug)]
pub struct Stdin(StdinInner);

#[derive(Debug)]
enum StdinInner {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdin),
}

/// This process's stdout; see the [module docs](self).
#[derive(Debug)]
pub struct Stdout(StdoutInner);

#[derive(Debug)]
enum StdoutInner {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Sender),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdout),
}

#[cfg(unix)]
enum Kind {
    Pipe(std::os::fd::OwnedFd),
    Socket(std::os::fd::OwnedFd),
    Other,
}

/// What descriptor `fd` of this process is (a duplicate of it, for pipes and sockets).
/// A pipe or socket that is also this process's stderr counts as [`Kind::Other`]: making it
/// non-blocking would make blocking writes to stderr fail (see the module docs).
#[cfg(unix)]
fn classify(fd: std::os::fd::BorrowedFd<'_>) -> Kind {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Some(this) = metadata(fd) else {
        return Kind::Other;
    };
    let stderr = metadata(std::os::fd::AsFd::as_fd(&io::stderr()));
    if stderr.is_some_and(|e| (e.dev(), e.ino()) == (this.dev(), this.ino())) {
        return Kind::Other;
    }
    let Ok(owned) = fd.try_clone_to_owned() else {
        return Kind::Other;
    };
    let kind = this.file_type();
    if kind.is_fifo() {
        Kind::Pipe(owned)
    } else if kind.is_socket() {
        Kind::Socket(owned)
    } else {
        Kind::Other
    }
}

/// `fstat` of one of this process's descriptors, through a duplicate.
#[cfg(unix)]
fn metadata(fd: std::os::fd::BorrowedFd<'_>) -> Option<std::fs::Metadata> {
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    file.metadata().ok()
}

#[cfg(unix)]
fn socket(fd: std::os::fd::OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}

/// The pipe capacity [`grow_pipe`] asks for: 1 MiB, Linux's default `pipe-max-size` (the
/// most an unprivileged process may set).
#[cfg(unix)]
pub const PIPE_CAPACITY: usize = 1 << 20;

/// Asks the kernel for a [`PIPE_CAPACITY`] buffer on the pipe behind `fd` (Linux; a no-op
/// elsewhere, and when the kernel refuses, e.g. over the user's pipe-buffer quota).
///
/// A pipe holds 64 KiB by default, so a large message crosses it in 64 KiB steps, each one a
/// wake-up of the other process: a 1 MiB `fs/read_text_file` answer costs sixteen, and on an
/// idle machine the wake-ups, not the copying, set the pace (1 MiB answers went from ~0.7 to
/// ~0.9 of the raw serde baseline's rate with it). With a 1 MiB buffer the writer hands the
/// line over in one `write`. The pages are only allocated while data sits in the pipe, and
/// the connection's own bounds are unchanged: a peer that stops reading still stops the
/// writer, 1 MiB later. [`stdin`] and [`stdout`] call it on pipes; `acp-client` calls it on
/// the pipes of the agents it spawns.
#[cfg(unix)]
pub fn grow_pipe(fd: std::os::fd::BorrowedFd<'_>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl(F_SETPIPE_SZ) on a descriptor we borrow changes the pipe's buffer
        // size and touches no memory of ours; on anything but a pipe it fails, ignored.
        let _ = unsafe {
            libc::fcntl(
                fd.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                PIPE_CAPACITY as libc::c_int,
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// This process's stdin as an async reader. Must be called within a Tokio runtime with I/O
/// enabled.
pub fn stdin() -> Stdin {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let inner = match classify(io::stdin().as_fd()) {
            Kind::Pipe(fd) => {
                grow_pipe(fd.as_fd());
                tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
                    .ok()
                    .map(StdinInner::Pipe)
            }
            Kind::Socket(fd) => socket(fd).ok().map(StdinInner::Socket),
            Kind::Other => None,
        };
        if let Some(inner) = inner {
            return Stdin(inner);
        }
    }
    Stdin(StdinInner::Blocking(tokio::io::stdin()))
}

/// This process's stdout as an async writer. Must be called within a Tokio runtime with I/O
/// enabled.
pub fn stdout() -> Stdout {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let inner = match classify(io::stdout().as_fd()) {
            Kind::Pipe(fd) => {
                grow_pipe(fd.as_fd());
                tokio::net::unix::pipe::Sender::from_owned_fd(fd)
                    .ok()
                    .map(StdoutInner::Pipe)
            }
            Kind::Socket(fd) => socket(fd).ok().map(StdoutInner::Socket),
            Kind::Other => None,
        };
        if let Some(inner) = inner {
            return Stdout(inner);
        }
    }
    Stdout(StdoutInner::Blocking(tokio::io::stdout()))
}

impl Stdin {
    /// Whether reads go through tokio's blocking thread pool (stdin is no pipe or socket, or
    /// is the same one as stderr).
    pub fn is_blocking(&self) -> bool {
        matches!(self.0, StdinInner::Blocking(_))
    }
}

impl Stdout {
    /// Whether writes go through tokio's blocking thread pool (stdout is no pipe or socket, or
    /// is the same one as stderr).
    pub fn is_blocking(&self) -> bool {
        matches!(self.0, StdoutInner::Blocking(_))
    }
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdinInner::Pipe(r) => Pin::new(r).poll_read(cx, buf),
            #[cfg(unix)]
            StdinInner::Socket(r) => Pin::new(r).poll_read(cx, buf),
            StdinInner::Blocking(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutInner::Pipe(w) => Pin::new(w).poll_write(cx, buf),
            #[cfg(unix)]
            StdoutInner::Socket(w) => Pin::new(w).poll_write(cx, buf),
            StdoutInner::Blocking(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutInner::Pipe(w) => Pin::new(w).poll_flush(cx),
            #[cfg(unix)]
            StdoutInner::Socket(w) => Pin::new(w).poll_flush(cx),
            StdoutInner::Blocking(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutInner::Pipe(w) => Pin::new(w).poll_shutdown(cx),
            #[cfg(unix)]
            StdoutInner::Socket(w) => Pin::new(w).poll_shutdown(cx),
            StdoutInner::Blocking(w) => Pin::new(w).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            StdoutInner::Pipe(w) => Pin::new(w).poll_write_vectored(cx, bufs),
            #[cfg(unix)]
            StdoutInner::Socket(w) => Pin::new(w).poll_write_vectored(cx, bufs),
            StdoutInner::Blocking(w) => Pin::new(w).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            #[cfg(unix)]
            StdoutInner::Pipe(w) => w.is_write_vectored(),
            #[cfg(unix)]
            StdoutInner::Socket(w) => w.is_write_vectored(),
            StdoutInner::Blocking(w) => w.is_write_vectored(),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::fd::{AsFd, AsRawFd};

    use super::{PIPE_CAPACITY, grow_pipe};

    fn capacity(fd: std::os::fd::BorrowedFd<'_>) -> usize {
        // SAFETY: F_GETPIPE_SZ reads the pipe's capacity; no memory of ours is touched.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) as usize }
    }

    #[test]
    fn grow_pipe_gives_a_pipe_the_large_buffer_and_ignores_other_descriptors() {
        let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(PIPE_CAPACITY);
        let (reader, writer) = std::io::pipe().unwrap();
        assert_eq!(capacity(writer.as_fd()), 64 * 1024);
        grow_pipe(reader.as_fd());
        // Either end names the same pipe.
        assert_eq!(capacity(writer.as_fd()), PIPE_CAPACITY.min(max));
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        grow_pipe(file.as_fd()); // not a pipe: refused by the kernel, nothing happens
    }
}
