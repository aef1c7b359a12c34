//! The live dashboard's feed: a [`Window`] of the run behind a lock, told about every
//! record ([`Live::push`]: from the trace proxy's writer, or from `acp serve`'s observer,
//! [`ServeObserver`]), and served by acp-remote ([`acp_remote::live`]) as the page of
//! [`super::html::live_page`] plus server-sent events carrying the window's analysis
//! ([`super::window::Snapshot::analysis`]), the same analysis `acp trace view` draws.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use acp_remote::LiveFeed;
use acp_rpc::Direction;
use acp_rpc::observe::{MessageEvent, Observer};
use acp_rpc::sync::lock;
use tokio::sync::watch;

use super::record::{self, Record};
use super::window::{LIMIT, Window};

/// A live run: its window and a version that moves on with every record.
#[derive(Debug)]
pub struct Live {
    name: String,
    window: Mutex<Window>,
    version: watch::Sender<u64>,
}

impl Live {
    /// A feed titled `name`, keeping the newest [`LIMIT`] messages.
    pub fn new(name: impl Into<String>) -> Arc<Live> {
        Arc::new(Live {
            name: name.into(),
            window: Mutex::new(Window::new(LIMIT)),
            // Version 1 before any record: a viewer gets the empty state at once.
            version: watch::Sender::new(1),
        })
    }

    /// Takes one record.
    pub fn push(&self, record: &Record) {
        lock(&self.window).push(record);
        self.version.send_modify(|v| *v += 1);
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
            let version = match versions.wait_for(|v| *v > seen).await {
                Ok(v) => *v,
                Err(_) => seen,
            };
            // Analyse outside the lock: the proxy's writer keeps going meanwhile.
            let snapshot = lock(&self.window).snapshot();
            let data =
                serde_json::to_string(&snapshot.analysis()).unwrap_or_else(|_| "{}".to_owned());
            (version, data)
        })
    }
}

/// `acp serve --dashboard`: one per remote connection, turning the server's routed messages
/// into records of the live window. Request ids repeat across connections, so each
/// connection's ids are shown as `N:ID` (N numbers the connections from 1).
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
        let mut r = Record::new(record::now(), dir);
        r.line = Some(tag_id(event.text(), self.connection));
        self.live.push(&r);
    }
}

/// The line with its id (if any) replaced by the string `"N:ID"`.
fn tag_id(text: &str, connection: u64) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(mut obj)) => {
            if let Some(id) = obj.get_mut("id").filter(|id| !id.is_null()) {
                let shown = match &*id {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                *id = serde_json::Value::String(format!("{connection}:{shown}"));
            }
            serde_json::Value::Object(obj).to_string()
        }
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_tagged_with_their_connection() {
        assert_eq!(
            tag_id(r#"{"id":3,"method":"m"}"#, 2),
            r#"{"id":"2:3","method":"m"}"#
        );
        assert_eq!(tag_id(r#"{"id":"a"}"#, 1), r#"{"id":"1:a"}"#);
        assert_eq!(tag_id(r#"{"method":"n"}"#, 1), r#"{"method":"n"}"#);
        assert_eq!(tag_id("not json", 1), "not json");
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
