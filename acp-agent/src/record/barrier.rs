//! The recorder as the connection's write barrier ([`acp_rpc::barrier`]): with
//! [`Durability::Event`] (and `EventSyncTurn`) a streamed update's event is collected, and
//! the events of every update queued so far are appended (one append per session) just
//! before the connection's writer hands its next batch to the transport. So an update still
//! reaches the client only once the store has it, and a burst of updates that leaves in one
//! write costs one append.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use acp_rpc::WriteBarrier;
use acp_rpc::barrier::BarrierFuture;

use super::Recorder;
use crate::store::Durability;
use crate::sync::lock;

impl Recorder {
    /// The write barrier the connection's writer runs, if the store's durability writes
    /// each update before it is sent; from now on the updates' events wait for it (instead
    /// of each being appended before its update is queued). `None` for `Turn` and
    /// `Interval`, which write on their own schedule.
    pub(crate) fn write_barrier(self: &Arc<Self>) -> Option<Arc<dyn WriteBarrier>> {
        if !matches!(
            self.durability,
            Durability::Event | Durability::EventSyncTurn
        ) {
            return None;
        }
        self.deferred.store(true, Ordering::Relaxed);
        Some(Arc::new(Barrier(self.clone())))
    }

    /// Appends what each listed session collected (each after any write of it under way).
    /// A failed append is reported and its events dropped, and the updates are sent all the
    /// same: a store that fails does not stop the conversation (as with a write before each
    /// update).
    async fn write_listed(&self) {
        let sessions = {
            let mut listed = lock(&self.listed);
            self.pending.store(false, Ordering::SeqCst);
            std::mem::take(&mut *listed)
        };
        for id in sessions {
            self.flush(&id).await;
        }
    }
}

/// The recorder's side of [`WriteBarrier`].
struct Barrier(Arc<Recorder>);

impl WriteBarrier for Barrier {
    fn pending(&self) -> bool {
        self.0.pending.load(Ordering::SeqCst)
    }

    fn flush(&self) -> BarrierFuture {
        let recorder = self.0.clone();
        Box::pin(async move { recorder.write_listed().await })
    }
}
