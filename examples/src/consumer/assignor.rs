//! What the consumer assignors share: their input, their output, and the checks every plan
//! must pass.
//!
//! Both assignors are pure and deterministic: the same members, subscriptions and partition
//! counts give the same plan, whatever order the members come in.

use std::collections::{BTreeMap, BTreeSet};

use super::wire::TopicPartition;

/// The protocol name of Kafka's `RangeAssignor` (eager).
pub const RANGE: &str = "range";
/// The protocol name of Kafka's `CooperativeStickyAssignor` (cooperative).
pub const COOPERATIVE_STICKY: &str = "cooperative-sticky";

/// One member as an assignor sees it: its ids and its decoded subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSubscription {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// Its `group.instance.id`, if it is static.
    pub group_instance_id: Option<String>,
    /// The topics it subscribes to.
    pub topics: BTreeSet<String>,
    /// The partitions it says it owns.
    pub owned: BTreeSet<TopicPartition>,
    /// The generation it got them in, if any.
    pub generation: Option<i32>,
}

/// The leader's plan: each member id with the partitions it owns in the new generation.
pub type Plan = BTreeMap<String, BTreeSet<TopicPartition>>;

/// Every partition of the topics in `topics` whose count is known, in order.
pub fn partitions_of<'a>(
    topics: impl IntoIterator<Item = &'a String>,
    counts: &BTreeMap<String, i32>,
) -> BTreeSet<TopicPartition> {
    topics
        .into_iter()
        .filter_map(|t| counts.get(t).map(|n| (t, *n)))
        .flat_map(|(t, n)| (0..n.max(0)).map(move |p| TopicPartition::new(t.clone(), p)))
        .collect()
}

/// The partitions two members of `plan` both own (empty for a valid plan).
pub fn doubly_assigned(plan: &Plan) -> BTreeSet<TopicPartition> {
    let mut seen = BTreeSet::new();
    let mut twice = BTreeSet::new();
    for tp in plan.values().flatten() {
        if !seen.insert(tp.clone()) {
            twice.insert(tp.clone());
        }
    }
    twice
}

/// The subscribed partitions no member of `plan` owns.
pub fn unassigned(
    plan: &Plan,
    members: &[MemberSubscription],
    counts: &BTreeMap<String, i32>,
) -> BTreeSet<TopicPartition> {
    let all = partitions_of(members.iter().flat_map(|m| &m.topics), counts);
    let owned: BTreeSet<&TopicPartition> = plan.values().flatten().collect();
    all.into_iter().filter(|tp| !owned.contains(tp)).collect()
}

/// The partitions `plan` gives a member other than one that claims to own them: what the
/// cooperative rule forbids in one round (a partition is first revoked, and assigned only in
/// a later generation).
pub fn moved_in_one_round(plan: &Plan, members: &[MemberSubscription]) -> BTreeSet<TopicPartition> {
    let mut moved = BTreeSet::new();
    for (member_id, partitions) in plan {
        for tp in partitions {
            let claimed_by_other = members
                .iter()
                .any(|m| &m.member_id != member_id && m.owned.contains(tp));
            if claimed_by_other {
                moved.insert(tp.clone());
            }
        }
    }
    moved
}
