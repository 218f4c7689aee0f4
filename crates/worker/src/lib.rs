//! # kroupier-worker
//!
//! The worker runtime: user tasks defined as Rust structs, started and stopped under supervision
//! as the group's assignment changes, with a status API.
//!
//! - [`task`]: the [`Task`] trait and the [`Registry`] of task kinds;
//! - [`catalogue`]: the [`Catalogue`] of task instances;
//! - [`context`]: the [`TaskContext`] a task runs with: fencing token, lease, cancellation;
//! - [`supervisor`]: runs tasks, stops them within a bound, restarts them after failures;
//! - [`protocol`]: the kroupier wire format (member metadata, assignments);
//! - [`config`] and [`builder`]: the worker's config and its builder;
//! - [`runtime`]: the seam the group driver calls with each assignment change;
//! - [`status`]: task states and the status HTTP API.

pub mod builder;
pub mod catalogue;
pub mod config;
pub mod context;
pub mod protocol;
pub mod runtime;
pub mod status;
pub mod supervisor;
pub mod task;

pub use builder::{BuildError, WorkerBuilder};
pub use catalogue::{Catalogue, CatalogueError, TaskSpec};
pub use config::WorkerConfig;
pub use context::{FencingToken, Lease, LeaseError, MemberLease, TaskContext};
pub use runtime::{ApplyReport, AssignmentChange, Runtime};
pub use status::{StatusBoard, TaskState, TaskStatus, TaskTable, WorkerStatus};
pub use supervisor::{RestartPolicy, StartOutcome, StopReport, Supervisor, SupervisorConfig};
pub use task::{Registry, Task, TaskConfigError, TaskError};
