//! Turns per-task targets into per-member target sets and revocations.
//!
//! The common case at scale is a member that keeps everything it claims and gets nothing new
//! (a stable round, or every member but a few in a join or leave): its target set is then its
//! own claim list, copied in one go. Only the other members' target sets are built from a scan
//! of `target`.

use crate::prepare::{NO_CAPACITY, NO_MEMBER, is_member};
use crate::{AssignmentInput, MemberAssignment, TaskIndex, Unplaced, UnplacedReason};

/// Builds each member's target set (index order) and revoked set (claimed but not targeted),
/// plus the unplaced tasks, from `target` (per task: member, `NO_MEMBER`, `NO_CAPACITY`, or a
/// marker for tasks the caller reports itself).
pub(crate) fn assemble(
    input: &AssignmentInput<'_>,
    target: &[u32],
) -> (Vec<MemberAssignment>, Vec<Unplaced>) {
    let members = input.members;
    let mut counts = vec![0u32; members.len()];
    let mut unplaced = Vec::new();
    // Run by run: targets come in long runs of one member, and one addition per run avoids a
    // chain of increments on the same counter.
    let mut start = 0u32;
    for run in target.chunk_by(|a, b| a == b) {
        let m = run[0];
        if is_member(m) {
            counts[m as usize] += run.len() as u32;
        } else if m == NO_MEMBER || m == NO_CAPACITY {
            let reason = if m == NO_MEMBER {
                UnplacedReason::NoEligibleMember
            } else {
                UnplacedReason::NoCapacity
            };
            unplaced.extend((start..start + run.len() as u32).map(|t| Unplaced {
                task: TaskIndex(t),
                reason,
            }));
        }
        start += run.len() as u32;
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
        assignments.push(MemberAssignment {
            member_id: member.id.clone(),
            assigned,
            revoked,
        });
    }
    if to_build {
        let mut start = 0u32;
        for run in target.chunk_by(|a, b| a == b) {
            let m = run[0];
            let end = start + run.len() as u32;
            if is_member(m) && build[m as usize] {
                let assigned = &mut assignments[m as usize].assigned;
                assigned.extend((start..end).map(TaskIndex));
            }
            start = end;
        }
    }
    (assignments, unplaced)
}

/// Whether `owned` is strictly increasing and every task in it targets member `m`.
fn keeps_sorted(owned: &[TaskIndex], target: &[u32], m: u32) -> bool {
    let mut previous: Option<TaskIndex> = None;
    for &task in owned {
        if previous.is_some_and(|p| p >= task) || target[task.get()] != m {
            return false;
        }
        previous = Some(task);
    }
    true
}

/// The tasks `owned` lists that do not target member `m`, sorted, without duplicates.
fn revoked(owned: &[TaskIndex], target: &[u32], m: u32) -> Vec<TaskIndex> {
    let mut revoked: Vec<TaskIndex> = owned
        .iter()
        .copied()
        .filter(|t| target[t.get()] != m)
        .collect();
    if !revoked.is_sorted() {
        revoked.sort_unstable();
    }
    revoked.dedup();
    revoked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::{EXCLUDED, NONE};
    use crate::{Member, TaskSet};
    use proptest::prelude::*;

    /// The straightforward version: one push per task, one filter per member.
    fn reference(
        input: &AssignmentInput<'_>,
        target: &[u32],
    ) -> (Vec<MemberAssignment>, Vec<Unplaced>) {
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
                MemberAssignment {
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

        /// Targets and claims at random, biased towards members keeping what they claim.
        #[test]
        fn matches_the_straightforward_assembly(
            tasks in 0u32..60,
            members in 1usize..6,
            seed in prop::collection::vec(0u32..100, 0..400),
        ) {
            let set = TaskSet::uniform(tasks, "k");
            let mut next = seed.into_iter().cycle();
            let mut pick = move |n: u32| next.next().map_or(0, |v| v % n.max(1));
            let markers = [NONE, EXCLUDED, NO_MEMBER, NO_CAPACITY];
            let target: Vec<u32> = (0..tasks)
                .map(|_| {
                    let r = pick(10);
                    if r < 7 { pick(members as u32) } else { markers[pick(4) as usize] }
                })
                .collect();
            let list: Vec<Member> = (0..members)
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
                    Member::new(format!("m{m}")).with_owned(1, owned)
                })
                .collect();
            let input = AssignmentInput::new(&set, &list);
            prop_assert_eq!(assemble(&input, &target), reference(&input, &target));
        }
    }
}
