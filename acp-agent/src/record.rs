//! Automatic recording: what a connection served with a store writes, and when.
//!
//! When a turn's updates reach the store is the store's [`Durability`]:
//!
//! * [`Durability::Event`] (the default) and [`Durability::EventSyncTurn`]: every update is
//!   in the store *before* the client can read it, so an agent process killed mid-turn
//!   (`kill -9`) keeps every event the client saw. The recorder is the connection's write
//!   barrier ([`acp_rpc::barrier`], `record/barrier.rs`): an update's event is collected as
//!   it is queued (each update an event of its own, as sent), and just before the
//!   connection's writer hands its next batch of messages to the transport, the events of
//!   every update queued so far are appended, one append per session. A burst of updates
//!   that leaves in one write costs one append (one `write` for the embedded stores, one
//!   round trip for PostgreSQL), and while an append runs nothing is written to the client
//!   and the senders fill the outgoing queue, then wait. A prompt's answer follows its
//!   turn's end, appended as a [`StoredEvent::TurnEnd`] when the prompt returns (before
//!   the answer is sent); a turn without one is replayed by `session/load` followed by a
//!   chunk marked [`crate::store::INTERRUPTED_META`]. `EventSyncTurn` also asks the store to
//!   make the session durable against a power loss at each turn's end
//!   ([`SessionStore::sync`]). An append that fails is logged and its events are lost; the
//!   updates are still sent (a failing store does not stop the conversation).
//! * [`Durability::Turn`]: the turn's updates are collected in memory and appended in one
//!   write when the prompt ends. [`Durability::Interval`] collects the same way and also
//!   writes what it holds once the oldest unwritten event is as old as the interval: when
//!   the next update arrives, or from a timer when the turn pauses (a tool call that runs
//!   for minutes does not keep the turn's events from the store). While collecting,
//!   consecutive text chunks of one message become one chunk, a tool call absorbs its
//!   `tool_call_update`s (it is stored in its final state, where it was announced), and
//!   consecutive plans keep only the last. The fewest writes; a killed process loses the
//!   turn so far. Outside a prompt each update is written at once.
//!
//! Whatever the durability, what a session collects is written by the sender of the
//! update that fills it ([`FLUSH_EVENTS`] events or [`FLUSH_BYTES`] bytes), who waits for
//! the write: memory is bounded by holding senders back, not by dropping events.
//!
//! A session's writes go one at a time, each taking what has been collected so far, so the
//! store receives its events in the order they were sent whichever path writes them.
//!
//! Replaying either form renders the same conversation as the live updates did. What each
//! setting costs is in BENCHMARKS.md (`acp-bench store`, and the ignored test
//! `store_durability_cost`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use acp_types::v1::{ContentBlock, SessionId, SessionNotification, SessionUpdate};

use crate::store::{
    Durability, MetaChange, SessionMeta, SessionStore, StoreError, StoredEvent, TurnEnd,
    now_rfc3339,
};
use crate::sync::lock;

mod barrier;
mod turn;

use turn::Turn;

/// A turn longer than this many stored events is written out in parts.
pub(crate) const FLUSH_EVENTS: usize = 1024;

/// ... or once it holds about this many bytes of text (a long streamed answer is stored in
/// several chunks, which render the same).
pub(crate) const FLUSH_BYTES: usize = 1 << 20;

/// Events read per page while a forked session's history is copied.
#[cfg(feature = "unstable_session_fork")]
const COPY_PAGE: usize = 256;

/// Updates kept for a session that is being created (before the store knows it).
const EARLY_EVENTS: usize = 256;

/// The recorder of one connection.
pub(crate) struct Recorder {
    /// The store, until the connection ends ([`Recorder::release`]): the connection's
    /// state (and with it this recorder) lives as long as any handle to it (an
    /// `AgentConnection` kept after `close()`, a `ClientHandle` an agent task kept), so the
    /// store must not live as long as they do (a `JsonlStore` would stay locked).
    store: std::sync::RwLock<Option<Arc<dyn SessionStore>>>,
    /// Per session: whether the store has it, and the events not yet written. One map, so
    /// a streamed chunk costs one lookup.
    state: Mutex<HashMap<SessionId, Rec>>,
    /// Set once [`Recorder::release`] has finished (a second caller waits for the first).
    released: tokio::sync::OnceCell<()>,
    /// When a turn's events are written (the store's choice).
    durability: Durability,
    /// This recorder, for the timers of [`Durability::Interval`] (which must not keep it
    /// alive).
    me: Weak<Recorder>,
    /// The identity the connection serves ([`SessionMeta::owner`]): the sessions it creates
    /// are its own, and it reaches no other identity's.
    owner: Option<String>,
    /// Each update's event is left for the connection's write barrier (see
    /// [`Recorder::write_barrier`]) instead of being written before the update is queued.
    deferred: AtomicBool,
    /// Sessions with events the write barrier has to write (each listed once, see
    /// [`Rec::listed`]); taken by the barrier. Locked inside `state`, never the other way.
    listed: Mutex<Vec<SessionId>>,
    /// `listed` is not empty: the barrier has work (read before every write the
    /// connection makes, so an atomic rather than the lock).
    pending: AtomicBool,
}

#[derive(Default)]
struct Rec {
    /// The store has the session (created, loaded or resumed on this connection); until
    /// then (while `session/new` runs) its updates wait here.
    stored: bool,
    turn: Turn,
    /// Held while the session's collected events are taken and written, so two writes of
    /// one session never overtake each other.
    writing: Arc<tokio::sync::Mutex<()>>,
    /// The session is in [`Recorder::listed`] (until a write takes its events).
    listed: bool,
}

/// What recording an update leaves to do once the recorder's lock is let go (see
/// [`Recorder::note`]).
pub(crate) struct FollowUp {
    /// Write what the session collected now.
    flush: bool,
    /// The metadata the update changes.
    change: Option<MetaChange>,
    /// Arm the [`Durability::Interval`] timer.
    timer: Option<Duration>,
}

/// The metadata an update changes, if any (most updates change none: checked before
/// anything is built, since this runs for every streamed chunk).
fn meta_change(update: &SessionUpdate) -> Option<MetaChange> {
    let change = match update {
        SessionUpdate::CurrentModeUpdate(m) => MetaChange {
            current_mode: Some(m.current_mode_id.clone()),
            ..MetaChange::touch()
        },
        SessionUpdate::ConfigOptionUpdate(c) => MetaChange {
            config_options: Some(c.config_options.clone()),
            ..MetaChange::touch()
        },
        SessionUpdate::SessionInfoUpdate(i) => {
            let mut change = MetaChange {
                title: Some(i.title.clone()?),
                ..MetaChange::touch()
            };
            if let Some(Some(at)) = &i.updated_at {
                change.updated_at.clone_from(at);
            }
            change
        }
        _ => return None,
    };
    Some(change)
}

fn report(what: &str, id: &SessionId, e: &StoreError) {
    tracing::error!(session = %id.0, error = %e, "session store: could not record {what}");
}

impl Recorder {
    pub(crate) fn new(store: Arc<dyn SessionStore>, owner: Option<String>) -> Arc<Self> {
        Arc::new_cyclic(|me| Recorder {
            durability: store.durability(),
            store: std::sync::RwLock::new(Some(store)),
            state: Mutex::default(),
            released: tokio::sync::OnceCell::new(),
            me: me.clone(),
            owner,
            deferred: AtomicBool::new(false),
            listed: Mutex::default(),
            pending: AtomicBool::new(false),
        })
    }

    /// The identity whose sessions this connection reaches (`None`: the unnamed one's).
    pub(crate) fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The metadata of session `id` if the store has it and it is this connection's
    /// identity's; another identity's session is `None`, exactly as one that does not
    /// exist.
    pub(crate) async fn own_meta(&self, id: &SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let meta = self.store()?.meta(id).await?;
        Ok(meta.filter(|m| m.owner == self.owner))
    }

    /// Whether the store has session `id` under another identity (to be answered as
    /// unknown, before the agent hears of it).
    pub(crate) async fn is_foreign(&self, id: &SessionId) -> Result<bool, StoreError> {
        let meta = self.store()?.meta(id).await?;
        Ok(meta.is_some_and(|m| m.owner != self.owner))
    }

    /// Writes what the session has collected, after any write of it already under way.
    async fn flush(&self, id: &SessionId) {
        let Some(gate) = lock(&self.state).get(id).map(|r| r.writing.clone()) else {
            return;
        };
        let _writing = gate.lock().await;
        let events = lock(&self.state)
            .get_mut(id)
            .filter(|r| r.stored)
            .map(|r| {
                r.listed = false;
                r.turn.take()
            })
            .unwrap_or_default();
        self.write(id, events).await;
    }

    /// [`Durability::Interval`]: a turn that pauses has its collected events written once
    /// the oldest of them is `interval` old, even if no other update comes.
    fn flush_when_due(&self, id: SessionId, interval: Duration) {
        let me = self.me.clone();
        tokio::spawn(async move {
            tokio::time::sleep(interval).await;
            let Some(recorder) = me.upgrade() else {
                return;
            };
            let due = lock(&recorder.state).get(&id).is_some_and(|r| {
                r.stored
                    && r.turn
                        .since
                        .is_some_and(|since| since.elapsed() >= interval)
            });
            if due {
                recorder.flush(&id).await;
            }
        });
    }

    /// Whether each update of a turn is written before it is sent.
    fn writes_each_event(&self) -> bool {
        matches!(
            self.durability,
            Durability::Event | Durability::EventSyncTurn
        )
    }

    /// The store, or an error once the connection has ended and let go of it.
    pub(crate) fn store(&self) -> Result<Arc<dyn SessionStore>, StoreError> {
        self.live_store()
            .ok_or_else(|| StoreError::Other("the connection has ended".into()))
    }

    fn live_store(&self) -> Option<Arc<dyn SessionStore>> {
        self.store.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The connection ended: writes what the running turns collected, then lets go of the
    /// store (later calls fail with an error; calls already running finish first). Called
    /// by whoever sees the end first; the others wait until it is done.
    pub(crate) async fn release(&self) {
        self.released
            .get_or_init(|| async {
                // Each through its gate: after any write of it under way (the write
                // barrier's too), in order.
                let pending: Vec<SessionId> = lock(&self.state)
                    .iter()
                    .filter(|(_, r)| r.stored && !r.turn.events.is_empty())
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in pending {
                    self.flush(&id).await;
                }
                lock(&self.state).clear();
                self.store.write().unwrap_or_else(|p| p.into_inner()).take();
            })
            .await;
    }

    async fn write(&self, id: &SessionId, events: Vec<StoredEvent>) {
        if events.is_empty() {
            return;
        }
        // After the connection let go of the store (a cancelled turn ending late): nothing
        // to write to, and what the turn held was written by `release`.
        let Some(store) = self.live_store() else {
            return;
        };
        if let Err(e) = store.append(id, events).await {
            report("a session's history", id, &e);
        }
    }

    async fn change(&self, id: &SessionId, change: MetaChange) {
        let Some(store) = self.live_store() else {
            return;
        };
        if let Err(e) = store.update_meta(id, change).await {
            report("a metadata change", id, &e);
        }
    }

    /// Records an update the agent sends. `creating` tells whether a `session/new` is
    /// running (asked only for a session the store does not know yet): its updates are kept
    /// until it is created.
    #[cfg(test)]
    pub(crate) async fn update(&self, n: &SessionNotification, creating: impl FnOnce() -> bool) {
        if let Some(work) = self.note(n, creating) {
            self.follow_up(&n.session_id, work).await;
        }
    }

    /// The part of recording an update done at once, under the recorder's lock: the event
    /// is collected (for the write barrier, a write now, or the turn's end). `Some`: there
    /// is more to do before the update is sent ([`Recorder::follow_up`]); most streamed
    /// updates need nothing more, and their sender awaits nothing.
    pub(crate) fn note(
        &self,
        n: &SessionNotification,
        creating: impl FnOnce() -> bool,
    ) -> Option<FollowUp> {
        let id = &n.session_id;
        let deferred = self.deferred.load(Ordering::Relaxed);
        let mut s = lock(&self.state);
        let rec = match s.get_mut(id) {
            Some(rec) => rec,
            None if creating() => s.entry(id.clone()).or_default(),
            None => {
                tracing::debug!(session = %id.0, "update for a session the store does not have; not recorded");
                return None;
            }
        };
        if !rec.stored && rec.turn.events.len() >= EARLY_EVENTS {
            tracing::warn!(session = %id.0, "too many updates before the session exists; not recorded");
            return None;
        }
        // Kept as sent when each update is written (a replay shows it as it streamed).
        rec.turn.push(&n.update, !self.writes_each_event());
        if !rec.stored {
            return None;
        }
        let turn = &mut rec.turn;
        // The first event of a new window arms the window's timer.
        let opens_window = turn.since.is_none();
        let full = turn.events.len() >= FLUSH_EVENTS || turn.bytes >= FLUSH_BYTES;
        let change = meta_change(&n.update);
        if deferred && !full {
            // The write barrier writes it before the transport gets the update.
            if !rec.listed {
                rec.listed = true;
                lock(&self.listed).push(id.clone());
                self.pending.store(true, Ordering::SeqCst);
            }
            return change.map(|change| FollowUp {
                flush: false,
                change: Some(change),
                timer: None,
            });
        }
        let flush = turn.prompts == 0
            || self.writes_each_event()
            || matches!(self.durability, Durability::Interval(d) if turn.due(d))
            || full;
        let timer = match self.durability {
            Durability::Interval(d) if opens_window && !flush => Some(d),
            _ => None,
        };
        (flush || change.is_some() || timer.is_some()).then_some(FollowUp {
            flush,
            change,
            timer,
        })
    }

    /// What [`Recorder::note`] left to do: a write now (which its sender awaits: a full
    /// collection holds the sender back until it is written), the interval's timer, the
    /// metadata change.
    pub(crate) async fn follow_up(&self, id: &SessionId, work: FollowUp) {
        if work.flush {
            self.flush(id).await;
        }
        if let Some(interval) = work.timer {
            self.flush_when_due(id.clone(), interval);
        }
        if let Some(change) = work.change {
            self.change(id, change).await;
        }
    }

    /// A new session: stores it, then writes the updates sent while it was being created.
    pub(crate) async fn created(&self, meta: SessionMeta) -> Result<(), StoreError> {
        let id = meta.session_id.clone();
        let meta = meta.owned_by(self.owner.clone());
        self.store()?.create(meta).await?;
        self.now_stored(&id).await;
        Ok(())
    }

    /// A forked session (`session/fork`): stores it with a copy of the source session's
    /// stored history (the fork starts from it), then writes the updates sent while it was
    /// being created. A source the store does not have gives an empty history; what the
    /// source's running turn has not written yet is not part of the copy.
    #[cfg(feature = "unstable_session_fork")]
    pub(crate) async fn forked(
        &self,
        meta: SessionMeta,
        source: &SessionId,
    ) -> Result<(), StoreError> {
        let id = meta.session_id.clone();
        let meta = meta.owned_by(self.owner.clone());
        let store = self.store()?;
        // Another identity's session is copied no more than one that does not exist.
        let copy = self.own_meta(source).await?.is_some();
        store.create(meta).await?;
        if copy {
            // Page by page, so a long history is copied with bounded memory.
            let mut cursor = crate::store::HistoryCursor::START;
            loop {
                let page = store.history(source, cursor, COPY_PAGE).await?;
                if !page.events.is_empty() {
                    store.append(&id, page.events).await?;
                }
                match page.next {
                    Some(next) => cursor = next,
                    None => break,
                }
            }
        }
        self.now_stored(&id).await;
        Ok(())
    }

    /// The store has the new session: the updates kept while it was being created are
    /// written, and later ones go through as usual.
    async fn now_stored(&self, id: &SessionId) {
        lock(&self.state).entry(id.clone()).or_default().stored = true;
        self.flush(id).await;
    }

    /// A session the store has is open on this connection (loaded or resumed).
    pub(crate) fn attach(&self, id: &SessionId) {
        lock(&self.state).entry(id.clone()).or_default().stored = true;
    }

    /// A prompt is about to start: the store claims the session for this process's turn
    /// ([`SessionStore::begin_turn`]); an error (another process is writing it) refuses
    /// the prompt. A session the store does not have is no error (nothing is recorded).
    pub(crate) async fn claim(&self, id: &SessionId) -> Result<(), StoreError> {
        if !lock(&self.state).get(id).is_some_and(|r| r.stored) {
            return Ok(());
        }
        match self.store()?.begin_turn(id).await {
            Err(StoreError::NotFound(_)) => Ok(()),
            other => other,
        }
    }

    /// A prompt starts: records it and collects the turn's updates from now on.
    pub(crate) fn begin_prompt(&self, id: &SessionId, prompt: Vec<ContentBlock>) {
        let mut s = lock(&self.state);
        if let Some(rec) = s.get_mut(id).filter(|r| r.stored) {
            rec.turn.prompts += 1;
            rec.turn.events.push(StoredEvent::Prompt(prompt));
        }
    }

    /// A prompt ended (with this stop reason; `None` if it failed or was withdrawn):
    /// writes what the turn still holds and its end marker, syncs the store when the
    /// durability asks for it, and touches `updatedAt`.
    pub(crate) async fn end_prompt(
        &self,
        id: &SessionId,
        stop_reason: Option<&acp_types::v1::StopReason>,
    ) {
        {
            let mut s = lock(&self.state);
            let Some(rec) = s.get_mut(id).filter(|r| r.stored) else {
                return;
            };
            rec.turn.prompts = rec.turn.prompts.saturating_sub(1);
            let stop_reason = stop_reason
                .and_then(|r| serde_json::to_value(r).ok())
                .and_then(|v| v.as_str().map(str::to_owned));
            rec.turn
                .events
                .push(StoredEvent::TurnEnd(TurnEnd { stop_reason }));
        }
        self.flush(id).await;
        if self.durability == Durability::EventSyncTurn
            && let Some(store) = self.live_store()
            && let Err(e) = store.sync(id).await
        {
            report("the end of a turn durably", id, &e);
        }
        self.change(id, MetaChange::touch()).await;
    }

    /// Records a metadata change made by a request (`session/set_mode`, ...).
    pub(crate) async fn changed(&self, id: &SessionId, change: MetaChange) {
        if lock(&self.state).get(id).is_some_and(|r| r.stored) {
            self.change(id, change).await;
        }
    }

    /// The session is closed on this connection: writes what is pending and lets go of it.
    pub(crate) async fn detach(&self, id: &SessionId) -> Result<(), StoreError> {
        // Through the session's gate, and let go of only once written: a write barrier that
        // comes meanwhile waits for this write as for any other of the session's.
        let gate = lock(&self.state).get(id).map(|r| r.writing.clone());
        let _writing = match &gate {
            Some(gate) => Some(gate.lock().await),
            None => None,
        };
        let events = lock(&self.state)
            .get_mut(id)
            .filter(|r| r.stored)
            .map(|r| r.turn.take())
            .unwrap_or_default();
        let written = async {
            let store = self.store()?;
            if !events.is_empty() {
                store.append(id, events).await?;
            }
            store.close(id).await
        }
        .await;
        lock(&self.state).remove(id);
        written
    }

    /// The session was deleted: drops what is pending.
    pub(crate) fn forget(&self, id: &SessionId) {
        lock(&self.state).remove(id);
    }
}

/// A new session's metadata from its request and response.
pub(crate) fn new_session_meta(
    id: SessionId,
    cwd: String,
    additional_directories: Vec<String>,
    response: &acp_types::v1::NewSessionResponse,
) -> SessionMeta {
    created_meta(
        id,
        cwd,
        additional_directories,
        &response.modes,
        &response.config_options,
    )
}

/// A forked session's metadata from its request and response (its own directories; modes
/// and options as the agent answered them).
#[cfg(feature = "unstable_session_fork")]
pub(crate) fn forked_session_meta(
    request: &acp_types::v1::ForkSessionRequest,
    response: &acp_types::v1::ForkSessionResponse,
) -> SessionMeta {
    created_meta(
        response.session_id.clone(),
        request.cwd.clone(),
        request.additional_directories.clone(),
        &response.modes,
        &response.config_options,
    )
}

fn created_meta(
    id: SessionId,
    cwd: String,
    additional_directories: Vec<String>,
    modes: &Option<acp_types::v1::SessionModeState>,
    config_options: &Option<Vec<acp_types::v1::SessionConfigOption>>,
) -> SessionMeta {
    let mut meta = SessionMeta::new(id, cwd);
    // This connection ends every turn it records with a marker.
    meta.turn_markers = true;
    meta.additional_directories = additional_directories;
    meta.modes.clone_from(modes);
    meta.config_options.clone_from(config_options);
    meta.updated_at = now_rfc3339();
    meta
}

#[cfg(test)]
mod tests;
