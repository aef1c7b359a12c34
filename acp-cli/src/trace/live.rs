//! The live dashboard's feed: a [`Window`] of the run behind a lock, told about every
//! record ([`Live::push`]: from the trace proxy's writer, or from `acp serve`'s observer,
//! [`ServeObserver`]), and served by acp-remote ([`acp_remote::live`]) as the page of
//! [`super::html::live_page`] plus server-sent events carrying the window's analysis
//! ([`super::window::Snapshot::analysis`]), the same analysis `acp trace view` draws.
//!
//! `acp serve`'s observer runs on each connection's routing task, so it does the least it
//! can there: the line is copied into the window as it is (a lock held for a push), and is
//! cut to its skeleton only when a viewer's update analyses the window. Nothing wakes a task
//! per message: the window's version is an atomic, and a viewer waiting for the next
//! version is woken only while it waits.
//!
//! Each update a viewer gets is the analysis of the whole window (up to [`LIMIT`] messages),
//! which costs milliseconds when the window is full. So the updates are paced by what they
//! cost: after an analysis that took `c`, the next one waits at least `REST_PER_COST * c`,
//! which keeps the dashboard to about 5% of a core per viewer however fast the messages come
//! (and to the stream's own minimum interval when they come slowly).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_remote::LiveFeed;
use acp_rpc::Direction;
use acp_rpc::observe::{MessageEvent, Observer};
use acp_rpc::sync::lock;
use tokio::sync::Notify;

use super::record::{self, Record};
use super::window::{LIMIT, Window};

/// How long a viewer's next analysis waits, in multiples of what the last one cost: 19 keeps
/// the analysis to 1/20 of the time.
const REST_PER_COST: u32 = 19;

/// A live run: its window and a version that moves on with every record.
#[derive(Debug)]
pub struct Live {
    name: String,
    window: Mutex<Window>,
    /// Moves on with every record; 1 before any (a viewer gets the empty state at once).
    version: AtomicU64,
    /// Viewers waiting for the version to move: only then does a record wake anyone.
    waiting: AtomicUsize,
    changed: Notify,
    /// What the last analysis took, in microseconds (paces the next: [`REST_PER_COST`]).
    last_cost_micros: AtomicU64,
}

impl Live {
    /// A feed titled `name`, keeping the newest [`LIMIT`] messages.
    pub fn new(name: impl Into<String>) -> Arc<Live> {
        Arc::new(Live {
            name: name.into(),
            window: Mutex::new(Window::new(LIMIT)),
            version: AtomicU64::new(1),
            waiting: AtomicUsize::new(0),
            changed: Notify::new(),
            last_cost_micros: AtomicU64::new(0),
        })
    }

    /// Takes one record.
    pub fn push(&self, record: &Record) {
        lock(&self.window).push(record);
        self.moved_on();
    }

    /// Takes one protocol line of `acp serve`'s connection `connection` (see
    /// [`Window::push_line`]).
    fn push_line(&self, ts: f64, dir: &'static str, connection: u64, line: &str) {
        lock(&self.window).push_line(ts, dir, connection, line);
        self.moved_on();
    }

    /// A new version; wakes the viewers waiting for one (sequentially consistent with their
    /// count and their check of the version: either they see the new version, or this sees
    /// them waiting).
    fn moved_on(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.changed.notify_waiters();
        }
    }

    /// Waits until the version is past `seen` and returns it.
    async fn past(&self, seen: u64) -> u64 {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let version = loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let version = self.version.load(Ordering::SeqCst);
            if version > seen {
                break version;
            }
            changed.await;
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        version
    }

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
        Box::pin(async move {
            self.past(seen).await;
            tokio::time::sleep(self.rest()).await;
            // The newest version after the rest, and the window as it is then.
            let started = Instant::now();
            let (version, snapshot) = {
                let window = lock(&self.window);
                (self.version.load(Ordering::SeqCst), window.snapshot())
            };
            // Analyse outside the lock: the connections keep pushing meanwhile.
            let data =
                serde_json::to_string(&snapshot.analysis()).unwrap_or_else(|_| "{}".to_owned());
            let cost = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.last_cost_micros.store(cost, Ordering::Relaxed);
            (version, data)
        })
    }
}

/// `acp serve --dashboard`: one per remote connection, putting the server's routed messages
/// into the live window. Request ids repeat across connections, so each connection's ids
/// are shown as `N:ID` (N numbers the connections from 1).
pub struct ServeObserver {
    live: Arc<Live>,
    connection: u64,
}

impl ServeObserver {
    /// The observer factory for `live`: connection numbers from 1.
    pub fn factory(live: Arc<Live>) -> impl Fn() -> acp_rpc::observe::SharedObserver {
        let next = AtomicU64::new(1);
        move || {
            Arc::new(ServeObserver {
                live: live.clone(),
                connection: next.fetch_add(1, Ordering::Relaxed),
            })
        }
    }
}

impl Observer for ServeObserver {
    fn message(&self, event: &MessageEvent<'_>) {
        let dir = match event.direction {
            Direction::Incoming => record::CLIENT_TO_AGENT,
            Direction::Outgoing => record::AGENT_TO_CLIENT,
        };
        self.live
            .push_line(record::now(), dir, self.connection, event.text());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_rpc::observe::MessageKind;

    fn event(line: &[u8]) -> MessageEvent<'_> {
        MessageEvent::new_external(
            Direction::Incoming,
            MessageKind::Request,
            Some("session/prompt"),
            None,
            line.len(),
            line,
        )
    }

    /// Each connection's ids are shown as `N:ID`, the lines cut to their skeletons when the
    /// window is analysed.
    #[tokio::test]
    async fn ids_are_tagged_with_their_connection() {
        let live = Live::new("t");
        let make = ServeObserver::factory(live.clone());
        let (first, second) = (make(), make());
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"a long prompt the skeleton leaves out"}]}}"#;
        first.message(&event(line));
        second.message(&event(line));
        let (_, data) = live.next(0).await;
        assert!(data.contains(r#""id":"\"1:1\"""#), "{data}");
        assert!(data.contains(r#""id":"\"2:1\"""#), "{data}");
        assert!(data.contains("\"total\":2"), "{data}");
        assert!(!data.contains("a long prompt"), "{data}");
    }

    /// The window stays bounded whatever comes: a line too long to hold as it is is cut
    /// to its skeleton on the way in.
    #[tokio::test]
    async fn a_huge_line_is_cut_on_the_way_in() {
        let live = Live::new("t");
        let observer = ServeObserver::factory(live.clone())();
        let big = "x".repeat(1 << 20);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{{"sessionId":"s","text":"{big}"}}}}"#
        );
        for _ in 0..LIMIT + 10 {
            observer.message(&event(line.as_bytes()));
        }
        let held = lock(&live.window).bytes();
        assert!(held <= LIMIT * 300, "{held} bytes held");
        let snapshot = lock(&live.window).snapshot();
        let data = serde_json::to_string(&snapshot.analysis()).unwrap();
        assert!(
            data.contains(&format!("\"total\":{}", LIMIT + 10)),
            "{}",
            &data[..200]
        );
        assert!(!data.contains("xxxx"));
    }

    /// A viewer waiting for the next version is woken by a record; nothing is woken when
    /// nobody waits.
    #[tokio::test]
    async fn a_waiting_viewer_is_woken_by_the_next_record() {
        let live = Live::new("t");
        let (v1, _) = live.next(0).await;
        let waiter = {
            let live = live.clone();
            tokio::spawn(async move { live.past(v1).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        assert_eq!(live.waiting.load(Ordering::SeqCst), 1);
        ServeObserver::factory(live.clone())().message(&event(br#"{"id":1,"method":"m"}"#));
        let seen = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
        assert!(seen > v1);
        assert_eq!(live.waiting.load(Ordering::SeqCst), 0);
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
