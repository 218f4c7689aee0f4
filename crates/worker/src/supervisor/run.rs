//! One supervised task: build from config, run, catch failures and panics, back off, restart.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::catalogue::TaskSpec;
use crate::checkpoint::Checkpoints;
use crate::context::{FencingToken, Lease, ProgressSink, TaskContext, TaskLease};
use crate::status::model::{TaskState, TaskTable, unix_ms};
use crate::supervisor::policy::RestartPolicy;
use crate::task::{Registry, TaskConfigError, TaskError};

/// Everything one supervised run needs; moved into its tokio task.
pub(crate) struct RunPlan {
    pub(crate) task_id: Arc<str>,
    pub(crate) spec: Option<TaskSpec>,
    /// The task's desired state is paused: the run only records `PAUSED`.
    pub(crate) paused: bool,
    pub(crate) registry: Arc<Registry>,
    pub(crate) policy: RestartPolicy,
    pub(crate) table: TaskTable,
    pub(crate) incarnation: u64,
    pub(crate) granted: FencingToken,
    pub(crate) member: watch::Receiver<Lease>,
    /// The supervisor's root token: cancelled when the worker shuts down.
    pub(crate) shutdown: CancellationToken,
    pub(crate) cancel: CancellationToken,
    pub(crate) graceful_stop_timeout: Duration,
    /// Where the task's checkpoints go (with a task store).
    pub(crate) checkpoints: Option<Arc<Checkpoints>>,
}

/// Marks the record `STOPPED` if the run is dropped (aborted) while still active, so the status
/// never says `RUNNING` for a task whose future is gone.
struct AbortGuard {
    table: TaskTable,
    task_id: Arc<str>,
    incarnation: u64,
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        self.table
            .update(&self.task_id, self.incarnation, |status| {
                if status.state.is_active() {
                    status.state = TaskState::Stopped;
                    status.since_ms = unix_ms();
                    status.last_error =
                        Some("aborted: did not stop within the graceful stop timeout".into());
                }
            });
    }
}

impl RunPlan {
    fn finish(&self, state: TaskState, error: Option<String>) {
        self.table
            .update(&self.task_id, self.incarnation, |status| {
                status.state = state;
                status.since_ms = unix_ms();
                if error.is_some() {
                    status.last_error = error;
                }
            });
    }
}

/// Runs the task until it is cancelled, completes, or fails for good.
pub(crate) async fn supervise(plan: RunPlan) {
    let _guard = AbortGuard {
        table: plan.table.clone(),
        task_id: plan.task_id.clone(),
        incarnation: plan.incarnation,
    };
    let id = plan.task_id.clone();
    if plan.paused {
        // Held (and claimed) but not run: a resume restarts it.
        tracing::info!(task = %id, "task paused");
        plan.finish(TaskState::Paused, None);
        return;
    }
    let Some(spec) = plan.spec.as_ref() else {
        let error = TaskConfigError::NotInCatalogue {
            task_id: id.to_string(),
        };
        tracing::warn!(task = %id, %error, "task not started");
        plan.finish(TaskState::Failed, Some(error.to_string()));
        return;
    };
    let mut failures = 0u32;
    let mut attempt = 0u32;
    loop {
        if plan.cancel.is_cancelled() {
            plan.finish(TaskState::Stopped, None);
            return;
        }
        attempt += 1;
        let task = match plan.registry.build(spec) {
            Ok(task) => task,
            Err(error) => {
                tracing::warn!(task = %id, %error, "task config rejected");
                plan.finish(TaskState::Failed, Some(error.to_string()));
                return;
            }
        };
        // One token per attempt, so that the stall watch can stop this attempt alone.
        let attempt_cancel = plan.cancel.child_token();
        let lease = TaskLease::new(
            id.clone(),
            plan.granted.clone(),
            plan.member.clone(),
            attempt_cancel.clone(),
            plan.shutdown.clone(),
        );
        let started = Instant::now();
        let (last_progress, progress_seen) = watch::channel(started);
        let progress = ProgressSink {
            table: plan.table.clone(),
            incarnation: plan.incarnation,
            last: last_progress,
        };
        let ctx =
            TaskContext::with_checkpoints(lease, attempt, Some(progress), plan.checkpoints.clone());
        plan.table
            .set_state(&id, plan.incarnation, TaskState::Running);
        tracing::debug!(task = %id, attempt, "task running");
        let run = AssertUnwindSafe(task.run_boxed(ctx)).catch_unwind();
        let outcome = match plan.policy.stall_timeout {
            None => run.await,
            Some(stall) => {
                tokio::pin!(run);
                tokio::select! {
                    outcome = &mut run => outcome,
                    () = stalled(progress_seen, stall) => {
                        tracing::warn!(task = %id, ?stall, "task stalled; stopping it");
                        attempt_cancel.cancel();
                        plan.table.set_state(&id, plan.incarnation, TaskState::Stopping);
                        // Whatever it returns while stopping, the attempt failed.
                        let _ = tokio::time::timeout(plan.graceful_stop_timeout, &mut run).await;
                        Ok(Err(TaskError::failed(format!(
                            "stalled: no progress reported for {stall:?}"
                        ))))
                    }
                }
            }
        };
        let failure = match outcome {
            Ok(Ok(())) if plan.cancel.is_cancelled() => {
                plan.finish(TaskState::Stopped, None);
                return;
            }
            Ok(Ok(())) => {
                tracing::info!(task = %id, "task completed");
                plan.finish(TaskState::Completed, None);
                return;
            }
            Ok(Err(TaskError::Lease(error))) => {
                tracing::info!(task = %id, %error, "task stopped on its lease check");
                plan.finish(TaskState::Stopped, Some(error.to_string()));
                return;
            }
            Ok(Err(error)) => error.to_string(),
            Err(panic) => format!("panicked: {}", panic_message(panic.as_ref())),
        };
        if plan.cancel.is_cancelled() {
            // Failing while being stopped is a stop, not a reason to restart.
            plan.finish(TaskState::Stopped, Some(failure));
            return;
        }
        if started.elapsed() >= plan.policy.reset_after {
            failures = 0;
        }
        failures += 1;
        if failures >= plan.policy.max_attempts {
            tracing::error!(task = %id, failures, error = %failure, "task failed for good");
            plan.table.update(&id, plan.incarnation, |status| {
                status.state = TaskState::Failed;
                status.since_ms = unix_ms();
                status.consecutive_failures = failures;
                status.last_error = Some(format!(
                    "failed {failures} time(s) in a row, last: {failure}; fix the cause, then \
                     request a restart"
                ));
            });
            return;
        }
        let delay = plan.policy.backoff(failures);
        tracing::warn!(task = %id, failures, ?delay, error = %failure, "task failed; restarting");
        plan.table.update(&id, plan.incarnation, |status| {
            status.state = TaskState::Restarting;
            status.since_ms = unix_ms();
            status.restarts += 1;
            status.consecutive_failures = failures;
            status.last_error = Some(failure);
        });
        tokio::select! {
            biased;
            _ = plan.cancel.cancelled() => {
                plan.finish(TaskState::Stopped, None);
                return;
            }
            _ = tokio::time::sleep(delay) => {}
        }
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
