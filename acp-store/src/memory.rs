//! [`MemoryStore`]: everything in memory, for tests and for agents that want load, list and
//! resume within one process's lifetime.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use acp_types::v1::SessionId;
use async_trait::async_trait;

use crate::lock;
use crate::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta,
    SessionStore, StoreError, StoredEvent, decode_cursor, encode_cursor,
};

/// A [`SessionStore`] in memory (lost when the process ends).
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
    durability: Durability,
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<SessionId, Stored>,
    /// Creation number -> id, for listing newest first.
    order: BTreeMap<u64, SessionId>,
    next: u64,
}

#[derive(Debug)]
struct Stored {
    seq: u64,
    meta: SessionMeta,
    events: Vec<StoredEvent>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The store, recorded into with `durability` (what a connection would do with a
    /// durable store of that setting; nothing here survives the process anyway).
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }
}

fn not_found(id: &SessionId) -> StoreError {
    StoreError::NotFound(id.clone())
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        let mut s = lock(&self.state);
        if s.sessions.contains_key(&meta.session_id) {
            return Err(StoreError::AlreadyExists(meta.session_id));
        }
        s.next += 1;
        let seq = s.next;
        s.order.insert(seq, meta.session_id.clone());
        s.sessions.insert(
            meta.session_id.clone(),
            Stored {
                seq,
                meta,
                events: Vec::new(),
            },
        );
        Ok(())
    }

    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        let mut s = lock(&self.state);
        let stored = s.sessions.get_mut(id).ok_or_else(|| not_found(id))?;
        stored.events.extend(events);
        Ok(())
    }

    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        let mut s = lock(&self.state);
        let stored = s.sessions.get_mut(id).ok_or_else(|| not_found(id))?;
        stored.meta.apply(&change);
        Ok(())
    }

    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        Ok(lock(&self.state).sessions.get(id).map(|s| s.meta.clone()))
    }

    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        let s = lock(&self.state);
        let stored = s.sessions.get(id).ok_or_else(|| not_found(id))?;
        let start = usize::try_from(from.0).unwrap_or(usize::MAX);
        let end = start.saturating_add(max.max(1)).min(stored.events.len());
        let events = stored.events.get(start..end).unwrap_or_default().to_vec();
        let next = (end < stored.events.len()).then_some(HistoryCursor(end as u64));
        Ok(HistoryPage { events, next })
    }

    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError> {
        let before = match &query.cursor {
            Some(c) => decode_cursor(c)?,
            None => u64::MAX,
        };
        let s = lock(&self.state);
        let mut page = ListPage::default();
        for (&seq, id) in s.order.range(..before).rev() {
            let meta = &s.sessions[id].meta;
            if meta.owner != query.owner || query.cwd.as_ref().is_some_and(|cwd| *cwd != meta.cwd) {
                continue;
            }
            if page.sessions.len() == query.limit {
                page.next_cursor = Some(encode_cursor(seq + 1));
                break;
            }
            page.sessions.push(meta.summary());
        }
        Ok(page)
    }

    async fn close(&self, _id: &SessionId) -> Result<(), StoreError> {
        Ok(())
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let mut s = lock(&self.state);
        let stored = s.sessions.remove(id).ok_or_else(|| not_found(id))?;
        s.order.remove(&stored.seq);
        Ok(())
    }

    fn durability(&self) -> Durability {
        self.durability
    }
}
