//! The task store: a group's tasks in a compacted Kafka topic, written from anywhere (the
//! CLI, any worker's status API) and read by every worker.
//!
//! - [`TaskRecord`]: the record format (key = task id, value = JSON), its limits
//!   ([`MAX_VALUE_BYTES`], [`MAX_ID_BYTES`]) and id rules (checked by every write);
//! - [`StoreView`]: what a reader builds from the records ([`StoredTask`]s, with their versions:
//!   offsets);
//! - [`tasks_topic`] and [`checkpoints_topic`]: the default topic names of a group;
//! - [`TaskStore`]: the client that reads and writes the topic (the CLI and the status API
//!   write through it; each worker keeps a view up to date with it).
//!
//! Concurrent writers: the last write per task wins, in the order the records land in the
//! topic — with one exception, for generated tasks.
//!
//! # Generated tasks
//! A running task may declare child tasks with
//! [`TaskContext::set_children`](crate::TaskContext::set_children) (Kafka Connect's connector
//! and its `taskConfigs`). Its worker writes the difference between the declared children and
//! the store: a put for each new or changed child, a *removal marker* for each child no longer
//! declared. A child's record says who declared it:
//! `"generated_by":{"generator":"<id>","generation":N}`, where `N` is the generation in which
//! the generator's worker was granted the generator (its fencing token). Before its first write
//! in a run, the worker *claims* the generator in that generation: a record under the key
//! `<generator id>@<N>` (`@` never occurs in a task id).
//!
//! **Why a zombie generator's write is ignored.** A worker that lost its session (a GC pause,
//! a SIGSTOP, a partition) may still have a write in flight, decided while its lease was valid,
//! that lands after the generator moved on. The rule: readers ignore a child put or removal
//! marker whose generation is older than the newest claim of its generator, in whatever order
//! the records land. It holds because
//! 1. the generator moves to another worker only through a rebalance, so the new owner's
//!    generation is higher than every older owner's;
//! 2. the new owner writes its claim before any child record, and each worker checks its lease
//!    before it writes (as for checkpoints): a write that lands after the new claim and carries
//!    an older generation can only be an older owner's;
//! 3. claims carry the generation in their key, so compaction, which keeps the latest record of
//!    each key, never replaces a newer claim with an older one; the newest claim survives until
//!    the generator is deleted;
//! 4. a removal is a record (a marker that carries the token), not a tombstone, which could not
//!    be told apart from anyone else's delete.
//!
//! An ignored write is still the latest record of its key, so compaction may remove the heeded
//! record under it. The generator's current owner therefore writes every such key again (the
//! declared child, or a new marker) as soon as it sees the ignored write; until then a reader
//! that starts after compaction removed the heeded record misses that one child. Compaction
//! only touches closed segments, so in practice the repair comes first.
//!
//! Assumptions, as for every fencing token of kroupier: the group's generations only grow
//! (true while the group exists; Kafka deletes an empty group after
//! `offsets.retention.minutes` and then counts from 1 again — delete and put the generator
//! again if that happened), and a write that lands before the new owner's claim is an ordinary
//! write of the generator, which the new owner's first reconciliation overwrites.
//!
//! Writers other than generators (the CLI, the status API) are not fenced: a task put by hand
//! is nobody's child, and a generator leaves it alone even if it declares the same id.
//! Deleting a generator ([`TaskStore::delete`]) deletes its children, their markers and its
//! claims; readers also treat a child whose generator is gone as deleted, and a child of a
//! paused generator as paused.
//!
//! # Examples
//!
//! ```no_run
//! use std::sync::Arc;
//! use kroupier_coordinator::connection::{Cluster, ClusterConfig};
//! use kroupier_worker::store::{self, DesiredState, TaskRecord, TaskStore};
//! use serde_json::json;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let cluster = Arc::new(Cluster::new(ClusterConfig::new("127.0.0.1:9092"))?);
//! // `kroupier-tasks-beats`, created compacted if missing.
//! let tasks = TaskStore::open(cluster, store::tasks_topic("beats")?, true).await?;
//!
//! // Anyone adds, pauses and removes tasks. Each write returns the task's version.
//! let version = tasks.put("beat-7", TaskRecord::new("beat", json!({"every_ms": 100}))).await?;
//! let view = tasks.read_all().await?;
//! assert_eq!(view.tasks["beat-7"].version, version);
//! tasks.set_state("beat-7", DesiredState::Paused).await?;
//! tasks.delete("beat-7").await?;
//! # Ok(()) }
//! ```

mod client;
mod error;
pub(crate) mod lineage;
mod record;
#[cfg(test)]
mod tests;
mod topic;
pub(crate) mod view;

pub use client::TaskStore;
// The view a worker keeps up to date: kroupier's tests follow it too (`unstable`).
pub use crate::task_id::MAX_ID_BYTES;
#[cfg(feature = "unstable")]
pub use client::StoreTail;
pub(crate) use error::StoreDetail;
pub use error::{StoreError, StoreErrorKind};
pub use record::{DesiredState, GeneratedBy, MAX_VALUE_BYTES, TaskRecord};
// The id rules, checked by every write: for kroupier's command line, which refuses a bad id
// before it asks the cluster anything.
#[cfg(feature = "unstable")]
pub use record::validate_id;
#[cfg(not(feature = "unstable"))]
pub(crate) use record::validate_id;
pub use topic::{checkpoints_topic, tasks_topic};
pub use view::{StoreView, StoredTask};
// The records a reader skipped: the status API and the worker's log report them; kroupier's
// tests read them (`unstable`).
#[cfg(feature = "unstable")]
pub use view::InvalidRecord;
