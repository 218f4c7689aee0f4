//! Test workers with no Kafka: the embedded coordinator, in your test's process.
//!
//! The embedded coordinator speaks Kafka's group protocol on a loopback port, so a worker built
//! exactly as in production (same [`WorkerBuilder`](crate::WorkerBuilder), same tasks) joins it,
//! gets its assignment and runs its tasks; start several workers to see tasks move. It is
//! `kroupier-embedded`, re-exported.
//!
//! Enable the feature for tests only:
//!
//! ```toml
//! [dev-dependencies]
//! kroupier = { version = "0.1", features = ["testing"] }
//! ```
//!
//! # Examples
//!
//! A worker with one task, on the embedded coordinator: it joins, runs the task, and leaves.
//!
//! ```
//! use std::time::Duration;
//!
//! use kroupier::testing::{coordinator, wait_for_task, worker_config};
//! use kroupier::{Kind, Task, TaskContext, TaskError, TaskState, WorkerBuilder};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Copy {
//!     table: String,
//! }
//!
//! impl Task for Copy {
//!     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
//!         ctx.cancelled().await;
//!         Ok(())
//!     }
//! }
//!
//! const COPY: Kind<Copy> = Kind::new("copy");
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // In a test: #[tokio::test] async fn copies() { .. }
//! let coordinator = coordinator().await?;
//! let worker = WorkerBuilder::new(worker_config(&coordinator, "orders"))
//!     .register(COPY)
//!     .typed_task(&COPY, "copy-orders", Copy { table: "orders".into() })
//!     .spawn()
//!     .await?;
//! let status = wait_for_task(&worker, "copy-orders", TaskState::Running, Duration::from_secs(10))
//!     .await?;
//! assert!(status.generation > 0);
//! worker.shutdown().await?;
//! coordinator.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! Start several workers on one coordinator to see tasks spread and move;
//! [`EmbeddedCoordinator::builder`] injects faults ([`Faults`]) for the unhappy paths.

pub use kroupier_embedded::{
    Builder, CoordinatorHandle, EmbeddedCoordinator, EmbeddedError, EmbeddedErrorKind, Fault,
    Faults, ServedApi,
};

use std::time::Duration;

use crate::{TaskState, TaskStatus, WorkerConfig, WorkerHandle};

/// Starts an embedded coordinator on a free loopback port, with its defaults (no initial
/// rebalance delay, session timeouts from 1 s). Stop it with [`CoordinatorHandle::shutdown`];
/// dropping the handle stops it too.
///
/// For other settings (fault injection, limits), use [`EmbeddedCoordinator::builder`].
///
/// # Errors
/// An [`EmbeddedError`] of kind `Bind` when no loopback port can be bound.
pub async fn coordinator() -> Result<CoordinatorHandle, EmbeddedError> {
    EmbeddedCoordinator::builder().bind("127.0.0.1:0").await
}

/// A [`WorkerConfig`] for group `group_id` on `coordinator`: its bootstrap address. Everything
/// else is [`WorkerConfig::new`]'s default (the status API on a free loopback port, so tests
/// running at once never collide); change what the test needs.
pub fn worker_config(coordinator: &CoordinatorHandle, group_id: &str) -> WorkerConfig {
    let mut config = WorkerConfig::new(group_id);
    config.member.cluster.bootstrap_servers = vec![coordinator.bootstrap()];
    config
}

/// Waits until `worker` holds task `task_id` in `state`, polling its status every 10 ms, and
/// returns the task's status then.
///
/// # Errors
/// [`TaskWaitError`] when `within` passes first; it says what the task's state was last.
pub async fn wait_for_task(
    worker: &WorkerHandle,
    task_id: &str,
    state: TaskState,
    within: Duration,
) -> Result<TaskStatus, TaskWaitError> {
    let current = || {
        worker
            .tasks()
            .into_iter()
            .find(|task| task.task_id == task_id)
    };
    let reached = async {
        loop {
            match current() {
                Some(task) if task.state == state => return task,
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    };
    tokio::time::timeout(within, reached)
        .await
        .map_err(|_| TaskWaitError {
            task_id: task_id.to_owned(),
            wanted: state,
            last: current().map(|task| task.state),
            within,
        })
}

/// A task did not reach the state [`wait_for_task`] waited for in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "task `{task_id}` was not {wanted:?} within {within:?} (last seen: {}); check the worker's \
     kinds, its catalogue and the task's last_error in its status",
    match last { Some(state) => format!("{state:?}"), None => "not held by this worker".to_owned() }
)]
pub struct TaskWaitError {
    /// The task waited for.
    pub task_id: String,
    /// The state waited for.
    pub wanted: TaskState,
    /// The task's state when the time ran out; `None` if this worker did not hold it.
    pub last: Option<TaskState>,
    /// How long it waited.
    pub within: Duration,
}
