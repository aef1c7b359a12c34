//! This process's stdin and stdout as async streams that do not hop through a thread pool
//! when they can avoid it.
//!
//! `tokio::io::stdin()`/`stdout()` run every read and write on tokio's blocking thread pool:
//! each message crosses threads twice, which dominates the latency of a round trip and caps
//! the throughput of a stream. An editor runs its agent with pipes (or, from Node.js,
//! Unix sockets) on stdin and stdout; on Unix, [`stdin`] and [`stdout`] then register a
//! duplicate of the descriptor with tokio's reactor in non-blocking mode, so reads and
//! writes are plain system calls on the connection's own task. For anything else (a
//! terminal, a file, another platform) they fall back to tokio's blocking versions.
//!
//! Non-blocking mode is a property of the open pipe, shared with every descriptor that
//! refers to it: it stays set after the connection ends, and a subprocess that inherits this
//! stdin or stdout sees it too. An agent must not let subprocesses inherit its protocol
//! stdio anyway (they would read or corrupt protocol bytes): give them `Stdio::null()` or
//! their own pipes. Likewise, if stderr is the very same pipe as stdout (`2>&1`), blocking
//! writes to stderr (`eprintln!`) may fail with `WouldBlock` when the pipe is full; logging
//! through `tracing` to a separate stderr, as the design asks, is unaffected.

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
#[cfg(unix)]
fn classify(fd: std::os::fd::BorrowedFd<'_>) -> Kind {
    use std::os::unix::fs::FileTypeExt;
    let Ok(owned) = fd.try_clone_to_owned() else {
        return Kind::Other;
    };
    let file = std::fs::File::from(owned);
    let Ok(kind) = file.metadata().map(|m| m.file_type()) else {
        return Kind::Other;
    };
    if kind.is_fifo() {
        Kind::Pipe(file.into())
    } else if kind.is_socket() {
        Kind::Socket(file.into())
    } else {
        Kind::Other
    }
}

#[cfg(unix)]
fn socket(fd: std::os::fd::OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}

/// This process's stdin as an async reader. Must be called within a Tokio runtime with I/O
/// enabled.
pub fn stdin() -> Stdin {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let inner = match classify(io::stdin().as_fd()) {
            Kind::Pipe(fd) => tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
                .ok()
                .map(StdinInner::Pipe),
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
            Kind::Pipe(fd) => tokio::net::unix::pipe::Sender::from_owned_fd(fd)
                .ok()
                .map(StdoutInner::Pipe),
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
    /// Whether reads go through tokio's blocking thread pool (no pipe or socket on stdin).
    pub fn is_blocking(&self) -> bool {
        matches!(self.0, StdinInner::Blocking(_))
    }
}

impl Stdout {
    /// Whether writes go through tokio's blocking thread pool (no pipe or socket on stdout).
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
