//! The WebSocket upgrade, made by tungstenite (request, response, `Sec-WebSocket-Accept`),
//! with the socket taken back after it: [`HeadersFirst`] lets tungstenite read the
//! response's head and nothing past it, so that frames the server sent right behind its
//! `101` stay with us ([`super::socket::Upgraded::leftover`]) instead of in tungstenite's
//! buffer.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::socket::Upgraded;
use crate::client::stream::Io;

/// Response heads longer than this are handed to tungstenite as they are, which refuses
/// them by its own limit: what is held back here stays bounded.
const MAX_HEAD: usize = 64 * 1024;

/// The end of an HTTP head.
const HEAD_END: &[u8] = b"\r\n\r\n";

/// A socket whose reads give the HTTP response's head, up to its blank line, and keep what
/// follows; writes pass through. A response that is not `101` is passed on whole (its body
/// says why the upgrade was refused).
pub(crate) struct HeadersFirst {
    io: Box<dyn Io>,
    /// Read from the socket, not yet given.
    held: BytesMut,
    /// How much of `held` may be given (the head, once it is whole).
    releasable: usize,
    /// Everything may be given: the head was given, or this is no upgrade.
    passing: bool,
    /// The head was found whole and released.
    head_done: bool,
}

impl HeadersFirst {
    pub(crate) fn new(io: Box<dyn Io>) -> Self {
        HeadersFirst {
            io,
            held: BytesMut::new(),
            releasable: 0,
            passing: false,
            head_done: false,
        }
    }

    /// The socket and the bytes read past the head.
    pub(crate) fn into_upgraded(self) -> Upgraded {
        Upgraded {
            io: self.io,
            leftover: self.held,
        }
    }

    /// Decides what of `held` may be given, after new bytes arrived.
    fn settle(&mut self) {
        if self.passing || self.head_done {
            return;
        }
        let upgrade = b"HTTP/1.1 101";
        let seen = self.held.len().min(upgrade.len());
        if self.held[..seen] != upgrade[..seen] || self.held.len() > MAX_HEAD {
            self.passing = true;
            return;
        }
        if let Some(at) = memchr::memmem::find(&self.held, HEAD_END) {
            self.releasable = at + HEAD_END.len();
            self.head_done = true;
        }
    }
}

impl AsyncRead for HeadersFirst {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let givable = if this.passing {
                this.held.len()
            } else {
                this.releasable
            };
            if givable > 0 {
                let n = givable.min(buf.remaining());
                buf.put_slice(&this.held[..n]);
                this.held.advance(n);
                if !this.passing {
                    this.releasable -= n;
                }
                return Poll::Ready(Ok(()));
            }
            if this.head_done && !this.passing {
                // The head is given; what follows is the frames'. tungstenite asks no more
                // once it has the head; should it, it is told so rather than left waiting.
                return Poll::Ready(Err(io::Error::other(
                    "read past the WebSocket upgrade's response",
                )));
            }
            if this.passing {
                return Pin::new(&mut this.io).poll_read(cx, buf);
            }
            this.held.reserve(4096);
            let n = ready!(tokio_util::io::poll_read_buf(
                Pin::new(&mut this.io),
                cx,
                &mut this.held
            ))?;
            if n == 0 {
                // The end before a whole head: what came is given, then the end, and
                // tungstenite says what is wrong with it.
                this.passing = true;
                continue;
            }
            this.settle();
        }
    }
}

impl AsyncWrite for HeadersFirst {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;
