//! Follow-up prompts: lines typed while a turn runs ([`Followups`]).
//!
//! Where the agent advertises steering (`_meta.steering`, see [`acp_client::steering`]) a
//! line goes into the running turn at once. Otherwise it is queued, shown as queued, and
//! sent as the next prompt when the turn ends normally. A turn that is cancelled (Ctrl-C)
//! or fails sends nothing on its own: its queued lines are held, and each is offered on the
//! prompt line in turn, where Enter sends it (edited or not) and Ctrl-C drops it. So a line
//! survives a cancel only if the user keeps it.

use std::collections::VecDeque;

/// Where a line typed during a turn goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// Into the running turn (`_session/steering`).
    Steer,
    /// To the queue, sent when the turn ends.
    Queue,
}

/// The lines typed during turns, not sent yet.
#[derive(Debug, Default)]
pub(super) struct Followups {
    /// The agent takes steering.
    steering: bool,
    /// Sent, in order, as the next prompts once the turn ends normally.
    queue: VecDeque<String>,
    /// Of a turn that did not end normally: each offered on the prompt line.
    held: VecDeque<String>,
}

impl Followups {
    /// Follow-ups for an agent that does (or does not) take steering.
    pub(super) fn new(steering: bool) -> Followups {
        Followups {
            steering,
            ..Followups::default()
        }
    }

    /// Where a line typed now goes.
    pub(super) fn route(&self) -> Route {
        if self.steering {
            Route::Steer
        } else {
            Route::Queue
        }
    }

    /// Queues a line (one not steered, or one the agent did not take as steering).
    pub(super) fn queue(&mut self, line: String) {
        self.queue.push_back(line);
    }

    /// How many lines are queued.
    pub(super) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The turn ended: normally, the queue goes on; otherwise its lines are held. Returns
    /// how many were held now.
    pub(super) fn turn_ended(&mut self, normally: bool) -> usize {
        if normally {
            return 0;
        }
        let count = self.queue.len();
        self.held.extend(self.queue.drain(..));
        count
    }

    /// The next line to send as a prompt (the queue's first).
    pub(super) fn next_to_send(&mut self) -> Option<String> {
        self.queue.pop_front()
    }

    /// The next held line to offer on the prompt line.
    pub(super) fn next_to_offer(&mut self) -> Option<String> {
        self.held.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_steered_only_where_the_agent_takes_steering() {
        assert_eq!(Followups::new(true).route(), Route::Steer);
        assert_eq!(Followups::new(false).route(), Route::Queue);
    }

    #[test]
    fn the_queue_goes_on_after_a_normal_end_in_order() {
        let mut f = Followups::new(false);
        f.queue("one".into());
        f.queue("two".into());
        assert_eq!(f.turn_ended(true), 0);
        assert_eq!(f.next_to_send().as_deref(), Some("one"));
        assert_eq!(f.next_to_send().as_deref(), Some("two"));
        assert_eq!(f.next_to_send(), None);
        assert_eq!(f.next_to_offer(), None);
    }

    #[test]
    fn a_cancelled_turn_holds_the_queue_to_be_offered_not_sent() {
        let mut f = Followups::new(false);
        f.queue("one".into());
        f.queue("two".into());
        assert_eq!(f.queued(), 2);
        assert_eq!(f.turn_ended(false), 2);
        assert_eq!(f.queued(), 0);
        assert_eq!(f.next_to_send(), None);
        assert_eq!(f.next_to_offer().as_deref(), Some("one"));
        assert_eq!(f.next_to_offer().as_deref(), Some("two"));
        assert_eq!(f.next_to_offer(), None);
    }
}
