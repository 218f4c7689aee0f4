//! The task store: a group's tasks in a compacted Kafka topic, written from anywhere (the
//! CLI, any worker's status API) and read by every worker.
//!
//! - [`record`]: the record format (key = task id, value = JSON), its limits and id rules;
//! - [`view`]: the [`StoreView`] a reader builds from the records, and its versions (offsets);
//! - [`tasks_topic`] and [`checkpoints_topic`]: the default topic names of a group;
//! - [`TaskStore`]: the client that reads and writes the topic (the CLI and the status API
//!   write through it), and [`StoreTail`], the view a worker keeps up to date with it.
//!
//! Concurrent writers: the last write per task wins, in the order the records land in the
//! topic.
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
//! // A worker keeps a view up to date ...
//! let mut tail = tasks.tail(tasks.read_all().await?);
//! // ... while anyone adds, pauses and removes tasks. Each write returns the task's version.
//! let version = tasks.put("beat-7", TaskRecord::new("beat", json!({"every_ms": 100}))).await?;
//! let view = tail.wait_for(version + 1).await;
//! assert_eq!(view.tasks["beat-7"].version, version);
//! tasks.set_state("beat-7", DesiredState::Paused).await?;
//! tasks.delete("beat-7").await?;
//! # Ok(()) }
//! ```

mod client;
mod error;
pub mod record;
#[cfg(test)]
mod tests;
mod topic;
pub mod view;

pub use client::{StoreTail, TAIL_WAIT, TaskStore};
pub use error::StoreError;
pub use record::{DesiredState, MAX_ID_BYTES, MAX_VALUE_BYTES, TaskRecord, validate_id};
pub use topic::{MAX_TOPIC_NAME_BYTES, checkpoints_topic, tasks_topic};
pub use view::{InvalidRecord, StoreView, StoredTask};
