//! Status of this worker and its tasks, as the worker reports it: the model (each task's state,
//! restarts and last error: [`model`]), the board the runtime writes and readers take snapshots
//! of (the last stable group view, the catalogue with desired states, readiness: [`board`]), and
//! the metrics kept beside it ([`metrics`]).
//!
//! No HTTP here: the status API that serves this model (its routes, TLS, access rule and error
//! shape) is [`crate::http`], which reads the board; nothing in this module knows of it.
//!
//! The metrics ([`metrics`] holds them; the board renders them for `GET /metrics`):
//!
//! | Metric | Type | Meaning |
//! |---|---|---|
//! | `kroupier_tasks{state}` | gauge | tasks held by this worker, by state (every state, 0 included) |
//! | `kroupier_task_restarts` | gauge | restarts after failures, summed over the tasks held |
//! | `kroupier_rebalances_total` | counter | rebalances this worker completed, its first join included |
//! | `kroupier_rebalancing` | gauge | 1 while a rebalance is in progress |
//! | `kroupier_generation` | gauge | generation of the last completed rebalance (-1 before the first) |
//! | `kroupier_catalogue_mismatch` | gauge | 1 when this worker's catalogue differs from the leader's |
//! | `kroupier_last_failover_timestamp_seconds` | gauge | Unix time of the last takeover (0 = never) |
//! | `kroupier_rebalance_latency_seconds` | histogram | from a rebalance's start (this worker's revocation, or, for the first join, the member's first JoinGroup) to its assignment applied |

pub(crate) mod board;
pub(crate) mod metrics;
pub(crate) mod model;

pub(crate) use board::{Fingerprinted, StatusBoard};
pub use board::{GroupView, TaskView, WorkerStatus};
pub(crate) use model::TaskTable;
pub use model::{TaskState, TaskStatus};
