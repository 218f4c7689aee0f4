//! The task store: a group's tasks in a compacted Kafka topic, written from anywhere (the
//! CLI, any worker's status API) and read by every worker.
//!
//! - [`record`]: the record format (key = task id, value = JSON), its limits and id rules;
//! - [`view`]: the [`StoreView`] a reader builds from the records, and its versions (offsets);
//! - [`tasks_topic`] and [`checkpoints_topic`]: the default topic names of a group.
//!
//! Concurrent writers: the last write per task wins, in the order the records land in the
//! topic.

mod error;
pub mod record;
mod topic;
pub mod view;

pub use error::StoreError;
pub use record::{DesiredState, MAX_ID_BYTES, MAX_VALUE_BYTES, TaskRecord, validate_id};
pub use topic::{MAX_TOPIC_NAME_BYTES, checkpoints_topic, tasks_topic};
pub use view::{InvalidRecord, StoreView, StoredTask};
