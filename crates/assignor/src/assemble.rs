//! Turns per-task targets into per-member target sets and revocations.

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
    let mut counts = vec![0usize; members.len()];
    for &m in target {
        if is_member(m) {
            counts[m as usize] += 1;
        }
    }
    let mut assigned: Vec<Vec<TaskIndex>> = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
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
            if !revoked.is_sorted() {
                revoked.sort_unstable();
            }
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
