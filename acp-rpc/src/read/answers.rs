//! Answers to our calls: a response delivered to its caller, straight from the line when it
//! has the usual shape and nothing is queued before it, else in arrival order behind the
//! notifications read before it.

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::dispatch::Ordered;
use crate::envelope::plain_response;
use crate::message::{BorrowedResponse, RequestId};
use crate::observe::MessageKind;
use crate::write::state::{Pending, lock};

use super::Reader;

impl Reader {
    /// A response of the usual shape, decoded by its caller straight from the line (one pass
    /// over a possibly large result instead of the envelope's and then the caller's).
    /// `false` leaves the line to the ordinary path: another shape, notifications still
    /// queued before it (the ordering guarantee), no caller waiting, or a result that does
    /// not decode (the ordinary path validates it and delivers the error).
    pub(super) fn deliver_plain_response(&mut self, line: &str) -> bool {
        let Some((id, result)) = plain_response(line) else {
            return false;
        };
        if !self.worker_idle() {
            return false;
        }
        // Bound first: the lock guard of a match scrutinee lives to the end of the match.
        let removed = lock(&self.shared.pending).map.remove(&id);
        let mut waiter = match removed {
            Some(Pending::Waiter(waiter)) => waiter,
            Some(other) => {
                lock(&self.shared.pending).map.insert(id, other);
                return false;
            }
            None => return false,
        };
        if waiter.try_unvalidated(result) {
            self.observe_plain_response(id, line);
            return true;
        }
        let mut pending = lock(&self.shared.pending);
        if pending.closed.is_some() {
            // Shut down meanwhile: the map was drained without this caller.
            drop(pending);
            waiter.deliver(Err(self.shared.closed_error()));
            self.observe_plain_response(id, line);
            return true;
        }
        pending.map.insert(id, Pending::Waiter(waiter));
        false
    }

    pub(super) fn observe_plain_response(&self, id: i64, line: &str) {
        if self.shared.config.observer.is_some() {
            let id = RequestId::Int(id);
            let size = line.len();
            self.observe(
                MessageKind::Response,
                None,
                Some(&id),
                size,
                line.as_bytes(),
            );
        }
    }

    pub(super) async fn on_response(&mut self, resp: BorrowedResponse<'_>) {
        let id = match resp.id {
            Some(RequestId::Int(id)) => id,
            Some(RequestId::Str(s)) => {
                tracing::warn!(id = %s, "response with a string id (ours are integers): ignored");
                return;
            }
            None => {
                match &resp.result {
                    Err(e) => tracing::warn!(error = %e, "peer reported an error with id null"),
                    Ok(_) => tracing::warn!("response with id null: ignored"),
                }
                return;
            }
        };
        let pending = lock(&self.shared.pending).map.remove(&id);
        let deliver = match pending {
            Some(Pending::Waiter(deliver)) => deliver,
            Some(Pending::Discard(_slot)) => return,
            None => {
                tracing::warn!(id, "response for an unknown id: ignored");
                return;
            }
        };
        if self.worker_idle() {
            deliver.deliver(resp.result);
        } else {
            let result = resp.result.map(RawValue::to_owned);
            if let Err(mpsc::error::SendError(Ordered::Response(deliver, _))) =
                self.ordered.send(Ordered::Response(deliver, result)).await
            {
                deliver.deliver(Err(self.shared.closed_error()));
            }
        }
    }
}
