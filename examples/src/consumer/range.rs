//! The `range` assignor, as Kafka's `RangeAssignor`: per topic, the partitions in order are cut
//! into contiguous ranges, one per subscriber in member order, the first `n % m` members
//! taking one more. Eager: every member gives up everything before the rebalance, so nothing
//! is moved under anyone.

use std::collections::BTreeMap;

use super::assignor::{MemberSubscription, Plan};
use super::wire::TopicPartition;

/// Java's member order: static members by `group.instance.id` first, then the others by
/// member id.
fn member_order(a: &MemberSubscription, b: &MemberSubscription) -> std::cmp::Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => x.cmp(y).then_with(|| a.member_id.cmp(&b.member_id)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.member_id.cmp(&b.member_id),
    }
}

/// The range plan for `members` over the partition `counts` (topics without a known count
/// get no partitions). Every member appears in the plan, possibly with nothing.
pub fn assign(members: &[MemberSubscription], counts: &BTreeMap<String, i32>) -> Plan {
    let mut plan: Plan = members
        .iter()
        .map(|m| (m.member_id.clone(), Default::default()))
        .collect();
    let mut sorted: Vec<&MemberSubscription> = members.iter().collect();
    sorted.sort_by(|a, b| member_order(a, b));
    let topics: std::collections::BTreeSet<&String> =
        members.iter().flat_map(|m| &m.topics).collect();
    for topic in topics {
        let Some(&n) = counts.get(topic) else {
            continue;
        };
        let subscribers: Vec<&&MemberSubscription> =
            sorted.iter().filter(|m| m.topics.contains(topic)).collect();
        let m = subscribers.len() as i32;
        let n = n.max(0);
        let (per, extra) = (n / m, n % m);
        for (i, member) in subscribers.iter().enumerate() {
            let i = i as i32;
            let start = per * i + i.min(extra);
            let len = per + i32::from(i < extra);
            let owned = plan.entry(member.member_id.clone()).or_default();
            owned.extend((start..start + len).map(|p| TopicPartition::new(topic.clone(), p)));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::assignor::{doubly_assigned, unassigned};
    use proptest::prelude::*;

    pub(crate) fn member(id: &str, topics: &[&str]) -> MemberSubscription {
        MemberSubscription {
            member_id: id.into(),
            group_instance_id: None,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned: Default::default(),
            generation: None,
        }
    }

    fn numbers(plan: &Plan, id: &str) -> Vec<i32> {
        plan[id].iter().map(|tp| tp.partition).collect()
    }

    #[test]
    fn seven_partitions_over_three_members_as_java() {
        let members = [
            member("c", &["t"]),
            member("a", &["t"]),
            member("b", &["t"]),
        ];
        let counts = BTreeMap::from([("t".to_owned(), 7)]);
        let plan = assign(&members, &counts);
        assert_eq!(numbers(&plan, "a"), vec![0, 1, 2]);
        assert_eq!(numbers(&plan, "b"), vec![3, 4]);
        assert_eq!(numbers(&plan, "c"), vec![5, 6]);
    }

    #[test]
    fn static_members_come_first_and_unknown_topics_get_nothing() {
        let mut z = member("z", &["t", "gone"]);
        z.group_instance_id = Some("i".into());
        let members = [member("a", &["t"]), z];
        let plan = assign(&members, &BTreeMap::from([("t".to_owned(), 3)]));
        assert_eq!(numbers(&plan, "z"), vec![0, 1]);
        assert_eq!(numbers(&plan, "a"), vec![2]);
    }

    proptest! {
        #[test]
        fn disjoint_covering_and_deterministic(
            n_members in 1usize..8,
            counts in proptest::collection::btree_map("[a-c]", 0..20i32, 1..3),
            seed in any::<u64>(),
        ) {
            let topics: Vec<String> = counts.keys().cloned().collect();
            let members: Vec<MemberSubscription> = (0..n_members)
                .map(|i| {
                    // Each member subscribes to a seed-chosen non-empty subset.
                    let mine: Vec<&str> = topics
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| (seed >> ((i * 3 + j) % 64)) & 1 == 1 || *j == i % topics.len())
                        .map(|(_, t)| t.as_str())
                        .collect();
                    member(&format!("m{i}"), &mine)
                })
                .collect();
            let plan = assign(&members, &counts);
            prop_assert!(doubly_assigned(&plan).is_empty());
            prop_assert!(unassigned(&plan, &members, &counts).is_empty());
            for m in &members {
                prop_assert!(plan[&m.member_id].iter().all(|tp| m.topics.contains(&tp.topic)));
            }
            let mut reversed = members.clone();
            reversed.reverse();
            prop_assert_eq!(assign(&reversed, &counts), plan);
        }
    }
}
