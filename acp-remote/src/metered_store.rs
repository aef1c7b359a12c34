//! A session store that counts its operations into [`Metrics`]: wrap the store a server's
//! agents share ([`MeteredStore::new`]) and `/metrics` shows
//! `acp_store_operations_total{operation,outcome}` and
//! `acp_store_operation_duration_seconds{operation}`. Label values are bounded: `operation` is
//! one of the trait's methods, `outcome` `ok` or the kind of [`StoreError`].

use std::sync::Arc;
use std::time::Instant;

use acp_agent::store::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta,
    SessionStore, StoreError, StoredEvent,
};
use acp_agent::types::SessionId;

use crate::metrics::Metrics;

/// A [`SessionStore`] that counts every operation of the one it wraps (see the module doc).
pub struct MeteredStore {
    inner: Arc<dyn SessionStore>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for MeteredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeteredStore").finish_non_exhaustive()
    }
}

impl MeteredStore {
    /// `inner`, counted into `metrics`.
    pub fn new(inner: Arc<dyn SessionStore>, metrics: Arc<Metrics>) -> MeteredStore {
        MeteredStore { inner, metrics }
    }

    fn count<T>(&self, operation: &'static str, since: Instant, result: &Result<T, StoreError>) {
        let outcome = match result {
            Ok(_) => "ok",
            Err(e) => outcome_label(e),
        };
        self.metrics
            .store_operation(operation, outcome, since.elapsed());
    }
}

/// The kind of a store error, as a label value.
fn outcome_label(error: &StoreError) -> &'static str {
    match error {
        StoreError::NotFound(_) => "not_found",
        StoreError::AlreadyExists(_) => "already_exists",
        StoreError::Locked(_) => "locked",
        StoreError::Io { .. } => "io",
        StoreError::BadCursor(_) => "bad_cursor",
        _ => "other",
    }
}

/// Times `$call` and counts it as `$op`.
macro_rules! metered {
    ($self:ident, $op:literal, $call:expr) => {{
        let since = Instant::now();
        let result = $call.await;
        $self.count($op, since, &result);
        result
    }};
}

#[acp_agent::async_trait]
impl SessionStore for MeteredStore {
    async fn create(&self, meta: SessionMeta) -> Result<(), StoreError> {
        metered!(self, "create", self.inner.create(meta))
    }
    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        metered!(self, "append", self.inner.append(id, events))
    }
    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        metered!(self, "update_meta", self.inner.update_meta(id, change))
    }
    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        metered!(self, "meta", self.inner.meta(id))
    }
    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        metered!(self, "history", self.inner.history(id, from, max))
    }
    async fn list(&self, query: ListQuery) -> Result<ListPage, StoreError> {
        metered!(self, "list", self.inner.list(query))
    }
    async fn close(&self, id: &SessionId) -> Result<(), StoreError> {
        metered!(self, "close", self.inner.close(id))
    }
    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        metered!(self, "delete", self.inner.delete(id))
    }
    fn durability(&self) -> Durability {
        self.inner.durability()
    }
    async fn sync(&self, id: &SessionId) -> Result<(), StoreError> {
        metered!(self, "sync", self.inner.sync(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_agent::store::MemoryStore;

    #[tokio::test]
    async fn operations_are_counted_by_outcome() {
        let metrics = Metrics::new();
        let store = MeteredStore::new(Arc::new(MemoryStore::default()), metrics.clone());
        let missing = SessionId("nope".to_owned());
        assert!(store.meta(&missing).await.unwrap().is_none());
        assert!(store.delete(&missing).await.is_err());
        let text = metrics.encode_text();
        let line = |series: &str| text.lines().any(|l| l.starts_with(series));
        assert!(
            line("acp_store_operations_total{operation=\"meta\",outcome=\"ok\"} 1"),
            "{text}"
        );
        assert!(
            line("acp_store_operations_total{operation=\"delete\",outcome=\"not_found\"} 1"),
            "{text}"
        );
        assert!(
            line("acp_store_operation_duration_seconds_count{operation=\"meta\"} 1"),
            "{text}"
        );
    }
}
