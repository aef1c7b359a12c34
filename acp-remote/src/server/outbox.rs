//! One outgoing stream of a connection (the connection-scoped stream or one session's): a
//! queue that keeps the agent's messages in order until a reader (an SSE response or the
//! WebSocket) takes them. A new reader replaces the old one (a client reopening a dropped
//! SSE stream gets what was not yet delivered).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use acp_rpc::sync::lock;

/// The bytes queued in every outbox of one connection, and the signal that its client took
/// some: what lets the server stop reading the agent while its client falls behind.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    queued: AtomicUsize,
    /// Set while the router waits for room, so that readers only signal when someone listens.
    waiting: AtomicBool,
    taken: Notify,
}

impl Budget {
    /// Bytes queued now.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// Waits until fewer than `limit` bytes are queued. `false` if the client took nothing
    /// for `stall` (each message it takes starts the wait again).
    pub(crate) async fn room_below(&self, limit: usize, stall: Duration) -> bool {
        loop {
            let taken = self.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            self.waiting.store(true, Ordering::SeqCst);
            if self.queued() < limit {
                self.waiting.store(false, Ordering::SeqCst);
                return true;
            }
            if tokio::time::timeout(stall, taken).await.is_err() {
                self.waiting.store(false, Ordering::SeqCst);
                return false;
            }
        }
    }

    fn add(&self, len: usize) -> usize {
        self.queued.fetch_add(len, Ordering::SeqCst) + len
    }

    fn take(&self, len: usize) {
        self.queued.fetch_sub(len, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) {
            self.taken.notify_waiters();
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    queue: VecDeque<Bytes>,
    generation: u64,
    closed: bool,
    /// Takes nothing more; its reader gets what is queued, then the end ([`Outbox::finish`]).
    finishing: bool,
}

/// A queue of messages for one stream, its size counted in the connection's byte budget.
#[derive(Debug)]
pub(crate) struct Outbox {
    inner: std::sync::Mutex<Inner>,
    notify: Notify,
    /// Readers waiting in [`Outbox::next_batch`]: a push wakes only when there are some (a
    /// stream's reader is mostly busy writing while a turn streams).
    waiting: AtomicUsize,
    /// Bytes queued in every outbox of the connection.
    budget: Arc<Budget>,
}

impl Outbox {
    pub(crate) fn new(budget: Arc<Budget>) -> Self {
        Outbox {
            inner: std::sync::Mutex::new(Inner::default()),
            notify: Notify::new(),
            waiting: AtomicUsize::new(0),
            budget,
        }
    }

    /// Queues a message; returns the connection's queued bytes after it.
    pub(crate) fn push(&self, message: Bytes) -> usize {
        let len = message.len();
        let queued = {
            let mut inner = lock(&self.inner);
            if inner.closed || inner.finishing {
                return self.budget.queued();
            }
            // Counted before a reader can take it, so the count never goes below zero.
            let queued = self.budget.add(len);
            inner.queue.push_back(message);
            queued
        };
        // Sequentially consistent with the reader's count and its look at the queue (under
        // the lock): either it sees this message, or this sees it waiting.
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
        queued
    }

    /// Puts back at the front a message its reader took but could not deliver.
    pub(crate) fn unpop(&self, message: Bytes) {
        let mut inner = lock(&self.inner);
        if !inner.closed {
            self.budget.add(message.len());
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
            self.budget.take(dropped);
        }
        self.notify.notify_waiters();
    }

    /// Takes no more messages; the reader gets those queued, then the end (`false` from
    /// [`Outbox::next_batch`]), so that a connection's last words reach its client.
    pub(crate) fn finish(&self) {
        lock(&self.inner).finishing = true;
        self.notify.notify_waiters();
    }

    /// Waits for the messages of the reader of `generation` and moves them into `batch`:
    /// every one queued, oldest first, until `max_bytes` are taken (at least one message,
    /// however big). `false` once the outbox is closed or another reader attached. Taking
    /// what is queued at once, rather than a message per call, lets the reader write it in
    /// one go: one flush or one chunk for a burst of updates.
    pub(crate) async fn next_batch(
        &self,
        generation: u64,
        max_bytes: usize,
        batch: &mut Vec<Bytes>,
    ) -> bool {
        let _waiting = Waiting::new(&self.waiting);
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut inner = lock(&self.inner);
                if inner.closed || inner.generation != generation {
                    return false;
                }
                let (before, mut taken) = (batch.len(), 0);
                while taken < max_bytes
                    && let Some(message) = inner.queue.pop_front()
                {
                    taken += message.len();
                    batch.push(message);
                }
                if batch.len() > before {
                    drop(inner);
                    self.budget.take(taken);
                    return true;
                }
                if inner.finishing {
                    return false;
                }
            }
            notified.await;
        }
    }

    /// The next message for the reader of `generation`, or `None` once the outbox is closed
    /// or another reader attached.
    #[cfg(test)]
    pub(crate) async fn next(&self, generation: u64) -> Option<Bytes> {
        let mut batch = Vec::with_capacity(1);
        self.next_batch(generation, 1, &mut batch)
            .await
            .then(|| batch.pop())
            .flatten()
    }
}

/// Counts a reader in [`Outbox::next_batch`] while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_come_out_in_order_and_a_new_reader_replaces_the_old() {
        let budget = Arc::new(Budget::default());
        let outbox = Outbox::new(budget.clone());
        let first = outbox.attach();
        outbox.push(Bytes::from_static(b"1"));
        outbox.push(Bytes::from_static(b"22"));
        assert_eq!(budget.queued(), 3);
        assert_eq!(outbox.next(first).await.unwrap(), "1");
        let second = outbox.attach();
        assert!(outbox.next(first).await.is_none());
        assert_eq!(outbox.next(second).await.unwrap(), "22");
        assert_eq!(budget.queued(), 0);
        outbox.close();
        assert!(outbox.next(second).await.is_none());
    }

    /// A reader taking messages while they are pushed from another thread: the count of
    /// queued bytes never goes below zero (it used to be decremented before it was
    /// incremented, and overflowed).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_byte_count_stays_exact_under_a_concurrent_reader() {
        let budget = Arc::new(Budget::default());
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
        assert_eq!(budget.queued(), 0);
    }

    /// The router's wait for room: over when a reader takes enough, `false` when nothing is
    /// taken for the stall time, however long the wait has lasted before.
    #[tokio::test]
    async fn room_comes_when_the_reader_takes_and_a_stall_ends_the_wait() {
        let budget = Arc::new(Budget::default());
        let outbox = Arc::new(Outbox::new(budget.clone()));
        let generation = outbox.attach();
        for _ in 0..4 {
            outbox.push(Bytes::from_static(b"0123456789"));
        }
        let stall = Duration::from_millis(300);
        let reader = {
            let outbox = outbox.clone();
            tokio::spawn(async move {
                // Slower in total than the stall time, but never stalling that long.
                for _ in 0..3 {
                    tokio::time::sleep(Duration::from_millis(150)).await;
                    outbox.next(generation).await.unwrap();
                }
            })
        };
        assert!(budget.room_below(11, stall).await);
        assert_eq!(budget.queued(), 10);
        reader.await.unwrap();
        outbox.push(Bytes::from_static(b"0123456789"));
        let started = std::time::Instant::now();
        assert!(!budget.room_below(11, stall).await);
        assert!(started.elapsed() >= stall);
    }
}
