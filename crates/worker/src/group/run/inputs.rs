//! What the loop hands the reconciler: an assignment with its lease, decoded and checked.

use kroupier_coordinator::membership::{FencingToken, Generation};
use tokio::time::Instant;

use super::Loop;
use crate::group::reconciler::Assigned;
use crate::protocol::Assignment;

impl Loop {
    /// What the reconciler needs of the assignment of `generation` (SyncGroup's answer, its
    /// lease valid until `valid_until`): its lease, leader and assignor, and the decoded
    /// bytes.
    pub(super) fn assigned(
        &self,
        generation: &Generation,
        valid_until: Instant,
        bytes: &[u8],
    ) -> Assigned {
        let token = generation.token();
        let mut rejected = false;
        let assignment = if bytes.is_empty() {
            None
        } else {
            match Assignment::decode(bytes) {
                Ok(assignment) => {
                    self.protocol
                        .note_leader(&generation.leader_id, &assignment);
                    Some(self.checked(assignment, &token))
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
        Assigned {
            token,
            leader: generation.leader_id.clone(),
            eager: self.protocol.is_eager(&generation.protocol_name),
            assignment,
            valid_until,
            rejected,
            reads_compressed: crate::protocol::sender_reads_compressed(bytes),
        }
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
