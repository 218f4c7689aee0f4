//! Why a task store operation failed. Every message says what to do next.

use kroupier_coordinator::log::LogError;

use crate::task_id::InvalidTaskId;

/// A task store error. Its message says what to do next; [`kind`](Self::kind) sorts it for
/// code, [`task_id`](Self::task_id) names the task it concerns.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoreError(StoreDetail);

/// What kind of [`StoreError`] happened, for code that acts on it (the message says the rest).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreErrorKind {
    /// The task id cannot be stored (1 to 249 ASCII letters, digits, '.', '_' or '-').
    InvalidId,
    /// The record breaks a rule every reader checks (an empty kind, weight 0).
    InvalidRecord,
    /// The record's value is over [`MAX_VALUE_BYTES`](super::MAX_VALUE_BYTES); nothing was
    /// written.
    TooLarge,
    /// No such task in the store.
    NotFound,
    /// The task's latest record is not a task record this version reads, so it cannot be
    /// changed in place.
    Unreadable,
    /// The group id cannot name a topic; the store needs an explicit one.
    InvalidTopic,
    /// Reading or writing the topic failed; the message says how (a missing topic, an ACL).
    Log,
    /// A read did not reach the end offset the broker reported.
    Incomplete,
    /// A generator's worker may no longer own the generator: it writes none of its children.
    Fenced,
    /// The task runs outside a worker with a task store, so it cannot declare children.
    Disabled,
}

impl StoreError {
    /// What kind of error this is.
    pub fn kind(&self) -> StoreErrorKind {
        match &self.0 {
            StoreDetail::InvalidId(_) => StoreErrorKind::InvalidId,
            StoreDetail::InvalidRecord { .. } => StoreErrorKind::InvalidRecord,
            StoreDetail::TooLarge { .. } => StoreErrorKind::TooLarge,
            StoreDetail::NotFound { .. } => StoreErrorKind::NotFound,
            StoreDetail::Unreadable { .. } => StoreErrorKind::Unreadable,
            StoreDetail::InvalidTopic { .. } => StoreErrorKind::InvalidTopic,
            StoreDetail::Log(_) => StoreErrorKind::Log,
            StoreDetail::Incomplete { .. } => StoreErrorKind::Incomplete,
            StoreDetail::Fenced { .. } => StoreErrorKind::Fenced,
            StoreDetail::Disabled => StoreErrorKind::Disabled,
        }
    }

    /// The task the error concerns (for a batch write, the one that was refused), if one.
    pub fn task_id(&self) -> Option<&str> {
        match &self.0 {
            StoreDetail::InvalidId(InvalidTaskId { id, .. })
            | StoreDetail::InvalidRecord { id, .. }
            | StoreDetail::TooLarge { id, .. }
            | StoreDetail::NotFound { id, .. }
            | StoreDetail::Unreadable { id, .. } => Some(id),
            StoreDetail::Fenced { task, .. } => Some(task),
            _ => None,
        }
    }

    unstable_pub! {
        /// The topic log's error, for an error of kind [`Log`](StoreErrorKind::Log): its
        /// [`kind`](LogError::kind) says whether the topic is missing or the principal may not use
        /// it.
        pub fn log(&self) -> Option<&LogError> {
            match &self.0 {
                StoreDetail::Log(error) => Some(error),
                _ => None,
            }
        }
    }

    unstable_pub! {
        /// The store's topic, for the kinds whose message names it.
        pub fn topic(&self) -> Option<&str> {
            match &self.0 {
                StoreDetail::NotFound { topic, .. }
                | StoreDetail::Unreadable { topic, .. }
                | StoreDetail::Incomplete { topic, .. } => Some(topic),
                _ => None,
            }
        }
    }

    unstable_pub! {
        /// The value's size and the limit, for an error of kind `TooLarge`.
        pub fn too_large(&self) -> Option<(usize, usize)> {
            match &self.0 {
                StoreDetail::TooLarge { bytes, max, .. } => Some((*bytes, *max)),
                _ => None,
            }
        }
    }

    unstable_pub! {
        /// The group id and what Kafka refuses in it, for an error of kind `InvalidTopic`.
        pub fn invalid_topic(&self) -> Option<(&str, &str)> {
            match &self.0 {
                StoreDetail::InvalidTopic { group, reason, .. } => Some((group, reason)),
                _ => None,
            }
        }
    }
}

impl From<StoreDetail> for StoreError {
    fn from(detail: StoreDetail) -> Self {
        Self(detail)
    }
}

impl From<LogError> for StoreError {
    fn from(error: LogError) -> Self {
        Self(StoreDetail::Log(error))
    }
}

/// The error itself, with the fields its message is made of (crate-internal: the store
/// constructs it; users see the message, the [`StoreErrorKind`] and the accessors).
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreDetail {
    /// The task id cannot be stored.
    #[error(transparent)]
    InvalidId(InvalidTaskId),
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
    Log(LogError),
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
