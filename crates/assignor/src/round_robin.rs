//! `round-robin`: eager, not sticky. Tasks, in index order kind by kind, go to the members
//! that can run them in turn, like Kafka's `RoundRobinAssignor` and Connect's eager assignor.

use crate::assemble::{assemble, sorted_unique};
use crate::prepare::{NO_CAPACITY, NO_MEMBER, Prepared, prepare_unresolved};
use crate::{
    AssignmentInput, Assignor, AssignorError, KindIndex, MemberPlan, Plan, RebalanceProtocol,
    TaskIndex,
};

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

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError> {
        // Blind to what members own: no need to resolve claims.
        let p = prepare_unresolved(input)?;
        if let Some(assignments) = dealt_in_strides(input, &p) {
            return Ok(Plan {
                assignments,
                state: input.state,
                ..Plan::default()
            });
        }
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

/// The plan when no member has a capacity and one kind holds every task (`None` otherwise):
/// the member at position `j` of that kind's circle gets tasks `j, j + n, j + 2n, ..`. Built
/// member by member (each list written in order) rather than dealt into a per-task array and
/// gathered back, which scatters a million writes over every member's list. The same plan as
/// [`deal`] and [`assemble`].
fn dealt_in_strides(input: &AssignmentInput<'_>, p: &Prepared) -> Option<Vec<MemberPlan>> {
    let tasks = input.tasks;
    if p.capacity_limited || tasks.is_empty() {
        return None;
    }
    let k = (0..tasks.kind_count())
        .find(|&k| tasks.tasks_of_kind(KindIndex(k as u16)).len() == tasks.len())?;
    let eligible = &p.eligible[k];
    let n = eligible.len();
    if n == 0 {
        return None;
    }
    let mut position = vec![None; input.members.len()];
    for (j, &m) in eligible.iter().enumerate() {
        position[m as usize] = Some(j);
    }
    let assignments = input
        .members
        .iter()
        .zip(position)
        .map(|(member, position)| {
            let assigned = match position {
                Some(j) => (j..tasks.len())
                    .step_by(n)
                    .map(|t| TaskIndex(t as u32))
                    .collect(),
                None => Vec::new(),
            };
            MemberPlan {
                member_id: member.id.clone(),
                assigned,
                revoked: revoked_from_stride(&member.owned, position, n),
            }
        })
        .collect();
    Some(assignments)
}

/// The tasks of `owned` not in the stride `j, j + n, ..` (`position` = `Some(j)`; all of them
/// for `None`), sorted, without duplicates.
fn revoked_from_stride(owned: &[TaskIndex], position: Option<usize>, n: usize) -> Vec<TaskIndex> {
    let revoked: Vec<TaskIndex> = match position {
        None => owned.to_vec(),
        Some(j) if owned.is_sorted() => {
            // Walk the stride alongside the sorted claims: additions only.
            let mut next = j;
            owned
                .iter()
                .copied()
                .filter(|t| {
                    while next < t.get() {
                        next += n;
                    }
                    next != t.get()
                })
                .collect()
        }
        Some(j) => owned.iter().copied().filter(|t| t.get() % n != j).collect(),
    };
    sorted_unique(revoked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KindIndex, Kinds, MemberInput, TaskIndex, TaskSet};

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
            let members: Vec<MemberInput> = member_kinds
                .iter()
                .enumerate()
                .map(|(i, kinds)| {
                    let m = MemberInput::new(format!("m{i}"));
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// One kind, no capacities: the plan built in strides is the dealt and gathered one,
        /// whatever members claim (sorted, unsorted, duplicated, ineligible) and whichever of
        /// them can run the kind.
        #[test]
        fn strides_match_dealing(
            tasks in 1u32..120,
            specs in proptest::collection::vec(
                (proptest::collection::vec(0u32..120, 0..30), 0u8..4, proptest::option::of(0u8..3)),
                0..7,
            ),
        ) {
            let mut set = TaskSet::new();
            set.intern_kind("other").unwrap();
            for t in 0..tasks {
                set.push(format!("t{t}"), "k", 1).unwrap();
            }
            let members: Vec<MemberInput> = specs
                .iter()
                .enumerate()
                .map(|(i, (claims, how, rack))| {
                    let mut owned: Vec<TaskIndex> = claims.iter().map(|&t| TaskIndex(t % tasks)).collect();
                    if *how != 0 {
                        owned.sort_unstable();
                    }
                    let mut m = MemberInput::new(format!("m{i}")).with_owned(1, owned);
                    if *how == 1 {
                        m = m.with_kinds(Kinds::Only(vec![KindIndex(0)]));
                    }
                    if let Some(r) = rack {
                        m = m.with_rack(&format!("r{r}"));
                    }
                    m
                })
                .collect();
            let input = AssignmentInput::new(&set, &members);
            let p = prepare_unresolved(&input).unwrap();
            if let Some(strides) = dealt_in_strides(&input, &p) {
                let (dealt, unplaced) = assemble(&input, &deal(&input, &p, false));
                proptest::prop_assert!(unplaced.is_empty());
                proptest::prop_assert_eq!(strides, dealt);
            } else {
                proptest::prop_assert!(p.eligible[1].is_empty());
            }
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
            MemberInput::new("a"),
            MemberInput::new("b").with_kinds(Kinds::Only(vec![KindIndex(0)])),
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
            MemberInput::new("m1").with_kinds(Kinds::Only(vec![KindIndex(0)])),
            MemberInput::new("m2")
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
