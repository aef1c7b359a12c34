//! A turn's events as the recorder collects them before they are written: condensed
//! ([`Durability::Turn`](crate::store::Durability::Turn), `Interval`) or each as it was
//! sent (`Event`, written at the next transport flush).

use std::collections::HashMap;

use acp_types::v1::{ContentBlock, ContentChunk, SessionUpdate, ToolCallId};

use crate::store::StoredEvent;

/// The events of one session not yet written.
#[derive(Default)]
pub(super) struct Turn {
    pub(super) events: Vec<StoredEvent>,
    /// Tool call id -> its event's place in `events`.
    pub(super) tools: HashMap<ToolCallId, usize>,
    /// Prompts running for the session.
    pub(super) prompts: usize,
    /// About how many bytes `events` hold (text counted, other updates a flat guess).
    pub(super) bytes: usize,
    /// When the oldest event not yet written was collected (for
    /// [`Durability::Interval`](crate::store::Durability::Interval)).
    pub(super) since: Option<std::time::Instant>,
}

impl Turn {
    pub(super) fn take(&mut self) -> Vec<StoredEvent> {
        self.tools.clear();
        self.bytes = 0;
        self.since = None;
        std::mem::take(&mut self.events)
    }

    /// Whether the oldest unwritten event is `interval` old.
    pub(super) fn due(&mut self, interval: std::time::Duration) -> bool {
        match self.since {
            Some(since) => since.elapsed() >= interval,
            None => {
                self.since = Some(std::time::Instant::now());
                interval.is_zero()
            }
        }
    }

    /// Adds an update; with `condense`, folded into the events already collected where it
    /// can be (without, each update stays an event of its own, as it was sent).
    pub(super) fn push(&mut self, update: &SessionUpdate, condense: bool) {
        use SessionUpdate as U;
        self.bytes += match update {
            U::AgentMessageChunk(c) | U::AgentThoughtChunk(c) | U::UserMessageChunk(c) => {
                match &c.content {
                    ContentBlock::Text(t) => t.text.len(),
                    _ => 256,
                }
            }
            _ => 256,
        };
        if !condense {
            self.events.push(StoredEvent::Update(update.clone()));
            return;
        }
        match update {
            U::AgentMessageChunk(c) | U::AgentThoughtChunk(c) | U::UserMessageChunk(c) => {
                if let Some(StoredEvent::Update(last)) = self.events.last_mut()
                    && let Some(prev) = same_kind_chunk(last, update)
                    && append_text(prev, c)
                {
                    return;
                }
            }
            U::ToolCall(call) => {
                if let Some(&at) = self.tools.get(&call.tool_call_id) {
                    self.events[at] = StoredEvent::Update(update.clone());
                    return;
                }
                self.tools
                    .insert(call.tool_call_id.clone(), self.events.len());
            }
            U::ToolCallUpdate(change) => {
                if let Some(&at) = self.tools.get(&change.tool_call_id)
                    && let StoredEvent::Update(U::ToolCall(call)) = &mut self.events[at]
                {
                    call.apply_update(change);
                    return;
                }
            }
            U::Plan(_) => {
                if let Some(StoredEvent::Update(last @ U::Plan(_))) = self.events.last_mut() {
                    *last = update.clone();
                    return;
                }
            }
            _ => {}
        }
        self.events.push(StoredEvent::Update(update.clone()));
    }
}

/// The chunk of `last` if it is the same kind of chunk as `next`.
fn same_kind_chunk<'a>(
    last: &'a mut SessionUpdate,
    next: &SessionUpdate,
) -> Option<&'a mut ContentChunk> {
    use SessionUpdate as U;
    match (last, next) {
        (U::AgentMessageChunk(a), U::AgentMessageChunk(_))
        | (U::AgentThoughtChunk(a), U::AgentThoughtChunk(_))
        | (U::UserMessageChunk(a), U::UserMessageChunk(_)) => Some(a),
        _ => None,
    }
}

/// Appends the text of `next` to `prev` when both are plain text of the same message.
fn append_text(prev: &mut ContentChunk, next: &ContentChunk) -> bool {
    if prev.message_id != next.message_id || prev.meta != next.meta {
        return false;
    }
    match (&mut prev.content, &next.content) {
        (ContentBlock::Text(a), ContentBlock::Text(b))
            if a.annotations == b.annotations && a.meta == b.meta =>
        {
            a.text.push_str(&b.text);
            true
        }
        _ => false,
    }
}
