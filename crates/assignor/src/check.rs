//! Reusable invariant checkers, for tests and for debug checks at runtime.
//!
//! Each takes the input of a round and the plan an assignor made for it:
//!
//! * [`coverage`]: every task is in exactly one place (one member's target set, held back, or
//!   unplaced), only on members that can run its kind, never above capacity, and unplaced
//!   only for a true reason; every claimed task not kept is revoked.
//! * [`balance`]: per kind, `max − min ≤` the kind's largest weight (1 when unweighted) among
//!   the members that can run it (the minimum over members with room for any task of it).
//! * [`minimal_moves`]: moves equal [`lower_bound_moves`] (unit weights, no capacities).
//! * [`stable`]: zero moves when the members already hold a complete, balanced assignment.
//! * [`cooperative`]: no task goes to a new owner while another member still claims it.
//!
//! A *move* is a task taken from the member that holds it (or the tasks of a departed owner,
//! or of an invalid claim, given to someone): see [`moves`].

use crate::prepare::{DOUBLE_CLAIM, INELIGIBLE_CLAIM, NONE, is_member, prepare};
use crate::runs::{LANES, consecutive};
pub use crate::violation::Violation;
use crate::{AssignmentInput, KindIndex, Plan, UnplacedReason};

/// Marker in per-task owner arrays: more than one member.
const MANY: u32 = u32::MAX - 6;

/// The plan has one entry per input member, in input order.
fn same_members(input: &AssignmentInput<'_>, plan: &Plan) -> Result<(), Violation> {
    if plan.assignments.len() != input.members.len() {
        return Err(Violation::MemberMismatch {
            index: plan.assignments.len().min(input.members.len()),
        });
    }
    match plan
        .assignments
        .iter()
        .zip(input.members)
        .position(|(a, member)| a.member_id != member.id)
    {
        Some(index) => Err(Violation::MemberMismatch { index }),
        None => Ok(()),
    }
}

/// Per task: the member whose target set holds it, or `NONE`/`MANY`.
fn targets(input: &AssignmentInput<'_>, plan: &Plan) -> Result<Vec<u32>, Violation> {
    same_members(input, plan)?;
    let mut target = vec![NONE; input.tasks.len()];
    for (m, a) in plan.assignments.iter().enumerate() {
        for task in &a.assigned {
            let slot = target
                .get_mut(task.get())
                .ok_or(Violation::TaskOutOfRange { task: task.0 })?;
            *slot = if *slot == NONE { m as u32 } else { MANY };
        }
    }
    Ok(target)
}

/// Every task exactly once (assigned, held back or unplaced), only on eligible members, within
/// capacity, unplaced only for a true reason; every claimed task not kept is revoked.
pub fn coverage(input: &AssignmentInput<'_>, plan: &Plan) -> Result<(), Violation> {
    let tasks = input.tasks;
    let members = input.members;
    let target = targets(input, plan)?;
    let mut seen: Vec<u8> = target.iter().map(|&m| u8::from(m != NONE) * 2).collect();
    for (t, &m) in target.iter().enumerate() {
        if m == MANY {
            return Err(Violation::Duplicated { task: t as u32 });
        }
    }
    let others = plan.held_back.iter().map(|h| h.task);
    for task in others.chain(plan.unplaced.iter().map(|u| u.task)) {
        let slot = seen
            .get_mut(task.get())
            .ok_or(Violation::TaskOutOfRange { task: task.0 })?;
        *slot += 1;
    }
    for (t, &count) in seen.iter().enumerate() {
        match count {
            0 => return Err(Violation::Missing { task: t as u32 }),
            1 | 2 => {}
            _ => return Err(Violation::Duplicated { task: t as u32 }),
        }
    }
    let mut load = vec![0u64; members.len()];
    for (t, &m) in target.iter().enumerate() {
        if !is_member(m) {
            continue;
        }
        let member = &members[m as usize];
        if !member.kinds.can_run(tasks.kind_of(t)) {
            return Err(Violation::Ineligible {
                task: t as u32,
                member: member.id.clone(),
            });
        }
        load[m as usize] += u64::from(tasks.weight_of(t));
    }
    for (member, &load) in members.iter().zip(&load) {
        if let Some(capacity) = member.capacity.filter(|&c| load > c) {
            return Err(Violation::OverCapacity {
                member: member.id.clone(),
                load,
                capacity,
            });
        }
    }
    for u in &plan.unplaced {
        let t = u.task.get();
        let (kind, w) = (tasks.kind_of(t), u64::from(tasks.weight_of(t)));
        let could_take = members.iter().zip(&load).any(|(member, &load)| {
            member.kinds.can_run(kind)
                && (u.reason == UnplacedReason::NoEligibleMember
                    || member.capacity.is_none_or(|c| load + w <= c))
        });
        if could_take {
            return Err(Violation::WronglyUnplaced {
                task: u.task.0,
                reason: u.reason,
            });
        }
    }
    for (m, (a, member)) in plan.assignments.iter().zip(members).enumerate() {
        for task in &member.owned {
            if target.get(task.get()) != Some(&(m as u32)) && a.revoked.binary_search(task).is_err()
            {
                return Err(Violation::NotRevoked {
                    member: member.id.clone(),
                    task: task.0,
                });
            }
        }
    }
    Ok(())
}

/// Per kind: `max − min ≤` the kind's largest weight, over the members that can run it; the
/// minimum is taken over members with room for the kind's largest task.
pub fn balance(input: &AssignmentInput<'_>, plan: &Plan) -> Result<(), Violation> {
    let tasks = input.tasks;
    let members = input.members;
    let target = targets(input, plan)?;
    let mut total = vec![0u64; members.len()];
    for (t, &m) in target.iter().enumerate() {
        if is_member(m) {
            total[m as usize] += u64::from(tasks.weight_of(t));
        }
    }
    let mut load = vec![0u64; members.len()];
    for k in 0..tasks.kind_count() {
        let kind = KindIndex(k as u16);
        let bound = u64::from(tasks.max_weight(kind));
        load.iter_mut().for_each(|l| *l = 0);
        for task in tasks.tasks_of_kind(kind) {
            let m = target[task.get()];
            if is_member(m) {
                load[m as usize] += u64::from(tasks.weight_of(task.get()));
            }
        }
        let (mut max, mut min) = (None::<u64>, None::<u64>);
        for (m, member) in members.iter().enumerate() {
            if !member.kinds.can_run(kind) {
                continue;
            }
            max = Some(max.map_or(load[m], |x| x.max(load[m])));
            let room = member
                .capacity
                .map_or(u64::MAX, |c| c.saturating_sub(total[m]));
            if room >= bound {
                min = Some(min.map_or(load[m], |x| x.min(load[m])));
            }
        }
        if let (Some(max), Some(min)) = (max, min) {
            if max > min + bound {
                return Err(Violation::Unbalanced {
                    kind: kind.0,
                    max,
                    min,
                    bound,
                });
            }
        }
    }
    Ok(())
}

/// The cooperative rule: a member may be given a task it does not claim only if no other
/// member claims it (so nothing is revoked and reassigned in one round).
pub fn cooperative(input: &AssignmentInput<'_>, plan: &Plan) -> Result<(), Violation> {
    let members = input.members;
    let mut claimed = vec![NONE; input.tasks.len()];
    for (m, member) in members.iter().enumerate() {
        for task in &member.owned {
            if let Some(slot) = claimed.get_mut(task.get()) {
                *slot = if *slot == NONE || *slot == m as u32 {
                    m as u32
                } else {
                    MANY
                };
            }
        }
    }
    same_members(input, plan)?;
    for (m, a) in plan.assignments.iter().enumerate() {
        // The member's own claims, sorted, built only if it is given a task several claim.
        let mut own: Option<Vec<crate::TaskIndex>> = None;
        for task in &a.assigned {
            let c = *claimed
                .get(task.get())
                .ok_or(Violation::TaskOutOfRange { task: task.0 })?;
            if c == NONE || c == m as u32 {
                continue;
            }
            if c == MANY {
                let own = own.get_or_insert_with(|| {
                    let mut own = members[m].owned.clone();
                    own.sort_unstable();
                    own
                });
                if own.binary_search(task).is_ok() {
                    continue;
                }
            }
            let other = if c == MANY {
                members
                    .iter()
                    .enumerate()
                    .find(|(o, member)| *o != m && member.owned.contains(task))
                    .map(|(o, _)| o)
            } else {
                Some(c as usize)
            };
            if let Some(o) = other {
                return Err(Violation::GivenWhileClaimed {
                    task: task.0,
                    to: a.member_id.clone(),
                    claimed_by: members[o].id.clone(),
                });
            }
        }
    }
    Ok(())
}

/// [`cooperative`], first tried on the claims the assignor resolved from the same input:
/// `owner[t]` is [`prepare`]'s owner of task `t`. `NONE` there means no member claims the task,
/// and a member index means that member claims it, so a plan that gives each task only to its
/// resolved owner or to a task nobody claims keeps the rule: one lookup per assigned task,
/// without rebuilding the claims. Any other plan (it may still be valid: a task given to the
/// loser of a claim contest) goes through the full check, which gives the verdict.
pub(crate) fn cooperative_with_owners(
    input: &AssignmentInput<'_>,
    plan: &Plan,
    owner: &[u32],
) -> Result<(), Violation> {
    let resolved = owner.len() == input.tasks.len()
        && plan.assignments.len() == input.members.len()
        && plan
            .assignments
            .iter()
            .zip(input.members)
            .enumerate()
            .all(|(m, (a, member))| {
                a.member_id == member.id
                    && a.assigned.chunks(LANES).all(|block| {
                        let m = m as u32;
                        let fits = |o: u32| o == NONE || o == m;
                        // Consecutive tasks (the common case): one slice of owners at once.
                        match consecutive(block).and_then(|f| owner.get(f..f + block.len())) {
                            Some(owners) => owners.iter().fold(true, |ok, &o| ok & fits(o)),
                            None => block
                                .iter()
                                .all(|t| owner.get(t.get()).is_some_and(|&o| fits(o))),
                        }
                    })
            });
    if resolved {
        return Ok(());
    }
    cooperative(input, plan)
}

/// Per task, who holds it before the round: a present member (valid claim), `DOUBLE_CLAIM` /
/// `INELIGIBLE_CLAIM`, `ABSENT` (a departed previous owner), or `NONE`.
fn holders(input: &AssignmentInput<'_>) -> Result<Vec<u32>, Violation> {
    let p = prepare(input).map_err(|e| Violation::InvalidInput(e.to_string()))?;
    let mut holder = p.owner;
    if let Some(previous) = input.previous {
        for owner in &previous.owners {
            let id = &owner.member_id;
            if input.members.binary_search_by(|m| m.id.cmp(id)).is_ok() {
                continue;
            }
            for task in &owner.tasks {
                if let Some(slot) = holder.get_mut(task.get()).filter(|s| **s == NONE) {
                    *slot = ABSENT;
                }
            }
        }
    }
    Ok(holder)
}

/// Marker: held by a previous owner that is no longer a member.
const ABSENT: u32 = u32::MAX - 7;

/// The number of tasks the plan takes from their holder: held by a member and not in its
/// target set; or held by a departed owner or an invalid claim and now given to a member.
pub fn moves(input: &AssignmentInput<'_>, plan: &Plan) -> Result<usize, Violation> {
    let holder = holders(input)?;
    let target = targets(input, plan)?;
    Ok(holder
        .iter()
        .zip(&target)
        .filter(|&(&h, &t)| match h {
            NONE => false,
            DOUBLE_CLAIM | INELIGIBLE_CLAIM => true,
            ABSENT => is_member(t),
            h => h != t,
        })
        .count())
}

/// The fewest moves any balanced plan needs, when every weight is 1 and no member has a
/// capacity (else `None`): tasks of departed owners and invalid claims, plus, per kind, what
/// holders have above their share (`⌊T/n⌋`, one more for at most `T mod n` of them).
pub fn lower_bound_moves(input: &AssignmentInput<'_>) -> Result<Option<usize>, Violation> {
    let tasks = input.tasks;
    if tasks.is_weighted() || input.members.iter().any(|m| m.capacity.is_some()) {
        return Ok(None);
    }
    let holder = holders(input)?;
    let mut count = vec![0usize; input.members.len()];
    let mut bound = 0usize;
    for k in 0..tasks.kind_count() {
        let kind = KindIndex(k as u16);
        let eligible: Vec<usize> = (0..input.members.len())
            .filter(|&m| input.members[m].kinds.can_run(kind))
            .collect();
        let kind_tasks = tasks.tasks_of_kind(kind);
        for task in kind_tasks {
            match holder[task.get()] {
                NONE => {}
                DOUBLE_CLAIM | INELIGIBLE_CLAIM => bound += 1,
                ABSENT => bound += usize::from(!eligible.is_empty()),
                h => count[h as usize] += 1,
            }
        }
        if eligible.is_empty() {
            continue;
        }
        let floor = kind_tasks.len() / eligible.len();
        let extra = kind_tasks.len() % eligible.len();
        let above = eligible.iter().filter(|&&m| count[m] > floor).count();
        let surplus: usize = eligible
            .iter()
            .map(|&m| count[m].saturating_sub(floor))
            .sum();
        bound += surplus - extra.min(above);
        eligible.iter().for_each(|&m| count[m] = 0);
    }
    Ok(Some(bound))
}

/// Moves equal the lower bound (when it is defined: unit weights, no capacities).
pub fn minimal_moves(input: &AssignmentInput<'_>, plan: &Plan) -> Result<(), Violation> {
    let Some(lower_bound) = lower_bound_moves(input)? else {
        return Ok(());
    };
    let moves = moves(input, plan)?;
    if moves != lower_bound {
        return Err(Violation::TooManyMoves { moves, lower_bound });
    }
    Ok(())
}

/// Zero moves when the members already hold a complete, valid, balanced assignment.
pub fn stable(input: &AssignmentInput<'_>, plan: &Plan) -> Result<(), Violation> {
    let holder = holders(input)?;
    if holder.iter().any(|&h| !is_member(h)) {
        return Ok(());
    }
    let mut held: Vec<Vec<crate::TaskIndex>> = vec![Vec::new(); input.members.len()];
    for (t, &h) in holder.iter().enumerate() {
        held[h as usize].push(crate::TaskIndex(t as u32));
    }
    let as_held = Plan {
        assignments: input
            .members
            .iter()
            .zip(held)
            .map(|(member, assigned)| crate::MemberPlan {
                member_id: member.id.clone(),
                assigned,
                revoked: Vec::new(),
            })
            .collect(),
        ..Plan::default()
    };
    let duplicate_claims = input
        .members
        .iter()
        .enumerate()
        .any(|(m, member)| member.owned.len() != as_held.assignments[m].assigned.len());
    if duplicate_claims || coverage(input, &as_held).is_err() || balance(input, &as_held).is_err() {
        return Ok(());
    }
    let moves = moves(input, plan)?;
    if moves != 0 {
        return Err(Violation::MovedWhenStable { moves });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KindIndex, Kinds, MemberInput, MemberPlan, TaskIndex, TaskSet};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The check on resolved owners gives the full check's verdict, for plans that keep
        /// the rule (mostly: tasks go to their resolved owner) and plans that break it.
        #[test]
        fn check_on_resolved_owners_agrees_with_the_full_check(
            tasks in 1u32..20,
            specs in prop::collection::vec(
                (0i32..3, prop::collection::vec(0u32..20, 0..8), any::<bool>()),
                1..5,
            ),
            picks in prop::collection::vec((0u32..10, 0u32..5), 20),
        ) {
            let mut set = TaskSet::new();
            for t in 0..tasks {
                set.push(format!("t{t}"), if t % 4 == 0 { "b" } else { "a" }, 1).unwrap();
            }
            let members: Vec<MemberInput> = specs
                .iter()
                .enumerate()
                .map(|(i, (generation, claims, only_a))| {
                    let owned = claims.iter().map(|&t| TaskIndex(t % tasks)).collect();
                    let m = MemberInput::new(format!("m{i}")).with_owned(*generation, owned);
                    if *only_a { m.with_kinds(Kinds::Only(vec![KindIndex(0)])) } else { m }
                })
                .collect();
            let input = AssignmentInput::new(&set, &members);
            let owner = prepare(&input).unwrap().owner;
            let mut assigned = vec![Vec::new(); members.len()];
            for t in 0..tasks {
                let (how, to) = picks[t as usize];
                let o = owner[t as usize];
                let m = match how {
                    // To its resolved owner, or to a random member when nobody owns it.
                    0..6 if is_member(o) => Some(o as usize),
                    0..6 => Some(to as usize % members.len()),
                    // To anyone, or to no one.
                    6..8 => Some(to as usize % members.len()),
                    _ => None,
                };
                if let Some(m) = m {
                    assigned[m].push(TaskIndex(t));
                }
            }
            let plan = Plan {
                assignments: members
                    .iter()
                    .zip(assigned)
                    .map(|(member, assigned)| MemberPlan {
                        member_id: member.id.clone(),
                        assigned,
                        revoked: Vec::new(),
                    })
                    .collect(),
                ..Plan::default()
            };
            prop_assert_eq!(
                cooperative_with_owners(&input, &plan, &owner),
                cooperative(&input, &plan)
            );
        }
    }
}
