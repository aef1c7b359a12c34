//! With `Durability::Event` a connection appends its updates to the store once per transport
//! write (the recorder is the connection's write barrier), and still no update reaches the
//! client before the store has it: a store whose append is held back holds back everything
//! the client would see; a client that reads the store on every update finds it there; a
//! burst costs a few appends, not one per update; and a store whose appends fail loses those
//! events but not the conversation (the updates and the answer still arrive, as before).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use acp_agent::store::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MemoryStore, MetaChange,
    SessionMeta, SessionStore, StoreError, StoredEvent,
};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use serde_json::{Value, json};
use tokio::sync::watch;
#[path = "session_store/wire.rs"]
mod wire;
use wire::{Wire, v};

/// Streams `n` message chunks `c0 `, `c1 `, ... (the prompt's text is `n`).
struct Chunks;

#[acp_agent::async_trait]
impl Agent for Chunks {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({"protocolVersion": 1})))
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(v(json!({"sessionId": "s"})))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let n: usize = match p.prompt.first() {
            Some(ContentBlock::Text(t)) => t.text.parse().unwrap_or(0),
            _ => 0,
        };
        for i in 0..n {
            cx.session().message_chunk(format!("c{i} ")).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// A memory store whose appends wait for a gate, may take a while, or fail; it counts them.
struct Gated {
    inner: MemoryStore,
    open: watch::Sender<bool>,
    delay: Option<Duration>,
    fail: AtomicBool,
    appends: AtomicUsize,
}

impl Gated {
    fn new(open: bool, delay: Option<Duration>) -> Arc<Gated> {
        Arc::new(Gated {
            inner: MemoryStore::new().with_durability(Durability::Event),
            open: watch::channel(open).0,
            delay,
            fail: AtomicBool::new(false),
            appends: AtomicUsize::new(0),
        })
    }

    /// The stored updates' texts, then whether the history ends with the turn's end.
    async fn stored(&self, id: &str) -> (Vec<String>, usize) {
        let page = self
            .inner
            .history(&SessionId(id.into()), HistoryCursor::START, 100_000)
            .await
            .unwrap();
        let mut texts = Vec::new();
        let mut ends = 0;
        for event in page.events {
            match event {
                StoredEvent::Update(SessionUpdate::AgentMessageChunk(c)) => {
                    if let ContentBlock::Text(t) = c.content {
                        texts.push(t.text);
                    }
                }
                StoredEvent::TurnEnd(_) => ends += 1,
                _ => {}
            }
        }
        (texts, ends)
    }
}

#[acp_agent::async_trait]
impl SessionStore for Gated {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        self.inner.create(meta).await
    }
    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        let _ = self.open.subscribe().wait_for(|open| *open).await;
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        self.appends.fetch_add(1, Ordering::SeqCst);
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Other("the disk is full".into()));
        }
        self.inner.append(id, events).await
    }
    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        self.inner.update_meta(id, change).await
    }
    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        self.inner.meta(id).await
    }
    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        self.inner.history(id, from, max).await
    }
    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError> {
        self.inner.list(query).await
    }
    async fn close(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.close(id).await
    }
    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.delete(id).await
    }
    fn durability(&self) -> Durability {
        Durability::Event
    }
}

fn prompt(n: usize) -> Value {
    json!({"sessionId": "s", "prompt": [{"type": "text", "text": n.to_string()}]})
}

fn chunk_text(msg: &Value) -> Option<&str> {
    (msg["method"] == "session/update")
        .then(|| msg["params"]["update"]["content"]["text"].as_str())?
}

/// While the store's append is held back, the client sees nothing of the turn (no update,
/// no answer); once it is let go, every update arrives, each one already stored, and the
/// whole burst took a few appends.
#[tokio::test]
async fn nothing_reaches_the_client_before_the_store_has_it() {
    const N: usize = 200;
    let store = Gated::new(false, None);
    let mut wire = Wire::serve(Chunks, store.clone());
    wire.init().await;
    assert_eq!(wire.new_session("/w").await, "s");
    let id = wire.send("session/prompt", prompt(N)).await;
    let early = wire.within(Duration::from_millis(400)).await;
    assert!(
        early.is_none(),
        "reached the client before the store: {early:?}"
    );
    assert_eq!(store.stored("s").await, (vec![], 0));
    store.open.send_replace(true);
    let mut seen = 0;
    loop {
        let msg = wire.next().await;
        if msg["id"] == id {
            assert_eq!(msg["result"]["stopReason"], "end_turn");
            break;
        }
        let text = chunk_text(&msg).expect("a message chunk");
        assert_eq!(text, format!("c{seen} "));
        seen += 1;
        let (stored, _) = store.stored("s").await;
        assert!(
            stored.len() >= seen,
            "c{} was seen but not stored",
            seen - 1
        );
    }
    assert_eq!(seen, N);
    let (stored, ends) = store.stored("s").await;
    assert_eq!(stored.len(), N, "each update stored as it was sent");
    assert_eq!(ends, 1, "the turn's end is stored before its answer");
    let appends = store.appends.load(Ordering::SeqCst);
    assert!(
        appends <= 20,
        "{appends} appends for a burst of {N} updates"
    );
}

/// With a store that takes a while per append, a client that reads the store whenever an
/// update arrives always finds the update in it.
#[tokio::test]
async fn every_update_the_client_sees_is_already_stored() {
    const N: usize = 300;
    let store = Gated::new(true, Some(Duration::from_millis(2)));
    let mut wire = Wire::serve(Chunks, store.clone());
    wire.init().await;
    wire.new_session("/w").await;
    let id = wire.send("session/prompt", prompt(N)).await;
    let mut seen = 0;
    loop {
        let msg = wire.next().await;
        if msg["id"] == id {
            break;
        }
        if chunk_text(&msg).is_some() {
            seen += 1;
            let (stored, _) = store.stored("s").await;
            assert!(
                stored.len() >= seen,
                "update {seen} was seen before it was stored"
            );
        }
    }
    assert_eq!(seen, N);
    assert_eq!(store.stored("s").await.1, 1);
}

/// A store whose appends fail: the events are lost (reported in the log), the updates and
/// the answer still reach the client; once the store works again the next turn is recorded.
#[tokio::test]
async fn a_failing_append_loses_the_events_but_not_the_conversation() {
    const N: usize = 50;
    let store = Gated::new(true, None);
    let mut wire = Wire::serve(Chunks, store.clone());
    wire.init().await;
    wire.new_session("/w").await;
    store.fail.store(true, Ordering::SeqCst);
    let (before, answer) = wire.call("session/prompt", prompt(N)).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let texts: Vec<&str> = before.iter().filter_map(chunk_text).collect();
    assert_eq!(texts.len(), N);
    assert!(store.appends.load(Ordering::SeqCst) >= 1);
    assert_eq!(store.stored("s").await, (vec![], 0));
    store.fail.store(false, Ordering::SeqCst);
    let (before, answer) = wire.call("session/prompt", prompt(3)).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(before.iter().filter_map(chunk_text).count(), 3);
    assert_eq!(
        store.stored("s").await,
        (vec!["c0 ".into(), "c1 ".into(), "c2 ".into()], 1)
    );
}
