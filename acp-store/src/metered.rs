//! A session store that counts its operations: wrap a store ([`MeteredStore::new`]) and
//! each operation is reported to a [`StoreMeter`] with its name, its outcome and how long it
//! took. acp-remote's `Metrics` is one (its `/metrics` shows
//! `acp_store_operations_total{operation,outcome}` and
//! `acp_store_operation_duration_seconds{operation}`). Label values are bounded: `operation`
//! is one of the trait's methods, `outcome` `ok` or the kind of [`StoreError`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_types::v1::SessionId;
use async_trait::async_trait;

use crate::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta,
    SessionStore, StoreError, StoredEvent,
};

/// Where a [`MeteredStore`] reports its operations (a metrics registry).
pub trait StoreMeter: Send + Sync + 'static {
    /// One operation ended: `operation` is the trait method's name (`append`, `list`, ...),
    /// `outcome` `ok` or the error's kind (`not_found`, `already_exists`, `locked`, `leased`, `io`,
    /// `bad_cursor`, `other`), `took` its duration.
    fn store_operation(&self, operation: &'static str, outcome: &'static str, took: Duration);
}

/// A [`SessionStore`] that reports every operation of the one it wraps (see the module doc).
pub struct MeteredStore {
    inner: Arc<dyn SessionStore>,
    meter: Arc<dyn StoreMeter>,
}

impl std::fmt::Debug for MeteredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeteredStore").finish_non_exhaustive()
    }
}

impl MeteredStore {
    /// `inner`, reported to `meter`.
    pub fn new(inner: Arc<dyn SessionStore>, meter: Arc<dyn StoreMeter>) -> MeteredStore {
        MeteredStore { inner, meter }
    }

    fn count<T>(&self, operation: &'static str, since: Instant, result: &Result<T, StoreError>) {
        let outcome = match result {
            Ok(_) => "ok",
            Err(e) => outcome_label(e),
        };
        self.meter
            .store_operation(operation, outcome, since.elapsed());
    }
}

/// The kind of a store error, as a label value.
fn outcome_label(error: &StoreError) -> &'static str {
    match error {
        StoreError::NotFound(_) => "not_found",
        StoreError::AlreadyExists(_) => "already_exists",
        StoreError::Locked(_) => "locked",
        StoreError::Leased { .. } => "leased",
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

#[async_trait]
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
    async fn begin_turn(&self, id: &SessionId) -> Result<(), StoreError> {
        metered!(self, "begin_turn", self.inner.begin_turn(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen(Mutex<Vec<(&'static str, &'static str)>>);

    impl StoreMeter for Seen {
        fn store_operation(&self, operation: &'static str, outcome: &'static str, _: Duration) {
            crate::lock(&self.0).push((operation, outcome));
        }
    }

    #[tokio::test]
    async fn operations_are_reported_with_their_outcome() {
        let seen = Arc::new(Seen::default());
        let store = MeteredStore::new(Arc::new(MemoryStore::default()), seen.clone());
        let missing = SessionId("nope".to_owned());
        assert!(store.meta(&missing).await.unwrap().is_none());
        assert!(store.delete(&missing).await.is_err());
        assert_eq!(
            *crate::lock(&seen.0),
            [("meta", "ok"), ("delete", "not_found")]
        );
    }
}
