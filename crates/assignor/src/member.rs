//! Members of the group as their JoinGroup metadata describes them, and the leader's memory of
//! the previous assignment.

use std::fmt;
use std::sync::Arc;

use crate::{KindIndex, TaskIndex};

/// A member's stable key: its `group.instance.id` for static members, else its `member_id`.
///
/// Members are passed to assignors sorted by this key, so every leader sees the same order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberId(Arc<str>);

impl MemberId {
    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MemberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for MemberId {
    fn from(id: &str) -> Self {
        Self(id.into())
    }
}

impl From<String> for MemberId {
    fn from(id: String) -> Self {
        Self(id.into())
    }
}

impl From<Arc<str>> for MemberId {
    fn from(id: Arc<str>) -> Self {
        Self(id)
    }
}

/// The task kinds a member can run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Kinds {
    /// Every kind (the member's catalogue knows them all).
    #[default]
    All,
    /// Only these kinds; an empty list means the member can run nothing.
    Only(Vec<KindIndex>),
}

impl Kinds {
    /// Whether a member with these kinds can run `kind`.
    pub fn can_run(&self, kind: KindIndex) -> bool {
        match self {
            Kinds::All => true,
            Kinds::Only(kinds) => kinds.contains(&kind),
        }
    }
}

/// One member of the group, as its JoinGroup metadata describes it: its part of the
/// assignor's input (its part of the output is a [`MemberPlan`](crate::MemberPlan)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberInput {
    /// The member's stable key; members are passed sorted by it.
    pub id: MemberId,
    /// The generation in which the member was granted `owned` (-1 if it never was).
    /// Double claims are resolved by it: the higher generation keeps the task.
    pub generation: i32,
    /// The tasks the member says it runs now.
    pub owned: Vec<TaskIndex>,
    /// The task kinds it can run.
    pub kinds: Kinds,
    /// The most total task weight it accepts (`None`: no limit).
    pub capacity: Option<u64>,
    /// Its rack (or zone), to spread the tasks of one kind over racks.
    pub rack: Option<Arc<str>>,
}

impl MemberInput {
    /// A member that owns nothing, can run every kind, has no capacity limit and no rack.
    pub fn new(id: impl Into<MemberId>) -> Self {
        Self {
            id: id.into(),
            generation: -1,
            owned: Vec::new(),
            kinds: Kinds::All,
            capacity: None,
            rack: None,
        }
    }

    /// Sets the tasks it owns and the generation it was granted them in.
    pub fn with_owned(mut self, generation: i32, owned: Vec<TaskIndex>) -> Self {
        self.generation = generation;
        self.owned = owned;
        self
    }

    /// Sets the kinds it can run.
    pub fn with_kinds(mut self, kinds: Kinds) -> Self {
        self.kinds = kinds;
        self
    }

    /// Sets its capacity (the most total task weight it accepts).
    pub fn with_capacity(mut self, capacity: u64) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Sets its rack.
    pub fn with_rack(mut self, rack: &str) -> Self {
        self.rack = Some(rack.into());
        self
    }
}

/// The tasks one member held in the previous assignment, as the leader remembers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviousOwner {
    /// The member.
    pub member_id: MemberId,
    /// Its tasks.
    pub tasks: Vec<TaskIndex>,
}

/// The previous assignment as the leader knows it (empty for a brand-new leader).
///
/// It tells the cooperative assignor which tasks were owned by members that are gone: those are
/// *lost* (unless the member left gracefully) and may wait for the lost-task delay.
/// [`Plan::to_previous`](crate::Plan::to_previous) builds the next one from a plan. Pass
/// `None` when the leader missed a generation: its memory is then stale.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreviousAssignment {
    /// The owners, in any order.
    pub owners: Vec<PreviousOwner>,
}
