//! The reconciler's decisions about an assignment before it applies it: what of it this worker
//! runs (given what its catalogue has and what it holds), and the wait for its view of the task
//! store to reach the offset the leader assigned from.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;

use crate::lease::FencingToken;
use crate::protocol::Assignment;

/// What the worker knows locally when an assignment arrives, read by the loop (no decision in
/// it): the reconciler decides with it what the assignment may ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Local {
    /// Assigned tasks this worker's catalogue does not have.
    pub(crate) missing: BTreeSet<String>,
    /// Revoked tasks this worker does not hold.
    pub(crate) not_held: BTreeSet<String>,
    /// This worker's task store offset, if it reads a store.
    pub(crate) offset: Option<i64>,
    /// This worker's catalogue fingerprint at that offset.
    pub(crate) fingerprint: u64,
}

/// A wait for this worker's view of the store to reach the offset an assignment was computed
/// from: the assigned tasks it does not know yet start once it does. Bounded by the rebalance
/// timeout, after which the wait is reported (the tasks still start if the view gets there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CatchUp {
    /// The leader's offset.
    pub(crate) offset: i64,
    /// When the wait began.
    pub(crate) since: Instant,
    /// When it is overdue.
    pub(crate) deadline: Instant,
}

/// Drops what no leader may ask of this worker, with a logged reason: tasks its catalogue does
/// not have (a leader with another catalogue, or a broken one) and tasks both to run and to
/// revoke (the revocation wins); and revocations of tasks it does not run, which ask nothing
/// of it (and must not start a follow-up round that a leader repeating itself would turn into
/// a loop). The rest of the assignment stands.
///
/// Tasks it does not have are kept when the leader assigned from a task store offset this
/// worker has not read yet: they start once its view brings them; the offset to wait for is
/// returned.
pub(crate) fn check(
    mut assignment: Assignment,
    token: &FencingToken,
    local: &Local,
) -> (Assignment, Option<i64>) {
    let behind = match (assignment.store_offset, local.offset) {
        (Some(leader), Some(own)) => leader > own,
        _ => false,
    };
    if assignment.store_offset != local.offset {
        // The leader assigned from another point of the task store than this worker's view:
        // their catalogues differ for now, which is not a mismatch to report.
        assignment.catalogue_fingerprint = local.fingerprint;
    }
    let mut wait = None;
    let unknown: Vec<String> = if behind && !local.missing.is_empty() {
        wait = assignment.store_offset;
        tracing::info!(
            generation = token.generation_id,
            leader_offset = ?assignment.store_offset,
            own_offset = ?local.offset,
            tasks = ?local.missing,
            "the leader assigned tasks from further in the task store than this worker has \
             read; they start once its view catches up"
        );
        Vec::new()
    } else {
        local.missing.iter().cloned().collect()
    };
    let both: Vec<String> = assignment
        .tasks
        .intersection(&assignment.revoked)
        .cloned()
        .collect();
    for (tasks, why) in [
        (
            unknown,
            "the leader assigned tasks this worker's catalogue does not have; not starting them",
        ),
        (
            both,
            "the leader both assigned and revoked these tasks; stopping them",
        ),
    ] {
        if tasks.is_empty() {
            continue;
        }
        tracing::error!(generation = token.generation_id, ?tasks, "{why}");
        for task in &tasks {
            assignment.tasks.remove(task);
            assignment.lost.remove(task);
        }
    }
    assignment
        .revoked
        .retain(|task| !local.not_held.contains(task));
    if assignment.generation != token.generation_id {
        tracing::warn!(
            sync_group = token.generation_id,
            assignment = assignment.generation,
            "the assignment names another generation than SyncGroup's; SyncGroup's is used"
        );
    }
    (assignment, wait)
}

/// The catch-up wait `current` extended to `offset` (a later assignment from further still
/// keeps the first one's start), overdue `bound` after it began.
pub(crate) fn wait_for(
    current: Option<CatchUp>,
    now: Instant,
    offset: i64,
    bound: Duration,
) -> CatchUp {
    let since = current.map_or(now, |w| w.since);
    CatchUp {
        offset: current.map_or(offset, |w| w.offset.max(offset)),
        since,
        deadline: since + bound,
    }
}
