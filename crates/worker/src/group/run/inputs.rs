//! What the loop hands the reconciler: an assignment with its lease, checked; and the member's
//! current status when the loop fell behind its events.

use std::time::Duration;

use kroupier_coordinator::driver::MemberStatus;
use kroupier_coordinator::membership::{FencingToken, Lease, MemberState};
use tokio::time::Instant;

use super::{Loop, Stops};
use crate::group::reconciler::{Assigned, Reconciler};
use crate::protocol::Assignment;

impl Loop {
    /// The loop missed events: catch up from the member's current status.
    pub(super) async fn lagged(&self, reconciler: &mut Reconciler, stops: &mut Stops) {
        let now = self.member.current();
        // A revocation whose rejoin waits for this loop may be among the skipped events.
        let join_held = now.join_held;
        if join_held.is_some() && stops.stopping.is_none() {
            stops.stopping = self.protocol.take_revocation();
        }
        // So may an assignment: the current one is applied if it was not.
        let current = match (now.state, now.generation.as_ref(), now.assignment.as_ref()) {
            (MemberState::Stable, Some(generation), Some(bytes)) => {
                self.assigned(&generation.token(), bytes).await
            }
            _ => None,
        };
        reconciler.handle_lagged(Instant::now(), join_held, stops.stopping.is_some(), current);
    }

    /// What the reconciler needs of an assignment: its lease, leader and assignor, and the
    /// decoded bytes; `None` if the assignment is already stale.
    pub(super) async fn assigned(&self, token: &FencingToken, bytes: &[u8]) -> Option<Assigned> {
        let Some((lease, leader, protocol)) = self.lease_for(token).await else {
            tracing::debug!(
                generation = token.generation_id,
                "assignment superseded before it applied"
            );
            return None;
        };
        let mut rejected = false;
        let assignment = if bytes.is_empty() {
            None
        } else {
            match Assignment::decode(bytes) {
                Ok(assignment) => {
                    self.protocol.note_leader(&leader, &assignment);
                    Some(self.checked(assignment, token))
                }
                Err(error) => {
                    tracing::error!(
                        %error,
                        "the leader's assignment does not decode; running nothing and rejoining"
                    );
                    rejected = true;
                    None
                }
            }
        };
        Some(Assigned {
            token: token.clone(),
            leader,
            eager: self.protocol.is_eager(&protocol),
            assignment,
            valid_until: Instant::from_std(lease.valid_until),
            rejected,
        })
    }

    /// Drops what no leader may ask of this worker, with a logged reason: tasks its catalogue
    /// does not have (a leader with another catalogue, or a broken one) and tasks both to run
    /// and to revoke (the revocation wins); and revocations of tasks it does not run. The rest
    /// of the assignment stands.
    ///
    /// Tasks it does not have are kept when the leader assigned from a task store offset this
    /// worker has not read yet: they start once its view brings them (see
    /// `Runtime::apply_desired`).
    pub(super) fn checked(&self, mut assignment: Assignment, token: &FencingToken) -> Assignment {
        let desired = self.runtime.desired();
        let catalogue = &desired.catalogue;
        self.runtime
            .board()
            .set_unplaced(unplaced_reasons(&assignment, catalogue));
        let unknown: Vec<String> = catalogue
            .missing(assignment.tasks.iter().map(String::as_str))
            .into_iter()
            .map(str::to_owned)
            .collect();
        let behind = match (assignment.store_offset, desired.offset) {
            (Some(leader), Some(own)) => leader > own,
            _ => false,
        };
        if assignment.store_offset != desired.offset {
            // The leader assigned from another point of the task store than this worker's
            // view: their catalogues differ for now, which is not a mismatch to report.
            assignment.catalogue_fingerprint = desired.fingerprint();
        }
        let unknown = if behind && !unknown.is_empty() {
            if let Some(offset) = assignment.store_offset {
                self.await_store_offset(offset);
            }
            tracing::info!(
                generation = token.generation_id,
                leader_offset = ?assignment.store_offset,
                own_offset = ?desired.offset,
                tasks = ?unknown,
                "the leader assigned tasks from further in the task store than this worker has \
                 read; they start once its view catches up"
            );
            Vec::new()
        } else {
            unknown
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
        // A revocation of a task this worker does not run asks nothing of it (and must not
        // start a follow-up round that a leader repeating itself would turn into a loop).
        // Looked up one by one: revocations are few, and this worker may hold 100,000 tasks.
        let supervisor = self.runtime.supervisor();
        assignment
            .revoked
            .retain(|task| supervisor.granted(task).is_some());
        if assignment.generation != token.generation_id {
            tracing::warn!(
                sync_group = token.generation_id,
                assignment = assignment.generation,
                "the assignment names another generation than SyncGroup's; SyncGroup's is used"
            );
        }
        assignment
    }

    /// Waits (briefly) until the member's status shows the lease of `token`; with the leader's
    /// member id and the protocol (assignor) the group selected.
    pub(super) async fn lease_for(&self, token: &FencingToken) -> Option<(Lease, String, String)> {
        let mut status = self.member.status();
        let settled = |s: &MemberStatus| {
            s.stopped
                || s.lease.as_ref().is_some_and(|l| &l.token == token)
                || s.generation
                    .as_ref()
                    .is_some_and(|g| g.generation_id > token.generation_id)
                || (s.lease.is_none() && s.generation.is_none())
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), status.wait_for(settled)).await;
        let s = status.borrow();
        let lease = s.lease.clone().filter(|l| &l.token == token)?;
        let generation = s
            .generation
            .as_ref()
            .filter(|g| g.generation_id == token.generation_id);
        let leader = generation.map(|g| g.leader_id.clone()).unwrap_or_default();
        let protocol = generation
            .map(|g| g.protocol_name.clone())
            .unwrap_or_default();
        Some((lease, leader, protocol))
    }
}

/// The tasks `assignment` reports unplaced, with a reason for people: what the leader's code
/// means, with the task's kind when this worker's catalogue has it.
fn unplaced_reasons(
    assignment: &Assignment,
    catalogue: &crate::Catalogue,
) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for (code, tasks) in &assignment.unplaced {
        for task in tasks {
            let kind = catalogue
                .get(task)
                .map_or_else(|| "its kind".to_owned(), |s| format!("kind `{}`", s.kind));
            let reason = match code.as_str() {
                "no_eligible_member" => {
                    format!("no worker of the group registers {kind}; start a worker that does")
                }
                "no_capacity" => format!(
                    "every worker that registers {kind} is too full for its weight; add capacity \
                     or workers"
                ),
                other => format!("the leader left it unplaced ({other})"),
            };
            out.insert(task.clone(), reason);
        }
    }
    out
}
