//! What a running task sees: its id, its fencing token, its lease, cancellation, progress.
//!
//! The lease a task checks before each side effect is [`TaskLease`](crate::TaskLease) (`lease.rs`).
//!
//! # Cancel safety
//!
//! [`TaskContext::cancelled`] and [`TaskLease::lost`] are cancel safe: dropping them loses nothing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::catalogue::TaskSpec;
use crate::checkpoint::{CheckpointDetail, CheckpointError, Checkpoints};
use crate::store::{StoreDetail, StoreError};

use crate::exactly_once::ExactlyOnce;
use crate::generator::{Generators, StoreAccess};
use crate::lease::{FencingToken, Lease, LeaseError, TaskLease};
use crate::status::model::{TaskTable, unix_ms};

/// What a task's context reaches of its worker beyond its lease: the status table its progress
/// goes to, the checkpoint client, the producers fenced for it, the task store its children are
/// declared in. The supervisor makes one and shares it with all its runs; the context knows
/// nothing of the supervisor.
#[derive(Debug, Default)]
pub(crate) struct TaskServices {
    /// The task statuses, where progress notes go.
    pub(crate) table: TaskTable,
    /// The checkpoint client the tasks' contexts save and read through (with a task store).
    pub(crate) checkpoints: OnceLock<Arc<Checkpoints>>,
    /// The transactional producers the worker started, fencing older owners, for the runs of
    /// exactly-once kinds that are under way and have not taken theirs yet.
    pub(crate) fenced: Mutex<BTreeMap<Arc<str>, ExactlyOnce>>,
    /// The task store the tasks' contexts declare children in (with a task store).
    pub(crate) store: OnceLock<StoreAccess>,
    /// The generators of this worker that declared children.
    pub(crate) generators: Generators,
}

impl TaskServices {
    /// Services over `table`, without checkpoints or a task store until they are set.
    pub(crate) fn new(table: TaskTable) -> Self {
        TaskServices {
            table,
            ..TaskServices::default()
        }
    }
}

/// Where progress reports go, and what else of the worker's a task reaches: one pointer to
/// what all its runs share ([`TaskServices`]), not one per part, in every task's context.
#[derive(Debug, Clone)]
pub(crate) struct ProgressSink {
    pub(crate) services: Arc<TaskServices>,
    pub(crate) incarnation: u64,
    /// When progress was last reported, for the supervisor's stall watch (`None` without
    /// one: a channel per task would cost more than the rest of an idle task).
    pub(crate) last: Option<watch::Sender<Instant>>,
}

/// Handed to [`Task::run`](crate::Task::run): everything a task needs from the runtime.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct TaskContext {
    inner: Arc<ContextInner>,
}

/// One allocation per attempt of every task: 120 bytes with its counts, so that the
/// allocator gives it 128 (see the test `a_context_is_one_small_allocation`).
#[derive(Debug)]
struct ContextInner {
    attempt: u32,
    lease: TaskLease,
    /// `None` outside a worker ([`TaskContext::detached`]).
    progress: Option<ProgressSink>,
}

impl TaskContext {
    /// A context whose progress reports, and checkpoints (with a task store), go to the
    /// supervisor's `progress` points to.
    pub(crate) fn new(lease: TaskLease, attempt: u32, progress: Option<ProgressSink>) -> Self {
        TaskContext {
            inner: Arc::new(ContextInner {
                attempt,
                lease,
                progress,
            }),
        }
    }

    /// The checkpoint client, with a task store.
    fn checkpoints(&self) -> Option<&Arc<Checkpoints>> {
        self.inner.progress.as_ref()?.services.checkpoints.get()
    }

    unstable_pub! {
        /// A context outside any worker, for testing a task on its own (kroupier's
        /// tests and benchmarks): the lease is valid until
        /// `valid_until` or until the returned token is cancelled (the task is revoked); the
        /// worker's [`Lease`] sender lets the test move the deadline or the generation, and dropping
        /// it is the worker shutting down.
        pub fn detached(
            task_id: &str,
            granted: FencingToken,
            valid_until: Instant,
        ) -> (TaskContext, CancellationToken, watch::Sender<Lease>) {
            let (sender, receiver) = watch::channel(Lease {
                token: granted.clone(),
                valid_until: valid_until.into_std(),
            });
            let cancel = CancellationToken::new();
            let lease = TaskLease::new(
                task_id.into(),
                granted,
                receiver,
                cancel.clone(),
                CancellationToken::new(),
            );
            (TaskContext::new(lease, 1, None), cancel, sender)
        }
    }

    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.inner.lease.task_id
    }

    /// Which run this is: 1 for the first, 2 for the first restart, and so on.
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// The fencing token the task was started with.
    pub fn granted(&self) -> &FencingToken {
        self.inner.lease.granted()
    }

    /// The task's lease.
    pub fn lease(&self) -> &TaskLease {
        &self.inner.lease
    }

    /// Checks the lease; call before each side effect. See [`TaskLease::check`].
    pub fn check_lease(&self) -> Result<FencingToken, LeaseError> {
        self.inner.lease.check()
    }

    /// Saves `state` as this task's checkpoint: wherever the task runs next (after a move or
    /// a restart), [`last_checkpoint`](Self::last_checkpoint) returns it, unless a newer one
    /// was saved. Returns the offset it landed at in the checkpoint topic.
    ///
    /// The lease is checked first: a task that may have lost it writes nothing. A checkpoint
    /// written under an older owner's generation never wins over a newer owner's, even when
    /// it lands later (see [`checkpoint`](crate::checkpoint)).
    ///
    /// # Errors
    /// `Fenced` when the lease check fails, `Disabled`
    /// when the worker has no task store, `Serde` when `state` does not serialize, `TooLarge`
    /// above 512 KiB serialized, and `Log` or `Write` when the checkpoint topic cannot take it.
    pub async fn save_checkpoint<T: Serialize>(&self, state: &T) -> Result<i64, CheckpointError> {
        let checkpoints = self.checkpoints().ok_or(CheckpointDetail::Disabled)?;
        self.check_lease().map_err(|e| CheckpointDetail::Fenced {
            task: self.task_id().to_owned(),
            reason: e.to_string(),
        })?;
        // Boxed: a save is a produce, whose future is kilobytes; inline, it would make every
        // task future that can checkpoint that much larger for all its life.
        Box::pin(checkpoints.save(self.task_id(), self.granted(), state)).await
    }

    /// Opens this task's exactly-once output (see [`ExactlyOnce`](crate::ExactlyOnce)):
    /// the transactional producer the worker started before this run for a kind declared
    /// [`exactly_once`](crate::Kind::exactly_once), else a new one. Starting it fences every
    /// older owner's producer of the task. Call it first in `run`, before any output and before
    /// [`last_checkpoint`](Self::last_checkpoint): once the older owners are fenced, the
    /// checkpoint read is the last one that can ever commit before this owner's.
    ///
    /// # Errors
    /// [`ExactlyOnceError::Lease`](crate::ExactlyOnceError::Lease) when the lease is already
    /// lost; [`ExactlyOnceError::Checkpoint`](crate::ExactlyOnceError::Checkpoint) with
    /// `Disabled` without a task store; the producer's errors (a broker
    /// without transactions, a missing ACL on the transactional id).
    pub async fn exactly_once(&self) -> Result<crate::ExactlyOnce, crate::ExactlyOnceError> {
        // A kind declared exactly-once was fenced by the worker before this run started.
        if let Some(progress) = &self.inner.progress {
            let fenced = progress
                .services
                .fenced
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(self.task_id());
            if let Some(fenced) = fenced {
                return Ok(fenced);
            }
        }
        let checkpoints = self
            .checkpoints()
            .ok_or(CheckpointError::from(CheckpointDetail::Disabled))?
            .clone();
        Box::pin(crate::ExactlyOnce::open(
            checkpoints,
            self.inner.lease.clone(),
        ))
        .await
    }

    /// The newest checkpoint of this task, saved by this or any earlier owner; `None` when
    /// none was saved. It reads the checkpoint topic up to its current end first, so a
    /// checkpoint saved anywhere before the call is seen.
    ///
    /// # Errors
    /// `Disabled` when the worker has no task store,
    /// `Serde` when the saved state does not deserialize into `T`.
    pub async fn last_checkpoint<T: DeserializeOwned>(&self) -> Result<Option<T>, CheckpointError> {
        let checkpoints = self.checkpoints().ok_or(CheckpointDetail::Disabled)?;
        // Boxed for the same reason as `save_checkpoint`.
        Box::pin(checkpoints.newest(self.task_id())).await
    }

    /// Declares this task's children, making it a generator (Kafka Connect's connector and its
    /// `taskConfigs`): the task store then holds exactly these tasks as this task's children,
    /// placed on any worker like every task. Call it whenever the source the children come
    /// from changes; the whole set each time.
    ///
    /// The worker writes the difference with the store: new and changed children (kind,
    /// config or weight; an operator's pause or restart of a child is kept), and the removal
    /// of children no longer declared. A child stored as declared is not written again, so a
    /// generator that restarts elsewhere and declares the same children leaves them running
    /// where they are. Until this task stops, the worker keeps the store equal to the last
    /// declaration (a child deleted by hand comes back). Deleting or pausing this task deletes
    /// or pauses its children. An id that is already a task this generator did not declare is
    /// left alone, with a warning.
    ///
    /// The lease is checked before anything is written, and a write that lands after a newer
    /// owner of this task claimed it is ignored by every reader (see
    /// [generated tasks](crate::store#generated-tasks)). Returns how many child records were
    /// written: 0 when the store already held the children as declared.
    ///
    /// # Errors
    /// `Disabled` when the worker has no task store; `InvalidId`
    /// or `InvalidRecord` for a child the store cannot hold, a duplicate id, or
    /// this task's own id (nothing is written then); `Fenced` when the lease
    /// check fails or a newer owner claimed this task; `Log` when the write
    /// fails.
    pub async fn set_children(
        &self,
        children: impl IntoIterator<Item = TaskSpec>,
    ) -> Result<usize, StoreError> {
        let children: Vec<TaskSpec> = children.into_iter().collect();
        let Some(sink) = &self.inner.progress else {
            return Err(StoreDetail::Disabled.into());
        };
        let services = &sink.services;
        let declare = crate::generator::declare(
            &services.generators,
            services.store.get(),
            &self.inner.lease,
            children,
        );
        // Boxed, as `save_checkpoint`.
        Box::pin(declare).await
    }

    /// The task's cancellation token; cancelled on revoke and on shutdown.
    #[cfg(test)]
    pub(crate) fn cancellation_token(&self) -> &CancellationToken {
        &self.inner.lease.cancel
    }

    /// Whether the task was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.inner.lease.cancel.is_cancelled()
    }

    /// Completes when the task is asked to stop. Cancel safe.
    pub async fn cancelled(&self) {
        self.inner.lease.cancel.cancelled().await;
    }

    /// Reports progress; the status API shows the note and when it was reported. With
    /// [`RestartPolicy::stall_timeout`](crate::RestartPolicy::stall_timeout) set, a task that
    /// stops reporting is restarted.
    pub fn report_progress(&self, note: impl Into<String>) {
        if let Some(sink) = &self.inner.progress {
            let note = note.into();
            if let Some(last) = &sink.last {
                last.send_replace(Instant::now());
            }
            sink.services
                .table
                .update(self.task_id(), sink.incarnation, |status| {
                    let notes = status.notes_mut();
                    notes.last_progress_ms = Some(unix_ms());
                    notes.progress = Some(note);
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::lease::{LeaseDetail, LeaseErrorKind};

    fn token(generation: i32, member: &str) -> FencingToken {
        FencingToken::new(generation, member)
    }

    #[test]
    fn a_context_is_one_small_allocation() {
        // Every task holds one per attempt: with `Arc`'s two counts 120 bytes, a 128-byte
        // chunk from glibc (with the task table and the checkpoint client as fields of their
        // own it was 128 bytes, a 144-byte chunk).
        assert_eq!(std::mem::size_of::<ContextInner>(), 104);
    }

    #[tokio::test]
    async fn checkpoint_calls_add_little_to_a_task_future() {
        // A task future holds the largest state of all its await points for its whole life:
        // the checkpoint calls' own futures must stay small, whatever a produce needs.
        let (ctx, _cancel, _member) =
            TaskContext::detached("t", token(3, "m"), Instant::now() + Duration::from_secs(10));
        let save = ctx.save_checkpoint(&7u64);
        let last = ctx.last_checkpoint::<u64>();
        assert!(
            std::mem::size_of_val(&save) <= 256,
            "{}",
            std::mem::size_of_val(&save)
        );
        assert!(
            std::mem::size_of_val(&last) <= 256,
            "{}",
            std::mem::size_of_val(&last)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn lease_is_valid_until_deadline() {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (ctx, _cancel, _member) = TaskContext::detached("t", token(3, "m"), deadline);
        assert_eq!(ctx.check_lease(), Ok(token(3, "m")));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(
            ctx.check_lease(),
            Err(LeaseError::from(LeaseDetail::Expired {
                task_id: "t".into(),
                late: Duration::ZERO
            }))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn extension_keeps_lease_valid() {
        let start = Instant::now();
        let (ctx, _cancel, member) =
            TaskContext::detached("t", token(3, "m"), start + Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(8)).await;
        member
            .send_modify(|lease| lease.valid_until = (start + Duration::from_secs(20)).into_std());
        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(ctx.lease().is_valid());
        // A newer generation of the same member keeps the lease; the token follows it.
        member.send_modify(|lease| lease.token = token(4, "m"));
        assert_eq!(ctx.check_lease(), Ok(token(4, "m")));
        assert_eq!(ctx.granted(), &token(3, "m"));
    }

    #[tokio::test(start_paused = true)]
    async fn revoke_shutdown_and_fencing_fail_the_check() {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (ctx, cancel, member) = TaskContext::detached("t", token(3, "m"), deadline);
        member.send_modify(|lease| lease.token = token(5, "other"));
        assert!(matches!(ctx.check_lease(), Err(e) if e.kind() == LeaseErrorKind::Fenced));
        member.send_modify(|lease| lease.token = token(3, "m"));
        cancel.cancel();
        assert!(ctx.is_cancelled());
        assert_eq!(
            ctx.check_lease(),
            Err(LeaseError::from(LeaseDetail::Revoked {
                task_id: "t".into()
            }))
        );
        // The worker's side dropped: it is shutting down.
        drop(member);
        assert!(matches!(ctx.check_lease(), Err(e) if e.kind() == LeaseErrorKind::ShuttingDown));
    }

    #[tokio::test(start_paused = true)]
    async fn lost_completes_at_the_deadline() {
        let start = Instant::now();
        let (ctx, _cancel, member) =
            TaskContext::detached("t", token(1, "m"), start + Duration::from_secs(10));
        let lease = ctx.lease().clone();
        let waiter = tokio::spawn(async move { (lease.lost().await, Instant::now()) });
        tokio::time::sleep(Duration::from_secs(5)).await;
        member
            .send_modify(|lease| lease.valid_until = (start + Duration::from_secs(30)).into_std());
        let (error, at) = waiter.await.unwrap();
        assert!(error.kind() == LeaseErrorKind::Expired, "{error}");
        assert_eq!(at - start, Duration::from_secs(30));
    }
}
