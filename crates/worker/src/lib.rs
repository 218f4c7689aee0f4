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
//! - [`status`]: task states and the status HTTP API.

pub mod catalogue;
pub mod context;
pub mod protocol;
pub mod status;
pub mod supervisor;
pub mod task;

pub use catalogue::{Catalogue, CatalogueError, TaskSpec};
pub use context::{FencingToken, Lease, LeaseError, MemberLease, TaskContext};
pub use status::{StatusBoard, TaskState, TaskStatus, TaskTable, WorkerStatus};
pub use supervisor::{RestartPolicy, StartOutcome, StopReport, Supervisor, SupervisorConfig};
pub use task::{Registry, Task, TaskConfigError, TaskError};
