//! `cooperative`: incremental cooperative rebalancing with Kafka Connect's KIP-415 semantics.
//!
//! The plan is the sticky plan, post-processed (as franz-go does for Kafka consumers):
//!
//! * a task that should move from one member to another is **revoked** from its owner and
//!   **held back**: it gets its new owner in the follow-up round, never in the same one;
//! * a task claimed by two members in the same generation is revoked from both and held back;
//! * the tasks of a **lost** member (gone without leaving gracefully) wait up to
//!   [`CooperativeConfig::lost_task_delay`] for it to return (0 = move now); during the wait
//!   nothing is revoked for balance. The tasks of a member that **left gracefully** move now;
//! * two balancing rounds in a row start an exponential **backoff**: revocations pause, and
//!   the plan asks for a rebalance when the pause ends.
//!
//! Every plan is checked with `check::cooperative` (feature `testing`) before it is
//! returned (unless [`CooperativeConfig::validate_plans`] is off).

mod state;

use std::collections::HashSet;
use std::time::Duration;

pub use state::{CooperativeConfig, CooperativeState};

use crate::assemble::assemble;
use crate::balance::{Mode, place};
use crate::check;
use crate::error::Repr;
use crate::prepare::{
    DOUBLE_CLAIM, EXCLUDED, INELIGIBLE_CLAIM, NO_CAPACITY, NONE, Prepared, is_member, prepare,
};
use crate::{
    AssignmentInput, Assignor, AssignorError, HeldBack, HoldReason, Plan, PreviousOwner,
    RebalanceProtocol, TaskIndex,
};

/// The `cooperative` assignor (incremental cooperative, KIP-415).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cooperative {
    /// Its configuration.
    pub(crate) config: CooperativeConfig,
}

impl Cooperative {
    /// A cooperative assignor with this configuration.
    pub fn new(config: CooperativeConfig) -> Result<Self, AssignorError> {
        config.validate()?;
        Ok(Self { config })
    }
}

impl Assignor for Cooperative {
    fn name(&self) -> &'static str {
        "cooperative"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Cooperative
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError> {
        self.config.validate()?;
        let p = prepare(input)?;
        let now = input.now;
        let mut state = input.state;
        let mut delay: Option<Duration> = None;
        let mut held: Vec<HeldBack> = Vec::new();
        let mut target = starting_targets(&p.owner, &[]);

        // Lost tasks: owned last round by a member that is gone without a graceful leave.
        let lost = find_lost(input, &p, &mut target);
        let hold_lost = !lost.is_empty() && self.lost_must_wait(&mut state, now, &mut delay);
        if !hold_lost {
            state.lost_deadline = None;
            for group in &lost {
                for task in &group.tasks {
                    target[task.get()] = NONE;
                }
            }
        }

        // The eager sticky plan, then: never hand a task to a new owner in the round it is
        // revoked. Balancing revocations wait while lost tasks wait, and during the backoff.
        place(input, &p, &mut target, Mode::Balance);
        let mut moving = moving_tasks(&p.owner, &target);
        let wanted = !moving.is_empty();
        let mut balancing = wanted;
        if wanted && (hold_lost || !self.may_revoke(&mut state, now, &mut delay)) {
            // From the starting point again: the valid claims, and the lost tasks that wait.
            target = starting_targets(&p.owner, if hold_lost { &lost } else { &[] });
            place(input, &p, &mut target, Mode::Keep);
            // What still moves does so because its owner lost capacity: revoke it regardless.
            moving = moving_tasks(&p.owner, &target);
            balancing = false;
        }
        for &t in &moving {
            target[t as usize] = EXCLUDED;
            held.push(hold(t as usize, HoldReason::Revoking));
        }
        // Invalid claims (placed like free tasks, so quotas count them): every claimant
        // revokes, and the task reaches its new owner in the follow-up round.
        let invalid = if p.invalid_claims { &p.owner[..] } else { &[] };
        for (t, &o) in invalid.iter().enumerate() {
            let reason = match o {
                DOUBLE_CLAIM => HoldReason::DoubleClaim,
                INELIGIBLE_CLAIM => HoldReason::Revoking,
                _ => continue,
            };
            if is_member(target[t]) {
                target[t] = EXCLUDED;
                held.push(hold(t, reason));
                moving.push(t as u32);
            }
        }
        if !moving.is_empty() {
            delay = Some(Duration::ZERO);
        }
        if balancing {
            state.revoking_rounds += 1;
        } else if !wanted {
            // Balanced without revoking: the storm, if any, is over.
            state.revoking_rounds = 0;
            state.backoff_deadline = None;
        }
        if p.capacity_limited && place_in_freed_room(input, &p.owner, &mut target, &mut held) {
            delay = Some(Duration::ZERO);
        }
        if hold_lost {
            for group in &lost {
                held.extend(
                    group
                        .tasks
                        .iter()
                        .map(|t| hold(t.get(), HoldReason::LostDelay)),
                );
            }
        }
        if !held.is_sorted_by_key(|h| h.task) {
            held.sort_unstable_by_key(|h| h.task);
        }

        let (assignments, unplaced) = assemble(input, &target);
        let plan = Plan {
            assignments,
            held_back: held,
            unplaced,
            lost: if hold_lost { lost } else { Vec::new() },
            rebalance_delay: delay,
            state,
        };
        if self.config.validate_plans {
            check::cooperative_with_owners(input, &plan, &p.owner)
                .map_err(|v| AssignorError(Repr::InvalidPlan(v)))?;
        }
        Ok(plan)
    }
}

/// Per task: its valid owner, else `NONE`; `EXCLUDED` for the tasks of `waiting`.
fn starting_targets(owner: &[u32], waiting: &[PreviousOwner]) -> Vec<u32> {
    let mut target: Vec<u32> = owner
        .iter()
        .map(|&o| if is_member(o) { o } else { NONE })
        .collect();
    for group in waiting {
        for task in &group.tasks {
            target[task.get()] = EXCLUDED;
        }
    }
    target
}

/// Tasks whose valid owner is not their target.
fn moving_tasks(owner: &[u32], target: &[u32]) -> Vec<u32> {
    // Block by block: most blocks have no moving task, and telling so for a whole block is
    // much cheaper than task by task.
    const BLOCK: usize = 256;
    let mut moving = Vec::new();
    for (b, (owners, targets)) in owner.chunks(BLOCK).zip(target.chunks(BLOCK)).enumerate() {
        // Nothing moves in a block whose targets equal its owners, or that no member owns.
        if owners == targets || owners.iter().fold(true, |free, &o| free & !is_member(o)) {
            continue;
        }
        let first = b * BLOCK;
        moving.extend(
            owners
                .iter()
                .zip(targets)
                .enumerate()
                .filter(|&(_, (&o, &t))| is_member(o) && t != EXCLUDED && t != o)
                .map(|(i, _)| (first + i) as u32),
        );
    }
    moving
}

/// Tasks left without room because held-back tasks were counted on their next owner: place
/// the unclaimed ones now where room is left (least loaded first); hold back the claimed ones
/// (then it returns true: a follow-up round is needed).
fn place_in_freed_room(
    input: &AssignmentInput<'_>,
    owner: &[u32],
    target: &mut [u32],
    held: &mut Vec<HeldBack>,
) -> bool {
    if !target.contains(&NO_CAPACITY) {
        return false;
    }
    let mut holding = false;
    let tasks = input.tasks;
    let members = input.members;
    let mut load = vec![0u64; members.len()];
    for (t, &m) in target.iter().enumerate() {
        if is_member(m) {
            load[m as usize] += u64::from(tasks.weight_of(t));
        }
    }
    let room = |m: usize, load: &[u64]| {
        members[m]
            .capacity
            .map_or(u64::MAX, |c| c.saturating_sub(load[m]))
    };
    // The most room any member has: tasks heavier than that are skipped without a scan.
    let mut most_room = (0..members.len())
        .map(|m| room(m, &load))
        .max()
        .unwrap_or(0);
    for t in 0..target.len() {
        if target[t] != NO_CAPACITY {
            continue;
        }
        let (kind, w) = (tasks.kind_of(t), u64::from(tasks.weight_of(t)));
        if w > most_room {
            continue;
        }
        let best = (0..members.len())
            .filter(|&m| {
                members[m].kinds.can_run(kind)
                    && members[m].capacity.is_none_or(|c| load[m] + w <= c)
            })
            .min_by_key(|&m| load[m]);
        match (best, owner[t]) {
            (None, _) => {}
            (Some(m), NONE) => {
                load[m] += w;
                target[t] = m as u32;
                most_room = (0..members.len())
                    .map(|m| room(m, &load))
                    .max()
                    .unwrap_or(0);
            }
            // Someone still runs it: it waits for the follow-up round.
            (Some(_), o) => {
                target[t] = EXCLUDED;
                holding = true;
                let reason = if o == DOUBLE_CLAIM {
                    HoldReason::DoubleClaim
                } else {
                    HoldReason::Revoking
                };
                held.push(hold(t, reason));
            }
        }
    }
    holding
}

impl Cooperative {
    /// Whether lost tasks wait this round; updates the deadline and the follow-up delay.
    fn lost_must_wait(
        &self,
        state: &mut CooperativeState,
        now: Duration,
        delay: &mut Option<Duration>,
    ) -> bool {
        let max = self.config.lost_task_delay;
        if max.is_zero() {
            return false;
        }
        let deadline = match state.lost_deadline {
            Some(deadline) if now >= deadline => return false,
            Some(deadline) => deadline.min(now.saturating_add(max)),
            None => now.saturating_add(max),
        };
        state.lost_deadline = Some(deadline);
        *delay = min_delay(*delay, deadline.saturating_sub(now));
        true
    }

    /// Whether balancing revocations may happen this round (the storm backoff).
    fn may_revoke(
        &self,
        state: &mut CooperativeState,
        now: Duration,
        delay: &mut Option<Duration>,
    ) -> bool {
        if state.revoking_rounds == 0 {
            return true;
        }
        match state.backoff_deadline {
            Some(deadline) if now >= deadline => {
                state.backoff_deadline = None;
                true
            }
            Some(deadline) => {
                *delay = min_delay(*delay, deadline.saturating_sub(now));
                false
            }
            None => {
                let pause = self.config.backoff(state.revoking_rounds);
                state.backoff_deadline = Some(now.saturating_add(pause));
                *delay = min_delay(*delay, pause);
                false
            }
        }
    }
}

fn hold(task: usize, reason: HoldReason) -> HeldBack {
    HeldBack {
        task: TaskIndex(task as u32),
        reason,
    }
}

fn min_delay(current: Option<Duration>, new: Duration) -> Option<Duration> {
    Some(current.map_or(new, |c| c.min(new)))
}

/// The tasks nobody claims whose previous owner is gone without a graceful leave, grouped by
/// that owner; marks them `EXCLUDED` in `target`.
fn find_lost(input: &AssignmentInput<'_>, p: &Prepared, target: &mut [u32]) -> Vec<PreviousOwner> {
    let Some(previous) = input.previous else {
        return Vec::new();
    };
    let graceful: HashSet<&str> = input.left_gracefully.iter().map(|m| m.as_str()).collect();
    let members = input.members;
    let mut lost = Vec::new();
    // Previous owners usually come in the members' order: try the member after the last one
    // found before searching.
    let mut next = 0usize;
    for owner in &previous.owners {
        let id = &owner.member_id;
        let found = if members.get(next).is_some_and(|m| m.id == *id) {
            Some(next)
        } else {
            members.binary_search_by(|m| m.id.cmp(id)).ok()
        };
        if let Some(m) = found {
            next = m + 1;
            continue;
        }
        if graceful.contains(id.as_str()) {
            continue;
        }
        let tasks: Vec<TaskIndex> = owner
            .tasks
            .iter()
            .copied()
            .filter(|t| {
                let slot = target.get_mut(t.get());
                match slot {
                    Some(v) if *v == NONE && p.owner[t.get()] == NONE => {
                        *v = EXCLUDED;
                        true
                    }
                    _ => false,
                }
            })
            .collect();
        if !tasks.is_empty() {
            lost.push(PreviousOwner {
                member_id: id.clone(),
                tasks,
            });
        }
    }
    lost
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Block by block, the moving tasks are those a task-by-task filter finds.
        #[test]
        fn moving_tasks_match_the_filter(
            runs in prop::collection::vec((0u32..8, 0u32..8, 1usize..300), 0..12),
        ) {
            // 0..4: members; 4: NONE; 5: DOUBLE_CLAIM; 6: EXCLUDED; 7: the owner itself.
            let value = |v: u32| match v {
                0..4 => v,
                4 => NONE,
                5 => DOUBLE_CLAIM,
                _ => EXCLUDED,
            };
            let mut owner = Vec::new();
            let mut target = Vec::new();
            for &(o, t, len) in &runs {
                let o = value(o);
                let t = if t == 7 { o } else { value(t) };
                owner.extend(std::iter::repeat_n(o, len));
                target.extend(std::iter::repeat_n(t, len));
            }
            let expected: Vec<u32> = (0..owner.len() as u32)
                .filter(|&i| {
                    let (o, t) = (owner[i as usize], target[i as usize]);
                    is_member(o) && t != EXCLUDED && t != o
                })
                .collect();
            prop_assert_eq!(moving_tasks(&owner, &target), expected);
        }
    }
}
