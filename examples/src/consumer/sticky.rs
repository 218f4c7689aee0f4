//! The `cooperative-sticky` assignor: balanced, sticky, and cooperative, as Kafka's
//! `CooperativeStickyAssignor`.
//!
//! 1. **Claims.** A member's owned partitions count only if its generation is the highest any
//!    member reports (Java's rule: a member from an older generation lost its partitions and
//!    should have dropped them). A partition two such members claim belongs to neither.
//! 2. **Sticky and balanced target.** When every member subscribes to the same topics, each
//!    gets ⌊n/m⌋ or ⌈n/m⌉ partitions (the larger quotas go to the members that own the most),
//!    keeps as many of its own as its quota allows, and the rest are dealt out in order.
//!    Otherwise each partition goes to the least-loaded subscriber, its owner first on a tie.
//! 3. **Cooperative post-pass.** A partition the target gives to a member other than one that
//!    claims it (validly or not) is left out of this round: its owner, seeing it missing from
//!    its assignment, revokes it and rejoins, and the next round assigns it. So no partition is
//!    owned by two members in any generation. Kafka's Java leader checks the same rule
//!    (`validateCooperativeAssignment`).

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::{MemberSubscription, Plan, partitions_of};
use super::wire::TopicPartition;

/// The valid owner of each partition (step 1 of the [module guide](self)).
fn valid_owners(members: &[&MemberSubscription]) -> BTreeMap<TopicPartition, String> {
    let max_generation = members.iter().map(|m| m.generation.unwrap_or(-1)).max();
    let mut owners: BTreeMap<TopicPartition, Option<String>> = BTreeMap::new();
    for m in members
        .iter()
        .filter(|m| Some(m.generation.unwrap_or(-1)) == max_generation)
    {
        for tp in m.owned.iter().filter(|tp| m.topics.contains(&tp.topic)) {
            owners
                .entry(tp.clone())
                .and_modify(|o| *o = None)
                .or_insert_with(|| Some(m.member_id.clone()));
        }
    }
    owners
        .into_iter()
        .filter_map(|(tp, owner)| owner.map(|o| (tp, o)))
        .collect()
}

/// Step 2 when all subscriptions are equal: exact quotas, owners keep what fits.
fn balanced(
    members: &[&MemberSubscription],
    all: &BTreeSet<TopicPartition>,
    owners: &BTreeMap<TopicPartition, String>,
) -> Plan {
    let mut kept: BTreeMap<&str, Vec<TopicPartition>> = members
        .iter()
        .map(|m| (m.member_id.as_str(), Vec::new()))
        .collect();
    for (tp, owner) in owners {
        if all.contains(tp) {
            if let Some(list) = kept.get_mut(owner.as_str()) {
                list.push(tp.clone());
            }
        }
    }
    let n = all.len();
    let m = members.len();
    let (base, extra) = (n / m, n % m);
    let mut by_owned: Vec<&str> = kept.keys().copied().collect();
    by_owned.sort_by(|a, b| kept[b].len().cmp(&kept[a].len()).then(a.cmp(b)));
    let quota: BTreeMap<&str, usize> = by_owned
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, base + usize::from(i < extra)))
        .collect();
    let mut plan = Plan::new();
    let mut taken = BTreeSet::new();
    for (id, list) in &kept {
        let mine: BTreeSet<TopicPartition> = list.iter().take(quota[id]).cloned().collect();
        taken.extend(mine.iter().cloned());
        plan.insert((*id).to_owned(), mine);
    }
    let mut pool = all.iter().filter(|tp| !taken.contains(*tp));
    for (id, q) in &quota {
        let mine = plan.entry((*id).to_owned()).or_default();
        while mine.len() < *q {
            match pool.next() {
                Some(tp) => {
                    mine.insert(tp.clone());
                }
                None => break,
            }
        }
    }
    plan
}

/// Step 2 when subscriptions differ: least-loaded subscriber, the owner first on a tie;
/// partitions with the fewest subscribers are placed first.
fn greedy(
    members: &[&MemberSubscription],
    all: &BTreeSet<TopicPartition>,
    owners: &BTreeMap<TopicPartition, String>,
) -> Plan {
    let mut plan: Plan = members
        .iter()
        .map(|m| (m.member_id.clone(), BTreeSet::new()))
        .collect();
    let subscribers = |tp: &TopicPartition| -> Vec<&str> {
        members
            .iter()
            .filter(|m| m.topics.contains(&tp.topic))
            .map(|m| m.member_id.as_str())
            .collect()
    };
    let mut order: Vec<(usize, &TopicPartition)> =
        all.iter().map(|tp| (subscribers(tp).len(), tp)).collect();
    order.sort();
    for (_, tp) in order {
        let candidates = subscribers(tp);
        let owner = owners.get(tp).map(String::as_str);
        let best = candidates
            .iter()
            .min_by_key(|id| (plan[**id].len(), Some(**id) != owner, **id))
            .copied();
        if let Some(id) = best {
            plan.entry(id.to_owned()).or_default().insert(tp.clone());
        }
    }
    plan
}

/// The cooperative-sticky plan for `members` over the partition `counts`. Every member
/// appears in the plan, possibly with nothing.
pub fn assign(members: &[MemberSubscription], counts: &BTreeMap<String, i32>) -> Plan {
    let mut sorted: Vec<&MemberSubscription> = members.iter().collect();
    sorted.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    if sorted.is_empty() {
        return Plan::new();
    }
    let all = partitions_of(sorted.iter().flat_map(|m| &m.topics), counts);
    let owners = valid_owners(&sorted);
    let same_topics = sorted.windows(2).all(|w| w[0].topics == w[1].topics);
    let mut plan = if same_topics {
        balanced(&sorted, &all, &owners)
    } else {
        greedy(&sorted, &all, &owners)
    };
    // Step 3: a partition someone else claims waits for its revocation.
    for (member_id, partitions) in plan.iter_mut() {
        partitions.retain(|tp| {
            !sorted
                .iter()
                .any(|m| &m.member_id != member_id && m.owned.contains(tp))
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::assignor::{doubly_assigned, moved_in_one_round, unassigned};
    use proptest::prelude::*;

    fn member(id: &str, topics: &[&str], owned: &[i32], generation: i32) -> MemberSubscription {
        MemberSubscription {
            member_id: id.into(),
            group_instance_id: None,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned: owned.iter().map(|p| TopicPartition::new("t", *p)).collect(),
            generation: (generation >= 0).then_some(generation),
        }
    }

    fn numbers(plan: &Plan, id: &str) -> Vec<i32> {
        plan[id].iter().map(|tp| tp.partition).collect()
    }

    fn counts(n: i32) -> BTreeMap<String, i32> {
        BTreeMap::from([("t".to_owned(), n)])
    }

    #[test]
    fn a_join_revokes_first_and_assigns_next_round() {
        let a = member("a", &["t"], &[0, 1, 2, 3, 4, 5], 3);
        let b = member("b", &["t"], &[], -1);
        let first = assign(&[a.clone(), b.clone()], &counts(6));
        assert_eq!(numbers(&first, "a"), vec![0, 1, 2]);
        assert!(first["b"].is_empty(), "3, 4, 5 wait for a to revoke them");
        let a2 = member("a", &["t"], &[0, 1, 2], 4);
        let second = assign(&[a2, b], &counts(6));
        assert_eq!(numbers(&second, "a"), vec![0, 1, 2]);
        assert_eq!(numbers(&second, "b"), vec![3, 4, 5]);
    }

    #[test]
    fn a_leave_hands_its_partitions_out_at_once() {
        let a = member("a", &["t"], &[0, 1, 2], 5);
        let plan = assign(&[a], &counts(6));
        assert_eq!(numbers(&plan, "a"), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn stale_and_contested_claims_do_not_count() {
        let a = member("a", &["t"], &[0, 1], 5);
        let stale = member("b", &["t"], &[2, 3], 2);
        let plan = assign(&[a, stale], &counts(4));
        // b's stale claim keeps 2 and 3 from a this round; b keeps nothing it claimed twice.
        assert!(doubly_assigned(&plan).is_empty());
        assert!(
            moved_in_one_round(
                &plan,
                &[
                    member("a", &["t"], &[0, 1], 5),
                    member("b", &["t"], &[2, 3], 2)
                ]
            )
            .is_empty()
        );
        let x = member("x", &["t"], &[0], 1);
        let y = member("y", &["t"], &[0], 1);
        let plan = assign(&[x, y], &counts(2));
        assert!(
            plan.values()
                .all(|p| !p.contains(&TopicPartition::new("t", 0)))
        );
    }

    /// Members with random subscriptions, ownership and generations.
    fn group() -> impl Strategy<Value = (Vec<MemberSubscription>, BTreeMap<String, i32>)> {
        (
            proptest::collection::btree_map("[a-c]", 0..12i32, 1..3),
            1usize..7,
            any::<u64>(),
            any::<bool>(),
        )
            .prop_map(|(counts, n, seed, same)| {
                let topics: Vec<String> = counts.keys().cloned().collect();
                let all: Vec<TopicPartition> =
                    partitions_of(topics.iter(), &counts).into_iter().collect();
                let members = (0..n)
                    .map(|i| {
                        let mine: BTreeSet<String> = topics
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| {
                                same || (seed >> ((i * 5 + j) % 64)) & 1 == 1 || *j == 0
                            })
                            .map(|(_, t)| t.clone())
                            .collect();
                        // Disjoint valid ownership: partition k belongs to member k % (n + 1).
                        let owned = all
                            .iter()
                            .enumerate()
                            .filter(|(k, _)| (seed.rotate_left(*k as u32) as usize) % (n + 1) == i)
                            .map(|(_, tp)| tp.clone())
                            .collect();
                        MemberSubscription {
                            member_id: format!("m{i}"),
                            group_instance_id: None,
                            topics: mine,
                            owned,
                            generation: Some(7),
                        }
                    })
                    .collect();
                (members, counts)
            })
    }

    /// Members whose claims overlap and whose generations differ (stale members, members
    /// that claim the same partition in the same generation).
    fn messy_group() -> impl Strategy<Value = (Vec<MemberSubscription>, BTreeMap<String, i32>)> {
        (
            1..10i32,
            proptest::collection::vec(
                (proptest::collection::btree_set(0..10i32, 0..6), -1..3i32),
                1..6,
            ),
        )
            .prop_map(|(n, claims)| {
                let members = claims
                    .into_iter()
                    .enumerate()
                    .map(|(i, (owned, generation))| MemberSubscription {
                        member_id: format!("m{i}"),
                        group_instance_id: None,
                        topics: ["t".to_owned()].into(),
                        owned: owned
                            .into_iter()
                            .map(|p| TopicPartition::new("t", p))
                            .collect(),
                        generation: (generation >= 0).then_some(generation),
                    })
                    .collect();
                (members, counts(n))
            })
    }

    proptest! {
        #[test]
        fn cooperative_disjoint_and_converging((members, counts) in group()) {
            let mut members = members;
            let mut previous: Option<Plan> = None;
            for round in 0..3 {
                let plan = assign(&members, &counts);
                prop_assert!(doubly_assigned(&plan).is_empty());
                prop_assert!(moved_in_one_round(&plan, &members).is_empty(), "round {}", round);
                for m in &members {
                    prop_assert!(plan[&m.member_id].iter().all(|tp| m.topics.contains(&tp.topic)));
                }
                // Only partitions another member still claims may wait.
                let claimed: BTreeSet<&TopicPartition> = members.iter().flat_map(|m| &m.owned).collect();
                prop_assert!(unassigned(&plan, &members, &counts).iter().all(|tp| claimed.contains(tp)));
                // Each member revokes what it lost and owns its assignment in the next generation.
                for m in &mut members {
                    m.owned = plan[&m.member_id].clone();
                    m.generation = Some(8 + round);
                }
                previous = Some(plan);
            }
            // After two rounds the plan covers every partition and no longer changes.
            let plan = assign(&members, &counts);
            prop_assert!(unassigned(&plan, &members, &counts).is_empty());
            prop_assert_eq!(Some(&plan), previous.as_ref());
            if members.windows(2).all(|w| w[0].topics == w[1].topics) {
                let sizes: Vec<usize> = plan.values().map(BTreeSet::len).collect();
                prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
            }
        }

        #[test]
        fn messy_claims_wait_for_their_revocation_then_settle((members, counts) in messy_group()) {
            let mut members = members;
            for round in 0..4 {
                let plan = assign(&members, &counts);
                prop_assert!(doubly_assigned(&plan).is_empty());
                prop_assert!(moved_in_one_round(&plan, &members).is_empty(), "round {}", round);
                let claimed: BTreeSet<&TopicPartition> = members.iter().flat_map(|m| &m.owned).collect();
                prop_assert!(unassigned(&plan, &members, &counts).iter().all(|tp| claimed.contains(tp)));
                for m in &mut members {
                    m.owned = plan[&m.member_id].clone();
                    m.generation = Some(10 + round);
                }
            }
            let plan = assign(&members, &counts);
            prop_assert!(unassigned(&plan, &members, &counts).is_empty());
            let sizes: Vec<usize> = plan.values().map(BTreeSet::len).collect();
            prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }

        #[test]
        fn nothing_moves_when_nothing_changed((members, counts) in group()) {
            let first = assign(&members, &counts);
            let mut members = members;
            for m in &mut members {
                m.owned = first[&m.member_id].clone();
                m.generation = Some(8);
            }
            let second = assign(&members, &counts);
            let third = {
                for m in &mut members {
                    m.owned = second[&m.member_id].clone();
                    m.generation = Some(9);
                }
                assign(&members, &counts)
            };
            prop_assert_eq!(&third, &assign(&members, &counts));
            let mut reversed = members.clone();
            reversed.reverse();
            prop_assert_eq!(assign(&reversed, &counts), third);
        }
    }
}
