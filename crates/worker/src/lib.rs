//! # kroupier-worker
//!
//! The worker runtime: user tasks defined as Rust structs, started and stopped under supervision
//! as the group's assignment changes, with a status API.
//!
//! ```
//! use std::time::Duration;
//! use kroupier_worker::{
//!     AssignmentChange, FencingToken, Task, TaskContext, TaskError, TaskSpec, WorkerBuilder,
//!     WorkerConfig,
//! };
//! use serde::Deserialize;
//! use tokio::time::Instant;
//!
//! /// A task is a plain struct; its config comes from the catalogue through serde.
//! #[derive(Deserialize)]
//! struct Beat {
//!     every_ms: u64,
//! }
//!
//! impl Task for Beat {
//!     async fn run(self, ctx: TaskContext) -> Result<(), TaskError> {
//!         let mut ticks = tokio::time::interval(Duration::from_millis(self.every_ms));
//!         loop {
//!             tokio::select! {
//!                 _ = ctx.cancelled() => return Ok(()),
//!                 _ = ticks.tick() => {}
//!             }
//!             // Fails once this worker may have lost the task: then stop, never write.
//!             let token = ctx.check_lease()?;
//!             ctx.report_progress(format!("beat at generation {}", token.generation_id));
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let runtime = WorkerBuilder::new(WorkerConfig::new("beats"))
//!     .register::<Beat>("beat")
//!     .task(TaskSpec::new("beat-0", "beat", serde_json::json!({"every_ms": 100})))
//!     .task(TaskSpec::new("beat-1", "beat", serde_json::json!({"every_ms": 100})))
//!     .build_runtime()
//!     .unwrap();
//!
//! // What the group driver does when SyncGroup hands this member its assignment:
//! let report = runtime
//!     .apply(AssignmentChange {
//!         token: FencingToken::new(1, "member-1"),
//!         leader: "member-1".into(),
//!         valid_until: Instant::now() + Duration::from_secs(7),
//!         run: ["beat-0".to_string(), "beat-1".to_string()].into(),
//!         revoke: Default::default(),
//!         leader_catalogue_fingerprint: None,
//!     })
//!     .await;
//! assert_eq!(report.started, ["beat-0", "beat-1"]);
//! assert_eq!(runtime.board().snapshot().group.generation, Some(1));
//!
//! // ... and when the application shuts down, before LeaveGroup:
//! let stopped = runtime.shutdown(Instant::now() + Duration::from_secs(6)).await;
//! assert!(stopped.all_stopped());
//! # }
//! ```
//!
//! - [`task`]: the [`Task`] trait and the [`Registry`] of task kinds;
//! - [`catalogue`]: the [`Catalogue`] of task instances;
//! - [`context`]: the [`TaskContext`] a task runs with: fencing token, lease, cancellation;
//! - [`supervisor`]: runs tasks, stops them within a bound, restarts them after failures;
//! - [`protocol`]: the kroupier wire format (member metadata, assignments);
//! - [`config`] and [`builder`]: the worker's config (nested, derived defaults, Kafka client
//!   properties) and its builder (assignors as values, typed task kinds);
//! - [`shutdown`]: the two-signal rule for binaries (the library handles no OS signal);
//! - [`runtime`]: the seam the group driver calls with each assignment change;
//! - [`group`]: the kroupier group protocol and the worker loop that joins the Kafka group;
//! - [`status`]: task states and the status HTTP API;
//! - [`journal`]: the task journal each beat is written to, and the checks over it (and over
//!   leader elections) that witness no task running on two workers at once.

pub mod builder;
pub mod catalogue;
pub mod config;
pub mod context;
pub mod group;
pub mod journal;
pub mod protocol;
pub mod runtime;
pub mod shutdown;
pub mod status;
pub mod supervisor;
pub mod task;

pub use builder::{BuildError, WorkerBuilder};
pub use catalogue::{Catalogue, CatalogueError, TaskSpec};
pub use config::{StatusConfig, TasksConfig, WorkerConfig};
pub use context::{FencingToken, Lease, LeaseError, MemberLease, TaskContext};
pub use group::{WorkerError, WorkerEvent, WorkerExit, WorkerHandle, WorkerProtocol};
pub use runtime::{ApplyReport, AssignmentChange, Runtime};
pub use status::{StatusBoard, TaskState, TaskStatus, TaskTable, WorkerStatus};
pub use supervisor::{
    InvalidConfig, RestartPolicy, StartOutcome, StopReport, Supervisor, SupervisorConfig,
};
pub use task::{Kind, Registry, Task, TaskConfigError, TaskError};
