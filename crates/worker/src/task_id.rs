//! The task id rule: Kafka's rule for topic names. Every entry holds ids to this one rule — the
//! builder's tasks, the task store's writes and its readers, the status API's
//! `PUT /tasks/{id}`, kroupier's command line — so it is a leaf that each of them uses, and
//! none of them imports another for it.

/// The longest task id, in bytes: ids travel in every member's metadata and in status and
/// logs, so they are names, not data.
pub const MAX_ID_BYTES: usize = 249;

/// A task id that breaks the rule: its message says which part, and what an id may hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "task id {id:?} is invalid: {reason}; a task id is 1 to 249 ASCII letters, digits, '.', '_' or '-' (as a Kafka topic name)"
)]
pub(crate) struct InvalidTaskId {
    /// The id, as given.
    pub(crate) id: String,
    /// What is wrong with it.
    pub(crate) reason: String,
}

/// Checks `id`: non-empty, at most [`MAX_ID_BYTES`] characters, only ASCII letters, digits,
/// `.`, `_` and `-`. An id is printed in tables and logs, is a path segment of the status API
/// and part of file names and checkpoint keys, so it holds nothing that needs quoting there.
pub(crate) fn check(id: &str) -> Result<(), InvalidTaskId> {
    let reason = if id.is_empty() {
        "it is empty".to_owned()
    } else if id.len() > MAX_ID_BYTES {
        format!("it is {} characters long", id.chars().count())
    } else if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        format!("it holds {bad:?}")
    } else {
        return Ok(());
    };
    Err(InvalidTaskId {
        id: id.to_owned(),
        reason,
    })
}
