//! A session's writer in one store: taken with the session's lease (its history opened, a
//! dead writer's torn last line cut), shared by this store's tasks, and given back with the
//! lease.

use std::fs::OpenOptions;
use std::sync::{Arc, Mutex};

use acp_types::v1::SessionId;

use super::{Inner, Writer, cut_torn_tail, lease, lock};
use crate::StoreError;

impl Inner {
    pub(super) fn writer(&self, id: &SessionId) -> Option<Arc<Writer>> {
        lock(&self.leased).get(id).cloned()
    }

    /// The session's writer, taking its lease (and opening its history, a dead writer's
    /// torn last line cut) if this store does not hold it yet.
    pub(super) fn lease(&self, id: &SessionId) -> Result<Arc<Writer>, StoreError> {
        if let Some(w) = self.writer(id) {
            return Ok(w);
        }
        let _leasing = lock(&self.leasing);
        // Another task of this store may have leased it while this one waited.
        if let Some(w) = self.writer(id) {
            return Ok(w);
        }
        lease::acquire(&mut self.db(), &self.dir, &self.holder.token, id)?;
        let path = self.history_path(id);
        let opened = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .and_then(|mut file| cut_torn_tail(&mut file, &path).map(|()| file));
        let file = match opened {
            Ok(file) => file,
            Err(e) => {
                let _ = lease::release(&self.db(), &self.holder.token, id);
                return Err(StoreError::io(
                    format!("cannot write {}", path.display()),
                    e,
                ));
            }
        };
        let writer = Arc::new(Writer {
            file: Mutex::new(file),
            in_turn: false.into(),
            released: false.into(),
        });
        lock(&self.leased).insert(id.clone(), writer.clone());
        Ok(writer)
    }

    /// Gives the session's lease back (its history file closed), once no write of this
    /// process is in flight through it.
    pub(super) fn unlease(&self, id: &SessionId) -> Result<(), StoreError> {
        let Some(writer) = self.writer(id) else {
            return Ok(());
        };
        let _file = lock(&writer.file);
        self.release_locked(id, &writer)
    }

    /// Gives back the lease of `writer`, whose file the caller holds locked: marked done
    /// first (a task that got it meanwhile leases again), then the lease released, then
    /// forgotten here (only then can a task of this store lease the session afresh).
    pub(super) fn release_locked(
        &self,
        id: &SessionId,
        writer: &Arc<Writer>,
    ) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        if writer.released.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let released = lease::release(&self.db(), &self.holder.token, id);
        self.forget(id, writer);
        released
    }

    /// Drops `writer` from the writers of this store, unless another one took its place.
    pub(super) fn forget(&self, id: &SessionId, writer: &Arc<Writer>) {
        let mut leased = lock(&self.leased);
        if leased.get(id).is_some_and(|w| Arc::ptr_eq(w, writer)) {
            leased.remove(id);
        }
    }
}
