//! A broken invariant of a plan: what the checkers (`check`, feature `testing`) report, and what
//! an assignor's plan validation (`CooperativeConfig::validate_plans`) returns inside an
//! `AssignorError`. A leaf, so that the error and the checkers do not import each other.

use crate::{MemberId, UnplacedReason};

/// A broken invariant: what is wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub enum Violation {
    /// The plan's members are not the input's, in the same order.
    #[error("plan entry {index} does not match input member {index}")]
    MemberMismatch {
        /// Position in the input.
        index: usize,
    },
    /// The input itself is invalid (see the assignor's error).
    #[error("the input is invalid: {0}")]
    InvalidInput(String),
    /// A task index in the plan is out of range.
    #[error("task index {task} in the plan is out of range")]
    TaskOutOfRange {
        /// The index.
        task: u32,
    },
    /// A task is nowhere in the plan.
    #[error("task {task} is neither assigned, held back nor unplaced")]
    Missing {
        /// The task.
        task: u32,
    },
    /// A task appears more than once.
    #[error("task {task} appears more than once in the plan")]
    Duplicated {
        /// The task.
        task: u32,
    },
    /// A task went to a member that cannot run its kind.
    #[error("task {task} is assigned to {member}, which cannot run its kind")]
    Ineligible {
        /// The task.
        task: u32,
        /// The member.
        member: MemberId,
    },
    /// A member got more weight than its capacity.
    #[error("{member} is assigned weight {load}, above its capacity {capacity}")]
    OverCapacity {
        /// The member.
        member: MemberId,
        /// Its assigned weight.
        load: u64,
        /// Its capacity.
        capacity: u64,
    },
    /// A task was reported unplaced although a member could take it.
    #[error("task {task} is reported unplaced ({reason:?}) but a member could take it")]
    WronglyUnplaced {
        /// The task.
        task: u32,
        /// The reason given.
        reason: UnplacedReason,
    },
    /// A member claims a task it is not assigned, and the plan does not revoke it.
    #[error("{member} claims task {task}, which is not in its target set nor revoked")]
    NotRevoked {
        /// The member.
        member: MemberId,
        /// The task.
        task: u32,
    },
    /// A kind is unbalanced.
    #[error("kind {kind} is unbalanced: max {max} − min {min} > {bound}")]
    Unbalanced {
        /// The kind.
        kind: u16,
        /// The largest load.
        max: u64,
        /// The smallest load among members with room.
        min: u64,
        /// The allowed difference.
        bound: u64,
    },
    /// The cooperative rule: a task given to a new owner while another member claims it.
    #[error("task {task} is given to {to} while {claimed_by} still claims it")]
    GivenWhileClaimed {
        /// The task.
        task: u32,
        /// Its new owner.
        to: MemberId,
        /// A member that still claims it.
        claimed_by: MemberId,
    },
    /// More moves than the lower bound.
    #[error("{moves} tasks moved, but {lower_bound} would do")]
    TooManyMoves {
        /// Moves made.
        moves: usize,
        /// The lower bound.
        lower_bound: usize,
    },
    /// Tasks moved although nothing needed to.
    #[error("{moves} tasks moved although the group was already balanced")]
    MovedWhenStable {
        /// Moves made.
        moves: usize,
    },
}
