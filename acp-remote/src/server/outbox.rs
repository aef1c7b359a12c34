//! One outgoing stream of a connection (the connection-scoped stream or one session's): a
//! queue that keeps the agent's messages in order until a reader (an SSE response or the
//! WebSocket) takes them. A new reader replaces the old one (a client reopening a dropped
//! SSE stream gets what was not yet delivered).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::Notify;

use acp_rpc::sync::lock;

#[derive(Debug, Default)]
struct Inner {
    queue: VecDeque<Bytes>,
    generation: u64,
    closed: bool,
}

/// A queue of messages for one stream, its size counted in the connection's byte budget.
#[derive(Debug)]
pub(crate) struct Outbox {
    inner: std::sync::Mutex<Inner>,
    notify: Notify,
    /// Bytes queued in every outbox of the connection.
    budget: Arc<AtomicUsize>,
}

impl Outbox {
    pub(crate) fn new(budget: Arc<AtomicUsize>) -> Self {
        Outbox {
            inner: std::sync::Mutex::new(Inner::default()),
            notify: Notify::new(),
            budget,
        }
    }

    /// Queues a message; returns the connection's queued bytes after it.
    pub(crate) fn push(&self, message: Bytes) -> usize {
        let len = message.len();
        let queued = {
            let mut inner = lock(&self.inner);
            if inner.closed {
                return self.budget.load(Ordering::Relaxed);
            }
            // Counted before a reader can take it, so the count never goes below zero.
            let queued = self.budget.fetch_add(len, Ordering::Relaxed) + len;
            inner.queue.push_back(message);
            queued
        };
        self.notify.notify_waiters();
        queued
    }

    /// Puts back at the front a message its reader took but could not deliver.
    pub(crate) fn unpop(&self, message: Bytes) {
        let mut inner = lock(&self.inner);
        if !inner.closed {
            self.budget.fetch_add(message.len(), Ordering::Relaxed);
            inner.queue.push_front(message);
        }
    }

    /// Makes a new reader the only one: the previous reader's [`Outbox::next`] ends.
    pub(crate) fn attach(&self) -> u64 {
        let generation = {
            let mut inner = lock(&self.inner);
            inner.generation += 1;
            inner.generation
        };
        self.notify.notify_waiters();
        generation
    }

    /// Ends every reader, now and later; queued messages are dropped.
    pub(crate) fn close(&self) {
        {
            let mut inner = lock(&self.inner);
            inner.closed = true;
            let dropped: usize = inner.queue.drain(..).map(|m| m.len()).sum();
            self.budget.fetch_sub(dropped, Ordering::Relaxed);
        }
        self.notify.notify_waiters();
    }

    /// The next message for the reader of `generation`, or `None` once the outbox is closed
    /// or another reader attached.
    pub(crate) async fn next(&self, generation: u64) -> Option<Bytes> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut inner = lock(&self.inner);
                if inner.closed || inner.generation != generation {
                    return None;
                }
                if let Some(message) = inner.queue.pop_front() {
                    self.budget.fetch_sub(message.len(), Ordering::Relaxed);
                    return Some(message);
                }
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_come_out_in_order_and_a_new_reader_replaces_the_old() {
        let budget = Arc::new(AtomicUsize::new(0));
        let outbox = Outbox::new(budget.clone());
        let first = outbox.attach();
        outbox.push(Bytes::from_static(b"1"));
        outbox.push(Bytes::from_static(b"22"));
        assert_eq!(budget.load(Ordering::Relaxed), 3);
        assert_eq!(outbox.next(first).await.unwrap(), "1");
        let second = outbox.attach();
        assert!(outbox.next(first).await.is_none());
        assert_eq!(outbox.next(second).await.unwrap(), "22");
        assert_eq!(budget.load(Ordering::Relaxed), 0);
        outbox.close();
        assert!(outbox.next(second).await.is_none());
    }

    /// A reader taking messages while they are pushed from another thread: the count of
    /// queued bytes never goes below zero (it used to be decremented before it was
    /// incremented, and overflowed).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_byte_count_stays_exact_under_a_concurrent_reader() {
        let budget = Arc::new(AtomicUsize::new(0));
        let outbox = Arc::new(Outbox::new(budget.clone()));
        let generation = outbox.attach();
        let reader = {
            let outbox = outbox.clone();
            tokio::spawn(async move {
                for _ in 0..20_000 {
                    outbox.next(generation).await.unwrap();
                }
            })
        };
        let writer = {
            let outbox = outbox.clone();
            std::thread::spawn(move || {
                for _ in 0..20_000 {
                    outbox.push(Bytes::from_static(b"abc"));
                }
            })
        };
        writer.join().unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(20), reader)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(budget.load(Ordering::Relaxed), 0);
    }
}
