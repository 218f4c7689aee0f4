//! The seam between the group member and the supervisor.
//!
//! The group driver (built on `kroupier-coordinator`) turns the member's events into calls here:
//!
//! | Member event | Call |
//! |---|---|
//! | a rebalance starts (`Revoked`) | [`Runtime::rebalance_started`]; with an eager assignor also [`Runtime::revoke_all`] before rejoining |
//! | SyncGroup gave an assignment (`Assigned`) | [`Runtime::apply`] with an [`AssignmentChange`]; rejoin only once its future completes |
//! | a heartbeat succeeded (new lease) | [`Runtime::extend_lease`] |
//! | `Lost` / `Fenced` | [`Runtime::lost`] with the deadline by which all work must stop |
//! | SIGTERM, before LeaveGroup | [`Runtime::shutdown`] |
//! | next JoinGroup | [`Runtime::metadata`] for the member metadata bytes |
//!
//! Every call takes effect at once (leases fail, tasks are cancelled or started, the status board
//! changes) and returns a `'static` future that only waits for the stops. So the membership's
//! synchronous callbacks (`on_assigned`, `on_revoked`, `on_lost`) can call it and hand the wait
//! to the driver, which rejoins only once it completes.
//!
//! The runtime never talks to Kafka. Clock values are `tokio::time::Instant`s; a driver holding
//! `std::time::Instant`s converts with `tokio::time::Instant::from_std`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::time::Instant;

use crate::context::{FencingToken, Lease};
use crate::protocol::MemberMetadata;
use crate::status::{GroupView, StatusBoard, TaskState};
use crate::supervisor::{StartOutcome, StopReport, Supervisor};

/// "Run this set, revoke that set, in generation G, with a lease valid until T."
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignmentChange {
    /// The fencing token of the new generation (generation id, this member's id).
    pub token: FencingToken,
    /// The leader's member id.
    pub leader: String,
    /// The self-fencing deadline the membership reported with this generation.
    pub valid_until: Instant,
    /// The full target set: every task this worker should run in this generation.
    pub run: BTreeSet<String>,
    /// Tasks to stop now (a task held but missing from `run` is stopped too).
    pub revoke: BTreeSet<String>,
    /// The leader's catalogue fingerprint, when the assignment carried one.
    pub leader_catalogue_fingerprint: Option<u64>,
}

impl AssignmentChange {
    /// The change a decoded [`Assignment`] asks for, for this member.
    #[cfg(test)]
    pub fn from_assignment(
        assignment: &crate::protocol::Assignment,
        member_id: &str,
        valid_until: Instant,
    ) -> Self {
        AssignmentChange {
            token: FencingToken::new(assignment.generation, member_id),
            leader: assignment.leader.clone(),
            valid_until,
            run: assignment.tasks.clone(),
            revoke: assignment.revoked.clone(),
            leader_catalogue_fingerprint: Some(assignment.catalogue_fingerprint),
        }
    }
}

/// What [`Runtime::apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Tasks started by this change.
    pub started: Vec<String>,
    /// Tasks that kept running untouched.
    pub kept: Vec<String>,
    /// How the revoked tasks stopped.
    pub stopped: StopReport,
    /// Assigned tasks not started because an earlier run on this worker has not ended yet
    /// (stuck in blocking code after its abort); started by a later assignment once it ends.
    pub still_stopping: Vec<String>,
}

/// Applies assignment changes through the [`Supervisor`] and keeps the [`StatusBoard`] current.
#[derive(Debug)]
pub struct Runtime {
    supervisor: Arc<Supervisor>,
    board: StatusBoard,
    worker_id: String,
    kinds: BTreeSet<String>,
    capacity: Option<u64>,
    rack: Option<String>,
    assigned_once: AtomicBool,
}

impl Runtime {
    /// A runtime for `worker_id` that advertises `kinds`.
    pub fn new(
        supervisor: Arc<Supervisor>,
        board: StatusBoard,
        worker_id: impl Into<String>,
        kinds: BTreeSet<String>,
    ) -> Self {
        Runtime {
            supervisor,
            board,
            worker_id: worker_id.into(),
            kinds,
            capacity: None,
            rack: None,
            assigned_once: AtomicBool::new(false),
        }
    }

    /// Adds capacity and rack to the metadata this runtime advertises.
    pub fn with_placement(mut self, capacity: Option<u64>, rack: Option<String>) -> Self {
        self.capacity = capacity;
        self.rack = rack;
        self
    }

    /// The supervisor.
    pub fn supervisor(&self) -> &Arc<Supervisor> {
        &self.supervisor
    }

    /// The status board.
    pub fn board(&self) -> &StatusBoard {
        &self.board
    }

    /// The status API over this runtime's board, with restart requests enabled (the routes:
    /// [`status`](crate::status)); serve it with `axum::serve`.
    pub fn status_router(&self) -> axum::Router {
        crate::status::http::router(self.board.clone(), Some(self.supervisor.clone()))
    }

    /// A rebalance started: status shows `rebalancing: true` over the last stable view.
    pub fn rebalance_started(&self) {
        self.board.rebalance_started();
    }

    /// The tasks this worker holds, with the generation each was granted in.
    pub fn owned(&self) -> BTreeMap<String, i32> {
        self.supervisor
            .held()
            .into_iter()
            .filter_map(|id| {
                let granted = self.supervisor.granted(&id)?;
                Some((id, granted.generation_id))
            })
            .collect()
    }

    /// The member metadata for the next JoinGroup.
    pub fn metadata(&self) -> MemberMetadata {
        let mut metadata = MemberMetadata::new(self.worker_id.clone());
        metadata.owned = self.owned();
        metadata.kinds = self.kinds.clone();
        metadata.catalogue_fingerprint = self.supervisor.catalogue().fingerprint();
        metadata.capacity = self.capacity;
        metadata.rack = self.rack.clone();
        metadata
    }

    /// Applies a new assignment.
    ///
    /// At the call: revoked tasks (and held tasks missing from the target set) are cancelled, so
    /// their lease checks fail from this instant; the lease moves to the new generation; new
    /// tasks start; the status board shows the new generation. The returned future completes
    /// once the revocations are done (within the graceful stop timeout plus the abort timeout):
    /// only then may the member rejoin. Must be called within a tokio runtime; callable from the
    /// membership's synchronous callbacks.
    ///
    /// # Cancel safety
    ///
    /// The rest of the work (waiting for stops, restarting tasks re-granted under a new member
    /// id) runs in its own tokio task; dropping the returned future only stops waiting.
    pub fn apply(
        &self,
        change: AssignmentChange,
    ) -> impl Future<Output = ApplyReport> + Send + 'static {
        let member_id = change.token.member_id.clone();
        let held = self.supervisor.held();
        // Held under an older membership (another member id): their lease checks fail; they are
        // stopped and, if still assigned, started again under the new token.
        let stale: BTreeSet<String> = held
            .iter()
            .filter(|id| {
                self.supervisor
                    .granted(id)
                    .is_some_and(|granted| granted.member_id != member_id)
            })
            .cloned()
            .collect();
        let to_stop: BTreeSet<String> = held
            .iter()
            .filter(|id| {
                change.revoke.contains(*id) || !change.run.contains(*id) || stale.contains(*id)
            })
            .cloned()
            .collect();
        let stopping = self.supervisor.revoke(&to_stop);
        self.supervisor.set_member_lease(Lease {
            token: change.token.clone(),
            valid_until: change.valid_until.into_std(),
        });

        let mut report = ApplyReport::default();
        let mut regranted = Vec::new();
        for id in change.run.iter().filter(|id| !change.revoke.contains(*id)) {
            if stale.contains(id) {
                regranted.push(id.clone());
                continue;
            }
            match self.supervisor.start(id, change.token.clone()) {
                StartOutcome::Started => report.started.push(id.clone()),
                StartOutcome::StillStopping => report.still_stopping.push(id.clone()),
                _ => report.kept.push(id.clone()),
            }
        }
        self.complete_rebalance(&change, !report.started.is_empty() || !regranted.is_empty());

        let supervisor = self.supervisor.clone();
        let token = change.token;
        let tail = tokio::spawn(async move {
            report.stopped = stopping.await;
            for id in regranted {
                match supervisor.start(&id, token.clone()) {
                    StartOutcome::Started => report.started.push(id),
                    StartOutcome::StillStopping => report.still_stopping.push(id),
                    _ => {}
                }
            }
            report.started.sort();
            if !report.still_stopping.is_empty() {
                tracing::error!(
                    tasks = ?report.still_stopping,
                    "assigned tasks not started: an earlier run has not ended after its abort"
                );
            }
            tracing::info!(
                generation = token.generation_id,
                started = report.started.len(),
                kept = report.kept.len(),
                stopped = report.stopped.graceful.len() + report.stopped.aborted.len(),
                "assignment applied"
            );
            report
        });
        async move {
            tail.await.unwrap_or_else(|error| {
                tracing::error!(%error, "applying the assignment panicked");
                ApplyReport::default()
            })
        }
    }

    /// Publishes the new generation on the status board.
    fn complete_rebalance(&self, change: &AssignmentChange, gained_tasks: bool) {
        let own = self.supervisor.catalogue().fingerprint();
        let leader_fingerprint = change.leader_catalogue_fingerprint;
        let mismatch = leader_fingerprint.is_some_and(|leader| leader != own);
        if mismatch {
            tracing::warn!(
                own = format_args!("{own:016x}"),
                leader = ?leader_fingerprint.map(|f| format!("{f:016x}")),
                "this worker's catalogue differs from the leader's; give all workers the same \
                 catalogue"
            );
        }
        let first = !self.assigned_once.swap(true, Ordering::AcqRel);
        if !first && gained_tasks {
            self.board.record_failover();
        }
        self.board.rebalance_completed(GroupView {
            member_id: Some(change.token.member_id.to_string()),
            generation: Some(change.token.generation_id),
            leader: Some(change.leader.clone()),
            leader_catalogue_fingerprint: leader_fingerprint.map(|f| format!("{f:016x}")),
            catalogue_mismatch: mismatch,
        });
    }

    /// Stops `task_ids` (cancelled at the call), within the graceful stop timeout plus the abort
    /// timeout. For protocols that revoke outside an assignment.
    #[cfg(test)]
    pub fn revoke(
        &self,
        task_ids: &BTreeSet<String>,
    ) -> impl Future<Output = StopReport> + Send + 'static {
        self.supervisor.revoke(task_ids)
    }

    /// Stops every task (cancelled at the call) before rejoining, as Kafka's eager protocol does
    /// (`onPartitionsRevoked` of everything). Needed with assignors that may move a task within
    /// one generation; the cooperative assignor never does, so it needs no call here.
    pub fn revoke_all(&self) -> impl Future<Output = StopReport> + Send + 'static {
        self.supervisor.revoke(self.supervisor.held())
    }

    /// A heartbeat succeeded: the lease holds until `valid_until`. Held tasks that stopped
    /// themselves on the expired lease of this same membership run again.
    pub fn extend_lease(&self, valid_until: Instant) {
        self.supervisor.extend_lease(valid_until);
        let current = self.supervisor.member_lease().token;
        for id in self.supervisor.held() {
            if self.board.tasks().state(&id) != Some(TaskState::Stopped) {
                continue;
            }
            match self.supervisor.granted(&id) {
                Some(granted) if granted.member_id == current.member_id => {
                    tracing::info!(task = %id, "lease valid again; task resumes");
                    self.supervisor.start(&id, granted);
                }
                _ => {}
            }
        }
    }

    /// The membership is lost (self-fenced, reset, or fenced): at the call every lease check
    /// starts failing and every task is cancelled; the future completes once all are stopped,
    /// by `deadline` (the instant the group may hand the tasks to others).
    pub fn lost(&self, deadline: Instant) -> impl Future<Output = StopReport> + Send + 'static {
        self.supervisor.extend_lease(Instant::now());
        let stopping = self
            .supervisor
            .revoke_within(self.supervisor.held(), deadline);
        async move {
            let report = stopping.await;
            tracing::warn!(
                aborted = report.aborted.len(),
                unresponsive = report.unresponsive.len(),
                "membership lost; all tasks stopped"
            );
            report
        }
    }

    /// Stops every task for shutdown (cancelled at the call), by `deadline`; then send
    /// LeaveGroup.
    pub fn shutdown(&self, deadline: Instant) -> impl Future<Output = StopReport> + Send + 'static {
        self.board.set_shutting_down();
        self.supervisor.stop_all(deadline)
    }
}

#[cfg(test)]
mod tests;
