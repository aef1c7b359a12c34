//! The live dashboard's feed: a [`Window`] of the run behind a lock, told about every
//! record ([`Live::push`]: from the trace proxy's writer, or from `acp serve`'s observer,
//! [`ServeObserver`]), and served by acp-remote ([`acp_remote::live`]) as the page of
//! [`super::html::live_page`] plus server-sent events carrying the window's analysis
//! ([`super::window::Snapshot::analysis`]), the same analysis `acp trace view` draws.
//!
//! `acp serve`'s observer runs on each connection's routing task, so it does the least it
//! can there: one pass over the line cuts it to its skeleton (a few hundred bytes at most),
//! and the skeleton goes into a bounded queue ([`QUEUE`]) that one task drains into the
//! window in batches. When the queue is full the message is dropped and counted (the page
//! shows the count): the dashboard falls behind, the connections never wait for it.
//!
//! Each update a viewer gets is the analysis of the whole window (up to [`LIMIT`] messages),
//! which costs milliseconds when the window is full. So the updates are paced by what they
//! cost: after an analysis that took `c`, the next one waits at least `REST_PER_COST * c`,
//! which keeps the dashboard to about 5% of a core per viewer however fast the messages come
//! (and to the stream's own minimum interval when they come slowly).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_remote::LiveFeed;
use acp_rpc::Direction;
use acp_rpc::observe::{MessageEvent, Observer};
use acp_rpc::sync::lock;
use tokio::sync::{mpsc, watch};

use super::record::{self, Record};
use super::window::{LIMIT, Window, skeleton_tagged};

/// Skeletons queued between `acp serve`'s connections and the window: at most
/// `QUEUE * ENTRY_BYTES` (about 17 MB) however big the messages, typically a few hundred KB.
pub const QUEUE: usize = 2048;

/// Skeletons moved into the window under one lock.
const BATCH: usize = 256;

/// How long a viewer's next analysis waits, in multiples of what the last one cost: 19 keeps
/// the analysis to 1/20 of the time.
const REST_PER_COST: u32 = 19;

/// A live run: its window and a version that moves on with every record.
#[derive(Debug)]
pub struct Live {
    name: String,
    window: Mutex<Window>,
    version: watch::Sender<u64>,
    /// What the last analysis took, in microseconds (paces the next: [`REST_PER_COST`]).
    last_cost_micros: AtomicU64,
}

impl Live {
    /// A feed titled `name`, keeping the newest [`LIMIT`] messages.
    pub fn new(name: impl Into<String>) -> Arc<Live> {
        Arc::new(Live {
            name: name.into(),
            window: Mutex::new(Window::new(LIMIT)),
            // Version 1 before any record: a viewer gets the empty state at once.
            version: watch::Sender::new(1),
            last_cost_micros: AtomicU64::new(0),
        })
    }

    /// Takes one record.
    pub fn push(&self, record: &Record) {
        lock(&self.window).push(record);
        self.version.send_modify(|v| *v += 1);
    }

    /// Takes a batch of messages already cut to skeletons, and a count of messages dropped
    /// before them; the version moves once.
    fn push_batch(&self, batch: &mut Vec<Kept>, dropped: u64) {
        {
            let mut window = lock(&self.window);
            window.dropped(dropped);
            for kept in batch.drain(..) {
                window.push_skeleton(kept.ts, kept.dir, None, kept.skeleton);
            }
        }
        self.version.send_modify(|v| *v += 1);
    }
}

impl Live {
    /// How long the next analysis waits: [`REST_PER_COST`] times what the last one took.
    fn rest(&self) -> Duration {
        Duration::from_micros(self.last_cost_micros.load(Ordering::Relaxed)) * REST_PER_COST
    }
}

impl LiveFeed for Live {
    fn page(&self) -> String {
        super::html::live_page(&self.name)
    }

    fn next(&self, seen: u64) -> Pin<Box<dyn Future<Output = (u64, String)> + Send + '_>> {
        let mut versions = self.version.subscribe();
        Box::pin(async move {
            // The sender lives as long as `self`: this cannot fail while we are borrowed.
            if versions.wait_for(|v| *v > seen).await.is_err() {
                return (seen, "{}".to_owned());
            }
            tokio::time::sleep(self.rest()).await;
            // The newest version after the rest, and the window as it is then.
            let version = *versions.borrow();
            let started = Instant::now();
            // Analyse outside the lock: the proxy's writer keeps going meanwhile.
            let snapshot = lock(&self.window).snapshot();
            let data =
                serde_json::to_string(&snapshot.analysis()).unwrap_or_else(|_| "{}".to_owned());
            let cost = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.last_cost_micros.store(cost, Ordering::Relaxed);
            (version, data)
        })
    }
}

/// One message for the window, cut on the routing task.
struct Kept {
    ts: f64,
    dir: &'static str,
    skeleton: String,
}

/// `acp serve --dashboard`: one per remote connection, turning the server's routed messages
/// into entries of the live window. Request ids repeat across connections, so each
/// connection's ids are shown as `N:ID` (N numbers the connections from 1).
pub struct ServeObserver {
    queue: mpsc::Sender<Kept>,
    dropped: Arc<AtomicU64>,
    connection: u64,
}

impl ServeObserver {
    /// The observer factory for `live`: connection numbers from 1. Starts the task that
    /// fills the window (on the current tokio runtime); it ends when the factory and every
    /// observer it made are gone.
    pub fn factory(live: Arc<Live>) -> impl Fn() -> acp_rpc::observe::SharedObserver {
        let (queue, rx) = mpsc::channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        tokio::spawn(fill(live, rx, dropped.clone()));
        let next = AtomicU64::new(1);
        move || {
            Arc::new(ServeObserver {
                queue: queue.clone(),
                dropped: dropped.clone(),
                connection: next.fetch_add(1, Ordering::Relaxed),
            })
        }
    }
}

/// Drains the queue into the window, a batch per lock.
async fn fill(live: Arc<Live>, mut rx: mpsc::Receiver<Kept>, dropped: Arc<AtomicU64>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        live.push_batch(&mut batch, dropped.swap(0, Ordering::Relaxed));
    }
}

impl Observer for ServeObserver {
    fn message(&self, event: &MessageEvent<'_>) {
        let dir = match event.direction {
            Direction::Incoming => record::CLIENT_TO_AGENT,
            Direction::Outgoing => record::AGENT_TO_CLIENT,
        };
        // Only a permit is taken before the work: a full queue costs no parse.
        let Ok(permit) = self.queue.try_reserve() else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        permit.send(Kept {
            ts: record::now(),
            dir,
            skeleton: skeleton_tagged(event.text(), Some(self.connection)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_tagged_with_their_connection() {
        // Compared as JSON values: the key order of a skeleton follows serde_json's map,
        // sorted in acp-cli's own build and in insertion order when a workspace build turns
        // on `preserve_order`.
        let tag = |line: &str, n| {
            let skeleton = skeleton_tagged(line, Some(n));
            serde_json::from_str::<serde_json::Value>(&skeleton).expect(&skeleton)
        };
        let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
        assert_eq!(
            tag(r#"{"id":3,"method":"m"}"#, 2),
            json(r#"{"id":"2:3","jsonrpc":"2.0","method":"m"}"#)
        );
        assert_eq!(
            tag(r#"{"id":"a"}"#, 1),
            json(r#"{"id":"1:a","jsonrpc":"2.0"}"#)
        );
        assert_eq!(
            tag(r#"{"id":null}"#, 1),
            json(r#"{"id":null,"jsonrpc":"2.0"}"#)
        );
        assert_eq!(
            tag(r#"{"method":"n"}"#, 1),
            json(r#"{"jsonrpc":"2.0","method":"n"}"#)
        );
        assert_eq!(skeleton_tagged("not json", Some(1)), "not json");
    }

    /// The observer never waits: with the queue full (nothing draining it) a message is
    /// dropped and counted, and the count reaches the page's data once the queue drains.
    #[tokio::test]
    async fn a_full_queue_drops_and_counts_instead_of_waiting() {
        let live = Live::new("t");
        let (queue, rx) = mpsc::channel(2);
        let dropped = Arc::new(AtomicU64::new(0));
        let observer = ServeObserver {
            queue,
            dropped: dropped.clone(),
            connection: 1,
        };
        let line =
            br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}"#;
        for _ in 0..5 {
            let event = MessageEvent::new_external(
                Direction::Incoming,
                acp_rpc::observe::MessageKind::Request,
                Some("session/prompt"),
                None,
                line.len(),
                line,
            );
            observer.message(&event);
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
        drop(observer);
        fill(live.clone(), rx, dropped).await;
        let (_, data) = live.next(0).await;
        assert!(data.contains("\"total\":2"), "{data}");
        assert!(data.contains("\"dropped\":3"), "{data}");
        assert!(data.contains(r#""id":"\"1:1\"""#), "{data}");
    }

    /// Updates are paced by what they cost: after an analysis that took 5 ms the next one
    /// rests 95 ms first, and its own cost then paces the one after it.
    #[tokio::test]
    async fn the_next_update_rests_in_proportion_to_what_the_last_one_cost() {
        let live = Live::new("t");
        live.last_cost_micros.store(5_000, Ordering::Relaxed);
        assert_eq!(live.rest(), Duration::from_millis(95));
        let started = Instant::now();
        let (version, data) = live.next(0).await;
        assert!(started.elapsed() >= Duration::from_millis(95));
        assert_eq!(version, 1, "{data}");
        assert_ne!(live.last_cost_micros.load(Ordering::Relaxed), 5_000);
    }

    #[tokio::test]
    async fn a_viewer_gets_the_state_at_once_then_each_change() {
        let live = Live::new("t");
        let (v1, first) = live.next(0).await;
        assert!(first.contains("\"total\":0"), "{first}");
        let waiting = live.next(v1);
        let mut r = Record::new(1.0, record::CLIENT_TO_AGENT);
        r.line = Some(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#.into());
        live.push(&r);
        let (v2, second) = waiting.await;
        assert!(v2 > v1);
        assert!(second.contains("\"method\":\"initialize\""), "{second}");
        assert!(second.contains("\"total\":1"), "{second}");
        assert!(live.page().contains("EventSource('events'"));
    }
}
