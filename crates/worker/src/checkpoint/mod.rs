//! Checkpoints: a task's saved state, kept in a compacted Kafka topic, that follows the task
//! when it moves to another worker or its worker restarts.
//!
//! A task calls [`TaskContext::save_checkpoint`](crate::TaskContext::save_checkpoint) with any
//! serde value and reads the newest one back with
//! [`TaskContext::last_checkpoint`](crate::TaskContext::last_checkpoint), usually once when it
//! starts.
//!
//! # Why a zombie's checkpoint never wins
//! Each record's key is `<task id>@<generation>`, where the generation is the one in which
//! the writer was granted the task (its fencing token). A task moves only through a rebalance,
//! so its next owner's generation is higher than every older owner's. Readers keep, per task,
//! the record of the highest generation (then the highest offset), whatever order the records
//! landed in: a produce from an older owner that was held up in the network and lands after
//! the new owner's is read and ignored. Because the generations are in the keys, compaction
//! cannot make the late record replace the newer one either; the owner deletes (tombstones)
//! the keys of older generations of its task once its own checkpoint has landed.
//!
//! A write also checks the task's lease first, so a worker that may have lost the task (its
//! session could have expired) does not write at all. The assumption, as for every fencing
//! token of kroupier: the group's generations only grow, which holds while the group exists
//! (Kafka deletes an empty group after `offsets.retention.minutes`, and then counts again from
//! 1; docs/tasks.md says what to do).
//!
//! An operator may set or reset a paused task's checkpoint (`kroupier tasks checkpoint`, or the
//! status API); `admin.rs` argues why those writes keep the rule.

mod admin;
mod record;
mod store;
#[cfg(test)]
mod tests;
#[cfg_attr(not(feature = "unstable"), allow(unreachable_pub, dead_code))]
mod view;

pub(crate) use store::CheckpointDetail;
pub use store::{CheckpointError, CheckpointErrorKind};
// The checkpoint client: a worker's tasks reach it through their `TaskContext`, an operator
// through `kroupier tasks checkpoint` or the status API, which use it here (`unstable`).
#[cfg(feature = "unstable")]
pub use store::Checkpoints;
#[cfg(not(feature = "unstable"))]
pub(crate) use store::Checkpoints;
pub(crate) use store::MAX_CHECKPOINT_BYTES;
// The records as read (writer, generation, offset) and the reader's view: for kroupier's
// command line, status API and tests; a task reads its state with `Checkpoints::newest`.
#[cfg(feature = "unstable")]
pub use view::{Checkpoint, CheckpointView};
#[cfg(not(feature = "unstable"))]
#[allow(unused_imports)]
pub(crate) use view::{Checkpoint, CheckpointView};
