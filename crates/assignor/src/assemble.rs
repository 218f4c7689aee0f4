//! Turns per-task targets into per-member target sets and revocations.
//!
//! The common case at scale is a member that keeps everything it claims and gets nothing new
//! (a stable round, or every member but a few in a join or leave): its target set is then its
//! own claim list, copied in one go. Only the other members' target sets are built from a scan
//! of `target`.

use crate::prepare::{NO_CAPACITY, NO_MEMBER, is_member};
use crate::runs::{LANES, all_equal, consecutive, runs};
use crate::{AssignmentInput, MemberPlan, TaskIndex, Unplaced, UnplacedReason};

/// Builds each member's target set (index order) and revoked set (claimed but not targeted),
/// plus the unplaced tasks, from `target` (per task: member, `NO_MEMBER`, `NO_CAPACITY`, or a
/// marker for tasks the caller reports itself).
pub(crate) fn assemble(
    input: &AssignmentInput<'_>,
    target: &[u32],
) -> (Vec<MemberPlan>, Vec<Unplaced>) {
    let members = input.members;
    let mut counts = vec![0u32; members.len()];
    let mut unplaced = Vec::new();
    // Run by run: targets come in long runs of one member, and one addition per run avoids a
    // chain of increments on the same counter.
    for (start, end, m) in runs(target) {
        if is_member(m) {
            counts[m as usize] += (end - start) as u32;
        } else if m == NO_MEMBER || m == NO_CAPACITY {
            let reason = if m == NO_MEMBER {
                UnplacedReason::NoEligibleMember
            } else {
                UnplacedReason::NoCapacity
            };
            unplaced.extend((start as u32..end as u32).map(|t| Unplaced {
                task: TaskIndex(t),
                reason,
            }));
        }
    }
    let mut assignments = Vec::with_capacity(members.len());
    // Members whose target set is built from the scan below (the others copied their claims).
    let mut build = vec![false; members.len()];
    let mut to_build = false;
    for (m, member) in members.iter().enumerate() {
        let m32 = m as u32;
        let owned = &member.owned;
        let kept_all = counts[m] as usize == owned.len() && keeps_sorted(owned, target, m32);
        let (assigned, revoked) = if kept_all {
            // Its claims are sorted, distinct, all targeted at it, and it gets nothing else.
            (owned.clone(), Vec::new())
        } else {
            build[m] = counts[m] > 0;
            to_build |= build[m];
            (
                Vec::with_capacity(counts[m] as usize),
                revoked(owned, target, m32),
            )
        };
        assignments.push(MemberPlan {
            member_id: member.id.clone(),
            assigned,
            revoked,
        });
    }
    if to_build {
        for (start, end, m) in runs(target) {
            if is_member(m) && build[m as usize] {
                let assigned = &mut assignments[m as usize].assigned;
                assigned.extend((start as u32..end as u32).map(TaskIndex));
            }
        }
    }
    (assignments, unplaced)
}

/// Whether `owned` is strictly increasing and every task in it targets member `m`.
fn keeps_sorted(owned: &[TaskIndex], target: &[u32], m: u32) -> bool {
    let mut previous: Option<TaskIndex> = None;
    for block in owned.chunks(LANES) {
        if previous.is_some_and(|p| p >= block[0]) {
            return false;
        }
        // Consecutive indices (the common case): one slice of `target` to compare.
        let whole = consecutive(block)
            .and_then(|first| target.get(first..first + block.len()))
            .is_some_and(|targets| all_equal(targets, m));
        if !whole {
            for &task in block {
                if previous.is_some_and(|p| p >= task) || target[task.get()] != m {
                    return false;
                }
                previous = Some(task);
            }
        }
        previous = block.last().copied();
    }
    true
}

/// The tasks `owned` lists that do not target member `m`, sorted, without duplicates.
fn revoked(owned: &[TaskIndex], target: &[u32], m: u32) -> Vec<TaskIndex> {
    sorted_unique(
        owned
            .iter()
            .copied()
            .filter(|t| target[t.get()] != m)
            .collect(),
    )
}

/// `tasks` in index order without repeats (a claim list is usually sorted already).
pub(crate) fn sorted_unique(mut tasks: Vec<TaskIndex>) -> Vec<TaskIndex> {
    if !tasks.is_sorted() {
        tasks.sort_unstable();
    }
    tasks.dedup();
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::{EXCLUDED, NONE};
    use crate::{MemberInput, TaskSet};
    use proptest::prelude::*;

    /// The straightforward version: one push per task, one filter per member.
    fn reference(input: &AssignmentInput<'_>, target: &[u32]) -> (Vec<MemberPlan>, Vec<Unplaced>) {
        let members = input.members;
        let mut assigned: Vec<Vec<TaskIndex>> = vec![Vec::new(); members.len()];
        let mut unplaced = Vec::new();
        for (t, &m) in target.iter().enumerate() {
            let task = TaskIndex(t as u32);
            if is_member(m) {
                assigned[m as usize].push(task);
            } else if m == NO_MEMBER {
                unplaced.push(Unplaced {
                    task,
                    reason: UnplacedReason::NoEligibleMember,
                });
            } else if m == NO_CAPACITY {
                unplaced.push(Unplaced {
                    task,
                    reason: UnplacedReason::NoCapacity,
                });
            }
        }
        let assignments = members
            .iter()
            .zip(assigned)
            .enumerate()
            .map(|(m, (member, assigned))| {
                let mut revoked: Vec<TaskIndex> = member
                    .owned
                    .iter()
                    .copied()
                    .filter(|t| target[t.get()] != m as u32)
                    .collect();
                revoked.sort_unstable();
                revoked.dedup();
                MemberPlan {
                    member_id: member.id.clone(),
                    assigned,
                    revoked,
                }
            })
            .collect();
        (assignments, unplaced)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Targets and claims at random, in runs (as at scale), biased towards members
        /// keeping what they claim.
        #[test]
        fn matches_the_straightforward_assembly(
            spec in prop::collection::vec((0u32..10, 1usize..70), 0..10),
            members in 1usize..6,
            seed in prop::collection::vec(0u32..100, 1..400),
        ) {
            let markers = [NONE, EXCLUDED, NO_MEMBER, NO_CAPACITY];
            let target: Vec<u32> = spec
                .iter()
                .flat_map(|&(v, len)| {
                    let v = if v < 6 { v % members as u32 } else { markers[v as usize - 6] };
                    std::iter::repeat_n(v, len)
                })
                .collect();
            let tasks = target.len() as u32;
            let set = TaskSet::uniform(tasks, "k");
            let mut next = seed.into_iter().cycle();
            let mut pick = move |n: u32| next.next().map_or(0, |v| v % n.max(1));
            let list: Vec<MemberInput> = (0..members)
                .map(|m| {
                    // Mostly: exactly its targets, in order; else some noise on top.
                    let mut owned: Vec<TaskIndex> = (0..tasks)
                        .filter(|&t| target[t as usize] == m as u32)
                        .map(TaskIndex)
                        .collect();
                    match pick(4) {
                        0 if tasks > 0 => owned.push(TaskIndex(pick(tasks))),
                        1 => owned.reverse(),
                        2 if !owned.is_empty() => { owned.remove(0); }
                        _ => {}
                    }
                    MemberInput::new(format!("m{m}")).with_owned(1, owned)
                })
                .collect();
            let input = AssignmentInput::new(&set, &list);
            prop_assert_eq!(assemble(&input, &target), reference(&input, &target));
        }
    }
}
