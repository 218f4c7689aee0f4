//! The supervisor: runs each assigned task in its own tokio task, stops it within a bound,
//! restarts it after failures.
//!
//! The supervisor knows nothing of the group. The runtime tells it which tasks to
//! [`start`](Supervisor::start) and which to [`revoke`](Supervisor::revoke), and keeps the
//! worker's [`Lease`] current with [`set_member_lease`](Supervisor::set_member_lease).
//!
//! - Each task gets a child of the supervisor's root `CancellationToken`; cancelling the root is
//!   the worker shutting down (lease checks then fail with `ShuttingDown`). The task sees that
//!   same token (a worker holds one per task, each 112 bytes plus its place in the root's list);
//!   only with a stall watch does each attempt get a child of its own, which the watch cancels
//!   to stop that attempt alone.
//! - Revoke: cancel at once (the task's lease check fails from that moment), wait up to the
//!   graceful stop timeout, then abort, then wait up to the abort timeout. The returned future
//!   completes within that bound even if a task never yields; such a task is not started again
//!   on this worker until its old run ends ([`StartOutcome::StillStopping`]).
//! - Error or panic: restart with exponential backoff and jitter; `FAILED` after
//!   `max_attempts` failures in a row, until [`restart`](Supervisor::restart).
//! - Optional liveness watch ([`RestartPolicy::stall_timeout`]): a task that stops reporting
//!   progress is stopped like a revoked one and restarted like a failed one.
//! - Status is written to a [`TaskTable`], never `RUNNING` for a task whose future is not alive.

mod policy;
mod run;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) use policy::SupervisorConfig;
pub use policy::{InvalidConfig, RestartPolicy};

use crate::catalogue::Catalogue;
use crate::checkpoint::Checkpoints;
use crate::lease::{FencingToken, Lease, no_lease};
use crate::secrets::ConfigProviders;
use crate::status::model::{TaskState, TaskTable};
use crate::task::Registry;
pub(crate) use run::RunShared;
use run::{RunPlan, supervise};

/// What [`Supervisor::start`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum StartOutcome {
    /// A new supervised run was spawned.
    Started,
    /// The task is already held (running, backing off, `FAILED` or `COMPLETED`); nothing changed.
    AlreadyHeld,
    /// The supervisor is shutting down; nothing was started.
    ShuttingDown,
    /// An earlier run of the task is still being stopped (or never stopped after its abort);
    /// nothing was started, so the task never runs twice on this worker.
    StillStopping,
}

/// How the tasks of one revoke or shutdown stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StopReport {
    /// Returned (or had already finished) within the graceful stop timeout.
    pub graceful: Vec<String>,
    /// Aborted after the graceful stop timeout.
    pub aborted: Vec<String>,
    /// Still not finished after the abort timeout (stuck in blocking code). Their lease is
    /// invalid, so their lease checks fail, but the code may still be executing; the task is
    /// not started again on this worker until that run ends.
    pub unresponsive: Vec<String>,
}

impl StopReport {
    /// Whether every task has stopped.
    pub(crate) fn all_stopped(&self) -> bool {
        self.unresponsive.is_empty()
    }
}

/// Why a restart request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RestartError {
    /// This worker does not hold the task; ask the worker that owns it (see the group's status).
    #[error("task `{0}` is not assigned to this worker; send the request to its owner")]
    NotHeld(String),
    /// The old run did not stop, so no second copy was started.
    #[error("task `{0}` did not stop in time; not restarted, to never run it twice")]
    DidNotStop(String),
}

/// A held task, in the supervisor's slots (see [`RunShared::slots`]).
struct Slot {
    /// The run's token: the supervisor cancels it to stop the run (the task's own token too,
    /// without a stall watch).
    cancel: CancellationToken,
    handle: JoinHandle<()>,
    incarnation: u64,
    granted: FencingToken,
}

/// Runs tasks under supervision. Methods take `&self`; share it in an `Arc`.
///
/// A held task costs a slot here, a record in the [`TaskTable`] and its run's tokio task; the
/// three share one copy of the task id.
#[derive(Debug)]
pub(crate) struct Supervisor {
    /// The registry, the restart policy, the task table and the root token (cancelled when
    /// the worker shuts down), shared with every run.
    shared: Arc<RunShared>,
    catalogue: RwLock<Arc<Catalogue>>,
    /// Tasks whose desired state is paused (task store): started as `PAUSED`, never run.
    paused: RwLock<Arc<BTreeSet<String>>>,
    config: SupervisorConfig,
    member: watch::Sender<Lease>,
    stopping: Arc<Mutex<HashSet<Arc<str>>>>,
    next_incarnation: AtomicU64,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("incarnation", &self.incarnation)
            .field("granted", &self.granted)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// A supervisor with its own, empty [`TaskTable`].
    #[cfg(test)]
    pub(crate) fn new(
        registry: Arc<Registry>,
        catalogue: Arc<Catalogue>,
        config: SupervisorConfig,
    ) -> Self {
        Self::with_table(registry, catalogue, config, TaskTable::new())
    }

    /// A supervisor writing statuses into `table` (shared with the status API).
    pub(crate) fn with_table(
        registry: Arc<Registry>,
        catalogue: Arc<Catalogue>,
        config: SupervisorConfig,
        table: TaskTable,
    ) -> Self {
        let member = watch::Sender::new(no_lease());
        let shared = RunShared::new(
            registry,
            config.restart.clone(),
            table,
            CancellationToken::new(),
            config.graceful_stop_timeout,
            member.subscribe(),
        );
        Supervisor {
            shared: Arc::new(shared),
            catalogue: RwLock::new(catalogue),
            paused: RwLock::new(Arc::new(BTreeSet::new())),
            config,
            member,
            stopping: Arc::new(Mutex::new(HashSet::new())),
            next_incarnation: AtomicU64::new(1),
        }
    }

    /// Resolves the secret references of task configs with `providers` (the built-in `env`
    /// and `file` until then). Set once, as the supervisor is made, before anything shares it:
    /// a call after that changes nothing.
    pub(crate) fn with_providers(mut self, providers: ConfigProviders) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.providers = providers;
        }
        self
    }

    /// Gives every task started from now on `checkpoints` for
    /// [`TaskContext::save_checkpoint`](crate::TaskContext::save_checkpoint); set once, before
    /// the first assignment (a second call changes nothing).
    pub(crate) fn set_checkpoints(&self, checkpoints: Arc<Checkpoints>) {
        let _ = self.shared.services.checkpoints.set(checkpoints);
    }

    /// Gives every task started from now on the task store, to declare children in.
    pub(crate) fn set_store(&self, access: crate::generator::StoreAccess) {
        let _ = self.shared.services.store.set(access);
    }

    /// The checkpoint client, once set (with a task store).
    pub(crate) fn checkpoints(&self) -> Option<Arc<Checkpoints>> {
        self.shared.services.checkpoints.get().cloned()
    }

    /// The task statuses this supervisor writes.
    #[cfg(test)]
    pub(crate) fn table(&self) -> &TaskTable {
        &self.shared.services.table
    }

    /// The task kinds this worker registers.
    pub(crate) fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// The catalogue new runs are built from.
    pub(crate) fn catalogue(&self) -> Arc<Catalogue> {
        self.catalogue
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the catalogue new runs are built from, and the tasks that are paused. Runs
    /// already started keep the spec they were started with: the caller restarts the tasks
    /// whose spec or desired state changed.
    pub(crate) fn set_catalogue(&self, catalogue: Arc<Catalogue>, paused: BTreeSet<String>) {
        // One writer at a time (the worker loop); readers see either the old or the new pair
        // for a moment, and every change is followed by a restart of the tasks it touches.
        *self
            .catalogue
            .write()
            .unwrap_or_else(PoisonError::into_inner) = catalogue;
        *self.paused.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(paused);
    }

    /// Whether the task's desired state is paused.
    pub(crate) fn is_paused(&self, task_id: &str) -> bool {
        self.paused
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(task_id)
    }

    /// The worker's membership as last set.
    pub(crate) fn member_lease(&self) -> Lease {
        self.member.borrow().clone()
    }

    /// Sets the worker's membership (new generation, member id, self-fencing deadline).
    pub(crate) fn set_member_lease(&self, lease: Lease) {
        self.member.send_replace(lease);
    }

    /// Moves the self-fencing deadline (after a heartbeat succeeded).
    pub(crate) fn extend_lease(&self, valid_until: Instant) {
        self.member
            .send_modify(|lease| lease.valid_until = valid_until.into_std());
    }

    /// The ids of the tasks held, sorted.
    pub(crate) fn held(&self) -> Vec<String> {
        // Copied, not formatted: `to_string` goes through `Display`, several times slower for
        // the 100,000 ids a worker may hold.
        self.lock().keys().map(|id| String::from(&**id)).collect()
    }

    /// The held tasks with the generation each was granted in, sorted by id, read under one
    /// lock.
    pub(crate) fn held_with_generations(&self) -> Vec<(String, i32)> {
        self.lock()
            .iter()
            .map(|(id, slot)| (String::from(&**id), slot.granted.generation_id))
            .collect()
    }

    /// The ids of the held tasks, sorted: the supervisor's own copies, shared rather than
    /// copied (a worker may hold 100,000 tasks, and this runs at every assignment).
    pub(crate) fn held_ids(&self) -> Vec<Arc<str>> {
        self.lock().keys().cloned().collect()
    }

    /// The held tasks sorted by id, each with whether it was granted to a member other than
    /// `member_id` (a previous membership of this worker), read under one lock.
    pub(crate) fn held_by_member(&self, member_id: &str) -> Vec<(Arc<str>, bool)> {
        self.lock()
            .iter()
            .map(|(id, slot)| (id.clone(), *slot.granted.member_id != *member_id))
            .collect()
    }

    /// The token a held task was started with.
    pub(crate) fn granted(&self, task_id: &str) -> Option<FencingToken> {
        self.lock().get(task_id).map(|slot| slot.granted.clone())
    }

    /// Starts `task_id`, granted in `granted`. A task that stopped on a lease failure is started
    /// anew; a running, `FAILED` or `COMPLETED` one is left alone. Must be called within a tokio
    /// runtime.
    pub(crate) fn start(&self, task_id: &str, granted: FencingToken) -> StartOutcome {
        self.start_shared(task_id, granted).0
    }

    /// Like [`start`](Self::start), and hands back the supervisor's copy of the id when the
    /// task is held (started or already held), for the caller to share rather than copy.
    pub(crate) fn start_shared(
        &self,
        task_id: &str,
        granted: FencingToken,
    ) -> (StartOutcome, Option<Arc<str>>) {
        if self.shared.shutdown.is_cancelled() {
            return (StartOutcome::ShuttingDown, None);
        }
        let mut slots = self.lock();
        if lock(&self.stopping).contains(task_id) {
            return (StartOutcome::StillStopping, None);
        }
        // A restart reuses the slot's copy of the id.
        let task_id: Arc<str> = match slots.get_key_value(task_id) {
            Some((id, slot)) => {
                let restartable = slot.handle.is_finished()
                    && self.shared.services.table.state(task_id) == Some(TaskState::Stopped);
                if !restartable {
                    return (StartOutcome::AlreadyHeld, Some(id.clone()));
                }
                id.clone()
            }
            None => task_id.into(),
        };
        let slot = self.spawn(task_id.clone(), granted);
        slots.insert(task_id.clone(), slot);
        (StartOutcome::Started, Some(task_id))
    }

    fn spawn(&self, task_id: Arc<str>, granted: FencingToken) -> Slot {
        let incarnation = self.next_incarnation.fetch_add(1, Ordering::Relaxed);
        let spec = self.catalogue().get_shared(&task_id).cloned();
        let kind = spec.as_ref().map(|spec| self.shared.kind(&spec.kind));
        self.shared
            .services
            .table
            .begin(task_id.clone(), kind, granted.generation_id, incarnation);
        let cancel = self.shared.shutdown.child_token();
        let plan = RunPlan {
            shared: self.shared.clone(),
            paused: self.is_paused(&task_id),
            task_id,
            spec,
            incarnation,
            granted: granted.clone(),
            cancel: cancel.clone(),
        };
        Slot {
            cancel,
            handle: tokio::spawn(supervise(plan)),
            incarnation,
            granted,
        }
    }

    /// Revokes `task_ids`: cancels them now, and returns a future that completes once they are
    /// stopped, within the graceful stop timeout plus the abort timeout. Unknown ids are ignored.
    /// Must be called within a tokio runtime.
    ///
    /// # Cancel safety
    ///
    /// The stop goes on in its own tokio task; dropping the returned future only stops waiting.
    pub(crate) fn revoke<I, S>(
        &self,
        task_ids: I,
    ) -> impl Future<Output = StopReport> + Send + 'static
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let deadline =
            Instant::now() + self.config.graceful_stop_timeout + self.config.abort_timeout;
        self.revoke_within(task_ids, deadline)
    }

    /// Like [`revoke`](Self::revoke), but done by `deadline` (at the latest the self-fencing
    /// deadline when the membership is lost): the graceful phase is cut short to leave the abort
    /// timeout before `deadline`.
    pub(crate) fn revoke_within<I, S>(
        &self,
        task_ids: I,
        deadline: Instant,
    ) -> impl Future<Output = StopReport> + Send + 'static
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let taken = self.take(|slots| {
            task_ids
                .into_iter()
                .filter_map(|id| slots.remove_entry(id.as_ref()))
                .collect()
        });
        self.stop_slots(taken, deadline)
    }

    /// Stops every task for shutdown: lease checks fail with `ShuttingDown` from now on, and no
    /// task starts again. Completes by `deadline` (see [`revoke_within`](Self::revoke_within)).
    pub(crate) fn stop_all(
        &self,
        deadline: Instant,
    ) -> impl Future<Output = StopReport> + Send + 'static {
        // Lease checks see the cancelled root as the worker shutting down.
        self.shared.shutdown.cancel();
        let taken = self.take(|slots| std::mem::take(slots).into_iter().collect());
        self.stop_slots(taken, deadline)
    }

    /// Restarts a held task from scratch: stops it if it is running, then starts it with the
    /// token it was granted in and a clean failure count. The way out of `FAILED`.
    pub(crate) async fn restart(&self, task_id: &str) -> Result<StopReport, RestartError> {
        let taken = self.take(|slots| slots.remove_entry(task_id).into_iter().collect());
        let Some(granted) = taken.first().map(|(_, slot)| slot.granted.clone()) else {
            return Err(RestartError::NotHeld(task_id.to_owned()));
        };
        let deadline =
            Instant::now() + self.config.graceful_stop_timeout + self.config.abort_timeout;
        let report = self.stop_slots(taken, deadline).await;
        if !report.all_stopped() {
            return Err(RestartError::DidNotStop(task_id.to_owned()));
        }
        tracing::info!(task = task_id, "restart requested");
        self.start(task_id, granted);
        Ok(report)
    }

    /// Removes the slots `pick` chooses, marks them stopping and cancels them, all under the
    /// slots lock, so that no `start` can slip a second run in between.
    fn take(
        &self,
        pick: impl FnOnce(&mut BTreeMap<Arc<str>, Slot>) -> Vec<(Arc<str>, Slot)>,
    ) -> Vec<(Arc<str>, Slot)> {
        let mut slots = self.lock();
        let taken = pick(&mut slots);
        lock(&self.stopping).extend(taken.iter().map(|(id, _)| id.clone()));
        for (_, slot) in &taken {
            slot.cancel.cancel();
        }
        taken
    }

    fn stop_slots(
        &self,
        taken: Vec<(Arc<str>, Slot)>,
        deadline: Instant,
    ) -> impl Future<Output = StopReport> + Send + 'static {
        let now = Instant::now();
        let latest_graceful = deadline
            .checked_sub(self.config.abort_timeout)
            .unwrap_or(now)
            .max(now);
        let graceful_until = (now + self.config.graceful_stop_timeout).min(latest_graceful);
        let abort_until = graceful_until + self.config.abort_timeout;
        for (id, slot) in &taken {
            self.shared
                .services
                .table
                .update(id, slot.incarnation, |status| {
                    if status.state.is_active() {
                        status.state = TaskState::Stopping;
                        status.since_ms = crate::status::model::unix_ms();
                    }
                });
        }
        let table = self.shared.services.table.clone();
        let stopping = self.stopping.clone();
        // The stop runs in its own tokio task: dropping the returned future does not leave a
        // task half-stopped (or barred from starting again).
        let work = tokio::spawn(async move {
            let stops = taken.into_iter().map(|(id, slot)| {
                let table = table.clone();
                let stopping = stopping.clone();
                async move {
                    let (outcome, stuck) = stop_one(slot.handle, graceful_until, abort_until).await;
                    match stuck {
                        None => {
                            table.remove(&id, slot.incarnation);
                            lock(&stopping).remove(&id);
                        }
                        Some(handle) => {
                            tracing::error!(task = %id, "task did not stop after abort");
                            table.update(&id, slot.incarnation, |status| {
                                status.notes_mut().last_error = Some(
                                    "did not stop after abort (blocking code?); not started \
                                     again here until it ends"
                                        .into(),
                                );
                            });
                            let id = id.clone();
                            tokio::spawn(async move {
                                let _ = handle.await;
                                table.remove(&id, slot.incarnation);
                                lock(&stopping).remove(&id);
                            });
                        }
                    }
                    (id, outcome)
                }
            });
            let mut report = StopReport::default();
            // Outside tokio's cooperative budget: once a poll of `join_all` has spent it, every
            // join handle it polls answers "not yet" and wakes itself, so each later poll
            // visits every task again (200,000 tasks took 20 s to stop, not milliseconds).
            for (id, outcome) in tokio::task::unconstrained(futures::future::join_all(stops)).await
            {
                let part = match outcome {
                    Stopped::Graceful => &mut report.graceful,
                    Stopped::Aborted => &mut report.aborted,
                    Stopped::Unresponsive => &mut report.unresponsive,
                };
                part.push(id.to_string());
            }
            report.graceful.sort();
            report.aborted.sort();
            report.unresponsive.sort();
            report
        });
        async move {
            work.await.unwrap_or_else(|error| {
                tracing::error!(%error, "stopping tasks panicked");
                StopReport::default()
            })
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<Arc<str>, Slot>> {
        lock(&self.shared.slots)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Graceful,
    Aborted,
    Unresponsive,
}

/// Waits for one run to end; hands back its handle if it did not.
async fn stop_one(
    mut handle: JoinHandle<()>,
    graceful_until: Instant,
    abort_until: Instant,
) -> (Stopped, Option<JoinHandle<()>>) {
    if tokio::time::timeout_at(graceful_until, &mut handle)
        .await
        .is_ok()
    {
        return (Stopped::Graceful, None);
    }
    handle.abort();
    match tokio::time::timeout_at(abort_until, &mut handle).await {
        Ok(_) => (Stopped::Aborted, None),
        Err(_) => (Stopped::Unresponsive, Some(handle)),
    }
}

#[cfg(test)]
mod tests;
