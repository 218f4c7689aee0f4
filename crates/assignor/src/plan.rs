//! What an assignor returns: each member's full target set, what it must revoke, and what waits.

use std::time::Duration;

use crate::{CooperativeState, MemberId, PreviousAssignment, PreviousOwner, TaskIndex};

/// One member's part of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberPlan {
    /// The member.
    pub member_id: MemberId,
    /// Its full target set, in index order: every task it should run after this round.
    pub assigned: Vec<TaskIndex>,
    /// The tasks it claimed but must stop, in index order.
    pub revoked: Vec<TaskIndex>,
}

/// Why a task is in no member's target set this round although some member could run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldReason {
    /// Being revoked from its current owner; it gets its new owner in the follow-up round.
    Revoking,
    /// Claimed by two members in the same generation: both revoke it; it is placed next round.
    DoubleClaim,
    /// Its owner was lost: it waits until the lost-task delay runs out (or the owner returns).
    LostDelay,
}

/// A task held back this round (cooperative only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldBack {
    /// The task.
    pub task: TaskIndex,
    /// Why it waits.
    pub reason: HoldReason,
}

/// Why a task could not be placed at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnplacedReason {
    /// No member can run its kind: start a worker that registers this kind.
    NoEligibleMember,
    /// Every member that can run its kind is too full for its weight: add capacity or workers.
    NoCapacity,
}

/// A task no member got, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unplaced {
    /// The task.
    pub task: TaskIndex,
    /// Why.
    pub reason: UnplacedReason,
}

/// The outcome of one round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// One entry per input member, in input order.
    pub assignments: Vec<MemberPlan>,
    /// Tasks held back this round (cooperative), in index order.
    pub held_back: Vec<HeldBack>,
    /// Tasks that could not be placed, in index order.
    pub unplaced: Vec<Unplaced>,
    /// Lost tasks still waiting, under the departed owner they belong to (cooperative).
    pub lost: Vec<PreviousOwner>,
    /// Ask the group to rebalance again after this delay (`ZERO`: as soon as the revocations
    /// are done). `None`: no follow-up round is needed.
    pub rebalance_delay: Option<Duration>,
    /// State to pass back in the next round's [`crate::AssignmentInput::state`].
    pub state: CooperativeState,
}

impl Plan {
    /// The previous assignment for the next round: every member's target set, plus the lost
    /// tasks still waiting under their departed owners.
    pub fn to_previous(&self) -> PreviousAssignment {
        let mut owners: Vec<PreviousOwner> = self
            .assignments
            .iter()
            .map(|a| PreviousOwner {
                member_id: a.member_id.clone(),
                tasks: a.assigned.clone(),
            })
            .collect();
        owners.extend(self.lost.iter().cloned());
        PreviousAssignment { owners }
    }

    /// The number of tasks that members must revoke.
    pub fn revoked_count(&self) -> usize {
        self.assignments.iter().map(|a| a.revoked.len()).sum()
    }

    unstable_pub! {
    /// The number of tasks in some member's target set.
    pub fn assigned_count(&self) -> usize {
        self.assignments.iter().map(|a| a.assigned.len()).sum()
    }
    }
}
