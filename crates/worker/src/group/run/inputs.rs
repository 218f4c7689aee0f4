//! What the loop hands the reconciler: an assignment with its lease, decoded, and what this
//! worker knows about its tasks.

use kroupier_coordinator::membership::Generation;
use tokio::time::Instant;

use super::Loop;
use crate::group::check::Local;
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
                    Some(assignment)
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
        let local = assignment
            .as_ref()
            .map(|a| self.local(a))
            .unwrap_or_default();
        Assigned {
            token,
            local,
            leader: generation.leader_id.clone(),
            eager: self.protocol.is_eager(&generation.protocol_name),
            assignment,
            valid_until,
            rejected,
            reads_compressed: crate::protocol::sender_reads_compressed(bytes),
        }
    }

    /// What this worker knows about `assignment`'s tasks (the reconciler decides with it),
    /// and the unplaced tasks it reports, shown in the status.
    fn local(&self, assignment: &Assignment) -> Local {
        let desired = self.runtime.desired();
        let catalogue = &desired.catalogue;
        self.runtime
            .board()
            .set_unplaced(unplaced_reasons(assignment, catalogue));
        let missing = catalogue
            .missing(assignment.tasks.iter().map(String::as_str))
            .into_iter()
            .map(str::to_owned)
            .collect();
        // Looked up one by one: revocations are few, and this worker may hold 100,000 tasks.
        let supervisor = self.runtime.supervisor();
        let not_held = assignment
            .revoked
            .iter()
            .filter(|task| supervisor.granted(task).is_none())
            .cloned()
            .collect();
        Local {
            missing,
            not_held,
            offset: desired.offset,
            fingerprint: desired.fingerprint(),
        }
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
