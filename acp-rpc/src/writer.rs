//! The writer task: drains every ready message into one reused buffer, writes it and
//! flushes once per batch.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::error::{CloseReason, Error};
use crate::message::{blank_line_breaks, write_response};
use crate::reply::ReplyBody;
use crate::state::{Outgoing, Shared, panic_message};
use crate::tap::{Direction, TapEvent};

/// Stop adding ready messages to a batch beyond this many bytes.
const BATCH_BYTES: usize = 256 * 1024;
/// Give back buffer memory above this size after a batch.
const KEEP_CAPACITY: usize = 4 * 1024 * 1024;

struct Batch {
    buf: Vec<u8>,
    shared: Arc<Shared>,
}

impl Batch {
    fn push(&mut self, msg: &Outgoing) {
        match msg {
            Outgoing::Frame(msg) => {
                if let Some(tap) = &self.shared.config.tap {
                    tap(TapEvent::Line(Direction::Outgoing, msg));
                }
                // (The caller guarantees `msg` has no line break: compact JSON never does.)
                self.buf.reserve(msg.len() + 1);
                self.buf.extend_from_slice(msg);
                self.buf.push(b'\n');
            }
            Outgoing::Response { head, id, body } => {
                let start = self.buf.len();
                self.buf.extend_from_slice(head);
                let body_start = self.buf.len();
                let written = match &body.0 {
                    ReplyBody::Raw(raw) => {
                        self.buf.extend_from_slice(raw.get().as_bytes());
                        Ok(())
                    }
                    ReplyBody::Value(value) => {
                        let buf = &mut self.buf;
                        match catch_unwind(AssertUnwindSafe(|| value.write_json(buf))) {
                            Ok(Ok(())) => Ok(()),
                            Ok(Err(e)) => Err(format!("result failed to serialize: {e}")),
                            Err(panic) => Err(format!(
                                "result failed to serialize: it panicked: {}",
                                panic_message(&panic)
                            )),
                        }
                    }
                };
                match written {
                    Ok(()) => {
                        blank_line_breaks(&mut self.buf[body_start..]);
                        self.buf.extend_from_slice(b"}");
                    }
                    Err(message) => {
                        tracing::error!(%id, error = %message, "answering with -32603");
                        self.buf.truncate(start);
                        let mut frame = Vec::with_capacity(128);
                        let error = Err(Error::internal_error(message));
                        write_response(&mut frame, &self.shared.config.dialect, Some(id), &error);
                        self.buf.extend_from_slice(&frame);
                    }
                }
                if let Some(tap) = &self.shared.config.tap {
                    tap(TapEvent::Line(Direction::Outgoing, &self.buf[start..]));
                }
                self.buf.extend_from_slice(b"\n");
            }
        }
    }

    /// Adds the messages that are ready now (at most [`BATCH_BYTES`] of them), never the
    /// ones a producer queues meanwhile: a batch holds at most one queue's worth, so a fast
    /// producer cannot run ahead of a slow reader by more than the queue bounds.
    fn fill(&mut self, rx: &mut mpsc::Receiver<Outgoing>) {
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
            self.buf = Vec::with_capacity(64 * 1024);
        }
    }
}

async fn write_batch<W: AsyncWrite + Unpin>(w: &mut W, buf: &[u8]) -> std::io::Result<()> {
    w.write_all(buf).await?;
    w.flush().await
}

pub(crate) async fn write_loop<W>(mut w: W, mut rx: mpsc::Receiver<Outgoing>, shared: Arc<Shared>)
where
    W: AsyncWrite + Unpin,
{
    let token = shared.shutdown.clone();
    // One wait on the shutdown token for the writer's whole life (see the reader).
    let shutdown = token.clone().cancelled_owned();
    tokio::pin!(shutdown);
    let grace = shared.config.shutdown_flush_timeout;
    let mut batch = Batch {
        buf: Vec::with_capacity(64 * 1024),
        shared,
    };
    loop {
        let first = tokio::select! {
            biased;
            m = rx.recv() => m,
            _ = &mut shutdown => None,
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
                _ = &mut shutdown => match tokio::time::timeout(grace, &mut write).await {
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
