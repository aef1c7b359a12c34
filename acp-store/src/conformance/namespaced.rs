//! [`Namespaced`]: one store seen as many, so that several runs of the suite (in several
//! processes) share one store without seeing each other's sessions.

use acp_types::v1::SessionId;
use async_trait::async_trait;

use crate::{
    Durability, HistoryCursor, HistoryPage, ListPage, ListQuery, MetaChange, SessionMeta,
    SessionStore, StoreError, StoredEvent,
};

/// A store whose sessions are those of `inner` under a prefix: ids are stored as
/// `PREFIX` + id, and owners as `PREFIX` (the unnamed identity) or `PREFIX/NAME`, so a
/// listing (which never mixes owners) shows this namespace's sessions only. Run the
/// conformance suite on one shared store from several processes, each with its own prefix,
/// and every case still holds, now against the other processes' traffic.
#[derive(Debug)]
pub struct Namespaced<S> {
    inner: S,
    prefix: String,
}

impl<S: SessionStore> Namespaced<S> {
    /// `inner`'s sessions under `prefix`.
    pub fn new(inner: S, prefix: impl Into<String>) -> Self {
        Namespaced {
            inner,
            prefix: prefix.into(),
        }
    }

    fn id(&self, id: &SessionId) -> SessionId {
        SessionId(format!("{}{}", self.prefix, id.0))
    }

    fn unid(&self, id: SessionId) -> SessionId {
        match id.0.strip_prefix(&self.prefix) {
            Some(rest) => SessionId(rest.to_owned()),
            None => id,
        }
    }

    fn owner(&self, owner: Option<&str>) -> Option<String> {
        Some(match owner {
            None => self.prefix.clone(),
            Some(name) => format!("{}/{name}", self.prefix),
        })
    }

    fn unowner(&self, owner: Option<String>) -> Option<String> {
        let owner = owner?;
        if owner == self.prefix {
            return None;
        }
        match owner.strip_prefix(&format!("{}/", self.prefix)) {
            Some(name) => Some(name.to_owned()),
            None => Some(owner),
        }
    }

    fn error(&self, e: StoreError) -> StoreError {
        match e {
            StoreError::NotFound(id) => StoreError::NotFound(self.unid(id)),
            StoreError::AlreadyExists(id) => StoreError::AlreadyExists(self.unid(id)),
            StoreError::Leased { id, pid } => StoreError::Leased {
                id: self.unid(id),
                pid,
            },
            other => other,
        }
    }
}

#[async_trait]
impl<S: SessionStore> SessionStore for Namespaced<S> {
    async fn create(&self, mut meta: SessionMeta) -> Result<(), StoreError> {
        meta.session_id = self.id(&meta.session_id);
        meta.owner = self.owner(meta.owner.as_deref());
        self.inner.create(meta).await.map_err(|e| self.error(e))
    }

    async fn append(&self, id: &SessionId, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        let inner = self.inner.append(&self.id(id), events).await;
        inner.map_err(|e| self.error(e))
    }

    async fn update_meta(&self, id: &SessionId, change: MetaChange) -> Result<(), StoreError> {
        let inner = self.inner.update_meta(&self.id(id), change).await;
        inner.map_err(|e| self.error(e))
    }

    async fn meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let meta = self.inner.meta(&self.id(id)).await;
        Ok(meta.map_err(|e| self.error(e))?.map(|mut meta| {
            meta.session_id = self.unid(meta.session_id);
            meta.owner = self.unowner(meta.owner);
            meta
        }))
    }

    async fn history(
        &self,
        id: &SessionId,
        from: HistoryCursor,
        max: usize,
    ) -> Result<HistoryPage, StoreError> {
        let page = self.inner.history(&self.id(id), from, max).await;
        page.map_err(|e| self.error(e))
    }

    async fn list(&self, mut query: ListQuery) -> Result<ListPage, StoreError> {
        query.owner = self.owner(query.owner.as_deref());
        let mut page = self.inner.list(query).await.map_err(|e| self.error(e))?;
        for row in &mut page.sessions {
            row.session_id = self.unid(row.session_id.clone());
            row.owner = self.unowner(row.owner.take());
        }
        Ok(page)
    }

    async fn close(&self, id: &SessionId) -> Result<(), StoreError> {
        let done = self.inner.close(&self.id(id)).await;
        done.map_err(|e| self.error(e))
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let done = self.inner.delete(&self.id(id)).await;
        done.map_err(|e| self.error(e))
    }

    fn durability(&self) -> Durability {
        self.inner.durability()
    }

    async fn sync(&self, id: &SessionId) -> Result<(), StoreError> {
        let done = self.inner.sync(&self.id(id)).await;
        done.map_err(|e| self.error(e))
    }

    async fn begin_turn(&self, id: &SessionId) -> Result<(), StoreError> {
        let done = self.inner.begin_turn(&self.id(id)).await;
        done.map_err(|e| self.error(e))
    }
}
