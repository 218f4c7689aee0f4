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
//! changes) and returns a `'static` future that only waits for the stops. So the worker loop,
//! taking in the member's events, calls it without waiting and awaits the stop where it must:
//! the member rejoins (the join gate) only once it completes.
//!
//! The runtime never talks to Kafka. Clock values are `tokio::time::Instant`s; a driver holding
//! `std::time::Instant`s converts with `tokio::time::Instant::from_std`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use tokio::time::Instant;

use crate::lease::{FencingToken, Lease};
use crate::protocol::MemberMetadata;
use crate::status::{GroupView, StatusBoard};
use crate::supervisor::{StartOutcome, StopReport, Supervisor};
use desired::{Changes, Desired};
pub(crate) use plan::started_and_stopped;
use plan::{Plan, Run};

pub(crate) mod desired;
mod plan;

/// "Run this set, revoke that set, in generation G, with a lease valid until T."
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AssignmentChange {
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
    pub(crate) fn from_assignment(
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
pub(crate) struct ApplyReport {
    /// Tasks started by this change.
    pub started: Vec<String>,
    /// Tasks that kept running untouched (the supervisor's copies of their ids).
    pub kept: Vec<Arc<str>>,
    /// How the revoked tasks stopped.
    pub stopped: StopReport,
    /// Assigned tasks not started because an earlier run on this worker has not ended yet
    /// (stuck in blocking code after its abort); started by a later assignment once it ends.
    pub still_stopping: Vec<String>,
}

/// What [`Runtime::apply_desired`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DesiredApplied {
    /// Held tasks deleted from the store, stopped.
    pub(crate) stopped: Vec<String>,
    /// Held tasks restarted (paused, resumed, reconfigured, restart requested).
    pub(crate) restarted: Vec<String>,
    /// Assigned tasks that arrived in the store's view, started.
    pub(crate) started: Vec<String>,
}

/// Applies assignment changes through the [`Supervisor`] and keeps the [`StatusBoard`] current.
#[derive(Debug)]
pub(crate) struct Runtime {
    supervisor: Arc<Supervisor>,
    board: StatusBoard,
    worker_id: String,
    kinds: BTreeSet<String>,
    capacity: Option<u64>,
    rack: Option<String>,
    assigned_once: AtomicBool,
    /// The tasks the last applied assignment asks this worker to run: a task restarted for a
    /// change in the task store starts again only if it is still among them.
    assigned: Arc<Mutex<Assigned>>,
    /// Tasks stopped to be restarted for a task store change, with the generation they were
    /// granted in: still claimed in the metadata while they stop, so that a rebalance meanwhile
    /// keeps them here instead of starting them elsewhere before this run has ended.
    restarting: Arc<Mutex<BTreeMap<String, i32>>>,
    /// The effective catalogue with every task's desired state (code and task store).
    desired: SharedDesired,
}

/// The effective catalogue, shared with its readers (the status API's `/tasks`): the runtime
/// sets it, readers take the latest. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedDesired(Arc<RwLock<Arc<Desired>>>);

impl SharedDesired {
    /// The catalogue as last set.
    pub(crate) fn get(&self) -> Arc<Desired> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, desired: Arc<Desired>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = desired;
    }
}

impl Runtime {
    /// A runtime for `worker_id` that advertises `kinds`.
    pub(crate) fn new(
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
            assigned: Arc::default(),
            restarting: Arc::default(),
            desired: SharedDesired::default(),
        }
        .with_desired_from_catalogue()
    }

    fn with_desired_from_catalogue(self) -> Self {
        let code = self.supervisor.catalogue();
        self.publish_desired(Arc::new(Desired::from_code(&code)));
        self
    }

    /// Makes `desired` the effective catalogue, and its fingerprint the one the status shows.
    fn publish_desired(&self, desired: Arc<Desired>) {
        self.board.set_catalogue_fingerprint(desired.clone());
        self.desired.set(desired);
    }

    /// The effective catalogue and every task's desired state.
    pub(crate) fn desired(&self) -> Arc<Desired> {
        self.desired.get()
    }

    /// The effective catalogue as its readers follow it.
    pub(crate) fn shared_desired(&self) -> SharedDesired {
        self.desired.clone()
    }

    /// Installs a new effective catalogue (the task store moved) and returns what changed.
    /// Runs already started keep their spec: the caller acts on the changes with
    /// [`apply_desired`](Self::apply_desired).
    pub(crate) fn set_desired(&self, desired: Desired) -> Changes {
        let old = self.desired();
        let changes = desired.changes_since(&old);
        self.supervisor
            .set_catalogue(desired.catalogue.clone(), desired.paused());
        self.publish_desired(Arc::new(desired));
        changes
    }

    /// What the owner does about `changes`, without a rebalance: held tasks that were deleted
    /// stop at once; held tasks that were paused, resumed, reconfigured or asked to restart
    /// are stopped and started again with their new spec and state (a paused one as `PAUSED`),
    /// still under the generation they were granted in. Other tasks are not touched.
    ///
    /// Tasks assigned here before this worker's view of the store had them start now.
    ///
    /// Returns what it did. The stops run in their own tokio tasks.
    pub(crate) fn apply_desired(&self, changes: &Changes) -> DesiredApplied {
        let held: BTreeSet<String> = self.supervisor.held().into_iter().collect();
        let removed: Vec<String> = changes.removed.intersection(&held).cloned().collect();
        if !removed.is_empty() {
            tracing::info!(tasks = ?removed, "tasks deleted from the task store; stopping them");
            drop(self.supervisor.revoke(&removed));
        }
        // Assigned here before this worker's view of the store had them: they start now.
        let assigned = lock(&self.assigned);
        let token = self.supervisor.member_lease().token;
        let arrived: Vec<String> = changes
            .added
            .iter()
            .filter(|id| assigned.contains(id) && !held.contains(*id))
            .cloned()
            .collect();
        for id in &arrived {
            tracing::info!(task = %id, "assigned task arrived in the task store view; starting it");
            self.supervisor.start(id, token.clone());
        }
        drop(assigned);
        let restart: Vec<String> = changes.to_restart().intersection(&held).cloned().collect();
        for id in &restart {
            let Some(granted) = self.supervisor.granted(id) else {
                continue;
            };
            tracing::info!(
                task = %id,
                paused = self.supervisor.is_paused(id),
                "task changed in the task store; restarting it"
            );
            lock(&self.restarting).insert(id.clone(), granted.generation_id);
            let stopping = self.supervisor.revoke([id]);
            let supervisor = self.supervisor.clone();
            let id = id.clone();
            let assigned = self.assigned_handle();
            let restarting = self.restarting.clone();
            tokio::spawn(async move {
                let report = stopping.await;
                // Under the lock `apply` holds: either the task is still assigned here and
                // starts (a later apply then sees it held), or a later apply took it away.
                let assigned = lock(&assigned);
                lock(&restarting).remove(&id);
                if !report.all_stopped() {
                    tracing::error!(task = %id, "task did not stop in time; not restarted");
                    return;
                }
                let same_member = supervisor.member_lease().token.member_id == granted.member_id;
                if assigned.contains(&id) && same_member {
                    supervisor.start(&id, granted);
                }
            });
        }
        DesiredApplied {
            stopped: removed,
            restarted: restart,
            started: arrived,
        }
    }

    fn assigned_handle(&self) -> Arc<Mutex<Assigned>> {
        self.assigned.clone()
    }

    /// Nothing is assigned here any more (lost, revoked, shutting down): a restart under way
    /// for a task store change does not start its task again.
    fn unassign_all(&self) {
        lock(&self.assigned).clear();
        lock(&self.restarting).clear();
    }

    /// Adds capacity and rack to the metadata this runtime advertises.
    pub(crate) fn with_placement(mut self, capacity: Option<u64>, rack: Option<String>) -> Self {
        self.capacity = capacity;
        self.rack = rack;
        self
    }

    /// The supervisor.
    pub(crate) fn supervisor(&self) -> &Arc<Supervisor> {
        &self.supervisor
    }

    /// The status board.
    pub(crate) fn board(&self) -> &StatusBoard {
        &self.board
    }

    /// A rebalance started: status shows `rebalancing: true` over the last stable view.
    pub(crate) fn rebalance_started(&self) {
        self.board.rebalance_started();
    }

    /// The tasks this worker holds, with the generation each was granted in.
    pub(crate) fn owned(&self) -> BTreeMap<String, i32> {
        // One pass under the supervisor's lock, sorted, then built at once: this runs for
        // every JoinGroup, over every task held.
        self.supervisor
            .held_with_generations()
            .into_iter()
            .collect()
    }

    /// The member metadata for the next JoinGroup.
    pub(crate) fn metadata(&self) -> MemberMetadata {
        let mut metadata = MemberMetadata::new(self.worker_id.clone());
        metadata.owned = self.owned();
        {
            // Tasks between the stop and the start of a restart are still this worker's.
            let assigned = lock(&self.assigned);
            for (id, generation) in lock(&self.restarting).iter() {
                if assigned.contains(id) {
                    metadata.owned.entry(id.clone()).or_insert(*generation);
                }
            }
        }
        metadata.kinds = self.kinds.clone();
        let desired = self.desired();
        metadata.catalogue_fingerprint = desired.fingerprint();
        metadata.store_offset = desired.offset;
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
    /// only then may the member rejoin. Must be called within a tokio runtime; never waits.
    ///
    /// # Cancel safety
    ///
    /// The rest of the work (waiting for stops, restarting tasks re-granted under a new member
    /// id) runs in its own tokio task; dropping the returned future only stops waiting.
    pub(crate) fn apply(
        &self,
        change: &AssignmentChange,
    ) -> impl Future<Output = ApplyReport> + Send + 'static + use<> {
        let member_id = change.token.member_id.clone();
        // Held through the synchronous part: a task store restart finishing meanwhile sees
        // either the old or the new target set, never a half-applied one.
        let assigned = self.assigned_handle();
        let mut assigned = lock(&assigned);
        // What is held and what to run, both sorted, walked side by side once: with tens of
        // thousands of tasks, a lookup per task in the other set (and a copy of every held id)
        // was most of an assignment's cost on a worker whose tasks barely change.
        let plan = Plan::new(
            self.supervisor.held_by_member(&member_id),
            &change.run,
            &change.revoke,
        );
        let stopping = self.supervisor.revoke(&plan.stop);
        self.supervisor.set_member_lease(Lease {
            token: change.token.clone(),
            valid_until: change.valid_until.into_std(),
        });

        let mut report = ApplyReport::default();
        let catalogue = self.supervisor.catalogue();
        // A held task whose run stopped on a lease failure starts again under the new lease;
        // the others are left alone.
        let stopped: HashSet<Arc<str>> = self.board.tasks().stopped().into_iter().collect();
        let mut unknown = Vec::new();
        let mut regranted = Vec::new();
        // The ids of the new target set, sorted: the supervisor's copies where it holds the
        // task, so that the set kept below copies no id of a task held here.
        let mut target: Vec<Arc<str>> = Vec::with_capacity(plan.run.len());
        for step in plan.run {
            match step {
                Run::Kept(id) if !stopped.contains(&id) => {
                    report.kept.push(id.clone());
                    target.push(id);
                }
                Run::Kept(id) if !catalogue.contains(&id) => {
                    unknown.push(id.to_string());
                    target.push(id);
                }
                Run::Kept(id) => {
                    let (outcome, _) = self.supervisor.start_shared(&id, change.token.clone());
                    match outcome {
                        StartOutcome::Started => report.started.push(id.to_string()),
                        StartOutcome::StillStopping => report.still_stopping.push(id.to_string()),
                        _ => report.kept.push(id.clone()),
                    }
                    target.push(id);
                }
                Run::Regranted(id) => {
                    regranted.push(id.to_string());
                    target.push(id);
                }
                Run::New(id) if !catalogue.contains(id) => {
                    target.push(id.as_str().into());
                    // Assigned from a task store offset this worker has not read yet: it starts
                    // when the store's view brings the task (see `apply_desired`).
                    unknown.push(id.clone());
                }
                Run::New(id) => {
                    let (outcome, shared) = self.supervisor.start_shared(id, change.token.clone());
                    target.push(shared.unwrap_or_else(|| id.as_str().into()));
                    match outcome {
                        StartOutcome::Started => report.started.push(id.clone()),
                        StartOutcome::StillStopping => report.still_stopping.push(id.clone()),
                        _ => {}
                    }
                }
            }
        }
        self.complete_rebalance(change, !report.started.is_empty() || !regranted.is_empty());
        // Built in bulk from sorted ids: denser than one insert at a time.
        *assigned = Assigned(target.into_iter().collect());
        drop(assigned);
        if !unknown.is_empty() {
            tracing::info!(
                generation = change.token.generation_id,
                tasks = ?unknown,
                "assigned tasks this worker's catalogue does not have (yet); they start once \
                 its view of the task store brings them"
            );
        }

        let supervisor = self.supervisor.clone();
        let token = change.token.clone();
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
        let own = self.desired().fingerprint();
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
    pub(crate) fn revoke(
        &self,
        task_ids: &BTreeSet<String>,
    ) -> impl Future<Output = StopReport> + Send + 'static {
        self.supervisor.revoke(task_ids)
    }

    /// Stops every task (cancelled at the call) before rejoining, as Kafka's eager protocol does
    /// (`onPartitionsRevoked` of everything). Needed with assignors that may move a task within
    /// one generation; the cooperative assignor never does, so it needs no call here.
    pub(crate) fn revoke_all(&self) -> impl Future<Output = StopReport> + Send + 'static {
        self.unassign_all();
        self.supervisor.revoke(self.supervisor.held())
    }

    /// A heartbeat succeeded: the lease holds until `valid_until`. Held tasks that stopped
    /// themselves on the expired lease of this same membership run again.
    pub(crate) fn extend_lease(&self, valid_until: Instant) {
        self.supervisor.extend_lease(valid_until);
        let current = self.supervisor.member_lease().token;
        // Only the tasks that stopped: a heartbeat must not visit every held task (with
        // 100,000 of them that cost a tenth of a core at rest).
        for id in self.board.tasks().stopped() {
            // `None` for a task no longer held.
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
    pub(crate) fn lost(
        &self,
        deadline: Instant,
    ) -> impl Future<Output = StopReport> + Send + 'static {
        self.unassign_all();
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
    pub(crate) fn shutdown(
        &self,
        deadline: Instant,
    ) -> impl Future<Output = StopReport> + Send + 'static {
        self.board.set_shutting_down();
        self.unassign_all();
        self.supervisor.stop_all(deadline)
    }
}

/// The tasks an assignment asks this worker to run: its target set less what it revokes. The
/// ids are the supervisor's copies, for the tasks it holds: with 100,000 tasks, a copy of
/// every id would be megabytes.
#[derive(Debug, Default)]
struct Assigned(BTreeSet<Arc<str>>);

impl Assigned {
    fn contains(&self, task_id: &str) -> bool {
        self.0.contains(task_id)
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
