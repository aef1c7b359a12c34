//! `session/prompt`'s `idempotencyKey` on the agent side: a retry is answered, not run again.
//!
//! The v2 specification (agent-client-protocol-schema 1.20.0, "Retrying a prompt"): a client
//! sends the same key on every attempt of one submission; an agent that advertises
//! `capabilities.session` answers a retry of a recorded insertion with the original
//! `messageId` and inserts nothing. [`PromptKeys`] wraps the generated v2 agent dispatch and
//! does that for every v2 agent served by `serve`/`serve_with`, before the application's
//! `Agent::session_prompt` runs:
//!
//! - a `session/prompt` with a key already answered for that `sessionId` gets the original
//!   answer (the same bytes: `messageId`, `_meta`), and the handler is not called again;
//! - a retry that arrives while the first attempt's handler is still running waits for it
//!   and gets its answer; if that attempt fails (an error answer inserts nothing) or is
//!   cancelled, the key is free again and one waiting retry runs the handler as a new
//!   attempt;
//! - keys are per session (the same key in two sessions is two submissions) and case
//!   sensitive; a prompt without a key is handed on untouched;
//! - a malformed key (not a string of 1 to 255 characters) is never treated as absent: the
//!   request is handed on and its parse answers `-32602` naming the field.
//!
//! Memory is bounded: at most [`MAX_KEYS_PER_SESSION`] answered keys are remembered per
//! session, the oldest forgotten first (a retry with a forgotten key is a new submission, as
//! the specification allows), and a session's keys are forgotten when `session/close` or
//! `session/delete` succeeds for it. Keys live with the connection: they are not shared
//! with other connections and do not survive a restart. An agent that keeps messages across
//! connections or restarts must record `PromptRequest::idempotency_key` with the message
//! itself and answer a retry from there (the specification asks it to recognize the key as
//! long as it keeps the message).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use acp_rpc::{
    Arrival, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    StartedNotification, async_trait,
};
use acp_types::v2::IdempotencyKey;
use serde::Deserialize;
use tokio::sync::watch;

/// How many answered keys a session remembers; the oldest is forgotten first.
pub const MAX_KEYS_PER_SESSION: usize = 1024;

/// The generated v2 agent dispatch `H`, answering keyed prompt retries itself (module docs).
pub struct PromptKeys<H> {
    inner: Arc<H>,
    sessions: Mutex<HashMap<String, SessionKeys>>,
    cap: usize,
}

/// The keys of one session.
#[derive(Default)]
struct SessionKeys {
    slots: HashMap<IdempotencyKey, Slot>,
    /// Answered keys, oldest first (for the cap).
    answered: VecDeque<IdempotencyKey>,
}

enum Slot {
    /// The first attempt's handler runs; retries subscribe and wake when the sender drops.
    Running(watch::Sender<()>),
    /// The first attempt's answer.
    Answered(Box<RawValue>),
}

/// What a keyed `session/prompt` is told apart by.
#[derive(Deserialize)]
struct Keyed {
    #[serde(rename = "sessionId")]
    session_id: String,
    #[serde(rename = "idempotencyKey", default)]
    idempotency_key: Option<IdempotencyKey>,
}

#[derive(Deserialize)]
struct SessionOnly {
    #[serde(rename = "sessionId")]
    session_id: String,
}

impl<H> PromptKeys<H> {
    /// Wraps `inner`, remembering [`MAX_KEYS_PER_SESSION`] keys per session.
    pub fn new(inner: H) -> Self {
        Self::with_cap(inner, MAX_KEYS_PER_SESSION)
    }

    /// Wraps `inner`, remembering `cap` (at least 1) answered keys per session.
    pub fn with_cap(inner: H, cap: usize) -> Self {
        PromptKeys {
            inner: Arc::new(inner),
            sessions: Mutex::new(HashMap::new()),
            cap: cap.max(1),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, SessionKeys>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many answered keys `session` remembers (for tests and diagnostics).
    pub fn remembered(&self, session: &str) -> usize {
        self.sessions().get(session).map_or(0, |s| s.answered.len())
    }
}

/// The session and key of a `session/prompt` that carries a well-formed key. The text is
/// searched first, so a prompt without a key is not parsed twice.
fn keyed(params: &Params) -> Option<(String, IdempotencyKey)> {
    let raw = params.raw()?.get();
    if !raw.contains("idempotencyKey") {
        return None;
    }
    let keyed: Keyed = serde_json::from_str(raw).ok()?;
    Some((keyed.session_id, keyed.idempotency_key?))
}

/// The running first attempt of a key: frees the key unless [`Owner::answered`] recorded
/// its answer (an error, a cancellation or a panic leave nothing inserted).
struct Owner<'a, H> {
    keys: &'a PromptKeys<H>,
    session: String,
    key: IdempotencyKey,
    done: bool,
}

impl<H> Owner<'_, H> {
    fn answered(mut self, raw: &RawValue) {
        self.done = true;
        let cap = self.keys.cap;
        let mut sessions = self.keys.sessions();
        let Some(session) = sessions.get_mut(&self.session) else {
            return; // closed meanwhile: nothing to remember it for
        };
        // Replacing the slot drops the sender: waiting retries wake and find the answer.
        session
            .slots
            .insert(self.key.clone(), Slot::Answered(raw.to_owned()));
        session.answered.push_back(self.key.clone());
        while session.answered.len() > cap {
            if let Some(old) = session.answered.pop_front() {
                session.slots.remove(&old);
            }
        }
    }
}

impl<H> Drop for Owner<'_, H> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut sessions = self.keys.sessions();
        if let Some(session) = sessions.get_mut(&self.session) {
            session.slots.remove(&self.key);
            if session.slots.is_empty() {
                sessions.remove(&self.session);
            }
        }
    }
}

impl<H: Handler> PromptKeys<H> {
    async fn prompt_once(
        &self,
        cx: RequestContext,
        params: Params,
        session: String,
        key: IdempotencyKey,
    ) -> Result<Box<RawValue>, Error> {
        loop {
            let mut wait = {
                let mut sessions = self.sessions();
                let keys = sessions.entry(session.clone()).or_default();
                match keys.slots.get(&key) {
                    Some(Slot::Answered(raw)) => return Ok(raw.clone()),
                    Some(Slot::Running(tx)) => tx.subscribe(),
                    None => {
                        let (tx, _) = watch::channel(());
                        keys.slots.insert(key.clone(), Slot::Running(tx));
                        break;
                    }
                }
            };
            // Ends when the first attempt's slot is replaced or removed (its sender drops).
            while wait.changed().await.is_ok() {}
        }
        let owner = Owner {
            keys: self,
            session,
            key,
            done: false,
        };
        let answer = self
            .inner
            .handle_request(cx, "session/prompt", params)
            .await;
        if let Ok(raw) = &answer {
            owner.answered(raw);
        }
        answer
    }
}

#[async_trait]
impl<H: Handler> Handler for PromptKeys<H> {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            "session/prompt" => match keyed(&params) {
                Some((session, key)) => self.prompt_once(cx, params, session, key).await,
                None => self.inner.handle_request(cx, method, params).await,
            },
            "session/close" | "session/delete" => {
                let session = params.parse::<SessionOnly>().ok();
                let answer = self.inner.handle_request(cx, method, params).await;
                if let (Ok(_), Some(s)) = (&answer, session) {
                    self.sessions().remove(&s.session_id);
                }
                answer
            }
            _ => self.inner.handle_request(cx, method, params).await,
        }
    }

    async fn handle_notification(
        &self,
        cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.inner.handle_notification(cx, method, params).await
    }

    fn waits_for_earlier_notifications(&self, method: &str) -> bool {
        self.inner.waits_for_earlier_notifications(method)
    }

    fn arrived(&self, arrival: Arrival<'_>) {
        self.inner.arrived(arrival)
    }

    fn start_notification(
        self: Arc<Self>,
        cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        self.inner.clone().start_notification(cx, method, params)
    }
}
