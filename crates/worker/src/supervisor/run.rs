//! One supervised task: build from config, run, catch failures and panics, back off, restart.
//!
//! A worker holds one supervised run per assigned task, most of them idle for hours, so a run
//! keeps little of its own: what every run of the supervisor shares sits behind one pointer
//! ([`RunShared`]), the spec is the catalogue's shared copy, and the rare paths (the stall
//! watch, the backoff) live in their own boxed futures, allocated only when taken, instead of
//! widening every run's future.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Deref, DerefMut};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::CatchUnwind;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::catalogue::TaskSpec;
use crate::checkpoint::{CheckpointDetail, CheckpointError};
use crate::context::{ProgressSink, TaskContext, TaskServices};
use crate::exactly_once::ExactlyOnce;
use crate::lease::{FencingToken, Lease, TaskLease};
use crate::secrets::{ConfigProviders, Secrets};
use crate::status::model::{TaskState, TaskTable, unix_ms};
use crate::supervisor::policy::RestartPolicy;
use crate::supervisor::{Slot, lock};
use crate::task::{Registry, RunFuture, TaskConfigDetail, TaskConfigError, TaskError};

/// What every run of one supervisor shares.
#[derive(Debug)]
pub(crate) struct RunShared {
    pub(crate) registry: Arc<Registry>,
    pub(crate) policy: RestartPolicy,
    /// What the tasks' contexts reach (the task table, checkpoints, fenced producers, the
    /// task store): the context module's, shared with every context.
    pub(crate) services: Arc<TaskServices>,
    /// The supervisor's root token: cancelled when the worker shuts down.
    pub(crate) shutdown: CancellationToken,
    pub(crate) graceful_stop_timeout: Duration,
    /// The held tasks, sorted by id: every assignment walks them in order beside its own
    /// sorted sets (see `runtime::plan`), so keeping them sorted spares a sort of every held
    /// id per assignment. A run looks its slot up only when its token fired, to tell the
    /// supervisor's stop from the task cancelling its own token.
    pub(super) slots: Mutex<BTreeMap<Arc<str>, Slot>>,
    /// The worker's lease, for each attempt's [`TaskLease`]: a receiver here rather than in
    /// every run (the supervisor holds the sender; once it is gone, lease checks fail).
    member: watch::Receiver<Lease>,
    /// The providers that resolve the secret references of a config at each build.
    pub(crate) providers: ConfigProviders,
    /// When this supervisor was made: runs keep instants as offsets from it.
    epoch: Instant,
    /// The registered kinds' names, so that every task's status shares one copy of its kind.
    kinds: BTreeSet<Arc<str>>,
}

impl RunShared {
    pub(crate) fn new(
        registry: Arc<Registry>,
        policy: RestartPolicy,
        table: TaskTable,
        shutdown: CancellationToken,
        graceful_stop_timeout: Duration,
        member: watch::Receiver<Lease>,
    ) -> Self {
        let kinds = registry.kinds().map(Arc::from).collect();
        RunShared {
            registry,
            policy,
            services: Arc::new(TaskServices::new(table)),
            shutdown,
            graceful_stop_timeout,
            slots: Mutex::new(BTreeMap::new()),
            member,
            providers: ConfigProviders::default(),
            epoch: Instant::now(),
            kinds,
        }
    }

    /// Nanoseconds since the supervisor was made (584 years fit).
    fn since_epoch(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The shared name of `kind` (a fresh copy for a kind no one registered here).
    pub(crate) fn kind(&self, kind: &str) -> Arc<str> {
        self.kinds.get(kind).cloned().unwrap_or_else(|| kind.into())
    }
}

/// Everything one supervised run needs; moved into its tokio task.
pub(crate) struct RunPlan {
    pub(crate) shared: Arc<RunShared>,
    pub(crate) task_id: Arc<str>,
    pub(crate) spec: Option<Arc<TaskSpec>>,
    /// The task's desired state is paused: the run only records `PAUSED`.
    pub(crate) paused: bool,
    pub(crate) incarnation: u64,
    pub(crate) granted: FencingToken,
    /// The run's token, the one in its slot: cancelled by the supervisor to stop the run.
    /// Without a stall watch it is also the task's own token.
    pub(crate) cancel: CancellationToken,
}

/// The plan of a run in progress. Marks the record `STOPPED` if the run is dropped (aborted)
/// while still active, so the status never says `RUNNING` for a task whose future is gone.
struct Running(RunPlan);

impl Deref for Running {
    type Target = RunPlan;

    fn deref(&self) -> &RunPlan {
        &self.0
    }
}

impl DerefMut for Running {
    fn deref_mut(&mut self) -> &mut RunPlan {
        &mut self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.table()
            .update(&self.task_id, self.incarnation, |status| {
                if status.state.is_active() {
                    status.state = TaskState::Stopped;
                    status.since_ms = unix_ms();
                    status.notes_mut().last_error =
                        Some("aborted: did not stop within the graceful stop timeout".into());
                }
            });
    }
}

impl RunPlan {
    fn table(&self) -> &TaskTable {
        &self.shared.services.table
    }

    fn policy(&self) -> &RestartPolicy {
        &self.shared.policy
    }

    fn finish(&self, state: TaskState, error: Option<String>) {
        self.table()
            .update(&self.task_id, self.incarnation, |status| {
                status.state = state;
                status.since_ms = unix_ms();
                if error.is_some() {
                    status.notes_mut().last_error = error;
                }
            });
    }
}

/// Runs the task until it is cancelled, completes, or fails for good.
pub(crate) fn supervise(plan: RunPlan) -> impl Future<Output = ()> + Send + 'static {
    // Wrapped here, not in an `async fn`: that would keep a second copy of its argument in
    // the future of every idle task.
    let mut plan = Running(plan);
    async move { plan.supervise().await }
}

/// One attempt's future: the task's own, or (with a stall watch) the watch around it, boxed so
/// that it widens no other run's future; its panics caught.
type AttemptRun<'a> =
    CatchUnwind<AssertUnwindSafe<Pin<Box<dyn Future<Output = Result<(), TaskError>> + Send + 'a>>>>;

impl Running {
    // Few locals live across an await here: each becomes part of every idle task's future.
    async fn supervise(&mut self) {
        if self.paused {
            // Held (and claimed) but not run: a resume restarts it.
            tracing::info!(task = %self.task_id, "task paused");
            self.finish(TaskState::Paused, None);
            return;
        }
        if self.spec.is_none() {
            let error = TaskConfigError::from(TaskConfigDetail::NotInCatalogue {
                task_id: self.task_id.to_string(),
            });
            tracing::warn!(task = %self.task_id, %error, "task not started");
            self.finish(TaskState::Failed, Some(error.to_string()));
            return;
        }
        let mut failures = 0u32;
        let mut attempt = 0u32;
        loop {
            if self.cancel.is_cancelled() {
                self.finish(TaskState::Stopped, None);
                return;
            }
            attempt += 1;
            // Kept as an offset from the shared epoch: 8 bytes, not an `Instant`'s 16, in
            // every idle task's future.
            let started = self.shared.since_epoch();
            let Some(run) = self.start(attempt) else {
                return;
            };
            let Some(failure) = self.ended(run.await) else {
                return;
            };
            let ran = Duration::from_nanos(self.shared.since_epoch().saturating_sub(started));
            if ran >= self.policy().reset_after {
                failures = 0;
            }
            failures += 1;
            let Some(delay) = self.failed(failures, failure) else {
                return;
            };
            if Box::pin(cancelled_within(&self.cancel, delay)).await {
                self.finish(TaskState::Stopped, None);
                return;
            }
        }
    }

    /// Records how an attempt ended; the failure to restart after, or `None` when the run is
    /// over (stopped, completed, stopped on its lease).
    fn ended(&mut self, outcome: Outcome) -> Option<String> {
        let stopped = self.cancel.is_cancelled() && self.stop_requested();
        let failure = match outcome {
            Ok(Ok(())) if stopped => {
                self.finish(TaskState::Stopped, None);
                return None;
            }
            Ok(Ok(())) => {
                tracing::info!(task = %self.task_id, "task completed");
                self.finish(TaskState::Completed, None);
                return None;
            }
            Ok(Err(TaskError::Lease(error))) => {
                tracing::info!(task = %self.task_id, %error, "task stopped on its lease check");
                self.finish(TaskState::Stopped, Some(error.to_string()));
                return None;
            }
            Ok(Err(error)) => error.to_string(),
            Err(panic) => format!("panicked: {}", panic_message(panic.as_ref())),
        };
        if stopped {
            // Failing while being stopped is a stop, not a reason to restart.
            self.finish(TaskState::Stopped, Some(failure));
            return None;
        }
        Some(failure)
    }

    /// Whether the supervisor stopped the run, once its token fired. Without a stall watch the
    /// task holds the run's token and may cancel it itself: that stops only the attempt, as a
    /// token of the attempt's own would, so the run takes a fresh token (in its slot too) for
    /// what follows.
    fn stop_requested(&mut self) -> bool {
        if self.shared.shutdown.is_cancelled() {
            return true;
        }
        // The supervisor takes a slot out before it cancels the token (under this lock).
        let mut slots = lock(&self.shared.slots);
        match slots.get_mut(&*self.task_id) {
            Some(slot) if slot.incarnation == self.incarnation => {
                let fresh = self.shared.shutdown.child_token();
                slot.cancel = fresh.clone();
                drop(slots);
                self.cancel = fresh;
                false
            }
            _ => true,
        }
    }

    /// Records the `failures`-th failure in a row; the backoff before the next attempt, or
    /// `None` when the task failed for good.
    fn failed(&self, failures: u32, failure: String) -> Option<Duration> {
        let id: &str = &self.task_id;
        if failures >= self.policy().max_attempts {
            tracing::error!(task = %id, failures, error = %failure, "task failed for good");
            self.table().update(id, self.incarnation, |status| {
                status.state = TaskState::Failed;
                status.since_ms = unix_ms();
                status.consecutive_failures = failures;
                status.notes_mut().last_error = Some(format!(
                    "failed {failures} time(s) in a row, last: {failure}; fix the cause, then \
                     request a restart"
                ));
            });
            return None;
        }
        let delay = self.policy().backoff(failures);
        tracing::warn!(task = %id, failures, ?delay, error = %failure, "task failed; restarting");
        self.table().update(id, self.incarnation, |status| {
            status.state = TaskState::Restarting;
            status.since_ms = unix_ms();
            status.restarts += 1;
            status.consecutive_failures = failures;
            status.notes_mut().last_error = Some(failure);
        });
        Some(delay)
    }

    /// Builds the task and starts attempt number `attempt`; `None` when its
    /// config is rejected (the task is then `FAILED`).
    fn start(&self, attempt: u32) -> Option<AttemptRun<'_>> {
        let id: &str = &self.task_id;
        let spec = self.spec.as_deref()?;
        // Secret references are resolved at every build, never kept: the resolved config
        // lives until the constructor returns. Every message that may quote a value is
        // redacted (the reference in its place) before it is logged or shown.
        let resolved = match self.shared.providers.resolve(&spec.config) {
            Ok(resolved) => resolved,
            Err(unresolved) => {
                let error = TaskConfigError::from(TaskConfigDetail::InvalidConfig {
                    task_id: spec.id.clone(),
                    kind: spec.kind.clone(),
                    message: unresolved.to_string(),
                });
                tracing::warn!(task = %id, %error, "task config rejected");
                self.finish(TaskState::Failed, Some(error.to_string()));
                return None;
            }
        };
        let task = match self.shared.registry.build_config(spec, &resolved.config) {
            Ok(task) => task,
            Err(error) => {
                let error = resolved.secrets.redact(&error.to_string());
                tracing::warn!(task = %id, %error, "task config rejected");
                self.finish(TaskState::Failed, Some(error));
                return None;
            }
        };
        let secrets = resolved.secrets;
        // With a stall watch, a token per attempt, so that the watch can stop this attempt
        // alone; without one, the run's token (see `stop_requested`).
        let stall = self.policy().stall_timeout;
        let attempt_cancel = match stall {
            Some(_) => self.cancel.child_token(),
            None => self.cancel.clone(),
        };
        let lease = TaskLease::new(
            self.task_id.clone(),
            self.granted.clone(),
            self.shared.member.clone(),
            attempt_cancel.clone(),
            self.shared.shutdown.clone(),
        );
        let fence = self
            .shared
            .registry
            .is_exactly_once(&spec.kind)
            .then(|| lease.clone());
        // When progress was last reported: a channel only when the stall watch reads it.
        let (last, seen) = match stall {
            Some(_) => {
                let (last, seen) = watch::channel(Instant::now());
                (Some(last), Some(seen))
            }
            None => (None, None),
        };
        let progress = ProgressSink {
            services: self.shared.services.clone(),
            incarnation: self.incarnation,
            last,
        };
        let ctx = TaskContext::new(lease, attempt, Some(progress));
        self.table()
            .set_state(id, self.incarnation, TaskState::Running);
        tracing::debug!(task = %id, attempt, "task running");
        let mut run = match fence {
            Some(lease) => Box::pin(fenced_first(self.shared.clone(), lease, task, ctx)),
            None => task.run_boxed(ctx),
        };
        if !secrets.is_empty() {
            run = Box::pin(redacting(run, secrets));
        }
        let run: Pin<Box<dyn Future<Output = _> + Send + '_>> = match stall.zip(seen) {
            None => run,
            Some((stall, seen)) => Box::pin(watched(self, run, seen, stall, attempt_cancel)),
        };
        Some(AssertUnwindSafe(run).catch_unwind())
    }
}

/// Runs an attempt of an exactly-once kind's task: first its transactional producer's
/// InitProducerId, which fences every older owner's producer of the task (and aborts what it
/// left open), then the run, which takes the producer from
/// [`TaskContext::exactly_once`]. A failed fencing fails the attempt before the run starts.
async fn fenced_first(
    shared: Arc<RunShared>,
    lease: TaskLease,
    task: Box<dyn crate::task::ErasedTask>,
    ctx: TaskContext,
) -> Result<(), TaskError> {
    let checkpoints = shared
        .services
        .checkpoints
        .get()
        .cloned()
        .ok_or_else(|| TaskError::failed(CheckpointError::from(CheckpointDetail::Disabled)))?;
    let id: Arc<str> = ctx.task_id().into();
    let producer = ExactlyOnce::open(checkpoints, lease).await?;
    let _slot = FencedSlot::put(shared, id, producer);
    task.run_boxed(ctx).await
}

/// A fenced producer waiting for its run in [`TaskServices::fenced`]; removed (and dropped, which
/// aborts a transaction it left open) when the run ends, if the run did not take it.
struct FencedSlot {
    shared: Arc<RunShared>,
    id: Arc<str>,
}

impl FencedSlot {
    fn put(shared: Arc<RunShared>, id: Arc<str>, producer: ExactlyOnce) -> Self {
        lock(&shared.services.fenced).insert(id.clone(), producer);
        FencedSlot { shared, id }
    }
}

impl Drop for FencedSlot {
    fn drop(&mut self) {
        let left = lock(&self.shared.services.fenced).remove(&self.id);
        drop(left);
    }
}

/// What one attempt's future returns: the task's result, or its panic.
type Outcome = std::thread::Result<Result<(), TaskError>>;

/// Runs one attempt under the stall watch: an attempt that reports no progress for `stall` is
/// cancelled, given the graceful stop timeout, dropped, and counts as failed. A panic of the
/// task's goes through to the attempt's own catch, except one while it is being stopped.
async fn watched(
    plan: &RunPlan,
    mut run: RunFuture,
    progress_seen: watch::Receiver<Instant>,
    stall: Duration,
    attempt_cancel: CancellationToken,
) -> Result<(), TaskError> {
    let id: &str = &plan.task_id;
    tokio::select! {
        outcome = &mut run => outcome,
        () = stalled(progress_seen, stall) => {
            tracing::warn!(task = %id, ?stall, "task stalled; stopping it");
            attempt_cancel.cancel();
            plan.table().set_state(id, plan.incarnation, TaskState::Stopping);
            // Whatever it returns (or panics) while stopping, the attempt failed.
            let stopping = AssertUnwindSafe(&mut run).catch_unwind();
            let _ = tokio::time::timeout(plan.shared.graceful_stop_timeout, stopping).await;
            Err(TaskError::failed(format!(
                "stalled: no progress reported for {stall:?}"
            )))
        }
    }
}

/// Runs one attempt of a task whose config held secret references: its failure, or its
/// panic's message, comes out with every substituted value replaced by its reference, so the
/// status, the logs and the restart reason never show one. (A panic message printed by the
/// process's panic hook is the task's own output, as its own logs are.)
async fn redacting(run: RunFuture, secrets: Secrets) -> Result<(), TaskError> {
    match AssertUnwindSafe(run).catch_unwind().await {
        Ok(Err(TaskError::Failed(error))) => {
            Err(TaskError::failed(secrets.redact(&error.to_string())))
        }
        Ok(other) => other,
        Err(panic) => {
            let message = secrets.redact(&panic_message(panic.as_ref()));
            std::panic::resume_unwind(Box::new(message))
        }
    }
}

/// Waits out a backoff of `delay`; `true` if `cancel` fired first.
async fn cancelled_within(cancel: &CancellationToken, delay: Duration) -> bool {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => true,
        _ = tokio::time::sleep(delay) => false,
    }
}

/// Completes once no progress was reported for `stall`.
async fn stalled(mut last: watch::Receiver<Instant>, stall: Duration) {
    loop {
        let deadline = *last.borrow_and_update() + stall;
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            changed = last.changed() => {
                if changed.is_err() {
                    // The task dropped its context: no progress can come any more.
                    tokio::time::sleep_until(deadline).await;
                    return;
                }
            }
        }
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// The size of a supervised run's future, for the test that keeps it small.
#[cfg(test)]
pub(crate) fn future_size(plan: RunPlan) -> usize {
    std::mem::size_of_val(&supervise(plan))
}
