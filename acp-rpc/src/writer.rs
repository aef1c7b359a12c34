//! The writer task: drains every ready message into one reused buffer, writes it and
//! flushes once per batch.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::Encoder;

use crate::codec::LineCodec;
use crate::connection::Shared;
use crate::error::CloseReason;
use crate::tap::{Direction, TapEvent};

/// Stop adding ready messages to a batch beyond this many bytes.
const BATCH_BYTES: usize = 256 * 1024;
/// Give back buffer memory above this size after a batch.
const KEEP_CAPACITY: usize = 4 * 1024 * 1024;

struct Batch {
    codec: LineCodec,
    buf: BytesMut,
    shared: Arc<Shared>,
}

impl Batch {
    fn push(&mut self, msg: &[u8]) {
        if let Some(tap) = &self.shared.config.tap {
            tap(TapEvent::Line(Direction::Outgoing, msg));
        }
        self.codec
            .encode(msg, &mut self.buf)
            .expect("encoding into memory cannot fail");
    }

    /// Adds the messages that are ready now (at most [`BATCH_BYTES`] of them), never the
    /// ones a producer queues meanwhile: a batch holds at most one queue's worth, so a fast
    /// producer cannot run ahead of a slow reader by more than the queue bounds.
    fn fill(&mut self, rx: &mut mpsc::Receiver<Vec<u8>>) {
        let ready = rx.len();
        for _ in 0..ready {
            if self.buf.len() >= BATCH_BYTES {
                break;
            }
            match rx.try_recv() {
                Ok(msg) => self.push(&msg),
                Err(_) => break,
            }
        }
    }

    fn reset(&mut self) {
        self.buf.clear();
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = BytesMut::with_capacity(64 * 1024);
        }
    }
}

async fn write_batch<W: AsyncWrite + Unpin>(w: &mut W, buf: &[u8]) -> std::io::Result<()> {
    w.write_all(buf).await?;
    w.flush().await
}

pub(crate) async fn write_loop<W>(mut w: W, mut rx: mpsc::Receiver<Vec<u8>>, shared: Arc<Shared>)
where
    W: AsyncWrite + Unpin,
{
    let shutdown = shared.shutdown.clone();
    let grace = shared.config.shutdown_flush_timeout;
    let mut batch = Batch {
        codec: LineCodec::new(usize::MAX),
        buf: BytesMut::with_capacity(64 * 1024),
        shared,
    };
    loop {
        let first = tokio::select! {
            biased;
            m = rx.recv() => m,
            _ = shutdown.cancelled() => None,
        };
        let Some(first) = first else { break };
        batch.push(&first);
        drop(first);
        batch.fill(&mut rx);
        let result = {
            let write = write_batch(&mut w, &batch.buf);
            tokio::pin!(write);
            tokio::select! {
                biased;
                r = &mut write => r,
                _ = shutdown.cancelled() => match tokio::time::timeout(grace, &mut write).await {
                    Ok(r) => r,
                    Err(_) => return,
                },
            }
        };
        batch.reset();
        if let Err(e) = result {
            tracing::debug!(error = %e, "write failed");
            batch
                .shared
                .shutdown(CloseReason::WriteError(e.to_string()));
            return;
        }
    }
    // The connection is ending: flush what is already queued, within the grace period.
    let _ = tokio::time::timeout(grace, async {
        loop {
            batch.fill(&mut rx);
            if batch.buf.is_empty() {
                break;
            }
            if write_batch(&mut w, &batch.buf).await.is_err() {
                return;
            }
            batch.reset();
        }
        let _ = w.shutdown().await;
    })
    .await;
}
