//! Errors: bad input to an assignor, or a plan that breaks a rule.

use std::sync::Arc;

use crate::MemberId;
use crate::violation::Violation;

/// Why an assignor (or the task set) refused its input. Each message says what to fix;
/// [`kind`](Self::kind) tells the cases apart.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct AssignorError(pub(crate) Repr);

impl AssignorError {
    /// Which rule the input broke.
    pub fn kind(&self) -> AssignorErrorKind {
        match &self.0 {
            Repr::MembersNotSorted { .. } => AssignorErrorKind::MembersNotSorted,
            Repr::TaskOutOfRange { .. } => AssignorErrorKind::TaskOutOfRange,
            Repr::KindOutOfRange { .. } => AssignorErrorKind::KindOutOfRange,
            Repr::DuplicateTask { .. } => AssignorErrorKind::DuplicateTask,
            Repr::ZeroWeight { .. } => AssignorErrorKind::ZeroWeight,
            Repr::TooManyTasks => AssignorErrorKind::TooManyTasks,
            Repr::TooManyKinds => AssignorErrorKind::TooManyKinds,
            Repr::TooManyMembers => AssignorErrorKind::TooManyMembers,
            Repr::UnknownAssignor { .. } => AssignorErrorKind::UnknownAssignor,
            Repr::InvalidConfig(_) => AssignorErrorKind::InvalidConfig,
            Repr::InvalidPlan(_) => AssignorErrorKind::InvalidPlan,
        }
    }

    /// A configuration value out of range, for an assignor of your own to refuse its config
    /// with: `reason` names the value and the range.
    pub fn invalid_config(reason: &'static str) -> Self {
        AssignorError(Repr::InvalidConfig(reason))
    }
}

impl From<Repr> for AssignorError {
    fn from(repr: Repr) -> Self {
        AssignorError(repr)
    }
}

/// What an [`AssignorError`] is about: the rule the input broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AssignorErrorKind {
    /// Members must be sorted by member id, without duplicates.
    MembersNotSorted,
    /// A member claims a task index the task set does not have.
    TaskOutOfRange,
    /// A member names a kind index the task set does not have.
    KindOutOfRange,
    /// Two tasks have the same id.
    DuplicateTask,
    /// A task has weight 0.
    ZeroWeight,
    /// More than about 4 billion tasks.
    TooManyTasks,
    /// More than 65536 kinds.
    TooManyKinds,
    /// More than about 4 billion members.
    TooManyMembers,
    /// No assignor has this name.
    UnknownAssignor,
    /// A configuration value is out of range.
    InvalidConfig,
    /// The plan broke a rule the assignor checks before returning it (a bug: report it).
    InvalidPlan,
}

/// The cases of [`AssignorError`], with what their messages name.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    /// Members must be sorted by member id, without duplicates.
    #[error(
        "members are not sorted by member id ({previous} comes before {next}): sort them and remove duplicates before assigning"
    )]
    MembersNotSorted {
        /// The earlier member in input order.
        previous: MemberId,
        /// The later member, which sorts before (or equals) `previous`.
        next: MemberId,
    },
    /// A member claims a task index the task set does not have.
    #[error(
        "member {member} claims task index {index} but the task set has {tasks} tasks: map claims through TaskSet::index_of and drop unknown tasks"
    )]
    TaskOutOfRange {
        /// The member.
        member: MemberId,
        /// The bad index.
        index: u32,
        /// The number of tasks.
        tasks: usize,
    },
    /// A member names a kind index the task set does not have.
    #[error(
        "member {member} names kind index {index} but the task set has {kinds} kinds: intern kinds with TaskSet::intern_kind"
    )]
    KindOutOfRange {
        /// The member.
        member: MemberId,
        /// The bad index.
        index: u16,
        /// The number of kinds.
        kinds: usize,
    },
    /// Two tasks have the same id.
    #[error("task {task} is defined twice: task ids must be unique")]
    DuplicateTask {
        /// The id.
        task: Arc<str>,
    },
    /// A task has weight 0.
    #[error("task {task} has weight 0: weights must be at least 1")]
    ZeroWeight {
        /// The id.
        task: Arc<str>,
    },
    /// More than about 4 billion tasks.
    #[error("too many tasks: a task set holds at most u32::MAX - 8 tasks")]
    TooManyTasks,
    /// More than 65536 kinds.
    #[error("too many task kinds: a task set holds at most 65536 kinds")]
    TooManyKinds,
    /// More than about 4 billion members.
    #[error("too many members: a group holds at most u32::MAX - 16 members")]
    TooManyMembers,
    /// No assignor has this name.
    #[error("unknown assignor {name:?}: use one of round-robin, sticky, cooperative")]
    UnknownAssignor {
        /// The name asked for.
        name: String,
    },
    /// A configuration value is out of range.
    #[error("invalid assignor configuration: {0}")]
    InvalidConfig(&'static str),
    /// The plan broke a rule the assignor checks before returning it (a bug: report it).
    #[error("the assignor produced an invalid plan ({0}); this is a bug in kroupier-assignor")]
    InvalidPlan(Violation),
}
