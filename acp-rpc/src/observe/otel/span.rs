//! An engine span from its start to its end (feature `otel`): a request sent or received,
//! or a notification handled outside any turn ([`EngineSpan`]), and where an incoming
//! notification is handled ([`NotificationScope`]). A span's running state is its
//! [`Active`] (`active.rs`); a request that opens a turn holds its [`TurnGuard`]
//! (`turns.rs`); the ended span becomes a [`SpanRecord`] for the recorder.

use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceState};

use super::active::{Active, Entered, enter, intern, new_span_id, new_trace_id};
use super::record::{Outcome, SpanRecord};
use super::turns::{ConnectionTrace, TurnGuard};
use crate::error::Error;
use crate::message::RequestId;

/// An engine span from its start to its end: a request (sent or received) or a
/// notification received outside any turn. Dropped unfinished (a request whose task was
/// dropped), it is still recorded, without an outcome.
pub(crate) struct EngineSpan {
    trace: Arc<ConnectionTrace>,
    pub(crate) active: Arc<Active>,
    record: Option<Box<SpanRecord>>,
    /// The turn it opened, closed when it ends.
    pub(crate) turn: Option<TurnGuard>,
}

impl EngineSpan {
    /// Starts a span named `name`, the child of `parent` (or the root of a new trace).
    pub(crate) fn start(
        trace: &Arc<ConnectionTrace>,
        name: &'static str,
        kind: SpanKind,
        parent: Option<&SpanContext>,
        method: &str,
        id: Option<RequestId>,
    ) -> EngineSpan {
        let (trace_id, flags, state, parent_id, parent_remote) = match parent {
            Some(p) => (
                p.trace_id(),
                p.trace_flags(),
                p.trace_state().clone(),
                p.span_id(),
                p.is_remote(),
            ),
            None => (
                new_trace_id(),
                TraceFlags::SAMPLED,
                TraceState::default(),
                SpanId::INVALID,
                false,
            ),
        };
        let context = SpanContext::new(trace_id, new_span_id(), flags, false, state);
        let active = Active::new(context.clone());
        let start = SystemTime::now();
        let record = Box::new(SpanRecord {
            name,
            kind,
            context,
            parent: parent_id,
            parent_remote,
            start,
            end: start,
            method: intern(method),
            id,
            session: None,
            roles: None,
            outcome: None,
            events: Vec::new(),
            notifications: 0,
        });
        EngineSpan {
            trace: trace.clone(),
            active,
            record: Some(record),
            turn: None,
        }
    }

    /// Records the request's session.
    pub(crate) fn set_session(&mut self, session: &str) {
        if let Some(record) = &mut self.record {
            record.session = Some(session.into());
        }
    }

    /// Ends the span with the request's outcome.
    pub(crate) fn finish<T>(mut self, result: &Result<T, Error>) {
        let outcome = match result {
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Error {
                code: e.code.0,
                failure: crate::observe::flow::is_failure(e).then(|| e.message.clone()),
            },
        };
        self.end(Some(outcome));
    }

    fn end(&mut self, outcome: Option<Outcome>) {
        let Some(mut record) = self.record.take() else {
            return;
        };
        self.turn = None;
        record.end = SystemTime::now();
        if record.id.is_some() {
            record.roles = self.trace.roles();
        }
        record.outcome = outcome;
        (record.events, record.notifications) = self.active.take_events();
        if record.context.is_sampled()
            && let Some(recorder) = self.trace.recorder()
        {
            recorder.push(*record);
        }
    }
}

impl Drop for EngineSpan {
    fn drop(&mut self) {
        self.end(None);
    }
}

/// Where an incoming notification is handled, OpenTelemetry-wise.
#[derive(Default)]
pub(crate) enum NotificationScope {
    /// Nothing recorded (no recorder).
    #[default]
    None,
    /// In its session's open turn: the turn's span is current while it is handled.
    Turn(Arc<Active>),
    /// Outside any turn: a span of its own, ended when it is handled.
    Own(EngineSpan),
}

impl NotificationScope {
    /// Makes the span current (until the returned guard drops).
    pub(crate) fn enter(&self) -> Option<Entered<'_>> {
        match self {
            NotificationScope::None => None,
            NotificationScope::Turn(active) => Some(enter(active)),
            NotificationScope::Own(span) => Some(enter(&span.active)),
        }
    }

    /// The notification is handled: its own span ends.
    pub(crate) fn finish(&mut self) {
        if let NotificationScope::Own(span) = std::mem::take(self) {
            drop(span);
        }
    }
}
