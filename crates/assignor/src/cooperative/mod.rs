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
//! Every plan is checked with [`check::cooperative`](crate::check::cooperative) before it is
//! returned (unless [`CooperativeConfig::validate_plans`] is off).

mod state;

use std::collections::HashSet;
use std::time::Duration;

pub use state::{CooperativeConfig, CooperativeState};

use crate::assemble::assemble;
use crate::balance::place;
use crate::check;
use crate::prepare::{
    DOUBLE_CLAIM, EXCLUDED, INELIGIBLE_CLAIM, NONE, Prepared, is_member, prepare,
};
use crate::{
    AssignError, AssignmentInput, Assignor, HeldBack, HoldReason, Plan, PreviousOwner,
    RebalanceProtocol, TaskIndex,
};

/// The `cooperative` assignor (incremental cooperative, KIP-415).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cooperative {
    /// Its configuration.
    pub config: CooperativeConfig,
}

impl Cooperative {
    /// A cooperative assignor with this configuration.
    pub fn new(config: CooperativeConfig) -> Result<Self, AssignError> {
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

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignError> {
        self.config.validate()?;
        let p = prepare(input)?;
        let now = input.now;
        let mut state = input.state;
        let mut delay: Option<Duration> = None;
        let mut held: Vec<HeldBack> = Vec::new();
        let mut target: Vec<u32> = p
            .owner
            .iter()
            .map(|&o| if is_member(o) { o } else { NONE })
            .collect();

        // Lost tasks: owned last round by a member that is gone without a graceful leave.
        let lost = find_lost(input, &p, &mut target);
        let hold_lost = !lost.is_empty() && self.lost_must_wait(&mut state, now, &mut delay);
        if lost.is_empty() || !hold_lost {
            state.lost_deadline = None;
            for group in &lost {
                for task in &group.tasks {
                    target[task.get()] = NONE;
                }
            }
        }

        place(input, &p, &mut target);

        // Post-pass: never hand a task to a new owner while another member still claims it.
        let mut balancing: Vec<u32> = Vec::new();
        let mut safety_revocations = false;
        for (t, tg) in target.iter_mut().enumerate() {
            if *tg == EXCLUDED || !is_member(*tg) {
                continue;
            }
            match p.owner[t] {
                DOUBLE_CLAIM => {
                    *tg = EXCLUDED;
                    safety_revocations = true;
                    held.push(hold(t, HoldReason::DoubleClaim));
                }
                INELIGIBLE_CLAIM => {
                    *tg = EXCLUDED;
                    safety_revocations = true;
                    held.push(hold(t, HoldReason::Revoking));
                }
                o if is_member(o) && o != *tg => balancing.push(t as u32),
                _ => {}
            }
        }
        if !balancing.is_empty() {
            let allowed = !hold_lost && self.may_revoke(&mut state, now, &mut delay);
            for &t in &balancing {
                let t = t as usize;
                if allowed {
                    target[t] = EXCLUDED;
                    held.push(hold(t, HoldReason::Revoking));
                } else {
                    target[t] = p.owner[t];
                }
            }
            if allowed {
                state.revoking_rounds += 1;
                delay = Some(Duration::ZERO);
            }
        } else {
            state.revoking_rounds = 0;
            state.backoff_deadline = None;
        }
        if safety_revocations {
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
        held.sort_unstable_by_key(|h| h.task);

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
            check::cooperative(input, &plan).map_err(AssignError::InvalidPlan)?;
        }
        Ok(plan)
    }
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
    for owner in &previous.owners {
        let id = &owner.member_id;
        if graceful.contains(id.as_str()) || members.binary_search_by(|m| m.id.cmp(id)).is_ok() {
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
