//! Why a task store operation failed. Every message says what to do next.

use kroupier_coordinator::log::LogError;

/// A task store error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The task id cannot be stored.
    #[error(
        "task id {id:?} is invalid: {reason}; a task id is 1 to 249 ASCII letters, digits, '.', '_' or '-' (as a Kafka topic name)"
    )]
    InvalidId {
        /// The id, as given.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The record breaks a rule every reader checks (an empty kind, weight 0).
    #[error("task {id:?} cannot be stored: {reason}")]
    InvalidRecord {
        /// The task id.
        id: String,
        /// What is wrong, and what to change.
        reason: String,
    },
    /// The record's value is over the limit; nothing was written.
    #[error(
        "task {id:?} is {bytes} bytes as a record, over the task store's limit of {max} bytes; make its config smaller (keep large data elsewhere and store a reference to it)"
    )]
    TooLarge {
        /// The task id.
        id: String,
        /// The value's size in bytes.
        bytes: usize,
        /// The limit, [`MAX_VALUE_BYTES`](super::MAX_VALUE_BYTES).
        max: usize,
    },
    /// No such task in the store.
    #[error(
        "task {id:?} is not in the task store (topic {topic}); `kroupier tasks list` shows the stored tasks"
    )]
    NotFound {
        /// The task id.
        id: String,
        /// The store's topic.
        topic: String,
    },
    /// The task's latest record is not a task record this version reads, so it cannot be
    /// changed in place.
    #[error(
        "task {id:?} has an unreadable record at offset {offset} of topic {topic} ({reason}); put the task again or delete it"
    )]
    Unreadable {
        /// The task id.
        id: String,
        /// The store's topic.
        topic: String,
        /// The record's offset.
        offset: i64,
        /// Why it could not be read.
        reason: String,
    },
    /// The group id cannot name a topic; the store needs an explicit one.
    #[error(
        "group id {group:?} cannot name a Kafka topic: {reason}; set `{setting}` to an explicit topic name"
    )]
    InvalidTopic {
        /// The group id.
        group: String,
        /// What Kafka refuses in the name.
        reason: String,
        /// The setting that names the topic explicitly.
        setting: &'static str,
    },
    /// Reading or writing the topic failed (the message names the topic, the operation and
    /// the ACL or setting to change).
    #[error(transparent)]
    Log(#[from] LogError),
    /// A read did not reach the end offset the broker reported.
    #[error(
        "reading task store topic {topic} stopped at offset {offset} before its end offset {end}: no records came; retry, and check the topic's partition leader"
    )]
    Incomplete {
        /// The store's topic.
        topic: String,
        /// Where the read stopped.
        offset: i64,
        /// The end offset it was reading to.
        end: i64,
    },
    /// A generator's worker may no longer own the generator: it writes none of its children.
    #[error(
        "generator `{task}` did not write its children: {reason}; the generator's current owner declares them"
    )]
    Fenced {
        /// The generator's task id.
        task: String,
        /// Why: its lease check failed, or a newer owner claimed it.
        reason: String,
    },
    /// The task runs outside a worker with a task store, so it cannot declare children.
    #[error(
        "this worker has no task store, so tasks cannot declare children; set tasks.store.enabled=true"
    )]
    Disabled,
}
