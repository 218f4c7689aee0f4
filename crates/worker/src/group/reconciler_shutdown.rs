//! A graceful shutdown's decisions, sans-IO. The loop stops every task first (the runtime's
//! shutdown, within the stop bound), then asks here what follows, and carries it out:
//!
//! - [`leaves_note`]: a static worker whose tasks all stopped leaves a note for the next
//!   process with its `group.instance.id`, which may then start them at once instead of
//!   waiting out this process's lease (`takeover.rs`);
//! - [`HandOver::after_stops`]: a dynamic worker rejoins once saying it is leaving, so that the
//!   leader gives its tasks to others at once as tasks nobody runs, rather than as the tasks
//!   of a member Kafka removed (which the next owners would hold back in case it still ran
//!   them);
//! - [`HandOver::on_event`]: what each member event means while that rebalance runs.
//!
//! Then the loop sends LeaveGroup, whatever happened.

/// Whether a static worker leaves a note for its successor: only if every task stopped (an
/// unresponsive one may still act until its lease ends) and it held a generation.
pub(crate) fn leaves_note(static_member: bool, unresponsive: usize, in_generation: bool) -> bool {
    static_member && unresponsive == 0 && in_generation
}

/// A graceful shutdown's last rebalance, from the generation this worker was stable in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HandOver {
    from: i32,
}

/// A member event, as the hand-over reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The rebalance revoked `generation`.
    Revoked(i32),
    /// `generation` was assigned.
    Assigned(i32),
    /// The membership ended or was lost (lost, fenced, fatal, left), or the stream ended.
    Ended,
    /// Anything else (joined, a new coordinator, a failed assignment).
    Other,
}

/// What to do about one member event during a hand-over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Acknowledge the revocation of this generation: every task stopped already, so the
    /// join gate may open at once.
    Acknowledge(i32),
    /// Acknowledge the revocation the join gate holds, if it holds one (the gate may hold a
    /// JoinGroup without the revocation reaching this stream first).
    AcknowledgeHeld,
    /// A newer generation is assigned: the tasks went to others. Leave.
    Done(i32),
    /// The membership ended: leave (the tasks go to others after the session).
    Abort,
}

impl HandOver {
    /// Once every task of a graceful shutdown stopped: hand the tasks over in one more
    /// rebalance, or not. Only a dynamic worker (a static one's successor takes its tasks
    /// over by its instance id), only if every task stopped (an unresponsive one may still
    /// act: its tasks must wait for this worker's session), only if it stopped some (with
    /// none there is nothing to hand over), and only from a stable generation (a rebalance
    /// in progress hands the tasks out anyway).
    pub(crate) fn after_stops(
        static_member: bool,
        stopped: usize,
        unresponsive: usize,
        stable_in: Option<i32>,
    ) -> Option<HandOver> {
        if static_member || unresponsive > 0 || stopped == 0 {
            return None;
        }
        stable_in.map(|from| HandOver { from })
    }

    /// The generation the hand-over starts from.
    pub(crate) fn from(&self) -> i32 {
        self.from
    }

    /// What `seen` means for the hand-over.
    pub(crate) fn on_event(&self, seen: Seen) -> Step {
        match seen {
            Seen::Revoked(generation) => Step::Acknowledge(generation),
            Seen::Assigned(generation) if generation > self.from => Step::Done(generation),
            Seen::Ended => Step::Abort,
            Seen::Assigned(_) | Seen::Other => Step::AcknowledgeHeld,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_dynamic_worker_whose_tasks_all_stopped_hands_them_over_from_a_stable_generation() {
        assert_eq!(
            HandOver::after_stops(false, 3, 0, Some(7)),
            Some(HandOver { from: 7 })
        );
        assert_eq!(HandOver::after_stops(true, 3, 0, Some(7)), None, "static");
        assert_eq!(
            HandOver::after_stops(false, 3, 1, Some(7)),
            None,
            "a task did not stop: it may still act"
        );
        assert_eq!(
            HandOver::after_stops(false, 0, 0, Some(7)),
            None,
            "nothing to hand over"
        );
        assert_eq!(
            HandOver::after_stops(false, 3, 0, None),
            None,
            "not stable in a generation"
        );
    }

    #[test]
    fn only_a_static_worker_whose_tasks_all_stopped_leaves_a_note() {
        assert!(leaves_note(true, 0, true));
        assert!(!leaves_note(false, 0, true), "dynamic");
        assert!(!leaves_note(true, 1, true), "a task did not stop");
        assert!(!leaves_note(true, 0, false), "no generation");
    }

    #[test]
    fn a_hand_over_ends_with_a_newer_generation_or_the_membership() {
        let hand_over = HandOver { from: 7 };
        assert_eq!(hand_over.from(), 7);
        assert_eq!(hand_over.on_event(Seen::Revoked(7)), Step::Acknowledge(7));
        assert_eq!(hand_over.on_event(Seen::Assigned(8)), Step::Done(8));
        assert_eq!(
            hand_over.on_event(Seen::Assigned(7)),
            Step::AcknowledgeHeld,
            "the generation it leaves is not the hand-over's end"
        );
        assert_eq!(hand_over.on_event(Seen::Other), Step::AcknowledgeHeld);
        assert_eq!(hand_over.on_event(Seen::Ended), Step::Abort);
    }
}
