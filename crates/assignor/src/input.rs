//! What the leader hands an assignor for one round.

use std::time::Duration;

use crate::{CooperativeState, MemberId, MemberInput, PreviousAssignment, TaskSet};

/// Everything an assignor needs for one round. Borrowed, so building it costs nothing.
///
/// `now` is a plain value (any fixed epoch, e.g. Unix time) that deadlines in
/// [`CooperativeState`] are measured against; assignors never read a clock.
#[derive(Clone, Copy, Debug)]
pub struct AssignmentInput<'a> {
    /// Every task of the group.
    pub tasks: &'a TaskSet,
    /// The members of the new generation, sorted by [`MemberId`], without duplicates.
    pub members: &'a [MemberInput],
    /// The previous assignment as the leader knows it (`None` for a new leader).
    pub previous: Option<&'a PreviousAssignment>,
    /// Previous owners known to have left gracefully: their tasks are not lost and move now.
    pub left_gracefully: &'a [MemberId],
    /// The current time, on the same epoch as the deadlines in `state`.
    pub now: Duration,
    /// The cooperative assignor's state from the previous round (see [`crate::Plan::state`]).
    pub state: CooperativeState,
}

impl<'a> AssignmentInput<'a> {
    /// An input with no previous assignment, no graceful leavers, `now` = 0 and a fresh state.
    pub fn new(tasks: &'a TaskSet, members: &'a [MemberInput]) -> Self {
        Self {
            tasks,
            members,
            previous: None,
            left_gracefully: &[],
            now: Duration::ZERO,
            state: CooperativeState::default(),
        }
    }

    /// Sets the previous assignment.
    pub fn with_previous(mut self, previous: &'a PreviousAssignment) -> Self {
        self.previous = Some(previous);
        self
    }

    /// Sets the previous owners that left gracefully.
    pub fn with_left_gracefully(mut self, left: &'a [MemberId]) -> Self {
        self.left_gracefully = left;
        self
    }

    /// Sets the current time.
    pub fn at(mut self, now: Duration) -> Self {
        self.now = now;
        self
    }

    /// Sets the cooperative state carried over from the previous round.
    pub fn with_state(mut self, state: CooperativeState) -> Self {
        self.state = state;
        self
    }
}
