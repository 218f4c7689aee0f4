//! The checkpoint record: key `<task id>@<generation>`, value JSON.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// The key of `task_id`'s checkpoint written in `generation`.
pub(crate) fn key(task_id: &str, generation: i32) -> Bytes {
    Bytes::from(format!("{task_id}@{generation}"))
}

/// The task id and generation of a key; `None` for a key kroupier did not write.
pub(crate) fn parse_key(key: &[u8]) -> Option<(&str, i32)> {
    let key = std::str::from_utf8(key).ok()?;
    let (task, generation) = key.rsplit_once('@')?;
    let generation = generation.parse().ok()?;
    (!task.is_empty()).then_some((task, generation))
}

/// The value of a checkpoint record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CheckpointValue {
    /// The member that wrote it, for people reading the topic.
    pub(crate) member: String,
    /// The task's state, as the task serialized it (`null` in a reset record).
    pub(crate) state: serde_json::Value,
    /// An operator's reset (`kroupier tasks checkpoint reset`): the task has no checkpoint.
    /// A record, not a tombstone, so that it ranks like a checkpoint and an older
    /// generation's record cannot resurface once compaction removed the newer one. Absent
    /// (false) in the records tasks write.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) reset: bool,
}
