//! A socket whose writes are bounded in time ([`Limits::write_timeout`]): a client that stops
//! reading (its kernel buffers full, so every write waits) would otherwise hold the task
//! writing to it, and the socket, forever. A write, flush or shutdown that has waited that
//! long fails with [`std::io::ErrorKind::TimedOut`]; hyper then ends the HTTP connection (an
//! SSE stream's body is dropped with it), and a WebSocket's serving loop ends its connection.
//!
//! The clock starts when a write first has to wait and stops at the first one that goes
//! through, so a socket that drains slowly but steadily is never cut off.
//!
//! [`Limits::write_timeout`]: crate::Limits::write_timeout

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `inner` with every write bounded by `timeout` (see the module docs).
pub(crate) struct WriteTimeout<S> {
    inner: S,
    timeout: Duration,
    /// Armed while a write waits: fires `timeout` after the first wait. Kept between waits
    /// (reset, not reallocated).
    timer: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl<S> WriteTimeout<S> {
    pub(crate) fn new(inner: S, timeout: Duration) -> Self {
        WriteTimeout {
            inner,
            timeout,
            timer: None,
            armed: false,
        }
    }

    /// After the inner write's answer: a ready one disarms the clock, a pending one starts
    /// it (if it is not running) and fails once it has run out.
    fn check<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.armed = false;
            return polled;
        }
        let deadline = Instant::now() + self.timeout;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if !self.armed {
            self.armed = true;
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                tracing::debug!(timeout = ?self.timeout, "a socket write timed out; closing it");
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the peer has not read from its socket within the write timeout",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, data);
        this.check(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.check(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.check(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.check(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_nobody_reads_fails_after_the_timeout_and_a_read_one_does_not() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut socket = WriteTimeout::new(ours, Duration::from_millis(200));
        // Read slowly but steadily: each wait is shorter than the timeout.
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let (mut buf, mut taken) = ([0u8; 64], 0);
            while taken < 64 * 6 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                taken += theirs.read(&mut buf).await.unwrap();
            }
            theirs
        });
        socket.write_all(&[1u8; 64 * 6]).await.unwrap();
        let _theirs = reader.await.unwrap();
        // Nobody reads now: the buffer fills and the write gives up.
        let started = std::time::Instant::now();
        let error = socket.write_all(&[1u8; 1024]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
