//! `round-robin`: eager, not sticky. Tasks, in index order kind by kind, go to the members
//! that can run them in turn, like Kafka's `RoundRobinAssignor` and Connect's eager assignor.

use crate::assemble::assemble;
use crate::prepare::{NO_CAPACITY, NO_MEMBER, Prepared, prepare_unresolved};
use crate::{AssignError, AssignmentInput, Assignor, KindIndex, Plan, RebalanceProtocol};

/// The `round-robin` assignor: one circular pass over the members per kind.
///
/// Balanced by count (weights only count against capacity), cheap, and blind to what members
/// own, so every membership change moves most tasks. Use it to compare; prefer `sticky` or
/// `cooperative` to run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobin;

impl Assignor for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Eager
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignError> {
        // Blind to what members own: no need to resolve claims.
        let p = prepare_unresolved(input)?;
        let target = deal(input, &p, p.capacity_limited);
        let (assignments, unplaced) = assemble(input, &target);
        Ok(Plan {
            assignments,
            unplaced,
            state: input.state,
            ..Plan::default()
        })
    }
}

/// Per task: the member it is dealt to, or `NO_MEMBER` / `NO_CAPACITY`. `with_capacities`:
/// check each member's room (else the next member in the circle always takes the task).
fn deal(input: &AssignmentInput<'_>, p: &Prepared, with_capacities: bool) -> Vec<u32> {
    let tasks = input.tasks;
    let members = input.members;
    let mut target = vec![NO_MEMBER; tasks.len()];
    let mut load = vec![0u64; members.len()];
    // Where the circle continues; shared by all kinds so totals stay even across kinds.
    let mut cursor = 0usize;
    for k in 0..tasks.kind_count() {
        let eligible = &p.eligible[k];
        if eligible.is_empty() {
            continue;
        }
        let n = eligible.len();
        let kind_tasks = tasks.tasks_of_kind(KindIndex(k as u16));
        if !with_capacities {
            // (The cursor may come from a kind with more members: wrap it first.)
            cursor %= n;
            for task in kind_tasks {
                target[task.get()] = eligible[cursor];
                cursor += 1;
                if cursor == n {
                    cursor = 0;
                }
            }
            continue;
        }
        for task in kind_tasks {
            let t = task.get();
            let w = u64::from(tasks.weight_of(t));
            target[t] = NO_CAPACITY;
            for step in 0..n {
                let m = eligible[(cursor + step) % n] as usize;
                let cap = members[m].capacity.unwrap_or(u64::MAX);
                if load[m] + w <= cap {
                    load[m] += w;
                    target[t] = m as u32;
                    cursor = (cursor + step + 1) % n;
                    break;
                }
            }
        }
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KindIndex, Kinds, Member, TaskIndex, TaskSet};

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// Without capacities, dealing without room checks gives what the room-checking
        /// circle gives (every member has room), over kinds with different eligible members.
        #[test]
        fn dealing_without_capacities_matches_the_circle(
            task_kinds in proptest::collection::vec(0u16..3, 0..40),
            member_kinds in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(0u16..3, 0..3)),
                0..6,
            ),
        ) {
            let mut tasks = TaskSet::new();
            for k in 0..3 {
                tasks.intern_kind(&format!("k{k}")).unwrap();
            }
            for (t, k) in task_kinds.iter().enumerate() {
                tasks.push(format!("t{t}"), &format!("k{k}"), 1 + t as u32 % 3).unwrap();
            }
            let members: Vec<Member> = member_kinds
                .iter()
                .enumerate()
                .map(|(i, kinds)| {
                    let m = Member::new(format!("m{i}"));
                    match kinds {
                        None => m,
                        Some(k) => m.with_kinds(Kinds::Only(k.iter().map(|&k| KindIndex(k)).collect())),
                    }
                })
                .collect();
            let input = AssignmentInput::new(&tasks, &members);
            let p = prepare_unresolved(&input).unwrap();
            proptest::prop_assert_eq!(deal(&input, &p, false), deal(&input, &p, true));
        }
    }

    #[test]
    fn deals_tasks_in_turn_and_skips_ineligible_members() {
        let mut tasks = TaskSet::new();
        for i in 0..4 {
            tasks.push(format!("s{i}"), "sink", 1).unwrap();
        }
        tasks.push("src", "source", 1).unwrap();
        let members = vec![
            Member::new("a"),
            Member::new("b").with_kinds(Kinds::Only(vec![KindIndex(0)])),
        ];
        let plan = RoundRobin
            .assign(&AssignmentInput::new(&tasks, &members))
            .unwrap();
        let ids = |m: usize| {
            plan.assignments[m]
                .assigned
                .iter()
                .map(|t| t.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(0), vec![0, 2, 4]);
        assert_eq!(ids(1), vec![1, 3]);
        assert!(plan.unplaced.is_empty());
    }

    #[test]
    fn revokes_what_moves_and_reports_unplaceable() {
        let mut tasks = TaskSet::new();
        tasks.push("a", "k", 1).unwrap();
        tasks.push("b", "other", 1).unwrap();
        let members = vec![
            Member::new("m1").with_kinds(Kinds::Only(vec![KindIndex(0)])),
            Member::new("m2")
                .with_kinds(Kinds::Only(vec![]))
                .with_owned(3, vec![TaskIndex(0)]),
        ];
        let plan = RoundRobin
            .assign(&AssignmentInput::new(&tasks, &members))
            .unwrap();
        assert_eq!(plan.assignments[0].assigned, vec![TaskIndex(0)]);
        assert_eq!(plan.assignments[1].revoked, vec![TaskIndex(0)]);
        assert_eq!(plan.unplaced.len(), 1);
        assert_eq!(plan.unplaced[0].task, TaskIndex(1));
    }
}
